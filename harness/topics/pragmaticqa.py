"""PragmatiCQA (Qi et al., 2023): conversational QA over fan-wiki communities.

Each line of `<split>.jsonl` is one conversation `{topic, genre, community, qas: [{q, a,
a_meta: {literal_obj, pragmatic_obj}}]}`. Every answer cites spans of the community's pages:
`literal_obj` spans answer the question as asked, `pragmatic_obj` spans what a cooperative
answerer adds. Spans carry the DOM keys of the elements they start and end in.

Decisions (the upstream data is silent on them):

- Conversation id = the 1-based line number in the split file, qid = `<line>_<question
  number>` (1-based), e.g. `12_3` = third question of line 12 of val.jsonl.
- A cited span is a document with id `<startKey>:<endKey>:<sha1 of its whitespace-normalised
  text, 8 hex>`: the same DOM range is cited with different texts (~25% of key pairs), so the
  keys alone do not identify the passage. The corpus holds each span once per split, in
  first-cited order, titled with the community name.
- Derived qrels: a turn's literal spans at grade 2, its pragmatic spans that are not also
  literal at grade 1. A turn with no usable span is unjudged.
- Unusable spans are skipped and counted (`span_counts`), never indexed: null/missing keys
  (`broken`), scrape errors such as "Cannot GET /wiki/..." (`scrape_error`), spans without a
  DOM key (integer key 0 marks the yes/no answers; an older `startId` format has no keys):
  `no_key`; and whitespace-only text (`empty`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harness import jsonl
from harness.corpus import Corpus, Document
from harness.paths import data_root
from harness.topics import ADAPTERS, Benchmark
from harness.topics._common import choose_split
from harness.topics._json import Record
from harness.topics.model import ANSWER, Conversation, Turn, declared_fields
from harness.trec import Qrels

SPLITS = ("val", "train", "test")  # the default first
_SCRAPE_ERROR = re.compile(r"annot GET|GET /|wiki/|%20")


@dataclass(frozen=True)
class SpanCounts:
    """What happened to the cited spans of one split (each citation counted once)."""

    cited: int
    indexed: int  # citations that became (or matched) a corpus document
    broken: int
    scrape_error: int
    no_key: int
    empty: int

    @property
    def skipped(self) -> int:
        return self.broken + self.scrape_error + self.no_key + self.empty


@dataclass(frozen=True)
class PragmatiCQATurn(Turn):
    literal: tuple[str, ...] = field(default=(), metadata=ANSWER)
    pragmatic: tuple[str, ...] = field(default=(), metadata=ANSWER)


@dataclass(frozen=True)
class PragmatiCQAConversation(Conversation):
    genre: str = ""
    community: str = ""


FIELDS = declared_fields(PragmatiCQATurn, literal="the spans (corpus ids) answering the question as asked (grade 2)",
                         pragmatic="the spans a cooperative answerer adds, not also literal (grade 1)")
CONVERSATION_FIELDS = declared_fields(PragmatiCQAConversation, genre="the community's genre (e.g. TV)",
                                      community="the fan-wiki community the answers cite")


@dataclass(frozen=True)
class _Parsed:
    conversations: tuple[Conversation, ...]
    documents: tuple[Document, ...]
    judgments: dict[str, dict[str, int]]
    counts: SpanCounts


def split_path(split: str) -> Path:
    return data_root() / "pragmaticqa" / f"{split}.jsonl"


def span_counts(split: str = "val") -> SpanCounts:
    return _parse(split_path(choose_split("pragmaticqa", split))).counts


def _span_docid(span: Record, text: str) -> str:
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    return f"{span.data['startKey']}:{span.data['endKey']}:{digest}"


def _skip_reason(span: Record) -> str | None:
    """Why a cited span cannot be a document, or None when it can."""
    text = span.text("text")
    if _SCRAPE_ERROR.search(text):
        return "scrape_error"
    if not span.has("startKey") and span.has("startId"):
        return "no_key"
    start = span.get("startKey", str, int, optional=True)
    end = span.get("endKey", str, int, optional=True)
    if start is None or end is None:
        return "broken"
    if not (isinstance(start, str) and isinstance(end, str) and start and end):
        return "no_key"
    if not text.strip():
        return "empty"
    return None


@lru_cache(maxsize=8)
def _parse(path: Path) -> _Parsed:
    conversations: list[Conversation] = []
    documents: dict[str, Document] = {}
    judgments: dict[str, dict[str, int]] = {}
    counts: Counter[str] = Counter()
    for line, value in jsonl.read(path):
        record = Record(value, path, f"conversation {line}", line)
        community = record.text("community")
        turns = []
        for number, qa in enumerate(record.records("qas", "question"), start=1):
            qid = f"{line}_{number}"
            meta = qa.child("a_meta")
            grades: dict[str, int] = {}
            for kind, grade in (("literal_obj", 2), ("pragmatic_obj", 1)):
                for span in meta.records(kind, "span"):
                    counts["cited"] += 1
                    reason = _skip_reason(span)
                    if reason:
                        counts[reason] += 1
                        continue
                    text = " ".join(span.text("text").split())
                    docid = _span_docid(span, text)
                    documents.setdefault(docid, Document(docid, text, community))
                    counts["indexed"] += 1
                    grades[docid] = max(grade, grades.get(docid, 0))
            if grades:
                judgments[qid] = grades
            turns.append(
                PragmatiCQATurn(
                    qid=qid,
                    utterance=qa.text("q"),
                    response=qa.text("a"),
                    provenance=tuple(grades),
                    literal=tuple(d for d, g in grades.items() if g == 2),
                    pragmatic=tuple(d for d, g in grades.items() if g == 1),
                )
            )
        conversations.append(
            PragmatiCQAConversation(str(line), tuple(turns), title=record.text("topic"),
                                    genre=record.text("genre"), community=community)
        )
    fields = ("cited", "indexed", "broken", "scrape_error", "no_key", "empty")
    return _Parsed(tuple(conversations), tuple(documents.values()), judgments,
                   SpanCounts(**{name: counts[name] for name in fields}))


@ADAPTERS.register("pragmaticqa", "PragmatiCQA: conversational QA over fan wikis; corpus = the cited spans, qrels "
                   "derived from them (literal spans grade 2, pragmatic-only grade 1)", splits=SPLITS,
                   fields=FIELDS, conversation_fields=CONVERSATION_FIELDS)
def pragmaticqa(split: str | None) -> Benchmark:
    split = choose_split("pragmaticqa", split)
    parsed = _parse(split_path(split))
    name = f"pragmaticqa:{split}"
    return Benchmark(
        name,
        parsed.conversations,
        qrels=lambda: Qrels(f"{name} (derived)", {q: dict(g) for q, g in parsed.judgments.items()}),
        corpus=Corpus(f"{name}-spans", lambda: iter(parsed.documents)),
    )
