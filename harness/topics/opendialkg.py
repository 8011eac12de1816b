"""OpenDialKG movie/book recommendation dialogues, as processed by iEvaLM-CRS.

`<split>_data_processed.jsonl` has one line per recommendation turn: `{dialog_id, turn_id,
context: [utterances so far], entity: [entities mentioned so far], rec: [item names the
assistant recommends], resp}`. The context carries no speaker labels (and does not strictly
alternate), so the dialogue cannot be re-cut into user turns reliably. Hence:

- One Conversation per dialog_id, made of its recommendation turns in turn order (so the
  history strategies, which read the conversation's earlier turns, see earlier recommendation
  requests, not `context`: 1113 of the 1188 test turns are their conversation's first); the qid is
  `<dialog_id>_<turn_id>` as in `<split>_data_id.json`, and `turn_id` (the request's position
  among the dialogue's utterances, both speakers') is the turn's depth (`Turn.depth`).
  `Turn.utterance` is the last context utterance (the request the recommender answers),
  `Turn.response` the reply;
  an `OpenDialKGTurn` keeps the earlier context (`context`), the mentioned entities
  (`entities`) and the recommended names (`recommended`).
- The item corpus is `id2info.json` (docid = its key), one document per item: the name as
  title, its attributes (year, actor, director, genre, language, writer) merged with the
  item's facts in `kg.json` (reached through `entity2id.json`).
- Qrels: each recommended name mapped to the item with that exact name, grade 1. Names no item
  carries are counted (`unmapped_recommendations`), not judged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harness import jsonl
from harness.corpus import Corpus, Document
from harness.errors import InputError
from harness.paths import data_root
from harness.topics import ADAPTERS, Benchmark
from harness.topics._common import QidSet, choose_split
from harness.topics._json import Record
from harness.topics.model import ANSWER, Conversation, Turn, declared_fields
from harness.trec import Qrels

SPLITS = ("test", "train", "valid")  # the default first


@dataclass(frozen=True)
class OpenDialKGTurn(Turn):
    context: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    recommended: tuple[str, ...] = field(default=(), metadata=ANSWER)


FIELDS = declared_fields(OpenDialKGTurn, context="the dialogue's utterances before the request, in order (the "
                         "history strategies do not read it: they see the conversation's earlier turns, which are "
                         "its recommendation turns only)",
                         entities="the entities mentioned so far",
                         recommended="the item names the assistant recommends (the qrels map them to items)")


def folder() -> Path:
    return data_root() / "opendialkg" / "ievalm"


@dataclass(frozen=True)
class _Catalogue:
    documents: tuple[Document, ...]
    by_name: dict[str, str]  # item name -> docid


@lru_cache(maxsize=2)
def _catalogue(root: Path) -> _Catalogue:
    relations_path, entities_path, kg_path, info_path = (
        root / "relation2id.json", root / "entity2id.json", root / "kg.json", root / "id2info.json")
    relation_names = {rid: name for name, rid in _int_map(relations_path).items()}
    entity_ids = _int_map(entities_path)
    entity_names = {eid: name for name, eid in entity_ids.items()}
    kg = jsonl.read_document(kg_path)
    if not isinstance(kg, dict):
        raise InputError(kg_path, "expected an object: head entity id -> [[relation id, tail id], ...]")
    info = jsonl.read_document(info_path)
    if not isinstance(info, dict):
        raise InputError(info_path, "expected an object: item id -> item attributes")
    documents, by_name = [], {}
    for docid, value in info.items():
        item = Record(value, info_path, f"item {docid}")
        name = item.text("name")
        facts: dict[str, list[str]] = {}
        for key in item.data:
            if key != "name":
                raw = item.get(key, str, list)
                values = [raw] if isinstance(raw, str) else item.items(key, str)
                facts.setdefault(key, []).extend(values)
        for pair in kg.get(str(entity_ids.get(name)), []):
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, int) for x in pair)):
                raise InputError(kg_path, f"expected [relation id, tail id], found {pair!r}", record=name)
            relation, tail = pair
            if relation not in relation_names or tail not in entity_names:
                raise InputError(kg_path, f"unknown relation or entity id in {pair!r}", record=name)
            facts.setdefault(relation_names[relation], []).append(entity_names[tail])
        lines = [f"{key}: {', '.join(dict.fromkeys(values))}" for key, values in facts.items()]
        documents.append(Document(docid, "\n".join([name, *lines]), name))
        if name in by_name:
            raise item.error(f"item name {name!r} is also item {by_name[name]}")
        by_name[name] = docid
    return _Catalogue(tuple(documents), by_name)


def _int_map(path: Path) -> dict[str, int]:
    value = jsonl.read_document(path)
    if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
        raise InputError(path, "expected an object mapping names to integer ids")
    return value


def read_turns(path: Path) -> tuple[Conversation, ...]:
    qids = QidSet(path)
    dialogues: dict[str, list[tuple[int, Turn]]] = {}
    for line, value in jsonl.read(path):
        record = Record(value, path, "turn", line)
        dialog, turn_id = record.get("dialog_id", int), record.get("turn_id", int)
        record = record.relabel(f"dialog {dialog}, turn {turn_id}")
        context = record.strings("context")
        if not context:
            raise record.error("empty 'context': no request to answer")
        dialogues.setdefault(str(dialog), []).append((turn_id, OpenDialKGTurn(
                qid=qids.add(f"{dialog}_{turn_id}", record.label),
                utterance=context[-1],
                response=record.text("resp"), depth=turn_id,
                context=context[:-1], entities=record.strings("entity"), recommended=record.strings("rec"),
        )))
    return tuple(
        Conversation(dialog, tuple(turn for _, turn in sorted(turns, key=lambda pair: pair[0])))
        for dialog, turns in dialogues.items()
    )


def unmapped_recommendations(split: str = "test") -> Counter[str]:
    """Recommended names of the split that no catalogue item carries, with their counts."""
    return _judge(_split(split), folder())[1]


@lru_cache(maxsize=4)
def _turns(path: Path) -> tuple[Conversation, ...]:
    return read_turns(path)


def _judge(split: str, root: Path) -> tuple[dict[str, dict[str, int]], Counter[str]]:
    by_name = _catalogue(root).by_name
    judgments: dict[str, dict[str, int]] = {}
    unmapped: Counter[str] = Counter()
    for conversation in _turns(root / f"{split}_data_processed.jsonl"):
        for turn in conversation.turns:
            for name in turn.recommended:
                if name in by_name:
                    judgments.setdefault(turn.qid, {})[by_name[name]] = 1
                else:
                    unmapped[name] += 1
    return judgments, unmapped


def _split(split: str | None) -> str:
    return choose_split("opendialkg", split)


@ADAPTERS.register("opendialkg", "OpenDialKG movie and book recommendation dialogues (iEvaLM-CRS processing); "
                   "corpus = the item catalogue, qrels derived from the recommended names", splits=SPLITS,
                   fields=FIELDS)
def opendialkg(split: str | None) -> Benchmark:
    split, root = _split(split), folder()
    name = f"opendialkg:{split}"
    return Benchmark(
        name,
        _turns(root / f"{split}_data_processed.jsonl"),
        qrels=lambda: Qrels(f"{name} (derived)", _judge(split, root)[0]),
        corpus=Corpus("opendialkg-items", lambda: iter(_catalogue(root).documents)),
    )
