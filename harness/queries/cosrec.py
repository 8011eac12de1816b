"""Strategies over a turn's stand-alone query variants (CoSRec: `Turn.extra["query_variants"]`).

- `variant:I`: the I-th variant (0-based, file order; default 0). An intent with fewer
  variants gives its last one, so that one stream covers every intent.
- `all_variants`: every distinct variant, joined.

Both read only the current turn. A turn without variants (a CoSRec utterance no annotator gave
an intent) falls back to its utterance; a benchmark with no variants at all is an error.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.queries import STRATEGIES
from harness.queries.history import build, current
from harness.topics.model import Conversation, Query


def _variants(conversation: Conversation, turn_index: int, strategy: str) -> tuple[str, ...]:
    turn = current(conversation, turn_index)
    if "query_variants" not in turn.extra:
        raise HarnessError(f"{strategy} needs query variants, and turn {turn.qid} has none (CoSRec benchmarks have them)")
    return tuple(turn.extra["query_variants"]) or (turn.utterance,)


@STRATEGIES.register("variant")
def variant(conversation: Conversation, turn_index: int, arg: str | None = None) -> Query:
    try:
        index = int(arg) if arg else 0
    except ValueError:
        index = -1
    if index < 0:
        raise HarnessError(f"variant takes a 0-based variant number (variant:2), not {arg!r}")
    variants = _variants(conversation, turn_index, "variant")
    return build(conversation, turn_index, [variants[min(index, len(variants) - 1)]])


@STRATEGIES.register("all_variants")
def all_variants(conversation: Conversation, turn_index: int, arg: str | None = None) -> Query:
    return build(conversation, turn_index, list(dict.fromkeys(_variants(conversation, turn_index, "all_variants"))))
