"""Checks of the 2025 run files: JSON Lines, one turn per line.

From irlabamsterdam/iKAT 2025/scripts/validate_trec_ikat25.py. Its fix-ups (trimming long
responses and references, written to a `.fixed` file, and not switchable off) are not
reproduced: what they would change is reported instead, and what it checks after them is
checked (the responses a turn keeps once trimmed to fit, `kept_responses`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from harness.errors import counted, verb
from harness.ikat.checks import RUN_TYPES, Context, Finding, check, error, warning
from harness.ikat.submission import PROVENANCE_LIMIT, RESPONSE_WORD_LIMIT, checked_by, word_count

JSONL_YEARS = checked_by(__name__)  # 2025 (harness.ikat.submission.YEARS)

CLUEWEB_2025 = re.compile(r"^clueweb22-en\d{4}-\d{2}-\d{5}:\d+$")
METADATA_KEYS_2025 = ("team_id", "run_id", "run_type")


def _objects(ctx: Context) -> Iterator[tuple[int, dict, str | None]]:
    """(line, entry, its turn id if a string) for the lines that decoded to objects."""
    for line, entry in ctx.entries:
        if isinstance(entry, dict):
            turn_id = entry.get("turn_id")
            yield line, entry, turn_id if isinstance(turn_id, str) else None


JSON_OBJECT_SHOWN = 20  # lines that are not objects named one by one; the rest are one finding


@check("json-object", JSONL_YEARS)
def _json_object(ctx: Context) -> Iterator[Finding]:
    """Each line is a JSON object. Past the first JSON_OBJECT_SHOWN lines that are not, one
    error counts the rest (a valid first line above a TREC run drew thousands), as
    --max-warnings sums up warnings in one error."""
    bad = [(line, entry) for line, entry in ctx.entries if not isinstance(entry, dict)]
    for line, entry in bad[:JSON_OBJECT_SHOWN]:
        if isinstance(entry, json.JSONDecodeError):
            yield error("json-object", f"not JSON: {entry.msg} (column {entry.colno})", line=line)
        else:
            yield error("json-object", "the line must be a JSON object", line=line)
    if len(bad) > JSON_OBJECT_SHOWN:
        rest = bad[JSON_OBJECT_SHOWN:]
        yield error("json-object", f"... and {counted(len(rest), 'more line')} that {verb(len(rest), 'is', 'are')} not "
                                   f"a JSON object (lines {rest[0][0]} to {rest[-1][0]})", line=rest[0][0])


@check("turn-id", JSONL_YEARS)
def _turn_id_2025(ctx: Context) -> Iterator[Finding]:
    """Not an explicit upstream check: upstream counts no turn for such a line, so the file
    fails only if that leaves a turn missing (the coverage check's error); here the line is
    also named, as a warning."""
    for line, entry, turn_id in _objects(ctx):
        if turn_id is None:
            yield warning("turn-id", f"turn_id missing or not a string: {entry.get('turn_id')!r}; the line "
                                     "answers no turn", line=line)


@check("metadata", JSONL_YEARS)
def _metadata(ctx: Context) -> Iterator[Finding]:
    for line, entry, turn_id in _objects(ctx):
        metadata = entry.get("metadata")
        if not isinstance(metadata, dict):
            yield error("metadata", "metadata must be an object", turn_id, line)
            continue
        missing = [key for key in METADATA_KEYS_2025 if key not in metadata]
        if missing:
            yield error("metadata", f"metadata lacks {', '.join(missing)}", turn_id, line)
        if "run_type" not in metadata:
            yield warning("metadata", "metadata has no run_type", turn_id, line)
        elif not isinstance(metadata["run_type"], str) or metadata["run_type"] not in RUN_TYPES[ctx.year]:
            yield error(
                "metadata",
                f"run_type {metadata['run_type']!r} is not one of {', '.join(sorted(RUN_TYPES[ctx.year]))}",
                turn_id,
                line,
            )


def is_score_map(value: Any) -> bool:
    """{passage id: finite number}: Python's JSON reader accepts NaN and Infinity, which no
    TREC run can rank by (they would reach `to-trec` and `harness eval`). An integer of any
    size is a number, as upstream reads it (to-trec then names one too large for a float)."""
    return isinstance(value, dict) and all(
        isinstance(score, int) and not isinstance(score, bool) or isinstance(score, float) and math.isfinite(score)
        for score in value.values()
    )


@check("references", JSONL_YEARS)
def _references(ctx: Context) -> Iterator[Finding]:
    """references: {passage id: score} (error otherwise), ids in ClueWeb22 passage form (warning).

    Deliberate difference: upstream only sorts the scores, so all-string scores pass there;
    here a score that is not a number is an error (it could not rank the references).

    More than 1000 references is an error. Upstream trims them to 1000 (a fix-up that cannot
    be switched off) and then rejects its own trimmed list as "not a dict": the file cannot
    pass as it is either way.
    """
    for line, entry, turn_id in _objects(ctx):
        references = entry.get("references")
        if not is_score_map(references):
            yield error("references", "references must be an object {passage id: finite number}", turn_id, line)
            continue
        if len(references) > PROVENANCE_LIMIT:
            yield error("references", f"{len(references)} references, more than {PROVENANCE_LIMIT}", turn_id, line)
        for ref in references:
            if not CLUEWEB_2025.match(ref):
                yield warning("references", f"reference {ref!r} is not a ClueWeb22 passage id", turn_id, line)


@check("responses", JSONL_YEARS)
def _responses_2025(ctx: Context) -> Iterator[Finding]:
    """Each response has a text, citations {passage id: score} drawn from the references,
    and a ptkb_provenance field (errors).

    Deliberate difference, as for references: upstream only sorts the citation scores, so a
    response citing one passage (or several, all scored by strings) passes whatever its
    score is (`"high"`, `[1]`, `-Infinity`); here a score that is not a finite number is an
    error.
    """
    for line, entry, turn_id in _objects(ctx):
        responses = entry.get("responses", [])
        if not isinstance(responses, list):
            yield error("responses", "responses must be a list", turn_id, line)
            continue
        references = entry.get("references")
        checkable = is_score_map(references)  # else the references check reports it
        for index, response in enumerate(kept_responses(responses)):
            problems = []
            if not isinstance(response, dict):
                problems.append("must be an object")
            else:
                if not isinstance(response.get("text"), str):
                    problems.append("text missing or not a string")
                if "ptkb_provenance" not in response:
                    problems.append("ptkb_provenance missing")
                if "citations" not in response:
                    problems.append("citations missing")
                elif not is_score_map(response["citations"]):
                    problems.append("citations must be an object {passage id: finite number}")
                elif checkable:
                    problems += [f"citation {c!r} is not in references" for c in response["citations"] if c not in references]
            for problem in problems:
                yield error("responses", f"responses[{index}]: {problem}", turn_id, line)


def _words(response: Any) -> int:
    return word_count(response["text"]) if isinstance(response, dict) and isinstance(response.get("text"), str) else 0


def kept_responses(responses: list) -> list:
    """The responses the official validator checks: its --fix-length (on by default) first drops
    responses from the end until the turn's words fit RESPONSE_WORD_LIMIT, so a problem of a
    response it drops does not fail the file there, nor here."""
    words = list(map(_words, responses))
    kept, total = len(responses), sum(words)
    while total > RESPONSE_WORD_LIMIT and kept:
        kept -= 1
        total -= words[kept]
    return responses[:kept]


@check("response-length", JSONL_YEARS)
def _response_length(ctx: Context) -> Iterator[Finding]:
    """The responses of a turn total at most 250 words (NFKC, whitespace-split).

    Deliberate difference: upstream prints no warning but silently drops responses from the
    end until the turn fits (and checks the rest only, as `responses` does here); here nothing
    is changed behind the user's back, and it is said.
    """
    for line, entry, turn_id in _objects(ctx):
        responses = entry.get("responses")
        if not isinstance(responses, list):
            continue
        words = sum(map(_words, responses))
        if words > RESPONSE_WORD_LIMIT:
            dropped = len(responses) - len(kept_responses(responses))
            yield warning(
                "response-length",
                f"responses total {words} words, more than {RESPONSE_WORD_LIMIT}; the official validator drops "
                f"responses from the end to fit ({dropped} of {len(responses)} here) and checks only those it keeps",
                turn_id,
                line,
            )


def empty_answers(entries: list[tuple[int, Any]]) -> tuple[int, int, tuple[int, str | None] | None]:
    """(answers with no text, answers, the first such one's line and turn) of a file's decoded
    lines: not an official check (upstream asks only that a text be a string), counted for a note
    beside the verdict, since an empty answer supports no nugget: it scores 0 on the response task.
    A turn's responses are the pieces (sentences) of its one answer, so a blank piece beside others
    with text leaves the answer its text."""
    lines = Context(JSONL_YEARS[0], {}, entries=entries)
    answers = [(line, turn_id, [r["text"] for r in entry["responses"] if isinstance(r, dict)
                                and isinstance(r.get("text"), str)])
               for line, entry, turn_id in _objects(lines) if isinstance(entry.get("responses"), list)]
    answers = [(line, turn_id, texts) for line, turn_id, texts in answers if texts]
    empty = [(line, turn_id) for line, turn_id, texts in answers if not "".join(texts).strip()]
    return len(empty), len(answers), empty[0] if empty else None


def _submitted_and_expected(ctx: Context) -> tuple[set[str], set[str]]:
    submitted = {turn_id for _, _, turn_id in _objects(ctx) if turn_id is not None}
    return submitted, {qid for topic in ctx.topics.values() for qid in topic.turn_ids}


@check("turns-covered", JSONL_YEARS)
def _turns_covered(ctx: Context) -> Iterator[Finding]:
    """Every turn of the topics appears in the file (errors; skipped for a partial file)."""
    submitted, expected = _submitted_and_expected(ctx)
    for turn_id in sorted(expected - submitted):
        yield error("turns-covered", "turn missing from the file", turn_id)


@check("turns-known", JSONL_YEARS)
def _turns_known(ctx: Context) -> Iterator[Finding]:
    """No turn outside the topics appears in the file (errors, as upstream; a partial file too)."""
    submitted, expected = _submitted_and_expected(ctx)
    for turn_id in sorted(submitted - expected):
        yield error("turns-known", "turn is not in the topics", turn_id)


@check("turn-repeated", JSONL_YEARS)
def _turn_repeated(ctx: Context) -> Iterator[Finding]:
    """Deliberate difference (not an upstream check, which keeps a set of turn ids): a turn
    on two lines is ambiguous, so it draws a warning."""
    lines: dict[str, list[int]] = {}
    for line, _, turn_id in _objects(ctx):
        if turn_id is not None:
            lines.setdefault(turn_id, []).append(line)
    for turn_id, at in lines.items():
        if len(at) > 1:
            yield warning("turn-repeated", f"turn appears on lines {', '.join(map(str, at))}", turn_id)
