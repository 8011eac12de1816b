"""Strategies over a turn's stand-alone query variants (CoSRec: `CosrecTurn.query_variants`).

- `variant:I`: the I-th variant (0-based, file order; default 0). An intent with fewer
  variants gives its last one, so that one stream covers every intent. cosrec-crowd's variants
  are its annotators' queries in annotator order: `variant:1` is the second annotator's query
  (or the first one's second intent), not a paraphrase of `variant:0`.
- `all_variants`: every distinct variant, joined.

Both read only the current turn. A turn without variants (a cosrec-crowd utterance no annotator
gave an intent: 277 of 2329) falls back to its utterance, said once in a note with the count; a
benchmark with no variants at all is an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError, counted, verb
from harness.queries import every_turn, register
from harness.queries.history import build, current
from harness.registry import AtLeast, Param
from harness.topics.cosrec import CosrecTurn
from harness.topics.model import Conversation, Query


def _variants(conversation: Conversation, turn_index: int, strategy: str) -> tuple[str, ...]:
    turn = current(conversation, turn_index)
    if not isinstance(turn, CosrecTurn):
        raise HarnessError(f"{strategy} needs query variants, and turn {turn.qid} has none (CoSRec benchmarks have them)")
    return turn.query_variants or (turn.utterance,)


def _fallbacks(conversations: Sequence[Conversation]) -> list[str]:
    """The turns _variants gives their utterance, counted: their queries look like any other's."""
    turns = [turn for conversation in conversations for turn in conversation.turns]
    bare = [turn.qid for turn in turns if isinstance(turn, CosrecTurn) and not turn.query_variants]
    if not bare:
        return []
    n = len(bare)
    return [f"{n} of {counted(len(turns), 'turn')} {verb(n)} no query variant (no annotator gave "
            f"{'it' if n == 1 else 'them'} an intent; first: {bare[0]}), so {verb(n, 'its', 'their')} query is "
            "the utterance as written"]


@register("variant", "the turn's I-th stand-alone query variant (CoSRec); a turn with none (cosrec-crowd chit-chat) "
          "gives its utterance, counted in a note", [
    Param("I", AtLeast(0), 0, "which variant, 0-based in file order (an intent with fewer gives its last); "
          "cosrec-crowd's are the annotators' queries in annotator order (1: the second annotator's, or the "
          "first one's second intent), not paraphrases of one intent")],
    topics=every_turn(lambda conversation, index: _variants(conversation, index, "variant")), notes=_fallbacks)
def variant(conversation: Conversation, turn_index: int, i: int = 0) -> Query:
    variants = _variants(conversation, turn_index, "variant")
    return build(conversation, turn_index, [variants[min(i, len(variants) - 1)]])


@register("all_variants", "every distinct stand-alone query variant of the turn, joined (CoSRec); a turn with "
          "none gives its utterance, counted in a note",
          topics=every_turn(lambda conversation, index: _variants(conversation, index, "all_variants")),
          notes=_fallbacks)
def all_variants(conversation: Conversation, turn_index: int) -> Query:
    return build(conversation, turn_index, list(dict.fromkeys(_variants(conversation, turn_index, "all_variants"))))
