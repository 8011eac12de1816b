"""Dense retrieval on real iKAT 2023 passages with the shipped all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.retrieve import SearchQuery, build
from harness.retrieve.embeddings import cache_folder, cache_key, default_model_path, passage_vectors
from harness.retrieve.dense import dense, top_k
from harness.scale.encode import encode_sharded
from tests.conftest import PASSAGES_USED, SMALL, child_env, ikat_corpus

pytestmark = [pytest.mark.model, pytest.mark.slow]

QUERIES = [
    SearchQuery("email", "is email marketing more effective than social media?"),
    SearchQuery("hybrid", "which hybrid car sells best in america"),
    SearchQuery("goggins", "when was david goggins born"),
]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    corpus = ikat_corpus()
    retriever = build("dense", corpus=corpus, cache_dir=str(tmp_path_factory.mktemp("embeddings")))
    hits = retriever.search(QUERIES, 10)
    return corpus, retriever, hits


def test_first_run_encodes_the_corpus_once_and_caches_it(first_run):
    corpus, retriever, _ = first_run
    assert not retriever.passages.from_cache
    assert corpus.documents.passes == 1
    folder = retriever.passages.folder
    assert sorted(p.name for p in folder.iterdir()) == ["ids.json", "meta.json", "vectors.npy"]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["corpus"] == corpus.fingerprint and meta["count"] == PASSAGES_USED and meta["dimension"] == 384
    assert np.load(folder / "vectors.npy").dtype == np.float32


def test_a_document_id_given_twice_is_an_error_before_any_passage_is_encoded(first_run, tmp_path, monkeypatch):
    """Said as soon as the repeat is read (harness.corpus.unique_ids), not after the whole corpus is encoded."""
    from harness.corpus.readers import open_corpus
    from harness.errors import InputError
    from harness.retrieve import embeddings

    path = tmp_path / "corpus.jsonl"
    texts = [("a", "apple pie"), ("b", "banana"), ("a", "apple tart")] + [(f"d{n}", f"text {n}") for n in range(300)]
    path.write_text("".join(json.dumps({"id": docid, "contents": text}) + "\n" for docid, text in texts))
    batches = []
    encode_batch = embeddings._encode_batch
    monkeypatch.setattr(embeddings, "_encode_batch", lambda *args: batches.append(args) or encode_batch(*args))
    with pytest.raises(InputError, match=r"corpus\.jsonl:3: document id 'a' again \(first at line 1\)"):
        build("dense", corpus=open_corpus(str(path)), cache_dir=str(tmp_path / "embeddings")).search(QUERIES, 10)
    assert batches == [] and list((tmp_path / "embeddings").iterdir()) == []  # nothing cached


def test_a_corpus_encoded_on_first_use_says_where_and_how_long_once(tmp_path, monkeypatch, capsys):
    """As a corpus's own index does: on a log the encoding is no ranking time (from SAID_FROM_S, a second;
    here none, so that the test's encoding is one)."""
    import harness.progress as progress

    monkeypatch.setattr(progress, "SAID_FROM_S", 0.0)
    corpus = ikat_corpus(40)
    first = build("dense", corpus=corpus, cache_dir=str(tmp_path))
    first.search(QUERIES, 3)
    folder = re.escape(str(first.passages.folder))
    assert re.fullmatch(rf"vectors of 40 passages of {corpus.name} written to {folder} in \d+\.\d s "
                        r"\(once: later runs reuse it\)\n", capsys.readouterr().err)
    build("dense", corpus=corpus, cache_dir=str(tmp_path)).search(QUERIES, 3)
    assert capsys.readouterr().err == ""


def test_second_run_reads_the_cache_and_only_encodes_queries(first_run):
    corpus, retriever, hits = first_run
    again = build("dense", corpus=corpus, cache_dir=str(retriever.passages.folder.parent))
    assert again.search(QUERIES, 10) == hits
    assert again.passages.from_cache
    assert corpus.documents.passes == 1  # the corpus was not streamed again


def test_dtype_max_length_and_model_are_part_of_the_cache_key(first_run):
    _, retriever, _ = first_run
    encoder = retriever.encoder
    base = cache_key("corpus-sha", encoder, "float32")
    variants = [
        cache_key("corpus-sha", encoder, "float16"),
        cache_key("other-corpus-sha", encoder, "float32"),
        {**base, "max_length": 128},
        {**base, "model": "another-model-sha"},
    ]
    folders = {cache_folder(Path("/c"), "x", key) for key in [base, *variants]}
    assert len(folders) == 5


def test_retrievers_sharing_the_model_keep_their_own_max_length(first_run):
    corpus, retriever, _ = first_run
    short = build("dense", corpus=corpus, max_length=32)
    assert short.encoder.model is retriever.encoder.model  # loaded once per process
    short.encoder.encode_queries(["a query"])
    assert build("dense", corpus=corpus).encoder.max_length == 256  # the model's saved max_seq_length


def test_a_batch_of_queries_encoded_before_is_reused_as_it_was_encoded(first_run):
    _, retriever, _ = first_run
    texts = [query.text for query in QUERIES]
    first = retriever.encoder.encode_queries(texts)
    assert retriever.encoder.encode_queries(list(texts)) is first  # not encoded again
    assert not first.flags.writeable  # shared, so nobody may change it
    other_batch = retriever.encoder.encode_queries(texts[:1])
    assert other_batch is not first and np.allclose(other_batch[0], first[0], atol=1e-6)


def test_a_float16_cache_stores_half_precision_and_keeps_the_ranking(first_run, tmp_path):
    _, retriever, _ = first_run
    few = ikat_corpus(8)
    half = build("dense", corpus=few, dtype="float16", cache_dir=str(tmp_path))
    half_hits = half.search(QUERIES, 3)
    assert np.load(half.passages.folder / "vectors.npy").dtype == np.float16
    full_hits = retriever.search(QUERIES, PASSAGES_USED)
    for query in QUERIES:
        among_few = [hit.docid for hit in full_hits[query.qid] if hit.docid in set(half.passages.ids)]
        assert [hit.docid for hit in half_hits[query.qid]] == among_few[:3]


@pytest.mark.parametrize(
    ("paraphrase", "passage"),
    [
        # Hand-written paraphrases of real passages, sharing few content words with them.
        ("which cheese can people who cannot digest milk sugar still eat", "clueweb22-en0000-95-11958:2"),
        ("what does the government charge you for owning an automobile in holland", "clueweb22-en0001-60-13167:0"),
        ("what did the batman films by nolan do differently", "clueweb22-en0002-65-01351:4"),
    ],
)
def test_a_paraphrase_finds_its_passage_first(first_run, paraphrase, passage):
    _, retriever, _ = first_run
    assert retriever.search([SearchQuery("q", paraphrase)], 3)["q"][0].docid == passage


def test_numpy_faiss_and_torch_backends_agree(first_run):
    corpus, retriever, _ = first_run
    cache = str(retriever.passages.folder.parent)
    results = {
        backend: build("dense", corpus=corpus, cache_dir=cache, backend=backend).search(QUERIES, PASSAGES_USED)
        for backend in ("numpy", "faiss", "torch")
    }
    for query in QUERIES:
        reference = results["numpy"][query.qid]
        assert len(reference) == PASSAGES_USED
        for backend in ("faiss", "torch"):
            other = results[backend][query.qid]
            assert [hit.docid for hit in other] == [hit.docid for hit in reference]
            assert np.allclose([hit.score for hit in other], [hit.score for hit in reference], atol=1e-5)


def test_k_beyond_the_corpus_returns_every_passage_best_first(first_run):
    _, retriever, _ = first_run
    hits = retriever.search(QUERIES[:1], 1000)["email"]
    assert len(hits) == PASSAGES_USED
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_equal_scores_rank_in_corpus_order_also_at_the_cut_off():
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 3, 0]
    assert top_k(scores, 4).tolist() == [1, 3, 0, 2]
    assert top_k(scores, 10).tolist() == [1, 3, 0, 2, 5, 4]


def test_texts_of_near_token_lengths_share_a_batch_padded_to_the_longest():
    """Padding 8 tokens in all (9, 9, 10 to 12) costs less than a second model call (_CALL_TOKENS)."""
    from harness.retrieve.embeddings import _length_batches

    assert _length_batches([12, 9, 10, 12, 9], batch_size=32) == [[1, 4, 2, 0, 3]]


def test_a_batch_is_cut_where_padding_would_cost_more_than_a_model_call():
    from harness.retrieve.embeddings import _CALL_TOKENS, _length_batches

    assert 2 * (200 - 10) > _CALL_TOKENS
    assert _length_batches([10, 200, 10], batch_size=32) == [[0, 2], [1]]


def test_a_batch_holds_at_most_batch_size_texts_and_there_are_as_few_as_that_allows():
    from harness.retrieve.embeddings import _length_batches

    batches = _length_batches([10] * 70, batch_size=32)
    assert len(batches) == 3 and max(map(len, batches)) == 32
    assert sorted(i for batch in batches for i in batch) == list(range(70))


def test_on_a_gpu_batches_are_full_and_in_order_of_length_in_characters():
    """A GPU call costs far more than its padding: no batch is cut short to save padding."""
    from harness.retrieve.embeddings import _full_batches

    assert _full_batches([10, 200, 10, 50, 10], batch_size=2) == [[0, 2], [4, 3], [1]]


def test_on_a_gpu_an_encoder_gets_threads_as_far_as_their_model_copies_fit_a_quarter_of_free_memory():
    from harness.retrieve.embeddings import _GPU_WORKERS, _gpu_workers

    gib = 2**30
    assert _gpu_workers(90 * 2**20, 79 * gib) == _GPU_WORKERS  # MiniLM on an 80 GB card
    assert _gpu_workers(28 * gib, 52 * gib) == 1  # a 7B encoder in float32: no room for a copy
    assert _gpu_workers(5 * gib, 40 * gib) == 3  # two copies fit in 10 of 40 GiB


def test_a_cpu_named_with_an_index_encodes_on_every_core_as_cpu_does():
    """The device is read back from the loaded model, so 'cpu:0' is a CPU too (it got one thread)."""
    from harness.retrieve.embeddings import load_encoder

    encoder = load_encoder(device="cpu:0")
    assert encoder.device == "cpu" and encoder.workers == load_encoder(device="cpu").workers


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    """What `harness encode CORPUS --output DIR` writes, for 96 iKAT passages."""
    from harness.compute.engines import EngineSpec, start_engine
    from harness.retrieve.embeddings import load_encoder

    corpus, folder = ikat_corpus(96), tmp_path_factory.mktemp("minilm")
    engine = start_engine(EngineSpec())
    try:
        encode_sharded(corpus, load_encoder(), folder, engine)
    finally:
        engine.close()
    return corpus, folder


def test_dense_searches_the_vectors_harness_encode_wrote_with_the_run_that_encodes_itself(encoded, tmp_path):
    corpus, folder = encoded
    itself = build("dense", corpus=corpus, cache_dir=str(tmp_path)).search(QUERIES, 10)
    passes = corpus.documents.passes
    assert build("dense", corpus=corpus, index=str(folder)).search(QUERIES, 10) == itself
    assert corpus.documents.passes == passes  # the corpus is not read again
    assert build("dense", corpus=None, index=str(folder)).search(QUERIES, 10) == itself  # `corpus: {index: DIR}`


@pytest.mark.parametrize("given, message", [
    ({"dtype": "float16"}, "dense.dtype: {folder} holds vectors encoded with dtype 'float32', this retriever "
                           "encodes with 'float16': give dtype: float32, or encode it again"),
    ({"batch_size": 8}, "dense.batch_size: {folder} holds vectors encoded with batch_size 32, this retriever "
                        "encodes with 8: give batch_size: 32, or encode it again"),
    ({"corpus": ikat_corpus(40)}, "dense.index: {folder} holds the vectors of another corpus than "
                                  "ikat23-test-psg-40, or of it before it changed"),
])
def test_encoded_vectors_other_than_the_retriever_would_make_are_refused_naming_the_parameter_and_both_values(
        encoded, given, message):
    corpus, folder = encoded
    with pytest.raises(HarnessError, match="^" + re.escape(message.format(folder=folder))):
        build("dense", **{"corpus": corpus, **given}, index=str(folder))


def test_an_index_without_a_finished_encode_manifest_is_refused_when_dense_is_built(tmp_path):
    """A config check sees the manifest; the retriever reads it (here: a segment's)."""
    (tmp_path / "manifest.json").write_text('{"job": "segment", "complete": true}', encoding="utf-8")
    with pytest.raises(HarnessError, match=f"^dense.index: {re.escape(str(tmp_path))} holds no finished `harness "
                                           "encode` output"):
        build("dense", corpus=ikat_corpus(), index=str(tmp_path))


def test_dense_without_a_corpus_is_a_clear_error():
    with pytest.raises(HarnessError, match="needs a corpus"):
        build("dense", corpus=None)


def test_a_missing_model_folder_is_a_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="local folders only"):
        build("dense", corpus=ikat_corpus(), model=str(tmp_path / "no-such-model"))


def test_an_unknown_dtype_or_backend_is_a_clear_error(first_run):
    corpus, retriever, _ = first_run
    with pytest.raises(HarnessError, match=re.escape("build('dense').backend: expected one of 'faiss', 'numpy', "
                                                     "'torch' or null, got 'annoy'")):
        build("dense", corpus=corpus, backend="annoy")
    with pytest.raises(HarnessError, match=re.escape("build('dense').dtype: expected one of 'float32', 'float16', "
                                                     "got 'int8'")):
        build("dense", corpus=corpus, dtype="int8")


@pytest.mark.parametrize("params, message", [
    ({"backend": "annoy"}, "dense.backend: expected one of 'faiss', 'numpy', 'torch' or null, got 'annoy'"),
    ({"approx": "lsh"}, "dense.approx: expected one of 'hnsw', 'ivfpq' or null, got 'lsh'"),
    ({"dtype": "int8"}, "dense.dtype: expected one of 'float32', 'float16', got 'int8'"),
])
def test_dense_called_directly_checks_its_search_names_as_a_config_does_before_loading_a_model(params, message):
    with pytest.raises(HarnessError, match=f"^{re.escape(message)}$"):
        dense(ikat_corpus(), model="no-such-model", **params)


@pytest.mark.parametrize("param, value", [("approx", "hnsw"), ("backend", "faiss")])
def test_dense_called_directly_asks_for_the_faiss_its_search_needs_before_loading_a_model(monkeypatch, param, value):
    """A config asks for it for the runs it will make; code calling dense is asked where it calls."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    with pytest.raises(HarnessError, match=f"^dense.{param}: this needs faiss, from the \\[dense\\] extra"):
        dense(ikat_corpus(), model="no-such-model", **{param: value})


@pytest.mark.parametrize("name, encode", [
    ("passage_vectors", lambda: passage_vectors(ikat_corpus(), None, dtype="float64")),
    ("encode_sharded", lambda: encode_sharded(ikat_corpus(), None, Path("vectors"), None, dtype="float64")),
])
def test_the_encoders_called_from_python_check_their_dtype_by_the_rule_dense_declares(name, encode):
    """Before any model or engine is used: a vector type no cache is read back as."""
    with pytest.raises(HarnessError, match=f"^{name}.dtype: expected one of 'float32', 'float16', got 'float64'$"):
        encode()


def test_looking_up_retrievers_imports_no_heavy_library():
    code = (
        "import sys, harness.retrieve as r; r.RETRIEVERS.names(); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss', 'pyserini') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- pyserini's dense search -------------------------------------------------------------------


def test_pyserini_dense_on_a_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="not a pyserini faiss index: missing index and docid"):
        build("pyserini-dense", index=str(tmp_path), encoder=str(default_model_path()))


@pytest.mark.java
def test_pyserini_dense_without_a_local_encoder_is_a_clear_error(tmp_path):
    (tmp_path / "index").write_bytes(b"")
    (tmp_path / "docid").write_text("")
    with pytest.raises(HarnessError, match="encoders load from local folders only"):
        build("pyserini-dense", index=str(tmp_path), encoder="castorini/tct_colbert-v2-hnp-msmarco")


@pytest.mark.java
def test_pyserini_dense_agrees_with_dense_on_the_same_vectors(first_run, tmp_path):
    """A faiss index in pyserini's layout (`index` + `docid`) of the cached passage vectors,
    searched by pyserini's FaissSearcher with its own query encoder (mean pooling, l2)."""
    import faiss

    _, retriever, hits = first_run
    passages = retriever.passages
    index = faiss.IndexFlatIP(passages.vectors.shape[1])
    index.add(passages.vectors)
    faiss.write_index(index, str(tmp_path / "index"))
    (tmp_path / "docid").write_text("".join(f"{docid}\n" for docid in passages.ids))
    searcher = build(
        "pyserini-dense",
        index=str(tmp_path),
        encoder=str(default_model_path()),
        encoder_class="auto",
        pooling="mean",
        l2_norm=True,
    )
    theirs = searcher.search(QUERIES, 10)
    for query in QUERIES:
        assert [hit.docid for hit in theirs[query.qid]] == [hit.docid for hit in hits[query.qid]]
        assert [hit.score for hit in theirs[query.qid]] == pytest.approx([hit.score for hit in hits[query.qid]], abs=1e-5)


def test_the_cli_lets_openmp_threads_sleep_when_idle_unless_told_otherwise(monkeypatch):
    """Spinning OpenMP threads cost encoding several times its time on busy shared cores; the
    setting must be in the environment before torch is first imported (spaCy imports it)."""
    from harness.cli import main

    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def _demo_passages() -> dict[str, list[str]]:
    """Every text the default benchmark (configs/default.yaml) encodes as a passage: its
    corpora and the iKAT PTKB statements, as the dense retriever reads them."""
    from harness.retrieve.embeddings import passage_text
    from harness.runner.config import load_config
    from harness.runner.runner import Workspace
    from tests.conftest import REPO_ROOT

    workspace = Workspace()
    texts: dict[str, list[str]] = {}
    for experiment in load_config(REPO_ROOT / "configs" / "default.yaml").experiments:
        corpus = workspace.corpus(experiment)
        if experiment.task == "ptkb":
            conversations = workspace.benchmark(experiment.topics).conversations
            texts[experiment.name] = [s.text for c in conversations for s in c.personal]
        elif corpus is not None:
            texts[corpus.name] = [passage_text(document) for document in corpus.documents()]
    return texts


def test_length_batched_vectors_stay_within_1e_5_cosine_of_sentence_transformers_on_every_shipped_passage():
    """The one change of encoding path the demo's numbers took (issue 26): batches of nearly
    equal token length, one intra-op thread each, against sentence-transformers' own encode."""
    from harness.retrieve.embeddings import encode_all, load_encoder
    from harness.corpus import Document

    encoder = load_encoder()
    for name, texts in _demo_passages().items():
        _, ours = encode_all(encoder, iter(Document(str(i), text) for i, text in enumerate(texts)))
        encoder.model.max_seq_length = encoder.max_length  # other tests' encoders share the model
        theirs = encoder.model.encode_document(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        cosine = np.sum(ours * theirs, axis=1)  # both unit length
        assert len(texts) > 0 and ours.shape == theirs.shape
        assert cosine.min() >= 1 - 1e-5, f"{name}: {np.sum(cosine < 1 - 1e-5)} of {len(texts)} vectors moved"


def test_more_workers_than_a_chunk_has_batches_encode_the_next_chunk_alongside_with_the_same_vectors(monkeypatch):
    """On a machine with many cores a chunk's batches (about eight) would leave most workers
    idle: the next chunks run alongside, each still cut into its own batches."""
    import threading

    from harness.corpus import Document
    from harness.retrieve import embeddings

    size = embeddings.chunk_size(embeddings.load_encoder())
    texts = _demo_passages()["pragmaticqa:val-spans"][:3 * size]
    chunk_of = {text: i // size for i, text in enumerate(texts)}
    documents = lambda: iter(Document(str(i), text) for i, text in enumerate(texts))  # noqa: E731
    _, one_at_a_time = embeddings.encode_all(embeddings.load_encoder(device="cpu", threads=2), documents())
    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    encode_batch = embeddings._encode_batch

    def recorded(encoder, batch, query):
        with lock:
            events.append(("start", chunk_of[batch[0]]))
        vectors = encode_batch(encoder, batch, query)
        with lock:
            events.append(("end", chunk_of[batch[0]]))
        return vectors

    monkeypatch.setattr(embeddings, "_encode_batch", recorded)
    _, alongside = embeddings.encode_all(
        embeddings.load_encoder(device="cpu", threads=2 * embeddings._BATCHES_PER_CHUNK + 1), documents())
    assert np.array_equal(one_at_a_time, alongside)
    last_end_of_first = max(i for i, event in enumerate(events) if event == ("end", 0))
    assert any(event == ("start", 1) and i < last_end_of_first for i, event in enumerate(events))
    assert any(event == ("start", 2) and i < last_end_of_first for i, event in enumerate(events))


def test_the_next_query_batches_are_encoded_while_one_is_searched_with_the_same_vectors(monkeypatch):
    """A run's batches of queries, handed over together (`encode_query_batches`), keep both
    cores busy: the second batch is encoded while the first still is, each batch as it is
    encoded alone."""
    import threading

    from harness.retrieve import embeddings

    encoder = embeddings.load_encoder(device="cpu", threads=2)
    batches = [[f"first batch query {i}" for i in range(3)], [f"second batch query {i}" for i in range(3)]]
    alone = [embeddings._encode(encoder, batch, query=True) for batch in batches]
    second_started, overlapped = threading.Event(), []
    encode_batch = embeddings._encode_batch

    def recorded(encoder, batch, query):
        if batch[0].startswith("second"):
            second_started.set()
        else:
            overlapped.append(second_started.wait(timeout=20))
        return encode_batch(encoder, batch, query)

    monkeypatch.setattr(embeddings, "_encode_batch", recorded)
    together = list(encoder.encode_query_batches(batches))
    assert overlapped == [True]
    assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))
    assert encoder.encode_queries(batches[1]) is together[1]  # remembered as encoded


def test_a_retrievers_threads_apply_to_its_own_encoding_and_leave_torch_as_it_was(tmp_path):
    """Building a dense retriever with `threads:` does not set torch's thread count: one built after
    it without `threads:` used to reset the count for both (the last built decided). With threads 1 its
    encoding, of passages and of queries, runs on one intra-op thread, and the caller's count is kept."""
    import torch

    from harness.retrieve.embeddings import load_encoder

    before = torch.get_num_threads()
    torch.set_num_threads(len(os.sched_getaffinity(0)) + 1)  # neither retriever's count
    seen: list[int] = []
    model = load_encoder(device="cpu").model  # the one both retrievers share
    words = next(module for module in model.modules() if isinstance(module, torch.nn.Embedding))  # once a batch
    hook = words.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    try:
        one = build("dense", corpus=ikat_corpus(SMALL), cache_dir=str(tmp_path), device="cpu", threads=1)
        build("dense", corpus=ikat_corpus(SMALL), cache_dir=str(tmp_path), device="cpu")
        assert torch.get_num_threads() == len(os.sched_getaffinity(0)) + 1 and not seen
        one.search([SearchQuery("threads", "which threads does this query encode on")], 3)
        assert len(seen) > 1 and set(seen) == {1}  # the passages' batches, then the query's
        assert torch.get_num_threads() == len(os.sched_getaffinity(0)) + 1
    finally:
        hook.remove()
        torch.set_num_threads(before)


def test_encoding_shows_no_progress_bar_on_a_stderr_that_is_not_a_terminal(tmp_path):
    """Neither the harness's bar nor transformers' "Loading weights" (once per model copy,
    one copy per worker thread) fills a log: the demo's log had 150 lines of bars."""
    from tests.conftest import REPO_ROOT

    script = ("import sys; from harness.retrieve import SearchQuery, build; from tests.conftest import ikat_corpus; "
              "build('dense', corpus=ikat_corpus(40), cache_dir=sys.argv[1], threads=2)"
              ".search([SearchQuery('q', 'hybrid cars')], 3)")
    env = child_env()
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                            cwd=REPO_ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    # (the line saying where the vectors went names tmp_path, which holds this test's name)
    assert not re.search(r"Loading weights|encoding ikat|%\|", result.stderr), result.stderr


def test_ctrl_c_while_workers_encode_runs_no_batch_that_has_not_started(monkeypatch):
    """Ctrl-C stops encoding at once: the batches queued behind the one interrupted are cancelled,
    not run to the end while the process waits to exit (a minilm judge chunk's hundreds of batches)."""
    import dataclasses
    import threading
    import time

    from harness.retrieve import embeddings

    encoder = dataclasses.replace(embeddings.load_encoder(batch_size=2), workers=2)
    ran, lock = [], threading.Lock()

    def encode_batch(encoder, texts, query):
        with lock:
            ran.append(texts)
            first = len(ran) == 1
        if first:
            raise KeyboardInterrupt
        time.sleep(0.05)
        return np.zeros((len(texts), 384), dtype=np.float32)

    monkeypatch.setattr(embeddings, "_encode_batch", encode_batch)
    texts = [f"text {i} " + "word " * (i % 7) for i in range(100)]
    with pytest.raises(KeyboardInterrupt):
        encoder.encode_documents(texts)
    time.sleep(0.5)  # time for 10 more batches, were they still queued
    assert len(ran) <= 3  # the interrupted one and those the other worker had started
