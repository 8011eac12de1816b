"""iKAT submission -> TREC runs: the passage ranking NIST evaluates, and the PTKB ranking.

Passages (2023/2024) follow the track's conversion (irlabamsterdam/iKAT
2023/scripts/run_validation/generate_run.py, unchanged in 2024): responses are read in file
order and, within one, its passages in file order; a passage's first occurrence wins and
its score becomes `score / (response rank + 1)`. That script writes the passages in that
order with those scores, and trec_eval then orders them by score; `write_run` needs a
best-first list, so the list is sorted by the normalised score (stably: ties keep the
first-occurrence order). 2025 (generate_run.py beside the 2025 validator): a turn's
`references` sorted by decreasing score.

PTKB provenance has no official conversion; the same rule is applied: first occurrence in
response order, then by decreasing PTKB score. 2024 and 2025 provenance is a bare list of
statement ids, ranked as listed (scores n, n-1, ..., 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.ikat.submission import Submission
from harness.ikat.validate import decode_lines, guess_year, read_submission, read_text
from harness.trec import write_run

Rankings = dict[str, list[tuple[str, float]]]


@dataclass(frozen=True)
class TrecRuns:
    run_name: str
    passages: Rankings  # {turn id: best-first [(passage id, score)]}
    ptkb: Rankings  # {turn id: best-first [(PTKB statement id, score)]}


def _best_first(items: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(items, key=lambda item: -item[1])  # stable: ties keep their order


def submission_rankings(submission: Submission, year: int) -> TrecRuns:
    passages: Rankings = {}
    ptkb: Rankings = {}
    for turn in submission.turns:
        seen: dict[str, float] = {}
        seen_ptkb: dict[str, float] = {}
        for response in turn.responses:
            for passage in response.passage_provenance:
                seen.setdefault(passage.id, passage.score / (response.rank + 1))
            for statement in response.ptkb_provenance:
                seen_ptkb.setdefault(statement.id, statement.score)
        passages[turn.turn_id] = _best_first(list(seen.items()))
        if seen_ptkb:
            ptkb[turn.turn_id] = _best_first(list(seen_ptkb.items())) if year == 2023 else _by_position(seen_ptkb)
    return TrecRuns(submission.run_name, passages, ptkb)


def _by_position(ids: Iterable[str]) -> list[tuple[str, float]]:
    """Bare ids (2024, 2025) ranked as listed: scores n, n-1, ..., 1."""
    ids = list(ids)
    return [(pid, float(len(ids) - i)) for i, pid in enumerate(ids)]


def _rankings_2025(path: Path) -> TrecRuns:
    passages: Rankings = {}
    ptkb: Rankings = {}
    run_name = None
    for line, entry in decode_lines(read_text(path)):
        if isinstance(entry, json.JSONDecodeError) or not isinstance(entry, dict):
            raise InputError(path, "not a JSON object", line=line)
        turn_id = entry.get("turn_id")
        references = entry.get("references", {})
        if not isinstance(turn_id, str) or not isinstance(references, dict):
            raise InputError(path, "expected turn_id (string) and references {passage id: score}", line=line)
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        run_name = run_name or metadata.get("run_id")
        passages[turn_id] = _best_first([(pid, float(score)) for pid, score in references.items()])
        ids: dict[str, None] = {}
        for response in entry.get("responses", []):
            for statement in response.get("ptkb_provenance", []) if isinstance(response, dict) else []:
                ids.setdefault(str(statement))
        if ids:
            ptkb[turn_id] = _by_position(ids)
    return TrecRuns(run_name or "default_run", passages, ptkb)


def read_rankings(path: str | Path, year: int | None = None) -> TrecRuns:
    """The passage and PTKB rankings of an iKAT submission of any year."""
    path = Path(path)
    year = year or guess_year(path, read_text(path))
    if year == 2025:
        return _rankings_2025(path)
    submission, year = read_submission(path, year)
    return submission_rankings(submission, year)


def to_trec(
    path: str | Path,
    out: str | Path,
    ptkb_out: str | Path | None = None,
    year: int | None = None,
    tag: str | None = None,
) -> TrecRuns:
    """Write the submission's passage ranking (and, if asked, its PTKB ranking) as TREC runs."""
    runs = read_rankings(path, year)
    tag = tag or "".join(runs.run_name.split()) or "ikat"
    write_run(out, runs.passages.items(), tag)
    if ptkb_out is not None:
        write_run(ptkb_out, runs.ptkb.items(), tag)
    return runs
