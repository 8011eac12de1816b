"""TREC iKAT submissions: records, writers, and a builder from TREC rankings.

One model serves the three years; the writers lay it out as each year's run format asks:

- 2023: one JSON object `{run_name, run_type, turns: [{turn_id, responses: [{rank, text,
  passage_provenance: [{id, text, score, used}], ptkb_provenance: [{id, text, score}]}]}]}`
  (data/ikat/2023/scripts/run_validation/protocol_buffers/run.proto).
- 2024: as 2023, plus `eval_response` on the run, and `ptkb_provenance` is a list of PTKB
  statement numbers (int32 in the 2024 run.proto).
- 2025: JSON Lines, one object per turn: `{metadata: {team_id, run_id, run_type}, turn_id,
  responses: [{text, citations: {passage id: score}, ptkb_provenance: [ids]}],
  references: {passage id: score}}` (the layout irlabamsterdam/iKAT
  2025/scripts/validate_trec_ikat25.py checks and 2025/scripts/generate_run.py reads).
"""

from __future__ import annotations

import json
import struct
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from pathlib import Path

import numpy as np

from harness.atomic import atomic_write
from harness.corpus import Corpus, TextLookup, find_texts
from harness.errors import HarnessError
from harness.registry import Registry
from harness.topics.model import Conversation
from harness.trec import Ranking, printed_below

RESPONSE_WORD_LIMIT = 250  # iKAT guidelines; the 2025 validator counts NFKC-normalised words
PROVENANCE_LIMIT = 1000  # passages per response (2023/2024), references per turn (2025)
PTKB_DEPTH = 3  # statements of a PTKB ranking a built response lists as its PTKB provenance
FLOAT32_MAX = 3.4028234663852886e38  # run.proto's scores (2023/2024) are 32-bit floats


@dataclass(frozen=True)
class Year:
    """What differs between iKAT years, in one place: a new year is one entry in `YEARS` plus
    its checks_<year>.py (or the name of an earlier year's checks module, format unchanged)."""

    run_types: frozenset[str]
    format: str  # the writer in WRITERS that lays out this year's files
    checks: str  # the module whose @check functions validate this year's files
    json_lines: bool = False  # one JSON object per turn, with metadata (team id), not one document
    scored_ptkb: bool = False  # PTKB provenance as scored statements, not bare ids in rank order
    score_decimals: int | None = None  # generate_run.py prints passage scores so (None: Python's repr)


YEARS: dict[int, Year] = {
    2023: Year(frozenset({"automatic", "manual"}), "2023", "harness.ikat.checks_2023", scored_ptkb=True),
    2024: Year(frozenset({"automatic", "manual", "only_response"}), "2024", "harness.ikat.checks_2023"),
    2025: Year(frozenset({"automatic", "manual", "generation-only"}), "2025", "harness.ikat.checks_2025",
               json_lines=True, score_decimals=6),
}


def float32(value: Any) -> float:
    """Scores are 32-bit floats in run.proto: compare and convert them as the official tools see them."""
    return struct.unpack("f", struct.pack("f", float(value)))[0]


def official_score(year: int, score: float, rank: int = 1) -> float:
    """The score the year's generate_run.py writes for a passage of a response ranked `rank`,
    the value trec_eval ranks it by: 2023/2024 the score as run.proto's 32-bit float holds
    it, times 1 / (rank + 1), held in another; 2025 the score printed with 6 decimals."""
    decimals = YEARS[year].score_decimals
    if decimals is not None:
        return float(f"{score:.{decimals}f}")
    return float32(float32(score) * (1 / (rank + 1)))


def score_precision(year: int) -> str:
    """How the year's format holds passage scores, for a message."""
    decimals = YEARS[year].score_decimals
    return "as 32-bit floats" if decimals is None else f"with {decimals} decimals (generate_run.py prints them so)"


def file_format(year: int) -> str:
    """The name a hosted leaderboard gives this year's files: ikat-2023-json, ikat-2025-jsonl."""
    return f"ikat-{year}-{'jsonl' if YEARS[year].json_lines else 'json'}"


def checked_by(module: str) -> tuple[int, ...]:
    """The years whose files the checks module `module` validates."""
    return tuple(year for year, entry in YEARS.items() if entry.checks == module)


@dataclass(frozen=True)
class PassageProvenance:
    id: str
    score: float
    text: str = ""
    used: bool = False  # the passage supports the response text (a 2025 citation)


@dataclass(frozen=True)
class PTKBProvenance:
    id: str
    score: float
    text: str = ""


@dataclass(frozen=True)
class Response:
    rank: int
    text: str
    passage_provenance: tuple[PassageProvenance, ...] = ()
    ptkb_provenance: tuple[PTKBProvenance, ...] = ()


@dataclass(frozen=True)
class SubmissionTurn:
    turn_id: str  # `<topic>_<turn>`, the qid the qrels use
    responses: tuple[Response, ...]


@dataclass(frozen=True)
class Submission:
    run_name: str
    run_type: str  # automatic | manual (2024 adds only_response, 2025 generation-only)
    turns: tuple[SubmissionTurn, ...]
    team_id: str = ""  # 2025 metadata only
    eval_response: bool = True  # 2024 only: whether assessors should judge the responses


def word_count(text: str) -> int:
    """Words as the 2025 validator counts them: NFKC-normalised, split on whitespace."""
    return len(unicodedata.normalize("NFKC", text.strip()).split())


def cap_words(text: str, limit: int = RESPONSE_WORD_LIMIT) -> str:
    words = unicodedata.normalize("NFKC", text.strip()).split()
    return " ".join(words[:limit])


# --- writers -------------------------------------------------------------------------

Writer = Callable[[Submission], Iterable[str]]
WRITERS: Registry[Writer] = Registry("iKAT submission format")


def _passages_2023(response: Response) -> list[dict]:
    return [{"id": p.id, "text": p.text, "score": p.score, "used": p.used} for p in response.passage_provenance]


def _json_run(submission: Submission, ptkb_entry: Callable[[Any], Any], **header: Any) -> str:
    """The 2023/2024 JSON layout; the years differ in the PTKB entries and the header."""
    turns = [
        {
            "turn_id": turn.turn_id,
            "responses": [
                {
                    "rank": r.rank,
                    "text": r.text,
                    "passage_provenance": _passages_2023(r),
                    "ptkb_provenance": [ptkb_entry(p) for p in r.ptkb_provenance],
                }
                for r in turn.responses
            ],
        }
        for turn in submission.turns
    ]
    document = {"run_name": submission.run_name, "run_type": submission.run_type, **header, "turns": turns}
    return json.dumps(document, indent=1)


def _float32_scores(submission: Submission, year: int, ptkb: bool) -> None:
    """Each score written is a number that fits run.proto's 32-bit float: protobuf's JSON
    parser, and so the official validator, refuses the whole file for one beyond it or NaN."""
    for turn in submission.turns:
        for response in turn.responses:
            scored = [("passage", p) for p in response.passage_provenance]
            scored += [("PTKB statement", p) for p in response.ptkb_provenance] if ptkb else []
            for kind, item in scored:
                if not abs(item.score) <= FLOAT32_MAX:  # NaN too, which no validator takes
                    raise HarnessError(
                        f"turn {turn.turn_id}: {kind} {item.id} scores {item.score:g}, not a finite 32-bit float "
                        f"(at most {FLOAT32_MAX:.8g} either way), which the iKAT {year} format stores scores in: "
                        "the official validator would refuse the file; rescale the run's scores")


@WRITERS.register("2023")
def _lines_2023(submission: Submission) -> Iterable[str]:
    _float32_scores(submission, 2023, ptkb=True)
    yield _json_run(submission, lambda p: {"id": p.id, "text": p.text, "score": p.score})


@WRITERS.register("2024")
def _lines_2024(submission: Submission) -> Iterable[str]:
    """2024 lists PTKB statements by number and says whether the response is to be judged."""
    _float32_scores(submission, 2024, ptkb=False)
    yield _json_run(submission, lambda p: _ptkb_number(p.id), eval_response=submission.eval_response)


def _ptkb_number(ptkb_id: str) -> int:
    try:
        return int(ptkb_id)
    except ValueError:
        raise HarnessError(f"PTKB id {ptkb_id!r} is not a number, as the 2024 format requires") from None


@WRITERS.register("2025")
def _lines_2025(submission: Submission) -> Iterable[str]:
    metadata = {"team_id": submission.team_id, "run_id": submission.run_name, "run_type": submission.run_type}
    for turn in submission.turns:
        references: dict[str, float] = {}
        for response in turn.responses:
            for passage in response.passage_provenance:
                references.setdefault(passage.id, passage.score)
        responses = [
            {
                "text": r.text,
                "citations": {p.id: p.score for p in r.passage_provenance if p.used},
                "ptkb_provenance": [p.id for p in r.ptkb_provenance],
            }
            for r in turn.responses
        ]
        entry = {"metadata": metadata, "turn_id": turn.turn_id, "responses": responses, "references": references}
        yield json.dumps(entry, ensure_ascii=False)


def write_submission(path: str | Path, submission: Submission, year: int) -> None:
    """Write `submission` in year's format (2025: one JSON object per line), atomically."""
    if YEARS[year].json_lines and not submission.team_id:
        raise HarnessError(f"the {year} format needs a team id (metadata.team_id)")
    lines = WRITERS.get(YEARS[year].format)(submission)
    with atomic_write(path) as out:
        for line in lines:
            out.write(line + "\n")


# --- building a submission from rankings -----------------------------------------------

# (turn qid, best-first passages with their texts) -> (response text, ids of the passages
# it is made from: those marked `used`, the 2025 citations)
Responder = Callable[[str, Sequence[PassageProvenance]], tuple[str, Sequence[str]]]
# where passage texts come from: a corpus (streamed once), {id: text}, or a look-up by ids
PassageSource = Corpus | Mapping[str, str] | TextLookup


def extractive_response(qid: str, passages: Sequence[PassageProvenance]) -> tuple[str, Sequence[str]]:
    """No generator configured: answer with the best passage that has text (so it is used)."""
    chosen = next((p for p in passages if p.text.strip()), None)
    return (chosen.text, (chosen.id,)) if chosen is not None else ("", ())


def passage_texts(source: PassageSource, ids: set[str]) -> dict[str, str]:
    """The texts of `ids`: lookups in a dict, else one streaming pass over a corpus or the look-up."""
    if isinstance(source, Mapping):
        return {pid: source[pid] for pid in ids if pid in source}
    return find_texts([source], ids)


def build_submission(
    rankings: Mapping[str, Ranking],
    passages: PassageSource,
    *,
    run_name: str,
    run_type: str = "automatic",
    ptkb_rankings: Mapping[str, Ranking] | None = None,
    conversations: Sequence[Conversation] = (),
    responder: Responder = extractive_response,
    depth: int = PROVENANCE_LIMIT,
    ptkb_depth: int = PTKB_DEPTH,
    team_id: str = "",
) -> Submission:
    """One response per turn (rank 1) whose provenance is the turn's ranking.

    The response text comes from `responder`, capped at the guidelines' 250 words, and the
    passages it says the text is made from are marked as used (cited). PTKB provenance takes the top
    `ptkb_depth` statements of `ptkb_rankings`, with their texts from the conversations'
    PTKBs (the 2023 validator checks them). With `conversations`, every one of their turns
    is answered, in conversation order (a turn the run lacks gets an empty response, which
    the validators warn about, rather than a missing turn, which they refuse); without,
    the turns of `rankings` in their order.
    """
    statements = {
        turn.qid: {s.id: s.text for s in conversation.personal}
        for conversation in conversations
        for turn in conversation.turns
    }
    order = [turn.qid for c in conversations for turn in c.turns] or list(rankings)
    needed = {pid for qid in order for pid, _ in rankings.get(qid, ())[:depth]}
    texts = passage_texts(passages, needed)
    turns = []
    for qid in order:
        provenance = tuple(PassageProvenance(pid, float(score), texts.get(pid, ""))
                           for pid, score in rankings.get(qid, ())[:depth])
        ptkb = tuple(
            PTKBProvenance(pid, float(score), statements.get(qid, {}).get(pid, ""))
            for pid, score in (ptkb_rankings or {}).get(qid, ())[:ptkb_depth]
        )
        text, used = responder(qid, provenance)
        provenance = tuple(replace(p, used=True) if p.id in used else p for p in provenance)
        turns.append(SubmissionTurn(qid, (Response(1, cap_words(text), provenance, ptkb),)))
    return Submission(run_name, run_type, tuple(turns), team_id=team_id)


@dataclass(frozen=True)
class OrderKept:
    """What `keep_order` changed: the passages given a score below their run score."""

    turns: int = 0
    passages: int = 0
    first: tuple[str, str, float, float] | None = None  # (turn, passage, run score, score written)


def keep_order(submission: Submission, year: int) -> tuple[Submission, OrderKept]:
    """`submission` with each response's passages, listed best first, ranked in that order by
    the year's official run (`official_score`): distinct scores closer than the format holds
    them collapse into a tie there, which trec_eval orders by passage id, so the file would
    not evaluate as the run it came from. Such a passage is given the nearest score the format
    ranks below the one above it (as `harness run` writes its own run files); the scores
    that keep their order are left as they are, and passages the run ties stay tied (ordered
    by id in both)."""
    if not YEARS[year].json_lines:
        _float32_scores(submission, year, ptkb=False)  # the writer's error, before a score is taken as float32
    turns: list[SubmissionTurn] = []
    lowered_turns, lowered, first = 0, 0, None
    for turn in submission.turns:
        responses, lowered_before = [], lowered
        for response in turn.responses:
            kept: list[PassageProvenance] = []
            above: tuple[float, float] | None = None  # the passage above: its run score, its score as written
            for passage in response.passage_provenance:
                score = passage.score
                if above is not None and score == above[0]:  # tied in the run: tied as written
                    score = above[1]
                elif above is not None and (official_score(year, score, response.rank)
                                            >= official_score(year, above[1], response.rank)):
                    score = _written_below(year, above[1], response.rank)
                if score != passage.score:
                    lowered += 1
                    first = first or (turn.turn_id, passage.id, passage.score, score)
                kept.append(passage if score == passage.score else replace(passage, score=score))
                above = passage.score, score
            responses.append(replace(response, passage_provenance=tuple(kept)))
        lowered_turns += lowered > lowered_before
        turns.append(replace(turn, responses=tuple(responses)))
    return replace(submission, turns=tuple(turns)), OrderKept(lowered_turns, lowered, first)


def _written_below(year: int, above: float, rank: int) -> float:
    """The score nearest below `above` (a score as written) that the year's official run
    ranks below it; one tying with `above` where the format holds no lower score."""
    floor = official_score(year, above, rank)
    if YEARS[year].score_decimals is not None:  # 2025: 6 decimals, as `harness run` prints its scores
        return float(printed_below(floor))
    value = float32(above)
    while official_score(year, value, rank) >= floor:
        value = float(np.nextafter(np.float32(value), np.float32(-np.inf)))
        if not abs(value) <= FLOAT32_MAX:
            return above
    return value


__all__ = [
    "PTKBProvenance",
    "PassageProvenance",
    "Response",
    "Submission",
    "SubmissionTurn",
    "build_submission",
    "cap_words",
    "extractive_response",
    "keep_order",
    "word_count",
    "write_submission",
]
