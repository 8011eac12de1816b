# One command sets up and runs the default benchmark (`make demo`), one sets up and runs
# the tests (`make test`). Both create .venv/ themselves; `make setup` is idempotent.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: setup test test-fast demo clean

# Python writes its bytecode caches into .venv/ (and __pycache__/, ignored by git) even where
# the environment says not to: otherwise every process compiles the modules it imports anew
# (torch, spaCy, transformers, pyserini: 13 s of CPU at each start), and the suite starts hundreds.
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

# torch is pinned and installed first so that pyserini's unpinned `torch` requirement is
# satisfied by the local CPU wheel instead of pulling several GB of CUDA packages; where pip
# has no local CPU wheel, TORCH_INDEX=https://download.pytorch.org/whl/cpu names PyTorch's.
# --no-compile: byte-compiling all 3 GB of packages took most of the install (96 s -> 39 s from
# pip's cache); Python compiles the modules a command imports, once, when it first imports them.
# The demo needs only the extras its config uses (BM25, dense, the hqe strategy's spaCy
# stopwords); `make setup` adds the rest (LLM, serve, Ray, the test tools) on top.
$(DEMO_STAMP): pyproject.toml setup.py harness/evaluate/_lean.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet --no-compile -e '.[lucene,dense,segment]'
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install --quiet --no-compile -e '.[all,test]'
	touch $(STAMP)

# The suite runs on TEST_WORKERS processes (pytest-xdist), a test file per process at a time
# (module fixtures such as a Ray cluster or an index are made once). On this 2-core machine CI's
# script took 18 min on one process, 8 min on two with the bytecode caches above.
TEST_WORKERS ?= 2

test: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

# The fast core alone, to run while changing the code: the tests not marked slow (none starts a JVM,
# loads a model or spaCy, or starts Ray or a browser), 2120 of 2424, about 4.5 min of CPU. Tests, not
# files, are spread over the processes: the largest files would otherwise finish last on one core.
test-fast: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" --durations=15

demo: $(DEMO_STAMP)
	$(BIN)/harness run configs/default.yaml --report

clean:
	rm -rf $(VENV) .cache
