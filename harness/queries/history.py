"""Query strategies that read the current turn and the turns before it.

What each reads (never a later turn; `tests/test_queries.py` checks this for every
registered strategy):

- `raw`: the current utterance.
- `manual` / `automatic`: the benchmark's resolved (manual) or automatic rewrite of the turn;
  a HarnessError names the first turn without one; an empty rewrite (iKAT 2023 12-1_12) is
  sent as it is, an empty query, with a warning on stderr.
- `all_history`: the earlier user utterances, then the current one.
- `first_plus_current`: the conversation's first utterance, then the current one.
- `with_responses[:K]`: as `all_history`, plus the system responses of the last K (default 1)
  earlier user turns, placed before the current utterance.
- `hqe[:BENCHMARK]`: history query expansion after Lin et al. (2020), see `hqe`.

"Earlier user turns" are the user turns of the dialogue before the current one
(`Conversation.dialogue`: CoSRec lists several intents, and their personalised copies, of one
user utterance as separate turns, which share the utterance and its response and count once; those
of the current utterance not at all) whose utterance differs from the current utterance, each
distinct utterance once. `Query.context` lists the texts used, in
the order they appear in the query.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness.errors import HarnessError
from harness.queries import every_turn, register
from harness.registry import AtLeast, Param
from harness.topics.model import Conversation, Query, Turn


def current(conversation: Conversation, turn_index: int) -> Turn:
    if not 0 <= turn_index < len(conversation.turns):
        raise HarnessError(f"conversation {conversation.id} has no turn {turn_index}")
    return conversation.turns[turn_index]


def earlier_turns(conversation: Conversation, turn_index: int) -> list[Turn]:
    """One turn per distinct earlier user utterance (the last such turn), in order: the dialogue
    before the turn (`Conversation.dialogue`, as ir_datasets' query records hold it), less repeats."""
    now = current(conversation, turn_index).utterance
    last: dict[str, tuple[int, Turn]] = {}
    for position, turn in enumerate(conversation.dialogue(turn_index)):
        if turn.utterance != now:
            last[turn.utterance] = (position, turn)
    return [turn for _, turn in sorted(last.values(), key=lambda pair: pair[0])]


def build(conversation: Conversation, turn_index: int, pieces: Iterable[str]) -> Query:
    """The query made of `pieces` (empty ones dropped), joined by spaces."""
    pieces = tuple(piece for piece in pieces if piece and piece.strip())
    turn = conversation.turns[turn_index]
    return Query(turn.qid, " ".join(pieces), conversation.id, turn_index, pieces)


@register("raw", "the current utterance as it is")
def raw(conversation: Conversation, turn_index: int) -> Query:
    return build(conversation, turn_index, [current(conversation, turn_index).utterance])


def _rewrite(kind: str, conversation: Conversation, turn_index: int) -> Query:
    """The benchmark's own rewrite, as it is. An empty one (iKAT 2023 12-1_12's official
    rewrite) gives an empty query, which retrieves nothing, and a warning (`_empty_rewrite`)."""
    return build(conversation, turn_index, [_official(kind, current(conversation, turn_index))])


def _empty_rewrite(kind: str) -> Callable[[str], str]:
    """Why a turn's query under `kind` is empty: the stream warns of it, once a stream per turn."""
    return lambda qid: (f"turn {qid}: the benchmark's {kind} rewrite is empty, so its query is empty and retrieves "
                        "nothing (the strategy sends the official rewrite as it is; use another strategy for this "
                        "turn's text)")


def _official(kind: str, turn: Turn) -> str:
    """The turn's `kind` rewrite (manual or automatic), which the benchmark must give."""
    text = turn.manual_rewrite if kind == "manual" else turn.automatic_rewrite
    if text is None:
        raise HarnessError(f"turn {turn.qid} has no {kind} rewrite: this benchmark does not provide one for it")
    return text


# every turn has the rewrite (cast2019:train resolves only its first 23 turns)
@register("manual", "the benchmark's manual (resolved) rewrite of the turn",
          topics=every_turn(lambda conversation, index: _official("manual", conversation.turns[index])),
          empty=_empty_rewrite("manual"))
def manual(conversation: Conversation, turn_index: int) -> Query:
    return _rewrite("manual", conversation, turn_index)


@register("automatic", "the benchmark's automatic rewrite of the turn",
          topics=every_turn(lambda conversation, index: _official("automatic", conversation.turns[index])),
          empty=_empty_rewrite("automatic"))
def automatic(conversation: Conversation, turn_index: int) -> Query:
    return _rewrite("automatic", conversation, turn_index)


@register("all_history", "the earlier user utterances, then the current one")
def all_history(conversation: Conversation, turn_index: int) -> Query:
    earlier = [turn.utterance for turn in earlier_turns(conversation, turn_index)]
    return build(conversation, turn_index, [*earlier, current(conversation, turn_index).utterance])


@register("first_plus_current", "the conversation's first utterance, then the current one")
def first_plus_current(conversation: Conversation, turn_index: int) -> Query:
    utterance = current(conversation, turn_index).utterance
    first = conversation.turns[0].utterance
    return build(conversation, turn_index, [first, utterance] if first != utterance else [utterance])


@register("with_responses", "all_history plus the system responses of the last K earlier user turns", [
    Param("K", AtLeast(0), 1, "how many of the last earlier turns' responses to add")])
def with_responses(conversation: Conversation, turn_index: int, k: int = 1) -> Query:
    earlier = earlier_turns(conversation, turn_index)
    responses = [turn.response for turn in earlier[max(0, len(earlier) - k):] if turn.response] if k else []
    return build(conversation, turn_index,
                 [*(turn.utterance for turn in earlier), *responses, current(conversation, turn_index).utterance])


# --- HQE ---------------------------------------------------------------------------------

TOPIC_THRESHOLD = 0.7  # normalised IDF a word needs to be a topic keyword (kept for the whole conversation)
SUBTOPIC_THRESHOLD = 0.5  # ... to be a subtopic keyword (kept from the last SUBTOPIC_WINDOW turns)
AMBIGUITY_THRESHOLD = 0.7  # the current utterance is ambiguous when none of its words reaches this
SUBTOPIC_WINDOW = 3
_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    """spaCy's English stop words, from their own module (no imports of its own) run alone:
    importing spaCy for them loads its whole pipeline machinery, 1.5-6 s of every hqe run."""
    import importlib.util

    spacy = importlib.util.find_spec("spacy")  # found, not imported
    if spacy is None or not spacy.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'spacy'", name="spacy")  # the [segment] extra's hint
    path = Path(spacy.submodule_search_locations[0], "lang", "en", "stop_words.py")
    spec = importlib.util.spec_from_file_location("harness._spacy_en_stop_words", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.STOP_WORDS)


def _words(text: str) -> list[str]:
    stop = _stopwords()
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in stop))


@dataclass(frozen=True)
class _Background:
    """A benchmark's user utterances as word sets, and which conversations hold which turns."""

    words: dict[str, frozenset[str]]  # qid -> words (each qid once: CAsT 2022 paths share turns)
    df: Counter[str]
    qids_of: dict[str, frozenset[str]]  # conversation id -> its qids
    conversations_of: dict[str, frozenset[str]]  # qid -> ids of the conversations holding it


@lru_cache(maxsize=4)
def _benchmark(name: str) -> _Background:
    from harness.topics import load

    words: dict[str, frozenset[str]] = {}
    qids_of: dict[str, frozenset[str]] = {}
    conversations_of: dict[str, set[str]] = {}
    for conversation in load(name).conversations:
        qids_of[conversation.id] = frozenset(turn.qid for turn in conversation.turns)
        for turn in conversation.turns:
            words.setdefault(turn.qid, frozenset(_words(turn.utterance)))
            conversations_of.setdefault(turn.qid, set()).add(conversation.id)
    df = Counter(word for ws in words.values() for word in ws)
    return _Background(words, df, qids_of, {q: frozenset(c) for q, c in conversations_of.items()})


def _document_frequencies(conversation: Conversation, turn_index: int, benchmark: str | None) -> tuple[int, Counter[str]]:
    """Document frequencies over user utterances, none of them later in this conversation.

    With a benchmark, every conversation that is this one (same id) or shares a turn with it
    (the other paths of a CAsT 2022 tree) leaves the background, and this conversation's turns
    up to the current one join it: so the figures cannot depend on anything after the turn.
    """
    seen = {turn.qid: frozenset(_words(turn.utterance)) for turn in conversation.turns[: turn_index + 1]}
    if benchmark is None:
        return len(seen), Counter(word for words in seen.values() for word in words)
    background = _benchmark(benchmark)
    related = {conversation.id} | {c for qid in seen for c in background.conversations_of.get(qid, ())}
    removed = set().union(*(background.qids_of.get(c, frozenset()) for c in related))
    df = background.df.copy()
    for qid in removed:
        df.subtract(background.words[qid])
    for words in seen.values():
        df.update(words)
    return len(background.words) - len(removed) + len(seen), df


def _check_benchmark(benchmark: str | None) -> None:
    """hqe's BENCHMARK is loaded when a config names it, so that a misspelt one is an error at
    its key (`hqe:cast2091`), not half-way through a `harness run`."""
    if benchmark is not None:
        _benchmark(benchmark)


@register("hqe", "history query expansion (Lin et al., 2020): salient earlier words, then the utterance", [
    Param("BENCHMARK", str | None, None, "the benchmark whose utterances are the IDF background (default: "
          "this conversation so far)")], check=_check_benchmark, needs=("spacy",))
def hqe(conversation: Conversation, turn_index: int, benchmark: str | None = None) -> Query:
    """History query expansion (Lin et al., 2020, "Query Reformulation using Query History for
    Passage Retrieval in Conversational Search"), with IDF in place of BM25 term scores.

    Each word (lower-cased, spaCy stopwords dropped) gets idf = ln(1 + (N - df + .5)/(df + .5))
    over a background of user utterances, normalised by the idf of a word seen once (so 1 =
    rarest). The background is the utterances of `benchmark` (`hqe:cast2019`) with this
    conversation cut after the current turn (see `_document_frequencies`), or without one
    only this conversation up to the current turn (a weak background: words
    repeated across its turns look common). Query =
    topic keywords (normalised idf >= 0.7) of all earlier user turns + subtopic keywords
    (>= 0.5) of the last 3 earlier turns if the current utterance is ambiguous (no word >= 0.7)
    + the current utterance.
    """
    total, df = _document_frequencies(conversation, turn_index, benchmark)
    top = math.log(1 + (total - 0.5) / 1.5) if total > 1 else 1.0

    def salience(word: str) -> float:
        if total <= 1:
            return 1.0
        count = max(df[word], 1)
        return min(1.0, math.log(1 + (total - count + 0.5) / (count + 0.5)) / top)

    utterance = current(conversation, turn_index).utterance
    earlier = earlier_turns(conversation, turn_index)
    keywords = [w for turn in earlier for w in _words(turn.utterance) if salience(w) >= TOPIC_THRESHOLD]
    if all(salience(w) < AMBIGUITY_THRESHOLD for w in _words(utterance)):
        keywords += [w for turn in earlier[-SUBTOPIC_WINDOW:] for w in _words(turn.utterance)
                     if salience(w) >= SUBTOPIC_THRESHOLD]
    return build(conversation, turn_index, [*dict.fromkeys(keywords), utterance])
