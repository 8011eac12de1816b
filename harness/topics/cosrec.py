"""CoSRec (CAMEO-22/CoSRec): conversational search and recommendation over products.

Files are JSON lines `{"<conversation id>": value}` (see data/cosrec/README.md). A
conversation is text with one utterance per line, `U: ...` (user) or `S: ...` (system); a
user turn's response is the system line that follows it.

`cosrec-curated` (20 conversations, judged by qrels/cosrec/curated.qrels): one Turn per
labelled intent (a `CosrecIntent`), qid = the intent id `<conversation>_<utterance>_<index>`,
with `type` (search | recommendation | product_details), `query_variants`, `utterance_index`
(its depth: `Turn.depth`, so that an utterance's intents and copies are one turn depth);
`manual_rewrite` is the canonical stand-alone formulation, which the README defines as the
longest variant (first on ties). Each recommendation intent is followed by its personalised
copies `<intent>#<k>`, one per user of the conversation, users ordered lexically by id
(README): their variants are the intent's variants followed by the user's profile keywords,
as the pools were built; they add `user` and `keywords`. The shipped qrels judge one copy
more per intent than keywords.jsonl/profiles.jsonl list users (`#0..#3` for 3 users, in all
20 conversations), while the README maps `k` to the k-th user. We keep that mapping for the
listed users and emit the extra last copy `#<n users>` with `user=None` and no keywords (the
plain stand-alone formulation), so that every judged qid has a query; which user it stands
for upstream is unknown. The 24 user utterances without an intent (closing chit-chat such
as "Thank you so much for your help!") are not turns: every curated turn is an intent with
a canonical formulation. `Conversation.personal` holds each user's profile
summary (statement id = user id), `CosrecConversation.keywords_by_user` each user's keywords.

`cosrec-crowd` (291 conversations, no qrels): one Turn per user utterance (a
`CosrecUtterance`), qid `<conversation>_<utterance>`, `annotations` = per annotator the
`Intent`s (intent type, query) as labelled; `query_variants` are all annotators' queries (first
occurrence order) and `manual_rewrite` the longest of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import jsonl
from harness.errors import InputError
from harness.paths import data_root
from harness.topics import ADAPTERS, Benchmark
from harness.topics._common import QidSet, choose_split, shipped_qrels
from harness.topics._json import Record, single_entry
from harness.topics.model import Conversation, PersonalStatement, Turn, declared_fields

INTENT_TYPES = ("search", "recommendation", "product_details")


@dataclass(frozen=True)
class CosrecTurn(Turn):
    """A CoSRec turn: the stand-alone formulations of what the user asks (`variant:I`, `all_variants`)."""

    query_variants: tuple[str, ...] = ()
    utterance_index: int = 0


@dataclass(frozen=True)
class CosrecIntent(CosrecTurn):
    """cosrec-curated: one labelled intent of a user utterance (or its copy for one user)."""

    type: str = ""  # search | recommendation | product_details
    user: str | None = None
    keywords: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Intent:
    """One intent an annotator labelled."""

    type: str  # search | recommendation | product_details
    query: str


@dataclass(frozen=True)
class CosrecUtterance(CosrecTurn):
    """cosrec-crowd: one user utterance with every annotator's intents."""

    annotations: tuple[tuple[Intent, ...], ...] = ()


@dataclass(frozen=True)
class CosrecConversation(Conversation):
    keywords_by_user: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)


VARIANTS = {"query_variants": "stand-alone formulations of the request (file order; `variant:I` takes the I-th)",
            "utterance_index": "0-based position of the user utterance in the dialogue"}
USER = ("the user a personalised copy `<intent>#<k>` is for: the conversation's k-th user id in lexical order "
        "(None: a plain intent, or the extra last copy `#<n users>` the qrels judge, whose user the data do not name)")
CONVERSATION_FIELDS = declared_fields(CosrecConversation, keywords_by_user="user id -> that user's profile keywords")


def folder(part: str) -> Path:
    return data_root() / "cosrec" / "dataset" / part


def _by_conversation(path: Path) -> dict[str, tuple[int, Any]]:
    """conversation id -> (line, value) for a `{"<id>": value}` JSON-lines file."""
    entries: dict[str, tuple[int, Any]] = {}
    for line, value in jsonl.read(path):
        key, inner = single_entry(value, path, line)
        if key in entries:
            raise InputError(path, f"conversation {key!r} appears twice", line=line)
        entries[key] = (line, inner)
    return entries


def _dialogue(path: Path, line: int, conversation: str, text: Any) -> list[tuple[str, str | None]]:
    """(user utterance, the system lines that follow it joined by newlines, or None).

    Nine crowd conversations have two system lines in a row; they form one response.
    """
    if not isinstance(text, str):
        raise InputError(path, "expected the conversation text as a string", line=line, record=conversation)
    pairs: list[tuple[str, str | None]] = []
    for number, utterance in enumerate(text.split("\n"), start=1):
        speaker, _, content = utterance.partition(": ")
        if speaker == "U":
            pairs.append((content.strip(), None))
        elif speaker == "S" and pairs:
            user, response = pairs[-1]
            pairs[-1] = (user, content.strip() if response is None else f"{response}\n{content.strip()}")
        else:
            raise InputError(path, f"utterance {number} should start with 'U: ', or 'S: ' after a user utterance",
                             line=line, record=conversation)
    return pairs


def _users(path: Path, entries: dict[str, tuple[int, Any]], conversation: str, kind: type) -> dict[str, Any]:
    """user id -> value (keywords list or profile text), sorted by user id; {} if absent."""
    if conversation not in entries:
        return {}
    line, value = entries[conversation]
    record = Record(value, path, conversation, line)
    users = {}
    for user in sorted(record.data):
        users[user] = record.strings(user) if kind is list else record.text(user)
    return users


def _canonical(variants: Iterable[str]) -> str | None:
    return max(variants, key=len, default=None)


def _type(record: Record) -> str:
    kind = record.text("type")
    if kind not in INTENT_TYPES:
        raise record.error(f"intent type should be one of {', '.join(INTENT_TYPES)}, found {kind!r}")
    return kind


def _profiles(part: str) -> tuple[dict, Path, dict, Path]:
    keywords_path, profiles_path = folder(part) / "keywords.jsonl", folder(part) / "profiles.jsonl"
    return _by_conversation(keywords_path), keywords_path, _by_conversation(profiles_path), profiles_path


def read_curated() -> tuple[Conversation, ...]:
    conversations_path, intents_path = folder("curated") / "conversations.jsonl", folder("curated") / "intents.jsonl"
    dialogues = _by_conversation(conversations_path)
    keywords, keywords_path, profiles, profiles_path = _profiles("curated")
    qids = QidSet(intents_path)
    result = []
    for conversation, (line, labelled) in _by_conversation(intents_path).items():
        if conversation not in dialogues:
            raise InputError(intents_path, f"conversation {conversation!r} is not in {conversations_path.name}", line=line)
        pairs = _dialogue(conversations_path, dialogues[conversation][0], conversation, dialogues[conversation][1])
        users = _users(keywords_path, keywords, conversation, list)
        wrapper = Record({"utterances": labelled}, intents_path, conversation, line)
        intents_of: dict[int, list[Record]] = {}
        for entry in wrapper.records("utterances", "utterance"):
            index = entry.get("utterance", int)
            if not 0 <= index < len(pairs):
                raise entry.error(f"utterance {index} is not a user utterance of the conversation ({len(pairs)})")
            intents_of[index] = entry.records("intents", "intent")
        turns: list[Turn] = []
        for index, (utterance, response) in enumerate(pairs):
            for intent in intents_of.get(index, []):
                intent_id = intent.text("id")
                intent = intent.relabel(f"{conversation}, intent {intent_id}")
                variants = intent.strings("query_variants")
                if not variants:
                    raise intent.error("'query_variants' is empty")
                kind = _type(intent)
                base = CosrecIntent(qids.add(intent_id, intent.label), utterance, manual_rewrite=_canonical(variants),
                                    response=response, query_variants=variants, utterance_index=index, depth=index + 1,
                                    type=kind)
                turns.append(base)
                if kind != "recommendation":
                    continue
                for k, (user, words) in enumerate([*users.items(), (None, ())]):
                    personal = tuple(f"{variant} {' '.join(words)}".strip() for variant in variants)
                    turns.append(replace(base, qid=qids.add(f"{intent_id}#{k}", intent.label),
                                         manual_rewrite=_canonical(personal), query_variants=personal, user=user,
                                         keywords=tuple(words)))
        summaries = _users(profiles_path, profiles, conversation, str)
        result.append(CosrecConversation(conversation, tuple(turns),
                                         personal=tuple(PersonalStatement(u, s) for u, s in summaries.items()),
                                         keywords_by_user=users))
    return tuple(result)


def read_crowd() -> tuple[Conversation, ...]:
    conversations_path = folder("crowd") / "conversations.jsonl"
    annotations_path = folder("crowd") / "intent_annotations.jsonl"
    dialogues = _by_conversation(conversations_path)
    keywords, keywords_path, profiles, profiles_path = _profiles("crowd")
    result = []
    for conversation, (line, labelled) in _by_conversation(annotations_path).items():
        if conversation not in dialogues:
            raise InputError(annotations_path, f"conversation {conversation!r} is not in {conversations_path.name}",
                             line=line)
        pairs = _dialogue(conversations_path, dialogues[conversation][0], conversation, dialogues[conversation][1])
        wrapper = Record({"utterances": labelled}, annotations_path, conversation, line)
        annotated: dict[int, tuple[tuple[Intent, ...], ...]] = {}
        for entry in wrapper.records("utterances", "utterance"):
            index = entry.get("utterance", int)
            if not 0 <= index < len(pairs):
                raise entry.error(f"utterance {index} is not a user utterance of the conversation ({len(pairs)})")
            per_annotator = []
            for annotator, intents in enumerate(entry.items("intent_annotations", list)):
                holder = Record({"intents": intents}, annotations_path, f"{entry.label}, annotator {annotator}", line)
                per_annotator.append(tuple(Intent(_type(i), i.text("query"))
                                           for i in holder.records("intents", "intent")))
            annotated[index] = tuple(per_annotator)
        turns = []
        for index, (utterance, response) in enumerate(pairs):
            annotations = annotated.get(index, ())
            variants = tuple(dict.fromkeys(i.query for a in annotations for i in a))
            turns.append(CosrecUtterance(f"{conversation}_{index}", utterance, manual_rewrite=_canonical(variants),
                                         response=response, query_variants=variants, utterance_index=index,
                                         depth=index + 1, annotations=annotations))
        summaries = _users(profiles_path, profiles, conversation, str)
        result.append(CosrecConversation(conversation, tuple(turns),
                                         personal=tuple(PersonalStatement(u, s) for u, s in summaries.items()),
                                         keywords_by_user=_users(keywords_path, keywords, conversation, list)))
    return tuple(result)


@ADAPTERS.register("cosrec-curated", "CoSRec curated: conversational search and recommendation, one turn per "
                   "labelled intent; qrels over MS MARCO v2.1 segments (search) and Amazon ASINs (personalised "
                   "recommendation)", splits=("test",), conversation_fields=CONVERSATION_FIELDS,
                   fields=declared_fields(CosrecIntent, **VARIANTS, type=f"the intent's type: {', '.join(INTENT_TYPES)}",
                                          user=USER,
                                          keywords="that user's profile keywords, appended to every variant"))
def cosrec_curated(split: str | None) -> Benchmark:
    choose_split("cosrec-curated", split)
    return Benchmark("cosrec-curated:test", read_curated(), qrels=shipped_qrels("cosrec", "curated.qrels"))


@ADAPTERS.register("cosrec-crowd", "CoSRec crowd: one turn per user utterance with every annotator's intents; "
                   "no qrels", splits=("test",), conversation_fields=CONVERSATION_FIELDS,
                   fields=declared_fields(CosrecUtterance, **VARIANTS,
                                          annotations="per annotator, the intents labelled (intent type, query)"))
def cosrec_crowd(split: str | None) -> Benchmark:
    choose_split("cosrec-crowd", split)
    return Benchmark("cosrec-crowd:test", read_crowd())
