"""Shared paths to the real benchmark files the tests run on."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.corpus import Corpus, Document
from harness.paths import REPO_ROOT, data_root, qrels_root
from harness.retrieve import SearchQuery
from harness.trec import Qrels, canonical_order, read_qrels, read_run

CAST2021_QRELS = qrels_root() / "cast" / "trec-cast-qrels-docs.2021.qrel"
CAST2021_DOC_RUNS = sorted((data_root() / "cast" / "2021" / "baselines" / "document_runs").glob("*.run"))
CAST2021_PASSAGE_RUNS = sorted((data_root() / "cast" / "2021" / "baselines").glob("*.trec"))


def cast2021_holes(folder: Path) -> Path:
    """Grade 2 for each unjudged passage in the top 10 of the first CAsT 2021 run's first 20 queries,
    as a judge asked for the holes would write them (for --fill): they move org_convdr's scores."""
    human = read_qrels(CAST2021_QRELS).judgments
    ranked = read_run(CAST2021_DOC_RUNS[0]).scores
    path = folder / "holes.qrels"
    path.write_text("".join(f"{qid} 0 {docid} 2\n" for qid in list(ranked)[:20] if qid in human
                            for docid in list(ranked[qid])[:10] if docid not in human[qid]))
    return path

PASSAGES_USED = 32
# A smaller slice, and two questions its passages answer (on email marketing and David Goggins).
SMALL = 12
SMALL_QUERIES = [
    SearchQuery("email", "is email marketing more effective than social media?"),
    SearchQuery("goggins", "when was david goggins born"),
]


def ikat_passages(limit: int = PASSAGES_USED) -> Iterator[Document]:
    """The first `limit` iKAT 2023 provenance passages, as the ikat2023 adapter reads them."""
    from harness.topics import load

    return itertools.islice(load("ikat2023").corpus.documents(), limit)


@dataclass
class CountingStream:
    """A corpus's document stream that counts how often it is read (i.e. encoded)."""

    limit: int
    passes: int = 0

    def __call__(self) -> Iterator[Document]:
        self.passes += 1
        return ikat_passages(limit=self.limit)


def ikat_corpus(limit: int = PASSAGES_USED) -> Corpus:
    """Fingerprinted from the file, so that computing the key does not count as a read."""
    source = data_root() / "ikat" / "2023" / "data" / "2023_test_topics_psg_text.jsonl"
    digest = hashlib.sha256(source.read_bytes() + f"first {limit}".encode()).hexdigest()
    return Corpus(f"ikat23-test-psg-{limit}", CountingStream(limit), known_fingerprint=digest)


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An embeddings cache shared by the test modules that fuse or re-rank: encode once."""
    return str(tmp_path_factory.getbasetemp() / "shared-embeddings")


@pytest.fixture(scope="session")
def ikat_cache(tmp_path_factory):
    """One index/embedding cache for every iKAT test module of the session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE", str(tmp_path_factory.getbasetemp() / "ikat-cache"))
        yield


@pytest.fixture(scope="session")
def ikat2023():
    from harness.topics import load

    return load("ikat2023")


@pytest.fixture(scope="session")
def run_records(tmp_path_factory) -> Path:
    """The folder where `harness run` wrote three real runs, each beside its record (<tag>.run,
    <tag>.json): BM25 on PragmaticQA val, on iKAT 2023 test (the shipped pools) and its PTKB."""
    import yaml

    from harness.cli import main

    folder = tmp_path_factory.mktemp("records")
    config = folder / "small.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(folder / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"], "measures": ["RR"]},
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["bm25"], "preset": "ikat2023",
         "corpus": ["benchmark:ikat2023:test", "benchmark:ikat2023:train"], "qrels_restrict_to_corpus": True},
        {"task": "ptkb", "topics": "ikat2023:test", "retrievers": ["bm25"], "preset": "ptkb"}]}), encoding="utf-8")
    assert main(["run", str(config)]) == 0
    return folder / "runs"


def saturated_ikat2024_run(path: Path, turns: int = 12) -> Path:
    """A TREC run of 20 judged passages for each of the first `turns` iKAT 2024 turns with 4
    relevant and 16 non-relevant ones judged (real qrels): its 4 best and 4 non-relevant ones
    first, alternating, scored as a saturated cross-encoder scores them (1 - 1e-9 * rank**2:
    distinct, but not as 32-bit floats or with 6 decimals), the 4th and 5th tied, then the
    rest shuffled, at 0.9 - rank / 1000 (apart in any precision). Scores as Python prints them."""
    judged = read_qrels(qrels_root() / "ikat" / "2024-qrels.txt").judgments
    rng = random.Random(8)
    lines = []
    for qid in sorted(judged):
        relevant = sorted((docid for docid, grade in judged[qid].items() if grade > 0),
                          key=lambda docid: (-judged[qid][docid], docid))
        other = sorted(docid for docid, grade in judged[qid].items() if grade <= 0)
        if len(relevant) < 4 or len(other) < 16 or len(lines) == 20 * turns:
            continue
        rest = relevant[4:] + other[4:]
        rng.shuffle(rest)
        docids = [docid for pair in zip(relevant[:4], other[:4]) for docid in pair] + rest[:12]
        scores = [1 - 1e-9 * rank**2 for rank in range(1, 9)] + [0.9 - rank / 1000 for rank in range(9, 21)]
        scores[4] = scores[3]
        ranking = canonical_order(zip(docids, scores))
        lines += [f"{qid} Q0 {docid} {rank} {score!r} saturated\n" for rank, (docid, score) in enumerate(ranking, 1)]
    path.write_text("".join(lines))
    return path


def write_clueweb22_txt(folder: Path, documents: list[Document]) -> Path:
    """ClueWeb22's `txt` layout (en/en00/en0000/en0000-32.json.gz), one record per line, with
    the two fields the iKAT segmentation reads; one file bzip2-compressed, as iKAT copies are."""
    files: dict[Path, list[str]] = {}
    for document in documents:
        stream, section = document.id.split("-")[1:3]  # clueweb22-en0000-32-08101
        path = folder / "txt" / "en" / stream[:4] / stream / f"{stream}-{section}.json.gz"
        record = {"ClueWeb22-ID": document.id, "Clean-Text": document.contents}
        files.setdefault(path, []).append(json.dumps(record) + "\n")
    for number, (path, lines) in enumerate(sorted(files.items())):
        path.parent.mkdir(parents=True, exist_ok=True)
        if number == 0:
            with bz2.open(path.with_suffix(".bz2"), "wt", encoding="utf-8") as handle:
                handle.writelines(lines)
        else:
            with gzip.open(path, "wt", encoding="utf-8") as handle:
                handle.writelines(lines)
    return folder / "txt"


def clueweb22_txt_with_a_repeated_id(folder: Path) -> tuple[Path, str]:
    """A two-file ClueWeb22 `txt` folder whose second file gives an id twice (lines 1 and 2);
    returns the folder and the message naming that file and its lines."""
    first, again = "clueweb22-en0000-32-00001", "clueweb22-en0000-33-00001"
    txt = write_clueweb22_txt(folder, [Document(first, "One sentence. Another."), Document(again, "A text."),
                                       Document(again, "Another text.")])
    return txt, f"{txt}/en/en00/en0000/en0000-33.json.gz:2: document id '{again}' again (first at line 1)"


def clueweb22_txt_with_an_id_in_two_files(folder: Path) -> tuple[Path, str]:
    """A three-file ClueWeb22 `txt` folder whose third file gives again (line 2) an id of the
    first (line 2); returns the folder and the message naming both files and lines."""
    twice = "clueweb22-en0000-32-00002"
    txt = write_clueweb22_txt(folder, [Document("clueweb22-en0000-32-00001", "One sentence. Another."),
                                       Document(twice, "A text."), Document("clueweb22-en0000-33-00001", "Two."),
                                       Document("clueweb22-en0000-34-00001", "Three.")])
    third = txt / "en" / "en00" / "en0000" / "en0000-34.json.gz"
    with gzip.open(third, "at", encoding="utf-8") as handle:
        handle.write(json.dumps({"ClueWeb22-ID": twice, "Clean-Text": "The same id, another text."}) + "\n")
    first = txt / "en" / "en00" / "en0000" / "en0000-32.json.bz2"
    return txt, f"{third}:2: document id '{twice}' again (first at {first}:2)"


# --- the reference implementations in ../shared/reference (trec_eval, official iKAT tools) ---


def child_env(**changes: str) -> dict[str, str]:
    """The environment of a child process that runs this checkout's harness: the checkout first on
    PYTHONPATH, and what the caller's PYTHONPATH holds kept after it (a model or plug-in put there)."""
    return {**os.environ, **changes,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}


def shared_root() -> Path | None:
    """`../shared` beside the repo (or $HARNESS_SHARED): reference code and data the tests
    compare against; None in a clone that has none."""
    root = Path(os.environ.get("HARNESS_SHARED", REPO_ROOT.parent / "shared"))
    return root if root.is_dir() else None


def shared_path(relative: str) -> Path:
    """A file or folder of ../shared, or skip the test with the one wording every such skip uses:
    where ../shared is absent, one reason for all of them, not one per file they read."""
    root = shared_root()
    if root is None or not (root / relative).exists():
        missing = "../shared" if root is None else f"../shared/{relative}"
        pytest.skip(f"reference comparison skipped: {missing} is absent (set HARNESS_SHARED to the shared folder)")
    return root / relative


def extra(module: str, name: str):
    """`module` imported, or skip the test (a whole test file, called at its top) in the words every
    test of the `name` extra uses, so that a missing extra is one reason in pytest's summary."""
    return pytest.importorskip(module, reason=f"the {name} extra is not installed (pip install -e '.[{name}]')")


CHROMIUM = Path("/usr/bin/chromium")  # Debian's, as CI installs it (.ci/run)
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                    "(apt-get install -y chromium)")


def pytest_terminal_summary(terminalreporter) -> None:
    """`-rs` (on by default, pyproject.toml) says each reason once with how many tests it skipped:
    pytest counts skips per place they were raised, so the tests of one missing extra, or of an
    absent ../shared, took a line per file. `--no-fold-skipped` lists every skipped test."""
    skipped = terminalreporter.stats.get("skipped", [])
    places: dict[str, set[tuple[str, int | None]]] = {}
    for report in skipped:
        path, line, reason = report.longrepr
        places.setdefault(reason, set()).add((path, line))
    for report in skipped:
        reason = report.longrepr[2]
        if len(places[reason]) > 1:  # the file, or the folder, they share
            report.longrepr = (os.path.commonpath([path for path, _ in places[reason]]), None, reason)


def reference_dir(*parts: str) -> Path:
    """A folder of ../shared/reference, or skip the test with one clear line."""
    return shared_path("/".join(["reference", *parts]))


@pytest.fixture(scope="session")
def trec_eval(tmp_path_factory) -> Path:
    """trec_eval built from its C sources in ../shared/reference/trec_eval (a temporary copy)."""
    sources = reference_dir("trec_eval")
    build = tmp_path_factory.mktemp("trec_eval") / "src"
    shutil.copytree(sources, build)
    subprocess.run(["make", "-s", "-C", str(build)], check=True, capture_output=True)
    return build / "trec_eval"


@dataclass
class LLMServer:
    """tests/llm_server.py running on 127.0.0.1: its base URL and the requests it received."""

    base_url: str
    log: Path

    def requests(self) -> list[dict]:
        """The requests logged so far: a line the server is still writing (no newline yet) is
        not one yet (read while a judge runs, it made a JSONDecodeError)."""
        logged = self.log.read_bytes()
        return [json.loads(line) for line in logged[:logged.rfind(b"\n") + 1].decode("utf-8").splitlines()]


@contextlib.contextmanager
def start_llm_server(folder: Path, judge: dict | None = None) -> Iterator[LLMServer]:
    """tests/llm_server.py on 127.0.0.1, logging to folder/requests.jsonl; with `judge` (its
    JSON config), a judge answering from recorded labels."""
    log = folder / "requests.jsonl"
    log.touch()
    command = [sys.executable, str(Path(__file__).with_name("llm_server.py")), str(log)]
    if judge is not None:
        (folder / "judge.json").write_text(json.dumps(judge), encoding="utf-8")
        command.append(str(folder / "judge.json"))
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        yield LLMServer(f"http://127.0.0.1:{port}/v1", log)
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory):
    with start_llm_server(tmp_path_factory.mktemp("llm")) as server:
        yield server


@pytest.fixture(scope="session")
def qrels_106() -> Qrels:
    """CAsT 2021 topic 106's first two turns: a small slice of real graded judgments."""
    full = read_qrels(CAST2021_QRELS)
    return Qrels("cast2021-106", {qid: full.judgments[qid] for qid in ("106_1", "106_2")})


def write_run(tmp_path: Path, lines: list[str], name: str = "run") -> Path:
    """TREC run lines written to tmp_path/<name>.run."""
    path = tmp_path / f"{name}.run"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def interruptible() -> None:
    """preexec_fn for a child the test will Ctrl-C: one started from a background job
    inherits an ignored SIGINT, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
