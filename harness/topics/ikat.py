"""TREC iKAT 2023, 2024 and 2025 topics: conversations with a personal text knowledge base.

Three topic formats share one model:

- 2023 / 2024: `{number, title, ptkb: {"1": text, ...}, turns: [{turn_id, utterance,
  resolved_utterance, response, ptkb_provenance: [int], response_provenance: [passage id]}]}`;
  2023 numbers are strings (`"9-1"`, topic-subtree), 2024 numbers integers.
- 2025: `{number, title, ptkb: [text, ...], responses: [{turn_id, user_utterance,
  resolved_utterance, response, relevant_ptkbs: [text], citations: [passage id]}]}`; a PTKB
  statement's id is its 1-based position in the list, and `relevant_ptkbs` (texts) are
  mapped back to those ids.

Turn ids are `<number>_<turn_id>` as the NIST qrels spell them (`9-1_3`, `0_8`). The PTKB
becomes `Conversation.personal`; the statements relevant to a turn are kept as
`IkatTurn.ptkb_provenance` (ids) and the passages behind the canonical response as
`Turn.provenance`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import jsonl
from harness.corpus import Corpus, Document
from harness.errors import HarnessError, InputError, other_form
from harness.paths import data_root, qrels_root
from harness.topics import ADAPTERS, Benchmark, load
from harness.topics._common import QidSet, choose_split, shipped_qrels
from harness.topics._json import Record, records
from harness.topics.model import ANSWER, Conversation, PersonalStatement, Turn, declared_fields
from harness.trec import Qrels, read_qrels


@dataclass(frozen=True)
class IkatTurn(Turn):
    ptkb_provenance: tuple[str, ...] = field(default=(), metadata=ANSWER)


FIELDS = declared_fields(IkatTurn, ptkb_provenance="ids of the PTKB statements relevant to the turn, as the "
                                                   "topics list them (Conversation.personal holds the statements)")


def topics_path(year: int, split: str = "test") -> Path:
    return data_root() / "ikat" / str(year) / "data" / f"{year}_{split}_topics.json"


def read_topics(path: Path) -> tuple[Conversation, ...]:
    """Any of the three iKAT topic formats (told apart per topic by its fields)."""
    qids = QidSet(path)
    conversations = tuple(_conversation(topic, qids) for topic in records(jsonl.read_document(path), path, "topic"))
    if not conversations:  # `[]`: every turn of a run would be 'unknown'
        raise InputError(path, "holds no topic: expected a JSON list of iKAT topics")
    return conversations


def load_topics(spec: str, flag: str = "") -> tuple[Conversation, ...]:
    """A topics file path, or a benchmark name such as `ikat2023`: what the CLI's `--topics` and a
    hosted task's `topics:` take. `flag` is how the caller's user gave it (the CLI's `--topics`); a
    config's error names its key path instead."""
    path = Path(spec)
    if not path.exists() and (path.suffix or len(path.parts) > 1):  # a file name, not a benchmark name
        given = f"{flag} {spec}" if flag else spec
        hint = other_form(path) or " (give a topics file or a benchmark name such as ikat2023)"
        raise HarnessError(f"{given}: no such file{hint}")
    return read_topics(path) if path.exists() else load(spec).conversations


def _conversation(topic: Record, qids: QidSet) -> Conversation:
    number = str(topic.get("number", str, int))
    topic = topic.relabel(f"topic {number}")
    if topic.has("responses"):  # 2025
        texts = topic.items("ptkb", str)
        personal = tuple(PersonalStatement(str(i), text) for i, text in enumerate(texts, start=1))
        turn_records, utterance_key = topic.records("responses", "turn"), "user_utterance"
    else:
        ptkb = topic.child("ptkb")
        personal = tuple(PersonalStatement(key, ptkb.text(key)) for key in ptkb.data)
        turn_records, utterance_key = topic.records("turns", "turn"), "utterance"
    by_text = {statement.text: statement.id for statement in personal}
    ids = {statement.id for statement in personal}
    turns = []
    for turn in turn_records:
        turn_id = turn.get("turn_id", int)
        turn = turn.relabel(f"topic {number}, turn {turn_id}")
        if turn.has("relevant_ptkbs"):
            unknown = [text for text in turn.items("relevant_ptkbs", str) if text not in by_text]
            if unknown:
                raise turn.error(f"relevant_ptkbs {unknown[0]!r} is not a statement of the topic's ptkb")
            ptkb_ids = tuple(by_text[text] for text in turn.items("relevant_ptkbs", str))
            provenance = turn.strings("citations")
        else:
            ptkb_ids = tuple(str(i) for i in turn.items("ptkb_provenance", int))
            unknown = [i for i in ptkb_ids if i not in ids]
            if unknown:
                raise turn.error(f"ptkb_provenance {unknown[0]} is not a statement id of the topic's ptkb")
            provenance = turn.strings("response_provenance")
        turns.append(
            IkatTurn(
                qid=qids.add(f"{number}_{turn_id}", turn.label),
                utterance=turn.text(utterance_key),
                manual_rewrite=turn.text("resolved_utterance"),
                response=turn.text("response"),
                provenance=provenance,
                ptkb_provenance=ptkb_ids,
            )
        )
    return Conversation(number, tuple(turns), title=topic.text("title"), personal=personal)


def passages_path(split: str) -> Path:
    return data_root() / "ikat" / "2023" / "data" / f"2023_{split}_topics_psg_text.jsonl"


def provenance_passages(split: str) -> Iterator[tuple[Record, str, str]]:
    """(record, passage id `<doc_id>:<passage_id>`, text as the file prints it: between newlines)."""
    path = passages_path(split)
    for line, value in jsonl.read(path):
        record = Record(value, path, "passage", line)
        passage_id = f"{record.text('doc_id')}:{record.get('passage_id', str, int)}"
        yield record, passage_id, record.text("passage_text")


def provenance_corpus(split: str) -> Corpus:
    """The ClueWeb22 passages the 2023 responses cite, ids in iKAT form `<doc_id>:<passage_id>`."""

    def documents():
        seen: set[str] = set()
        for record, docid, text in provenance_passages(split):
            if docid in seen:
                raise record.error(f"passage {docid!r} appears twice")
            seen.add(docid)
            yield Document(docid, text.strip())

    return Corpus(f"ikat2023:{split}-provenance", documents)


def ptkb_qrels(kind: str = "nist") -> Qrels:
    """Relevance of PTKB statements per 2023 turn: docids are the statement ids ("1", "2", ...).

    `nist` are the NIST assessors' judgments, `org` the organisers' own.
    """
    if kind not in {"nist", "org"}:
        raise ValueError(f"PTKB qrels kind must be 'nist' or 'org', not {kind!r}")
    return read_qrels(qrels_root() / "ikat" / f"ptkb_rel_{kind}")


@ADAPTERS.register("ikat2023", "TREC iKAT 2023: conversations with a personal text knowledge base (PTKB); "
                   "`test` judged by the NIST qrels, both splits bring their responses' provenance passages "
                   "as a corpus", splits=("test", "train"), fields=FIELDS)
def ikat2023(split: str | None) -> Benchmark:
    split = choose_split("ikat2023", split)
    return Benchmark(
        f"ikat2023:{split}",
        read_topics(topics_path(2023, split)),
        qrels=shipped_qrels("ikat", "2023-qrels.all-turns.txt") if split == "test" else None,
        corpus=provenance_corpus(split),
    )


@ADAPTERS.register("ikat2024", "TREC iKAT 2024: conversations with a PTKB, judged by the NIST qrels",
                   splits=("test",), fields=FIELDS)
def ikat2024(split: str | None) -> Benchmark:
    choose_split("ikat2024", split)
    return Benchmark("ikat2024:test", read_topics(topics_path(2024)), qrels=shipped_qrels("ikat", "2024-qrels.txt"))


@ADAPTERS.register("ikat2025", "TREC iKAT 2025: conversations with a PTKB; no qrels shipped (queries can be "
                   "exported and run, not scored)", splits=("test",), fields=FIELDS)
def ikat2025(split: str | None) -> Benchmark:
    choose_split("ikat2025", split)
    return Benchmark("ikat2025:test", read_topics(topics_path(2025)))
