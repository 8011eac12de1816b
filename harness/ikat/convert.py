"""iKAT submission -> TREC runs: the passage ranking NIST evaluates, and the PTKB ranking.

Passages (2023/2024) follow the track's conversion (irlabamsterdam/iKAT
2023/scripts/run_validation/generate_run.py, unchanged in 2024): responses are read in file
order and, within one, its passages in file order; a passage's first occurrence wins and
its score becomes `(1 / (response rank + 1)) * score`, stored in run.proto's 32-bit float
and printed as Python prints that value. 2025 (generate_run.py beside the 2025 validator):
a turn's `references`, each score printed with 6 decimals.

The scores written are exactly the ones the official script writes, ties included, and the
lines are in the order trec_eval ranks them (score descending, ties by passage id
descending), so the file evaluates as the official one does. A response rank of -1 (whose
scale 1 / 0 crashes the official script) is a one-line error.

PTKB provenance has no official conversion; the same rule is applied: first occurrence in
response order, then by decreasing PTKB score. 2024 and 2025 provenance is a bare list of
statement ids, ranked as listed (scores n, n-1, ..., 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import jsonl
from harness.errors import InputError
from harness.ikat.checks_2025 import is_score_map
from harness.ikat.submission import YEARS, Submission, SubmissionTurn, official_score
from harness.ikat.validate import Decoded, decode_lines, guess_year, read_submission, submission_text
from harness.trec import Kept, Run, canonical_order, field_ok, kept_ranking, write_run


@dataclass(frozen=True)
class TrecRuns:
    run_name: str
    passages: Run  # turn id -> its passages, best first; `duplicates`: those a response lists again (the first kept)
    ptkb: Run  # turn id -> its PTKB statements, best first
    year: int = 2023
    places: dict[str, int] = field(default_factory=dict)  # turn id -> its line (JSON Lines), or its index in `turns`
    ptkb_unlisted: tuple[int, ...] = ()  # 2025: the lines with a ptkb_provenance that is no list of ids

    def print_score(self, score: float) -> str:
        """The passage scores as the official generate_run.py prints them."""
        decimals = YEARS[self.year].score_decimals
        return str(score) if decimals is None else f"{score:.{decimals}f}"

    def check_ids(self, path: Path, ptkb: bool = False) -> None:
        """Each turn id and passage id (with `ptkb`, PTKB statement id too) can be a field of a
        TREC run line: checked once, before anything is written, and named by the submission's
        line or turn (write_run's own guard could only name the output). The validators take
        such ids; generate_run.py would write them into the line, which splits it."""
        json_lines = YEARS[self.year].json_lines
        if ptkb and self.ptkb_unlisted:  # the validators do not read it; only a PTKB run needs it
            raise InputError(path, "ptkb_provenance: expected a list of statement ids (strings or integers)",
                             line=self.ptkb_unlisted[0])
        for turn_id, place in self.places.items():
            if problem := _split_field(turn_id):
                if json_lines:
                    raise InputError(path, f"turn_id {problem}", line=place)
                raise InputError(path, f"turns[{place}].turn_id: {problem}")
            where = {"line": place} if json_lines else {"record": f"turn {turn_id}"}
            ids = [("references: passage id" if json_lines else "passage_provenance id", passage)
                   for passage in self.passages.scores[turn_id]]
            if ptkb:
                ids += [("ptkb_provenance id", statement) for statement in self.ptkb.scores.get(turn_id, {})]
            for name, text in ids:
                if problem := _split_field(text):
                    raise InputError(path, f"{name} {problem}", **where)


def _best_first(items: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(items, key=lambda item: -item[1])  # stable: ties keep their order


def _scaled_score(score: float, year: int, rank: int, path: Path, turn_id: str) -> float:
    """generate_run.py's normalised score (`official_score`), where its scale is a number."""
    if rank == -1:
        raise InputError(path, "a response has rank -1: its scale 1 / (rank + 1) is a division by zero; "
                               "ranks start at 1", record=f"turn {turn_id}")
    return official_score(year, score, rank)


def _split_field(text: str) -> str:
    """Why an id that passes the validators cannot be a field of a TREC run line ('' when it
    can): generate_run.py writes whitespace into the line, which splits it into more fields."""
    if not text:
        return "is missing or empty"
    return "" if field_ok(text) else f"{text!r} holds whitespace or a NUL byte, which would split its TREC run line"


def submission_rankings(submission: Submission, year: int, path: Path) -> TrecRuns:
    passages: dict[str, Kept] = {}
    ptkb: dict[str, list[tuple[str, float]]] = {}
    places: dict[str, int] = {}
    for index, turn in enumerate(submission.turns):
        if not turn.turn_id:  # a TREC run line needs it (generate_run.py writes a line without a query id)
            raise InputError(path, f"turns[{index}].turn_id: missing or empty, expected the turn's id")
        places[turn.turn_id] = index
        passages[turn.turn_id] = _turn_passages(turn, year, path)
        ptkb.pop(turn.turn_id, None)  # a turn given again is that occurrence's, PTKB and passages alike
        seen_ptkb: dict[str, float] = {}
        for response in turn.responses:
            for statement in response.ptkb_provenance:
                seen_ptkb.setdefault(statement.id, statement.score)
        if seen_ptkb:
            ptkb[turn.turn_id] = _best_first(list(seen_ptkb.items())) if YEARS[year].scored_ptkb else _by_position(seen_ptkb)
    return TrecRuns(submission.run_name, Run.of_kept(passages, submission.run_name), Run.of(ptkb, submission.run_name),
                    year=year, places=places)


def _turn_passages(turn: SubmissionTurn, year: int, path: Path) -> Kept:
    """A turn's passage ranking as generate_run.py makes it, kept as a `Run` keeps a ranking.
    Each response ranks passages of its own: one it lists again is a repeated document (its
    first occurrence kept, the repeat counted). Over the responses, in file order, a passage's
    first occurrence wins (one that several responses cite is no repeat), its score scaled by
    its response's rank; then canonical order."""
    scores: dict[str, float] = {}
    dropped, first_repeat = 0, None
    for response in turn.responses:
        kept = kept_ranking([(passage.id, passage.score) for passage in response.passage_provenance])
        dropped += kept.dropped
        first_repeat = kept.first_repeat if first_repeat is None else first_repeat
        for passage, score in kept.scores.items():  # each first occurrence, in file order
            if not passage:
                raise InputError(path, "a passage_provenance id is missing or empty", record=f"turn {turn.turn_id}")
            if passage not in scores:
                scores[passage] = _scaled_score(score, year, response.rank, path, turn.turn_id)
    return Kept(dict(canonical_order(scores.items())), dropped, first_repeat)


def _by_position(ids: Iterable[str]) -> list[tuple[str, float]]:
    """Bare ids (2024, 2025) ranked as listed: scores n, n-1, ..., 1."""
    ids = list(ids)
    return [(pid, float(len(ids) - i)) for i, pid in enumerate(ids)]


def _rankings_2025(path: Path, entries: list[tuple[int, Any]] | None = None) -> TrecRuns:
    passages: dict[str, list[tuple[str, float]]] = {}
    ptkb: dict[str, list[tuple[str, float]]] = {}
    places: dict[str, int] = {}
    unlisted: dict[str, int] = {}  # turn id -> its line, where a ptkb_provenance is no list of ids
    run_name = None
    for line, entry in decode_lines(submission_text(path)) if entries is None else entries:
        if isinstance(entry, json.JSONDecodeError):
            raise jsonl.invalid(path, entry, line)
        if not isinstance(entry, dict):
            raise InputError(path, "not a JSON object", line=line)
        turn_id = entry.get("turn_id")
        references = entry.get("references", {})
        if not isinstance(turn_id, str) or not turn_id:
            raise InputError(path, "expected a non-empty turn_id (string)", line=line)
        places[turn_id] = line
        if not isinstance(references, dict) or "" in references:
            raise InputError(path, "expected references {passage id: score}, each passage id non-empty", line=line)
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        if run_name is None and metadata.get("run_id") is not None:
            run_name = str(metadata["run_id"])  # the first line's, as text (generate_run.py prints it)
        if not is_score_map(references):
            raise InputError(path, "reference scores must be finite numbers", line=line)
        try:
            passages[turn_id] = canonical_order((pid, official_score(2025, score)) for pid, score in references.items())
        except OverflowError:
            raise InputError(path, "a reference score is too large for a floating-point number", line=line) from None
        ids: dict[str, None] = {}
        responses = entry.get("responses", [])
        if not isinstance(responses, list):
            raise InputError(path, "responses: expected a list", line=line)
        ptkb.pop(turn_id, None)  # a turn given again is that line's, PTKB and passages alike (`places`)
        unlisted.pop(turn_id, None)
        for response in responses:
            statements = response.get("ptkb_provenance") if isinstance(response, dict) else None
            statements = [] if statements is None else statements  # null as a missing key: none
            if not isinstance(statements, list) or not all(
                    isinstance(statement, (str, int)) and not isinstance(statement, bool) for statement in statements):
                unlisted[turn_id] = line  # its ids would be written as `None`, `{'id': 1}`
                continue
            for statement in statements:
                ids.setdefault(str(statement))
        if ids:
            ptkb[turn_id] = _by_position(ids)
    run_name = run_name or "default_run"
    return TrecRuns(run_name, Run.of(passages, run_name), Run.of(ptkb, run_name), year=2025, places=places,
                    ptkb_unlisted=tuple(sorted(unlisted.values())))


def read_rankings(path: str | Path, year: int | None = None) -> TrecRuns:
    """The passage and PTKB rankings of an iKAT submission of any year, ids as given
    (`TrecRuns.check_ids` says whether they can be written)."""
    path = Path(path)
    year = year or guess_year(path, submission_text(path))
    if YEARS[year].json_lines:
        return _rankings_2025(path)
    submission, year = read_submission(path, year)
    return submission_rankings(submission, year, path)


def decoded_rankings(path: Path, decoded: Decoded, submission: Submission | None) -> TrecRuns:
    """read_rankings on a file decoded (and, 2023/2024, parsed into `submission`) already, its
    passage run's ids checked (check_ids): a hosted board refuses at upload what it could not score."""
    runs = (_rankings_2025(path, decoded.entries) if YEARS[decoded.year].json_lines
            else submission_rankings(submission, decoded.year, path))
    runs.check_ids(path)
    return runs


def to_trec(
    path: str | Path,
    out: str | Path,
    ptkb_out: str | Path | None = None,
    year: int | None = None,
    tag: str | None = None,
) -> TrecRuns:
    """Write the submission's passage ranking (and, if asked, its PTKB ranking) as TREC runs."""
    runs = read_rankings(path, year)
    if not any(runs.passages.values()) and not any(runs.ptkb.values()):  # not an empty run written as if it were one
        raise InputError(path, "ranks no passage for any turn: nothing to convert (an empty file?)")
    runs.check_ids(Path(path), ptkb=ptkb_out is not None)  # no passage run is left without its PTKB run
    if not any(runs.passages.values()):
        raise InputError(path, "ranks no passage for any turn: its passage run would rank nothing; it lists PTKB "
                               "provenance alone")
    if ptkb_out is not None and not any(runs.ptkb.values()):  # a PTKB run ranking nothing is an error, as a passage run is
        raise InputError(path, "lists no PTKB provenance for any turn: its PTKB run would rank nothing: convert its "
                               "passages alone, or write it with PTKB provenance (harness ikat from-trec --ptkb-run)")
    tag = tag or "".join(runs.run_name.split()) or "ikat"
    write_run(out, ((turn, runs.passages.pairs(turn)) for turn in runs.passages), tag, printed=runs.print_score)
    if ptkb_out is not None:
        write_run(ptkb_out, ((turn, runs.ptkb.pairs(turn)) for turn in runs.ptkb), tag)
    return runs
