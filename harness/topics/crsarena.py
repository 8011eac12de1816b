"""CRSArena-Dial (Bernard & Joko et al., 2024): dialogues between crowd users and nine
conversational recommender systems, each ending with the user's sentiment.

There is nothing to retrieve and no qrels: the benchmark is read for its dialogues and
their satisfaction labels (`harness arena`). Each USER utterance becomes a `Turn` whose
qid is the file's utterance ID and whose response is the AGENT utterance(s) that follow it
(joined by a newline when the system spoke twice; None when the user spoke again first).
An `ArenaConversation` holds `system` (the CRS id), `user`, `sentiment` ("satisfied" or
"frustrated"), `setting` ("open" or "closed" crowdsourcing) and the system's `opening`.

Splits: `crsarena:open`, `crsarena:closed`; bare `crsarena` is both, open first (the
order of the CRSArena-Dial analysis' "global" results).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness import jsonl
from harness.errors import InputError, shown
from harness.paths import data_root
from harness.topics import ADAPTERS, Benchmark
from harness.topics._common import choose_split
from harness.topics.model import Conversation, Turn, declared_fields

SETTINGS = ("open", "closed")
# How a dialogue's user can leave: satisfaction counts the first; any other spelling would count as the second.
SENTIMENTS = ("satisfied", "frustrated")


@dataclass(frozen=True)
class ArenaConversation(Conversation):
    system: str = ""
    user: str = ""
    sentiment: str = ""
    setting: str = ""
    opening: str | None = None


FIELDS = declared_fields(
    ArenaConversation, system="the conversational recommender system's id (e.g. kbrd_opendialkg)",
    user="the crowd user's id", sentiment="how the user left: 'satisfied' or 'frustrated'",
    setting="'open' or 'closed' crowdsourcing (the split)",
    opening="what the system said before the user's first utterance, if anything")


def dialogue_file(setting: str) -> Path:
    return data_root() / "crsarena" / f"crs_arena_dial_{setting}.json"


def _field(record: dict, key: str, path: Path, where: str, kind: type = str):
    value = record.get(key) if isinstance(record, dict) else None
    if not isinstance(value, kind):
        raise InputError(path, f"expected a {kind.__name__} field {key!r}", record=where)
    return value


def _conversation(record: dict, path: Path, index: int, setting: str) -> ArenaConversation:
    where = str(index)
    conversation_id = _field(record, "conversation ID", path, where)
    where = f"{index} ({conversation_id})"
    system = _field(_field(record, "agent", path, where, dict), "id", path, where)
    user = _field(_field(record, "user", path, where, dict), "id", path, where)
    sentiment = _field(_field(record, "metadata", path, where, dict), "sentiment", path, where)
    if sentiment not in SENTIMENTS:
        raise InputError(path, f"sentiment {shown(sentiment)} is neither {' nor '.join(map(repr, SENTIMENTS))}",
                         record=where)
    turns: list[tuple[dict, list[str]]] = []  # (user utterance, agent replies)
    opening: list[str] = []
    for utterance in _field(record, "conversation", path, where, list):
        speaker = _field(utterance, "participant", path, where)
        text = _field(utterance, "utterance", path, where)
        if speaker == "USER":
            turns.append((utterance, []))
        elif speaker == "AGENT":
            (turns[-1][1] if turns else opening).append(text)
        else:
            raise InputError(path, f"participant {speaker!r} is neither USER nor AGENT", record=where)
    return ArenaConversation(
        id=conversation_id,
        turns=tuple(
            Turn(
                qid=_field(utterance, "utterance ID", path, where),
                utterance=utterance["utterance"],
                response="\n".join(replies) if replies else None,
            )
            for utterance, replies in turns
        ),
        system=system, user=user, sentiment=sentiment, setting=setting, opening="\n".join(opening) or None,
    )


def read_dialogues(path: str | Path, setting: str | None = None) -> tuple[ArenaConversation, ...]:
    """One dialogue file; `setting` defaults to 'open'/'closed' as named in the file name."""
    path = Path(path)
    if setting is None:
        setting = next((s for s in SETTINGS if s in path.stem), path.stem)
    records = jsonl.read_document(path)
    if not isinstance(records, list) or not records:  # [] would add no satisfaction, without a word
        raise InputError(path, "expected a JSON list of dialogues" + (", found an empty list" if records == [] else ""))
    return tuple(_conversation(record, path, index, setting) for index, record in enumerate(records))


@ADAPTERS.register("crsarena", "CRSArena-Dial: crowd users' dialogues with nine conversational recommender "
                   "systems and their satisfaction; no qrels (for `harness arena`); bare `crsarena` is both splits",
                   splits=SETTINGS, conversation_fields=FIELDS)
def crsarena(split: str | None) -> Benchmark:
    if split is not None:
        choose_split("crsarena", split)
    settings = SETTINGS if split is None else (split,)
    conversations = tuple(c for s in settings for c in read_dialogues(dialogue_file(s), s))
    return Benchmark(name=f"crsarena:{split}" if split else "crsarena", conversations=conversations)
