"""Passage segmentation speed: the fast splitter vs the spaCy senter reference, side by side.

    .venv/bin/python benchmarks/segment_speed.py [--processes 2] [--copies 5] [--splitters SPEC ...]

Splitters: `spacy` (en_core_web_sm senter, the official one), `sentencizer` (spaCy's
punctuation rules on the same tokenizer) and `fast` (BlingFire). Real text: the iKAT 2023
provenance passages (train + test, each taken as a document) and PragmatiCQA pages (each
topic's cited spans, one per line, under the page title: long, multi-paragraph documents,
many past the 10,000-character cut). Printed per text set: documents/s in one process, the
ratio to the reference, and the fraction of documents whose passages are identical to the
reference's. Then, per splitter, how many official iKAT passages it gives back from the
documents rebuilt out of consecutive official passages (harness/ikat/passages.py); pass
`--splitters spacy:/path/to/en_core_web_sm-3.4.1` to add the organisers' own model where you
have it. Then `segment_corpus` (JSONL out, atomic) over 1 and N worker processes with
the reference splitter, on `--copies` passes over both sets so that worker start-up does
not dominate.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from itertools import groupby
from pathlib import Path

from harness import topics
from harness.corpus import Corpus, Document
from harness.corpus.segment import get_splitter, segment_corpus, segment_documents
from harness.ikat.passages import agreement, rebuilt_documents


def ikat_passages() -> list[Document]:
    return [d for split in ("test", "train") for d in topics.load(f"ikat2023:{split}").corpus.documents()]


def pragmaticqa_pages() -> list[Document]:
    spans = [d for split in ("train", "val", "test") for d in topics.load(f"pragmaticqa:{split}").corpus.documents()]
    spans.sort(key=lambda d: d.title or "")
    return [
        Document(f"page-{i}", "\n".join(d.contents for d in group), title=title)
        for i, (title, group) in enumerate(groupby(spans, key=lambda d: d.title or ""))
    ]


def timed_passages(documents: list[Document], splitter_name: str) -> tuple[float, list[list[str]]]:
    splitter = get_splitter(splitter_name)
    list(segment_documents(documents[:20], splitter))  # warm up
    start = time.perf_counter()
    passages = [[p.contents for p in doc] for doc in segment_documents(documents, splitter)]
    return len(documents) / (time.perf_counter() - start), passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--copies", type=int, default=5, help="passes over the texts for segment_corpus")
    parser.add_argument("--splitters", nargs="*", default=[], help="more splitter specs, e.g. spacy:MODEL_PATH")
    args = parser.parse_args()
    splitters = ["sentencizer", "fast", *args.splitters]
    width = max(len(name) for name in splitters)

    sets = {"iKAT 2023 passages": ikat_passages(), "PragmatiCQA pages": pragmaticqa_pages()}
    print("documents/s in one process; ratio to the spaCy senter reference; share of documents")
    print("whose passages equal the reference's exactly\n")
    print(f"  text                        docs   {'splitter':<{width}}    docs/s    ratio   identical")
    for name, documents in sets.items():
        reference_rate, reference = timed_passages(documents, "spacy")
        print(f"  {name:<26} {len(documents):5d}   {'spacy':<{width}} {reference_rate:9.1f}     1.00      100.0%")
        for splitter in splitters:
            rate, passages = timed_passages(documents, splitter)
            same = sum(a == b for a, b in zip(reference, passages)) / len(documents)
            print(f"  {'':<26} {'':5}   {splitter:<{width}} {rate:9.1f}  {rate / reference_rate:7.2f}   {same:9.1%}")

    rebuilt = rebuilt_documents()
    print(f"\nofficial iKAT 2023 passages given back ({len(rebuilt)} documents rebuilt from consecutive passages)")
    for splitter in ["spacy", *splitters]:
        segmented = segment_documents([r.document for r in rebuilt], get_splitter(splitter))
        print(f"  {splitter:<{width}}  {agreement(rebuilt, ([p.contents for p in doc] for doc in segmented))}")

    documents = (sets["PragmatiCQA pages"] + sets["iKAT 2023 passages"]) * args.copies
    corpus = Corpus("segment-bench", lambda: iter(documents))
    print(f"\nsegment_corpus, spacy reference, {len(documents)} documents ({args.copies} passes over both "
          "sets), worker start-up included")
    with tempfile.TemporaryDirectory() as folder:
        for processes in sorted({1, args.processes}):
            start = time.perf_counter()
            segment_corpus(corpus, Path(folder) / f"p{processes}.jsonl", processes=processes)
            print(f"  {processes} process(es): {len(documents) / (time.perf_counter() - start):8.1f} docs/s")


if __name__ == "__main__":
    main()
