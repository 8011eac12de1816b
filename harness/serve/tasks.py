"""One leaderboard task at work: checking an upload, scoring it, ranking the scored runs.

Nothing here is the server's own: uploads are checked by `harness ikat validate`'s
validator (or the TREC run reader), converted by `harness ikat to-trec`'s converter, scored
by `harness eval`'s evaluator, and ranked by `harness compare`'s leaderboard code, so a
score on the board is the score those commands give for the same file.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from harness.errors import HarnessError, InputError, open_input, read_input
from harness.ikat.submission import file_format
from harness.serve.config import FORMAT_YEARS, TaskConfig

MAX_MESSAGES = 200  # findings returned for one upload


@dataclass(frozen=True)
class Message:
    """One validator finding, naming the uploaded file as its owner called it."""

    level: str  # error / warning
    check: str
    message: str
    file: str
    line: int | None = None
    turn: str | None = None

    def __str__(self) -> str:
        where = "".join([f":{self.line}" if self.line is not None else "", f" turn {self.turn}" if self.turn else ""])
        return f"{self.file}{where} {self.level} [{self.check}]: {self.message}"

    def as_dict(self) -> dict:
        return {"level": self.level, "check": self.check, "message": self.message, "file": self.file,
                "line": self.line, "turn": self.turn}


@dataclass
class Verdict:
    format: str | None
    run_name: str
    errors: list[Message] = field(default_factory=list)
    warnings: list[Message] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class ScoredRun:
    """What `harness.report.compare.leaderboard` reads (its EvaluationLike)."""

    run_name: str
    measures: list[str]
    per_query: dict[str, dict[str, float]]


def detect_format(text: str) -> str:
    """iKAT JSON (2023/2024) or JSON Lines (2025) by the validator's own guess; else a TREC run."""
    from harness.ikat.validate import guess_year

    if not text.lstrip().startswith(("{", "[")):
        return "trec"
    year = guess_year(Path("upload"), text)
    return file_format(year)


class TaskRuntime:
    def __init__(self, config: TaskConfig) -> None:
        self.config = config

    @cached_property
    def conversations(self):
        from harness.ikat.cli import load_topics

        return load_topics(self.config.topics)

    @cached_property
    def turn_ids(self) -> frozenset[str]:
        return frozenset(self.depths)

    @cached_property
    def depths(self) -> dict[str, int]:
        from harness.report.breakdown import depths_from_topics

        return depths_from_topics(self.conversations)

    @cached_property
    def evaluator(self):
        from harness.evaluate import Evaluator
        from harness.trec import read_qrels

        return Evaluator(read_qrels(self.config.qrels), self.config.measures)

    def prepare(self) -> None:
        """Read the topics and qrels now, so that the first upload does not wait for them."""
        _ = self.turn_ids, self.depths, self.evaluator

    # --- checking ------------------------------------------------------------------------

    def check(self, path: Path, display: str) -> Verdict:
        """The validator's verdict on an upload; `display` is the name messages give it."""
        try:
            text = read_input(path)  # a BOM read away; a bad byte named at its line
        except InputError as problem:
            return Verdict(None, "", [Message("error", "encoding", problem.problem, display, problem.line)])
        fmt = detect_format(text)
        if fmt not in self.config.formats:
            problem = f"this is a {fmt} file; the task accepts {', '.join(self.config.formats)}"
            return Verdict(fmt, "", [Message("error", "format", problem, display)])
        verdict = self._check_trec(path, display) if fmt == "trec" else self._check_ikat(path, display, FORMAT_YEARS[fmt])
        verdict.format = fmt
        return verdict

    def _check_ikat(self, path: Path, display: str, year: int) -> Verdict:
        from harness.ikat.convert import read_rankings
        from harness.ikat.validate import COVERAGE_CHECKS, validate_file

        report = validate_file(path, self.conversations, year, skip=COVERAGE_CHECKS if self.config.partial else ())
        messages = [Message(f.level, f.check, f.message, display, f.line, f.turn) for f in report.findings]
        verdict = Verdict(None, "", [m for m in messages if m.level == "error"], [m for m in messages if m.level == "warning"])
        if verdict.ok:
            try:
                verdict.run_name = read_rankings(path, year).run_name
            except InputError as problem:  # well-formed for the validator, not for the converter
                verdict.errors.append(Message("error", "convert", problem.problem, display, problem.line))
        return verdict

    def _check_trec(self, path: Path, display: str) -> Verdict:
        from harness.trec import read_run

        try:
            run = read_run(path)
        except InputError as problem:
            return Verdict(None, "", [Message("error", "trec", problem.problem, display, problem.line)])
        verdict = Verdict(None, "")
        unknown = sorted(set(run.scores) - self.turn_ids)
        for qid in unknown[:MAX_MESSAGES]:
            verdict.errors.append(Message("error", "qid", f"query {qid!r} is not a turn of the task's topics", display))
        if not self.config.partial:
            missing = len(self.turn_ids - set(run.scores))
            if missing:
                verdict.warnings.append(Message("warning", "coverage", f"{missing} turns have no results (scored 0)", display))
        if run.duplicates:
            verdict.warnings.append(Message("warning", "duplicate", f"{run.duplicates} repeated documents (highest score kept)", display))
        with open_input(path) as handle:
            verdict.run_name = next((line.split()[5] for line in handle if len(line.split()) == 6), "")
        return verdict

    # --- scoring -------------------------------------------------------------------------

    def score(self, path: Path, fmt: str):
        """The file's Evaluation, as `harness ikat to-trec` + `harness eval` compute it."""
        from harness.evaluate import RunFileOptions, evaluate_files

        options = RunFileOptions(passage_separator=self.config.passage_separator, depth=self.config.depth)
        if fmt == "trec":
            return evaluate_files(self.evaluator, [path], options)[0]
        from harness.ikat.convert import to_trec

        with tempfile.TemporaryDirectory(prefix="harness-serve-") as folder:
            trec_run = Path(folder) / "run.run"
            to_trec(path, trec_run, year=FORMAT_YEARS[fmt])
            return evaluate_files(self.evaluator, [trec_run], options)[0]


def ranked_board(runs: list[ScoredRun]):
    """`harness compare`'s leaderboard with the best run on the main measure as the only
    baseline: paired t-tests, Holm-corrected over every run and measure."""
    from harness.report.compare import leaderboard

    if not runs:
        raise HarnessError("no scored runs")
    main = runs[0].measures[0]
    top = max(runs, key=lambda run: sum(run.per_query[main].values()))
    return leaderboard(runs, [top.run_name], test="paired-t", correction="holm")
