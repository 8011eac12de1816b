"""Corpus readers: JSONL, TREC text/web, ClueWeb22 records, ir_datasets, benchmark corpora, one dispatcher."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import harness.corpus
from harness import paths, topics
from harness.corpus import Corpus, Document, find_texts, unique_ids
from harness.corpus.readers import CORPUS_FORMATS, open_corpus
from harness.errors import HarnessError, InputError
from harness.paths import data_root
from tests.conftest import child_env, write_clueweb22_txt

IKAT_PASSAGES = data_root() / "ikat" / "2023" / "data" / "2023_test_topics_psg_text.jsonl"


@pytest.fixture(scope="module")
def ikat_documents() -> list[Document]:
    return list(topics.load("ikat2023").corpus.documents())


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_jsonl_id_contents_round_trip(tmp_path, ikat_documents):
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    assert list(open_corpus(str(path)).documents()) == ikat_documents


def test_a_format_prefixed_corpus_path_reads_a_tilde_as_the_home_folder(tmp_path, monkeypatch, ikat_documents):
    """`jsonl:~/x.jsonl`: the shell expands `~` at a word's start only; it was a missing file '~/x.jsonl'."""
    write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    monkeypatch.setenv("HOME", str(tmp_path))
    assert list(open_corpus("jsonl:~/ikat.jsonl").documents()) == ikat_documents


def test_jsonl_accepts_title_body_and_docid_text(tmp_path):
    spans = list(topics.load("pragmaticqa:val").corpus.documents())[:50]
    title_body = write_jsonl(tmp_path / "a.jsonl", [{"id": d.id, "title": d.title, "body": d.contents} for d in spans])
    docid_text = write_jsonl(tmp_path / "b.jsonl", [{"docid": d.id, "text": d.contents} for d in spans])
    assert list(open_corpus(str(title_body)).documents()) == spans
    assert [(d.id, d.contents) for d in open_corpus(str(docid_text)).documents()] == [(d.id, d.contents) for d in spans]


def test_jsonl_gzip(tmp_path, ikat_documents):
    path = tmp_path / "ikat.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for d in ikat_documents:
            handle.write(json.dumps({"id": d.id, "contents": d.contents}) + "\n")
    assert list(open_corpus(str(path)).documents()) == ikat_documents


def test_file_fingerprint_is_sha256_of_bytes(tmp_path, ikat_documents):
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    assert open_corpus(str(path)).fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def memo_everything(tmp_path, monkeypatch):
    """Every file counts as big and as settled (memoised), the cache is the test's own; returns
    the hashing log."""
    monkeypatch.setattr("harness.paths.MEMO_BYTES", 0)
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    hashed: list[Path] = []
    feed = paths.feed_file
    monkeypatch.setattr("harness.paths.feed_file", lambda digest, path: hashed.append(Path(path)) or feed(digest, path))
    return hashed


def test_a_big_corpus_file_is_hashed_once_per_version(tmp_path, ikat_documents, memo_everything):
    """Across processes (the digest kept under the cache), not only within one."""
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    expected = hashlib.sha256(path.read_bytes()).hexdigest()

    def in_a_new_process() -> str:
        paths._settled_sha256.cache_clear()  # what this process has hashed
        return open_corpus(str(path)).fingerprint

    assert [in_a_new_process() for _ in range(3)] == [expected] * 3
    assert memo_everything.count(path) == 1  # this file's reads: a thread of an earlier test may hash its own
    path.write_text(path.read_text() + "\n")  # a new version: hashed again
    assert open_corpus(str(path)).fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()
    assert memo_everything.count(path) == 2


def test_new_bytes_behind_an_old_mtime_are_hashed_again(tmp_path, ikat_documents, memo_everything):
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    before = open_corpus(str(path)).fingerprint
    stat = path.stat()
    path.write_text(path.read_text().replace("a", "e"), encoding="utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as `cp -p` or `tar x` put an mtime back
    assert path.stat().st_size == stat.st_size
    assert open_corpus(str(path)).fingerprint == hashlib.sha256(path.read_bytes()).hexdigest() != before


def test_a_file_changed_this_instant_is_not_memoised(tmp_path, ikat_documents, memo_everything, monkeypatch):
    monkeypatch.setattr("harness.paths.SETTLED_NS", 10**12)
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    assert open_corpus(str(path)).fingerprint == open_corpus(str(path)).fingerprint
    assert memo_everything == [path, path]


def test_corpus_streams_from_disk_on_each_pass(tmp_path, ikat_documents):
    path = write_jsonl(tmp_path / "ikat.jsonl", [{"id": d.id, "contents": d.contents} for d in ikat_documents])
    corpus = open_corpus(str(path))
    assert sum(1 for _ in corpus.documents()) == sum(1 for _ in corpus.documents()) == len(ikat_documents)


def test_jsonl_malformed_line_names_file_and_line(tmp_path):
    lines = IKAT_PASSAGES.read_text(encoding="utf-8").splitlines()[:3]
    converted = [json.dumps({"id": json.loads(line)["doc_id"], "contents": "x"}) for line in lines]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join([converted[0], converted[1][:-5], converted[2]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"broken\.jsonl:2: invalid JSON: .* \(column {len(converted[1]) - 4}\)"):
        list(open_corpus(str(path)).documents())  # just past the cut end, not column 1


def test_an_ikat_passages_file_reads_as_its_benchmark_corpus(ikat_documents):
    """doc_id + passage_id + passage_text: the id `doc_id:passage_id`, the text between its newlines."""
    assert list(open_corpus(str(IKAT_PASSAGES)).documents()) == ikat_documents


def test_texts_are_found_in_several_sources_in_order_each_asked_only_for_those_not_found_yet(ikat_documents):
    """One search for `judge --corpus A B` and `ikat from-trec --passages A B INDEX`: the first
    source holding an id gives its text (the judge's text function its own)."""
    train = next(open_corpus("benchmark:ikat2023:train").documents())
    first = ikat_documents[0]
    asked = []

    def lookup(ids: set[str]) -> dict[str, str]:
        asked.append(set(ids))
        return {pid: "looked up" for pid in ids}

    wanted = {first.id, train.id, "clueweb22-en0000-00-00000:0"}
    sources = [open_corpus(str(IKAT_PASSAGES)), open_corpus("benchmark:ikat2023:train"), lookup]
    assert find_texts(sources, wanted) == {first.id: first.contents, train.id: train.contents,
                                           "clueweb22-en0000-00-00000:0": "looked up"}
    assert asked == [{"clueweb22-en0000-00-00000:0"}]
    assert find_texts(sources[:1], {first.id}, text=lambda d: d.id) == {first.id: first.id}


def test_jsonl_record_without_text_field_is_rejected(tmp_path):
    path = write_jsonl(tmp_path / "passages.jsonl", [{"doc_id": "clueweb22-en0000-32-08101", "passage_id": "4"}])
    with pytest.raises(InputError, match=r"passages\.jsonl:1: expected an id field .* found \['doc_id', 'passage_id'\]"):
        list(open_corpus(f"jsonl:{path}").documents())


def trecweb(documents: list[Document]) -> str:
    """The TREC web layout the iKAT organisers' tool writes."""
    return "".join(
        f"<DOC>\n<DOCNO>{d.id}</DOCNO>\n<DOCHDR>\nhttp://example/{i}\n</DOCHDR>\n<HTML>\n"
        f"<TITLE>{d.title or ''}</TITLE>\n<BODY>\n<PASSAGE id=0>\n{d.contents}\n</PASSAGE>\n</BODY>\n</HTML>\n</DOC>\n"
        for i, d in enumerate(documents)
    )


def test_trec_web_documents(tmp_path):
    spans = [d for d in topics.load("pragmaticqa:val").corpus.documents() if "<" not in d.contents][:200]
    path = tmp_path / "spans.trecweb"
    path.write_text(trecweb(spans), encoding="utf-8")
    read = list(open_corpus(str(path)).documents())
    assert [d.id for d in read] == [d.id for d in spans]
    assert [d.title for d in read] == [d.title for d in spans]
    assert [d.contents for d in read] == [" ".join(d.contents.split()) for d in spans]


def test_trec_text_documents(tmp_path, ikat_documents):
    path = tmp_path / "ikat.trec"
    path.write_text(
        "".join(
            f"<DOC>\n<DOCNO> {d.id} </DOCNO>\n<TEXT>\n{d.contents}\n</TEXT>\n</DOC>\n" for d in ikat_documents[:100]
        ),
        encoding="utf-8",
    )
    read = list(open_corpus(f"trec:{path}").documents())
    assert [(d.id, d.contents) for d in read] == [(d.id, " ".join(d.contents.split())) for d in ikat_documents[:100]]


def test_trec_unclosed_doc_names_line(tmp_path, ikat_documents):
    text = trecweb(ikat_documents[:3])
    path = tmp_path / "cut.trecweb"
    path.write_text(text[: text.rindex("</DOC>")], encoding="utf-8")
    start = text[: text.rindex("<DOC>")].count("\n") + 1
    with pytest.raises(InputError, match=rf"cut\.trecweb:{start}: <DOC> is never closed"):
        list(open_corpus(str(path)).documents())


@pytest.mark.parametrize("body, read", [
    ("<TEXT>\n" + "a <script x " * 60_000 + "\n</TEXT>", "d1 'a'"),
    ("a < b " * 150_000, "d1 " + repr(" ".join(("a < b " * 150_000).split()))),
    ("x <TITLE> <DOCHDR> " * 60_000, "d1 " + repr(" ".join(["x"] * 60_000))),
    ("<DOCNO>" + " " * 20_000 + "d2\n", "d1 'd2'"),  # an unclosed <DOCNO> is text, then spaces
], ids=["unclosed script openers", "tag openers never closed", "unclosed title and header", "unclosed docno"])
def test_a_trec_document_of_broken_markup_is_read_in_linear_time(tmp_path, body, read):
    """Each opener with no closer (a truncated page, a script writing `<script`) was looked for one up to the end
    of the document: a 240 KB document took a minute, these (up to 900 KB) many minutes; read in a child, which
    fails the test if not done in a time no linear reading comes near."""
    path = tmp_path / "broken.trec"
    path.write_text(f"<DOC>\n<DOCNO>d1</DOCNO>\n{body}\n</DOC>\n", encoding="utf-8")
    code = ("import sys\nfrom harness.corpus.readers import open_corpus\nfrom harness.errors import HarnessError\n"
            "try:\n    print(*(f'{d.id} {d.contents!r}' for d in open_corpus(sys.argv[1]).documents()))\n"
            "except HarnessError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code, f"trec:{path}"], env=child_env(), capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n").endswith(read)


def test_ir_datasets_corpus_offline():
    """A dataset registered over the shipped iKAT file: ir_datasets reads it without network."""
    import ir_datasets
    from ir_datasets.formats import GenericDoc, JsonlDocs
    from ir_datasets.util import LocalDownload

    name = "harness-test/ikat-2023-provenance"
    if name not in ir_datasets.registry:
        mapping = {"doc_id": "doc_id", "text": "passage_text"}
        docs = JsonlDocs(LocalDownload(IKAT_PASSAGES), doc_cls=GenericDoc, mapping=mapping)
        ir_datasets.registry.register(name, ir_datasets.Dataset(docs))
    read = list(open_corpus(f"irds:{name}").documents())
    originals = [json.loads(line) for line in IKAT_PASSAGES.read_text(encoding="utf-8").splitlines()]
    assert [(d.id, d.contents) for d in read] == [(r["doc_id"], r["passage_text"]) for r in originals]


def test_unknown_ir_datasets_id():
    with pytest.raises(HarnessError, match="ir_datasets has no dataset"):
        open_corpus("irds:no-such-dataset/at-all")


def test_an_ir_datasets_corpus_whose_documents_cannot_be_fetched_is_a_one_line_error(tmp_path):
    """ir_datasets downloads a collection on first use: offline, `irds:msmarco-passage` ended
    `harness run` with requests' traceback. Here its file is missing, as a failed download leaves it."""
    import ir_datasets
    from ir_datasets.formats import TsvDocs
    from ir_datasets.util import LocalDownload

    name = "harness-test/not-fetched"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, ir_datasets.Dataset(TsvDocs(LocalDownload(tmp_path / "docs.tsv"))))
    with pytest.raises(HarnessError, match=r"ir_datasets could not read the documents of 'harness-test/not-fetched' "
                                           r"\(FileNotFoundError: .*docs\.tsv\): it downloads them on first use"):
        list(open_corpus(f"irds:{name}").documents())


def test_benchmark_corpus(ikat_documents):
    assert list(open_corpus("benchmark:ikat2023").documents()) == ikat_documents


def clueweb22_documents(ikat_documents: list[Document]) -> list[Document]:
    """Real ClueWeb22 ids and text: one iKAT passage per document, in path order."""
    first = {}
    for document in ikat_documents:
        first.setdefault(document.id.split(":")[0], document.contents)
    return [Document(docid, text) for docid, text in sorted(first.items())]


def test_clueweb22_txt_folder_in_path_order(tmp_path, ikat_documents):
    documents = clueweb22_documents(ikat_documents)
    folder = write_clueweb22_txt(tmp_path, documents)
    corpus = open_corpus(str(folder))
    assert list(corpus.documents()) == documents
    assert open_corpus(f"clueweb22:{folder}").fingerprint == corpus.fingerprint
    single = next(folder.rglob("*.json.gz"))
    assert [d.id for d in open_corpus(str(single)).documents()]  # one file is a corpus too


def test_clueweb22_record_without_clean_text_names_file_and_line(tmp_path, ikat_documents):
    path = tmp_path / "en0000-00.json"
    good = {"ClueWeb22-ID": "clueweb22-en0000-00-00001", "Clean-Text": ikat_documents[0].contents}
    write_jsonl(path, [good, {"ClueWeb22-ID": "clueweb22-en0000-00-00002", "URL": "x"}])
    with pytest.raises(InputError, match=r"en0000-00\.json:2: expected a ClueWeb22 record"):
        list(open_corpus(str(path)).documents())


def test_empty_clueweb22_folder_is_one_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="holds no .json, .json.gz or .json.bz2 files"):
        open_corpus(f"clueweb22:{tmp_path}")


def test_formats_come_from_a_registry():
    assert {"jsonl", "trec", "clueweb22", "irds", "benchmark"} <= set(CORPUS_FORMATS.names())


def test_missing_file_is_one_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="neither an existing file nor a spec"):
        open_corpus(str(tmp_path / "nope.jsonl"))


def test_a_document_id_given_twice_names_the_file_and_line_of_each(tmp_path, ikat_documents):
    """Checked where a corpus is read to build an index (harness.corpus.unique_ids)."""
    trec = tmp_path / "docs.trec"
    trec.write_text("".join(f"<DOC>\n<DOCNO>{docid}</DOCNO>\ntext\n</DOC>\n" for docid in ("a", "b", "c", "b")))
    with pytest.raises(InputError, match=r"docs\.trec:13: document id 'b' again \(first at line 5\); an index "
                                         r"would hold both documents under one id"):
        list(unique_ids(corpus := open_corpus(str(trec)), corpus.documents()))
    folder = tmp_path / "txt"  # in another file, the first is named with its file
    folder.mkdir()
    records = [{"ClueWeb22-ID": d.id, "Clean-Text": d.contents} for d in clueweb22_documents(ikat_documents)[:3]]
    write_jsonl(folder / "en0000-00.json", records[:2])
    write_jsonl(folder / "en0000-01.json", [records[2], records[1]])
    with pytest.raises(InputError, match=rf"{re.escape(str(folder))}/en0000-01\.json:2: document id "
                                         rf"'{records[1]['ClueWeb22-ID']}' again \(first at .*/en0000-00\.json:2\)"):
        list(unique_ids(corpus := open_corpus(str(folder)), corpus.documents()))


@pytest.mark.parametrize("docid", ["doc d0", "tab\tid", "nul\0"])
def test_a_document_id_no_trec_run_line_can_hold_names_its_file_and_line(tmp_path, docid):
    """Refused where the corpus is read (segment, index, dense), not when a run is written after the search."""
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "ok", "contents": "a"}) + "\n" + json.dumps({"id": docid, "contents": "b"}))
    with pytest.raises(InputError, match=rf"docs\.jsonl:2: document id {re.escape(repr(docid))} is empty or holds "
                                         r"whitespace or a NUL byte, which a TREC run line cannot hold"):
        list(unique_ids(corpus := open_corpus(str(path)), corpus.documents()))


def test_an_empty_document_id_in_a_corpus_not_read_from_a_file_is_refused_naming_the_corpus():
    corpus = Corpus("made", lambda: iter([Document("x", "1"), Document("", "2")]))
    with pytest.raises(HarnessError, match=r"^corpus made: document id '' is empty or holds whitespace"):
        list(unique_ids(corpus, corpus.documents()))


def test_a_document_id_given_twice_in_a_corpus_not_read_from_a_file_names_their_numbers():
    corpus = Corpus("made", lambda: iter([Document("x", "1"), Document("y", "2"), Document("x", "3")]))
    with pytest.raises(HarnessError, match=r"corpus made: document id 'x' is given twice, as documents 1 and 3"):
        list(unique_ids(corpus, corpus.documents()))


def test_a_document_id_given_twice_is_said_as_soon_as_its_block_is_read_and_none_of_it_passed_on():
    """Not after the whole corpus: a dense index would have encoded all of it first."""
    def documents():
        yield from (Document("x", "1"), Document("y", "2"), Document("x", "3"))
        for number in itertools.count():
            assert number < 2 * harness.corpus._ID_BLOCK, "read on past the repeated id"
            yield Document(f"d{number}", "text")

    corpus, passed = Corpus("endless", documents), []
    with pytest.raises(HarnessError, match=r"corpus endless: document id 'x' is given twice, as documents 1 and 3"):
        passed.extend(unique_ids(corpus, corpus.documents()))
    assert passed == []


def test_a_block_of_long_documents_ends_at_its_text_size_not_its_count(monkeypatch):
    """A block waits in memory until its ids are checked: 16,384 web pages would be hundreds of MB."""
    monkeypatch.setattr(harness.corpus, "_BLOCK_TEXT", 1000)
    read = []

    def documents():
        for number in range(100):
            read.append(number)
            yield Document(f"d{number}", "x" * 400)

    corpus = Corpus("long", documents)
    first = next(unique_ids(corpus, corpus.documents()))
    assert first.id == "d0" and read == [0, 1, 2]  # 1,200 characters: the block ends at its third


def test_two_ids_sharing_a_hash_are_not_a_repeated_id(ikat_documents, monkeypatch):
    """Only the ids' 64-bit hashes are held; a shared one is told apart by reading the ids again."""
    corpus = Corpus("ikat", lambda: iter(ikat_documents))
    monkeypatch.setattr(harness.corpus, "hash", lambda docid: len(docid) % 3, raising=False)
    assert list(unique_ids(corpus, corpus.documents())) == ikat_documents
