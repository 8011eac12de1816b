"""What a judge is asked about, and what it answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STATUSES = ("ok", "unparseable", "failed", "missing")


@dataclass(frozen=True)
class Item:
    """One question to a judge. `key` identifies the pair (e.g. (qid, docid), or (qid, run,
    nugget id)) for recorded labels and outputs; `fields` fill the prompt template's named
    fields (e.g. query, context, passage)."""

    key: tuple[str, ...]
    fields: Mapping[str, str]


@dataclass(frozen=True)
class Judgment:
    """A judge's answer to one item. `label` is None unless status is "ok": "unparseable" (an
    answer off the scale, kept in `raw`), "failed" (no answer after the retries) or "missing"
    (a recorded-labels judge has none for the pair). `cached`: answered from the cache."""

    item_key: tuple[str, ...]
    label: int | None
    status: str
    raw: str
    cached: bool
