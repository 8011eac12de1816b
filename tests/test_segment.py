"""Passage segmentation as the TREC iKAT organisers' spaCy chunker does it."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from itertools import groupby

import pytest

from harness import topics
from harness.cli import main
from harness.errors import HarnessError
from harness.corpus import Corpus, Document
from harness.corpus.readers import open_corpus
from harness.corpus.segment import (
    MAX_CHARS,
    get_splitter,
    prepare,
    segment_corpus,
    segment_documents,
)
from harness.paths import data_root


@pytest.fixture(scope="module")
def senter():
    return get_splitter("spacy")


@pytest.fixture(scope="module")
def pragmaticqa_pages() -> list[Document]:
    """Real multi-sentence documents: each topic's cited spans, newline-separated like page text."""
    spans = list(topics.load("pragmaticqa:val").corpus.documents())
    pages = []
    for title, group in groupby(sorted(spans, key=lambda d: d.title or ""), key=lambda d: d.title or ""):
        pages.append(Document(f"page-{len(pages)}", "\n".join(d.contents for d in group), title=title))
    return pages


def ikat_consecutive_pairs() -> list[tuple[Document, list[str]]]:
    """Documents rebuilt from two consecutive official passages of one ClueWeb22 document.

    Passage i+1 repeats the last 5 sentences of passage i, so passage i followed by the
    unrepeated tail of i+1 is 15 (or fewer, at the document's end) consecutive sentences
    of the original: the reference chunker must turn it back into exactly [i, i+1].
    The files print each passage between newlines, as the organisers' trecweb writer does.
    """
    passages: dict[str, dict[int, str]] = defaultdict(dict)
    for split in ("test", "train"):
        path = data_root() / "ikat" / "2023" / "data" / f"2023_{split}_topics_psg_text.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            passages[record["doc_id"]][int(record["passage_id"])] = record["passage_text"][1:-1]
    pairs = []
    for docid, texts in passages.items():
        for i, first in texts.items():
            second = texts.get(i + 1)
            if second is None:
                continue
            overlaps = [
                n for n in range(1, min(len(first), len(second)) + 1)
                if first.endswith(second[:n]) and (n == len(first) or first[-n - 1] == " ")
            ]  # fmt: skip
            if overlaps:
                rebuilt = first + second[max(overlaps) :]
                pairs.append((Document(f"{docid}:{i}+", rebuilt), [first, second]))
    return pairs


def test_reproduces_official_ikat_passages(senter):
    """Measured: 200 of 263 pairs (76%) whitespace-normalised. The organisers segmented with
    en_core_web_sm 3.4.1 (iKAT 2023/scripts/requirements.txt); the 3.8.0 senter places a few
    boundaries differently, and rebuilding joins sentences with one space where the page
    may have had more, so neither the model nor the test can reach 100%."""
    pairs = ikat_consecutive_pairs()
    assert len(pairs) > 250
    segmented = segment_documents([document for document, _ in pairs], senter)
    normalised = lambda texts: [" ".join(text.split()) for text in texts]  # noqa: E731
    same = sum(
        normalised([p.contents for p in passages]) == normalised(expected)
        for passages, (_, expected) in zip(segmented, pairs)
    )
    assert same / len(pairs) >= 0.74


def test_windows_of_ten_sentences_with_stride_five(senter, pragmaticqa_pages):
    pages = [page for page in pragmaticqa_pages if len(prepare(page.contents)) > 3000][:20]
    assert pages
    for page, passages in zip(pages, segment_documents(pages, senter)):
        sentences = next(senter.split([prepare(f"{page.title}\n{page.contents}")]))
        assert len(sentences) > 15
        for i, passage in enumerate(passages):
            assert passage.contents == " ".join(sentences[5 * i : 5 * i + 10])
        # the last window ends at the last sentence, and is the first window to do so
        assert passages[-1].contents.endswith(sentences[-1])
        assert 5 * (len(passages) - 2) + 10 < len(sentences) <= 5 * (len(passages) - 1) + 10


def test_ids_and_md5(senter, pragmaticqa_pages):
    passages = next(segment_documents(pragmaticqa_pages[:1], senter))
    page = pragmaticqa_pages[0]
    assert [p.id for p in passages] == [f"{page.id}:{i}" for i in range(len(passages))]
    assert all(p.md5 == hashlib.md5(p.contents.encode("utf-8")).hexdigest() for p in passages)


def test_only_first_10000_characters_one_line(senter, pragmaticqa_pages):
    page = max(pragmaticqa_pages, key=lambda d: len(d.contents))
    assert len(page.contents) > 2 * MAX_CHARS
    passages = next(segment_documents([page], senter))
    kept = prepare(f"{page.title}\n{page.contents}")
    assert len(kept) == MAX_CHARS
    assert all("\n" not in p.contents for p in passages)
    assert " ".join(passages[-1].contents.split()[-5:]) in " ".join(kept.split())
    assert kept.rstrip().endswith(passages[-1].contents.split()[-1])


def test_empty_document_has_no_passages(senter):
    assert next(segment_documents([Document("empty", " \n ")], senter)) == []


@pytest.mark.parametrize("name", ["sentencizer", "fast"])
def test_faster_splitters_same_interface(name, pragmaticqa_pages):
    if name == "fast":
        pytest.importorskip("blingfire", reason="the fast splitter is BlingFire")
    passages = next(segment_documents(pragmaticqa_pages[:1], get_splitter(name)))
    assert len(passages) > 1 and passages[0].id == f"{pragmaticqa_pages[0].id}:0"


def test_unknown_splitter_fails_before_any_work(tmp_path, pragmaticqa_pages):
    corpus = Corpus("pages", lambda: iter(pragmaticqa_pages))
    with pytest.raises(HarnessError, match="unknown sentence splitter 'nope'"):
        segment_corpus(corpus, tmp_path / "out.jsonl", splitter="nope", processes=2)
    with pytest.raises(HarnessError, match="spaCy model no_such_model is not installed"):
        segment_corpus(corpus, tmp_path / "out.jsonl", splitter="spacy:no_such_model", processes=2)
    assert list(tmp_path.iterdir()) == []


def test_segment_corpus_two_processes_matches_one(tmp_path, pragmaticqa_pages):
    corpus = Corpus("pages", lambda: iter(pragmaticqa_pages[:40]))
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    count = segment_corpus(corpus, one, processes=1)
    assert segment_corpus(corpus, two, processes=2) == count
    assert one.read_bytes() == two.read_bytes()
    records = [json.loads(line) for line in one.read_text(encoding="utf-8").splitlines()]
    assert len(records) == count and set(records[0]) == {"id", "contents", "md5"}
    # the output is itself a corpus the index command reads
    assert [d.id for d in open_corpus(str(one)).documents()] == [r["id"] for r in records]


def test_cli_segment(tmp_path, capsys):
    out = tmp_path / "ikat-passages.jsonl"
    assert main(["segment", "benchmark:ikat2023:train", "--out", str(out), "--processes", "1"]) == 0
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids[0] == "clueweb22-en0034-09-03452:1:0"
    assert "passages written" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*.tmp"))
