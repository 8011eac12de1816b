"""Strategies over a turn's stand-alone query variants (CoSRec: `CosrecTurn.query_variants`).

- `variant:I`: the I-th variant (0-based, file order; default 0). An intent with fewer
  variants gives its last one, so that one stream covers every intent.
- `all_variants`: every distinct variant, joined.

Both read only the current turn. A turn without variants (a CoSRec utterance no annotator gave
an intent) falls back to its utterance; a benchmark with no variants at all is an error.
"""

from __future__ import annotations

from harness.errors import HarnessError
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


@register("variant", "the turn's I-th stand-alone query variant (CoSRec)", [
    Param("I", AtLeast(0), 0, "which variant, 0-based in file order (an intent with fewer gives its last)")],
    topics=every_turn(lambda conversation, index: _variants(conversation, index, "variant")))
def variant(conversation: Conversation, turn_index: int, i: int = 0) -> Query:
    variants = _variants(conversation, turn_index, "variant")
    return build(conversation, turn_index, [variants[min(i, len(variants) - 1)]])


@register("all_variants", "every distinct stand-alone query variant of the turn, joined (CoSRec)",
          topics=every_turn(lambda conversation, index: _variants(conversation, index, "all_variants")))
def all_variants(conversation: Conversation, turn_index: int) -> Query:
    return build(conversation, turn_index, list(dict.fromkeys(_variants(conversation, turn_index, "all_variants"))))
