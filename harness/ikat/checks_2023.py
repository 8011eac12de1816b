"""Checks of the 2023 and 2024 run files: one JSON object as run.proto describes it.

From irlabamsterdam/iKAT 2023/scripts/run_validation (main.py, utils.py) and its 2024
version (run.proto adds `eval_response` and makes `ptkb_provenance` statement numbers).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from harness.ikat.checks import RUN_TYPES, Context, Finding, TopicInfo, check, error, warning
from harness.ikat.submission import (
    FLOAT32_MAX,
    PROVENANCE_LIMIT,
    YEARS,
    PassageProvenance,
    PTKBProvenance,
    Response,
    Submission,
    SubmissionTurn,
    checked_by,
    float32,
)


# --- the 2023/2024 structure: run.proto as protobuf's JSON parser reads it ----------------

# Field -> type: "string", "int32", "float", "bool", a nested message (dict), or [type] for
# a repeated field. As in proto3, a missing field takes its default (0, "", false, []).
_PASSAGE = {"id": "string", "text": "string", "score": "float", "used": "bool"}
_PTKB_2023 = {"id": "string", "text": "string", "score": "float"}
SCHEMAS: dict[int, dict] = {
    2023: {
        "run_name": "string",
        "run_type": "string",
        "turns": [{"turn_id": "string", "responses": [
            {"text": "string", "rank": "int32", "passage_provenance": [_PASSAGE], "ptkb_provenance": [_PTKB_2023]}
        ]}],
    },
    2024: {
        "run_name": "string",
        "run_type": "string",
        "eval_response": "bool",
        "turns": [{"turn_id": "string", "responses": [
            {"text": "string", "rank": "int32", "passage_provenance": [_PASSAGE], "ptkb_provenance": ["int32"]}
        ]}],
    },
}


def _camel(name: str) -> str:
    """protobuf's JSON name of a field (`turn_id` -> `turnId`), which its parser also accepts."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _scalar_problem(kind: str, value: Any) -> str | None:
    """Why protobuf's JSON parser (json_format.ParseDict) would refuse `value` for a field of
    type `kind`, if it would. Its rules are followed, odd ones included: `true` is a float
    (1.0), `"1_0"` an int32 or float (10), `" 1"` is no int32 (a space) but `" 1.5"` is a
    float. One deliberate difference: protobuf takes the quoted "NaN", "Infinity",
    "-Infinity" (and "inf", or "1e39" which overflows a float32) as scores; a score must
    order passages, so here a non-finite score is refused."""
    if kind == "string":
        if not isinstance(value, str):
            return f"{value!r} is not a string"
        return None if _encodable(value) else f"{value[:40]!r} holds an unpaired surrogate (protobuf refuses it)"
    if kind == "bool":
        return None if isinstance(value, bool) else f"{value!r} is not true or false"
    if kind == "int32":
        number = protobuf_int(value)
        if number is None or not -(2**31) <= number < 2**31:
            return f"{value!r} is not a 32-bit integer"
        return None
    number = protobuf_float(value)
    if number is None:
        return f"{value!r} is not a number"
    if not math.isfinite(number):
        return f"{value!r} is not a finite number"
    # a quoted number is stored rounded to float32: "3.4028235e38" becomes its largest value
    return None if math.isfinite(float32(number)) else f"{value!r} is too large for a 32-bit float"


def _encodable(text: str) -> bool:
    """Valid Unicode: JSON's \\ud800 escapes decode to lone surrogates, which UTF-8 cannot hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def protobuf_int(value: Any) -> int | None:
    """An integer field's value as json_format reads it (None: refused), in the protobuf the
    official tools pin (4.24.1 for 2023, 5.26.1 for 2024): a quoted value is what int() reads,
    so `"1.0"` and `"1e3"` are refused (later protobufs, 7.36 here, read them as floats first)."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        return None
    if isinstance(value, str) and " " in value:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def protobuf_float(value: Any) -> float | None:
    """A float field's value as json_format reads it (None: refused)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None  # an unquoted NaN/Infinity (Python's json reads them)
    if isinstance(value, float) and abs(value) > FLOAT32_MAX:
        return None
    if value == "nan":
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf  # an integer beyond any float: json_format stops on it ("int too large")
    except (TypeError, ValueError):
        return {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}.get(value) if isinstance(value, str) else None


def _schema_problems(value: Any, schema: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, problem) for every place where `value` does not parse as `schema`."""
    if isinstance(schema, list):
        if not isinstance(value, list):
            yield path, "must be a list"
            return
        for i, item in enumerate(value):
            if item is None:
                yield f"{path}[{i}]", "null is not allowed in a list"
            else:
                yield from _schema_problems(item, schema[0], f"{path}[{i}]")
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            yield path, "must be an object"
            return
        names = {alias: name for name in schema for alias in (name, _camel(name))}
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key not in names:
                yield where, f"unknown field (expected one of {', '.join(schema)})"
            elif item is not None:
                yield from _schema_problems(item, schema[names[key]], where)
    else:
        problem = _scalar_problem(schema, value)
        if problem:
            yield path, problem


def _field(record: dict, name: str, default: Any) -> Any:
    """A field under either spelling; with both, the later key in the object wins, as in
    json_format (which reads the object in order), and null is the default."""
    keys = [key for key in record if key in (name, _camel(name))]
    return default if not keys or record[keys[-1]] is None else record[keys[-1]]


def parse_submission(raw: dict, year: int) -> Submission:
    """A decoded 2023/2024 run that passed the structure checks, with proto3 defaults filled in."""

    def passage(p: dict) -> PassageProvenance:
        return PassageProvenance(
            _field(p, "id", ""), float32(protobuf_float(_field(p, "score", 0.0))), _field(p, "text", ""),
            _field(p, "used", False),
        )

    def ptkb(p: Any) -> PTKBProvenance:
        if not YEARS[year].scored_ptkb:  # a bare statement number (2024)
            return PTKBProvenance(str(protobuf_int(p)), 0.0)
        return PTKBProvenance(_field(p, "id", ""), float32(protobuf_float(_field(p, "score", 0.0))), _field(p, "text", ""))

    turns = tuple(
        SubmissionTurn(
            _field(t, "turn_id", ""),
            tuple(
                Response(
                    protobuf_int(_field(r, "rank", 0)),
                    _field(r, "text", ""),
                    tuple(passage(p) for p in _field(r, "passage_provenance", [])),
                    tuple(ptkb(p) for p in _field(r, "ptkb_provenance", [])),
                )
                for r in _field(t, "responses", [])
            ),
        )
        for t in _field(raw, "turns", [])
    )
    return Submission(
        _field(raw, "run_name", ""),
        _field(raw, "run_type", ""),
        turns,
        eval_response=_field(raw, "eval_response", False),
    )


# --- 2023/2024 checks --------------------------------------------------------------------

JSON_YEARS = checked_by(__name__)  # 2023 and 2024 (harness.ikat.submission.YEARS)


@check("required-fields", JSON_YEARS, structural=True)
def _required_fields(ctx: Context) -> Iterator[Finding]:
    """run_name, run_type and turns must be present (main.py load_run_file: fatal)."""
    if not isinstance(ctx.raw, dict):
        yield error("required-fields", "the run must be a JSON object with run_name, run_type and turns")
        return
    for name in ("run_name", "run_type", "turns"):
        if name not in ctx.raw:
            yield error("required-fields", f"missing top-level field {name!r}")


@check("schema", JSON_YEARS, structural=True)
def _schema(ctx: Context) -> Iterator[Finding]:
    """Field names and types as run.proto defines them, read as protobuf's ParseDict reads
    them (fatal). Deliberate differences: a non-finite score (the quoted "NaN", "Infinity",
    which protobuf takes) is refused here, since a score must order passages; and a response
    or passage written as `[]` or `""`, which protobuf's parser takes for an empty message,
    is refused as not an object."""
    if not isinstance(ctx.raw, dict):
        return
    turns = ctx.raw.get("turns")
    for path, problem in _schema_problems(ctx.raw, SCHEMAS[ctx.year], ""):
        turn = None
        match = re.match(r"turns\[(\d+)\]", path)
        if match and isinstance(turns, list):
            record = turns[int(match.group(1))]
            turn_id = record.get("turn_id") if isinstance(record, dict) else None
            turn = turn_id if isinstance(turn_id, str) else None
        yield error("schema", f"{path}: {problem}", turn)


@check("non-empty", JSON_YEARS, structural=True)
def _non_empty(ctx: Context) -> Iterator[Finding]:
    """A run with no turns is not validated at all (main.py validate)."""
    if isinstance(ctx.raw, dict) and isinstance(ctx.raw.get("turns"), list) and not ctx.raw["turns"]:
        yield error("non-empty", "the run has 0 turns")


@check("run-name", JSON_YEARS)
def _run_name(ctx: Context) -> Iterator[Finding]:
    if not ctx.submission.run_name:
        yield warning("run-name", "run_name is empty")


@check("run-type", JSON_YEARS)
def _run_type(ctx: Context) -> Iterator[Finding]:
    """Empty and unrecognised run types are both warnings (an empty one gets both, as upstream)."""
    run_type = ctx.submission.run_type
    if not run_type:
        yield warning("run-type", "run_type is empty")
    if run_type not in RUN_TYPES[ctx.year]:
        yield warning("run-type", f"run_type {run_type!r} is not one of {', '.join(sorted(RUN_TYPES[ctx.year]))}")


@check("turn-count", JSON_YEARS)
def _turn_count(ctx: Context) -> Iterator[Finding]:
    expected = sum(len(t.turn_ids) for t in ctx.topics.values())
    found = len(ctx.submission.turns)
    if found != expected:
        yield error("turn-count", f"the run has {found} turns, the topics have {expected}")


@check("turn-id-format", JSON_YEARS)
def _turn_id_format(ctx: Context) -> Iterator[Finding]:
    """`<topic>_<turn number>` with exactly one underscore (main.py validate_all_turns: fatal)."""
    for turn in ctx.submission.turns:
        if not _well_formed(turn.turn_id, ctx.year):
            yield error("turn-id-format", f"turn id {turn.turn_id!r} is not '<topic>_<turn number>'", turn.turn_id)


def _well_formed(turn_id: str, year: int) -> bool:
    parts = turn_id.split("_")
    return len(parts) == 2 and _is_int(parts[1]) and (year != 2024 or _is_int(parts[0]))


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


@check("topics-covered", JSON_YEARS)
def _topics_covered(ctx: Context) -> Iterator[Finding]:
    """Every topic appears, with as many turns as the topics give it (fatal upstream)."""
    per_topic = Counter(turn.turn_id.rpartition("_")[0] for turn in ctx.submission.turns)
    for topic in ctx.topics.values():
        if topic.id not in per_topic:
            yield error("topics-covered", f"topic {topic.id} does not appear in the run")
        elif per_topic[topic.id] != len(topic.turn_ids):
            yield error(
                "topics-covered",
                f"topic {topic.id} should have {len(topic.turn_ids)} turns but has {per_topic[topic.id]}",
            )


@check("turn-id-known", JSON_YEARS)
def _turn_id_known(ctx: Context) -> Iterator[Finding]:
    """The turn exists in the topics (upstream: its number is within 1..turns of its topic).
    Deliberate difference: upstream reads the numbers with int(), so `9-1_01`, `9-1_ 1`,
    `9-1_+1` pass there; here the id must be the topic's own, since the run's lines would
    never meet the qrels' `9-1_1`."""
    for turn in (t for t in ctx.submission.turns if _well_formed(t.turn_id, ctx.year)):
        topic = ctx.turn_topic(turn.turn_id)
        if topic is None:
            # the topics may be a benchmark's (--topics ikat2023), not a file
            yield error("turn-id-known", f"turn id {turn.turn_id!r} names none of the {len(ctx.topics)} topics given",
                        turn.turn_id)
        elif turn.turn_id not in topic.turn_ids:
            yield error(
                "turn-id-known",
                f"turn {turn.turn_id} is not a turn of topic {topic.id} (expected 1-{len(topic.turn_ids)})",
                turn.turn_id,
            )


@check("turn-id-unique", JSON_YEARS)
def _turn_id_unique(ctx: Context) -> Iterator[Finding]:
    """Deliberate difference (not an upstream check): a repeated turn that stands in for a
    missing one of the same topic passes the official per-topic counts, yet leaves that
    turn unanswered."""
    for turn_id, n in Counter(t.turn_id for t in ctx.submission.turns).items():
        if n > 1:
            yield error("turn-id-unique", f"turn {turn_id} appears {n} times", turn_id)


def _responses(ctx: Context) -> Iterator[tuple[str, int, Response]]:
    for turn in ctx.submission.turns:
        for index, response in enumerate(turn.responses):
            yield turn.turn_id, index, response


def _ptkb_provenances(ctx: Context) -> Iterator[tuple[str, int, TopicInfo | None, PTKBProvenance]]:
    """(turn id, response index, the turn's topic if known, provenance) for every PTKB provenance."""
    for turn in ctx.submission.turns:
        topic = ctx.turn_topic(turn.turn_id)
        for index, response in enumerate(turn.responses):
            for ptkb in response.ptkb_provenance:
                yield turn.turn_id, index, topic, ptkb


@check("response-rank", JSON_YEARS)
def _response_rank(ctx: Context) -> Iterator[Finding]:
    """Ranks start at 1 and increase down the responses (warnings).

    As upstream (utils.check_response), a rank of 0, or a missing or null one (proto3 reads
    it as 0), draws two warnings: one for being 0, one for not being above the previous
    rank, which upstream never updates from 0 (so a negative rank draws one).
    Deliberate difference: here the previous rank is the highest rank before it, so ranks
    that stop increasing (1, 3, 2) also draw that warning; upstream lets them pass.
    """
    for turn in ctx.submission.turns:
        previous = 0
        for index, response in enumerate(turn.responses):
            if response.rank == 0:
                yield warning("response-rank", f"response #{index} has rank 0 (or none); ranks start at 1", turn.turn_id)
            if response.rank <= previous:
                yield warning(
                    "response-rank",
                    f"response #{index} has rank {response.rank}, not above the previous rank {previous}",
                    turn.turn_id,
                )
            previous = max(previous, response.rank)


@check("response-text", JSON_YEARS)
def _response_text(ctx: Context) -> Iterator[Finding]:
    """An empty response text is a warning (2024: not for only_response runs)."""
    if ctx.year == 2024 and ctx.submission.run_type == "only_response":
        return
    for turn_id, index, response in _responses(ctx):
        if not response.text:
            yield warning("response-text", f"response #{index} has no text", turn_id)


@check("passage-score-order", JSON_YEARS)
def _passage_score_order(ctx: Context) -> Iterator[Finding]:
    """A passage scoring above the one before it is a warning (scores as float32).

    Deliberate difference: upstream starts each response from a previous score of 1e9, so
    a first passage scoring above 1e9 draws a warning there; here the first passage has
    nothing to be out of order with, whatever its score.
    """
    for turn_id, index, response in _responses(ctx):
        for before, passage in zip(response.passage_provenance, response.passage_provenance[1:]):
            if passage.score > before.score:
                yield warning(
                    "passage-score-order",
                    f"response #{index}: passage {passage.id} scores {passage.score}, above the passage before it "
                    f"({before.score}); provenance must be ranked by decreasing score",
                    turn_id,
                )


@check("passage-id-format", JSON_YEARS)
def _passage_id_format(ctx: Context) -> Iterator[Finding]:
    """ClueWeb22 passage ids are `clueweb22-...:N`: a missing prefix and a colon count other
    than one are separate warnings."""
    for turn_id, index, response in _responses(ctx):
        for passage in response.passage_provenance:
            if not passage.id.startswith("clueweb22-"):
                yield warning("passage-id-format", f"passage id {passage.id!r} lacks the 'clueweb22-' prefix", turn_id)
            if passage.id.count(":") != 1:
                yield warning(
                    "passage-id-format", f"passage id {passage.id!r} is not '<doc id>:<passage number>'", turn_id
                )


@check("passage-exists", JSON_YEARS)
def _passage_exists(ctx: Context) -> Iterator[Finding]:
    """Each distinct passage id of a turn is in the collection (a warning per unknown id), as
    upstream asks its gRPC passage service; only when a collection is given (--passages)."""
    if ctx.passages is None:
        return
    for turn in ctx.submission.turns:
        ids = dict.fromkeys(p.id for r in turn.responses for p in r.passage_provenance)
        for passage_id in ids:
            if passage_id not in ctx.passages:
                yield warning("passage-exists", f"passage {passage_id!r} is not in the passage collection", turn.turn_id)


@check("passage-used", JSON_YEARS)
def _passage_used(ctx: Context) -> Iterator[Finding]:
    for turn_id, index, response in _responses(ctx):
        if not any(p.used for p in response.passage_provenance):
            yield warning(
                "passage-used",
                f"response #{index} marks no passage as used; the top 5 will count as its provenance",
                turn_id,
            )


@check("passage-count", JSON_YEARS)
def _passage_count(ctx: Context) -> Iterator[Finding]:
    for turn_id, index, response in _responses(ctx):
        n = len(response.passage_provenance)
        if n == 0:
            yield warning("passage-count", f"response #{index} has no passage provenance", turn_id)
        elif n > PROVENANCE_LIMIT:
            yield warning("passage-count", f"response #{index} has {n} passages, more than {PROVENANCE_LIMIT}", turn_id)


@check("ptkb-present", JSON_YEARS)
def _ptkb_present(ctx: Context) -> Iterator[Finding]:
    for turn_id, index, response in _responses(ctx):
        if not response.ptkb_provenance:
            yield warning("ptkb-present", f"response #{index} lists no PTKB provenance", turn_id)


@check("ptkb-id", JSON_YEARS)
def _ptkb_id(ctx: Context) -> Iterator[Finding]:
    """Each PTKB provenance names a statement of the turn's topic (errors).

    2023: the id is non-empty and a key of the topic's PTKB. 2024: the number is within
    1..PTKB size. Deliberate difference: the 2024 tool also lets 0 through, though its
    docstring asks for ids above 0 and no statement 0 exists.
    """
    for turn_id, index, topic, ptkb in _ptkb_provenances(ctx):
        if not ptkb.id:
            yield error("ptkb-id", f"response #{index} has a PTKB provenance with an empty id", turn_id)
        elif topic is not None and ptkb.id not in topic.ptkb:
            yield error(
                "ptkb-id",
                f"response #{index}: PTKB provenance {ptkb.id!r} is not a statement of topic {topic.id} "
                f"(its ids: {', '.join(topic.ptkb)})",
                turn_id,
            )


@check("ptkb-text", (2023,))
def _ptkb_text(ctx: Context) -> Iterator[Finding]:
    """The provenance repeats the statement's text exactly (2023 only; error)."""
    for turn_id, index, topic, ptkb in _ptkb_provenances(ctx):
        if topic is not None and ptkb.id in topic.ptkb and ptkb.text != topic.ptkb[ptkb.id]:
            yield error(
                "ptkb-text",
                f"response #{index}: the text of PTKB provenance {ptkb.id} differs from statement {ptkb.id} "
                f"of topic {topic.id} ({topic.ptkb[ptkb.id]!r})",
                turn_id,
            )


@check("ptkb-score-order", (2023,))
def _ptkb_score_order(ctx: Context) -> Iterator[Finding]:
    """A PTKB statement scoring above the one before it is a warning (scores as float32).

    Deliberate difference, as for passages (passage-score-order): upstream starts each
    response from a previous score of 1e9, so a first statement scoring above 1e9 draws a
    warning there; here the first statement has nothing to be out of order with.
    """
    for turn_id, index, response in _responses(ctx):
        for before, ptkb in zip(response.ptkb_provenance, response.ptkb_provenance[1:]):
            if ptkb.score > before.score:
                yield warning(
                    "ptkb-score-order",
                    f"response #{index}: PTKB provenance {ptkb.id} scores above the one before it",
                    turn_id,
                )
