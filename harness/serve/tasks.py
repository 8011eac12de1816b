"""One leaderboard task at work: checking an upload, scoring it, ranking the scored runs.

Nothing here is the server's own: uploads are checked by `harness ikat validate`'s
validator (or the TREC run reader), converted by `harness ikat to-trec`'s converter, scored
by `harness eval`'s evaluator, and ranked by `harness compare`'s leaderboard code, so a
score on the board is the score those commands give for the same file.
"""

from __future__ import annotations

import io
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import TEAM, HarnessError, InputError, bad_byte, counted, not_text, verb
from harness.ikat.submission import file_format
from harness.serve.config import FORMAT_YEARS, TaskConfig
from harness.trec import RunRecord, not_a_run, recorded_run

if TYPE_CHECKING:
    from harness.report.compare import RunScores
    from harness.runner.config import Node

MAX_MESSAGES = 200  # findings returned for one upload
DEFAULT_DEPTH = 1000  # results per turn a task without a depth is sized for (trec_eval's default)
UTF8_BOM = b"\xef\xbb\xbf"
# A passage or response text is a few KiB: a longer string is no run's (decoded, one emoji in
# it makes Python hold every character of it in 4 bytes), nor is a longer TREC line.
MAX_STRING = 1 << 20
MAX_TREC_LINE = 64 << 10
_BETWEEN_QUOTES = re.compile(rb'[^"]+')


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
    # a refusal counted against the day's quota, as a submission is: whether it is refused tells
    # what the task hides (the turns with nuggets), so probing costs what a scored upload costs
    charged: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors


class Refused(Exception):
    """A stored upload that its task's checks refuse when it is scored (checks added, or
    assignments recorded again, since it was accepted): stale with their first message and no
    scores, tried again at each start (service._failed)."""

    def __init__(self, errors: list[Message]) -> None:
        first = errors[0]
        where = ", ".join(part for part in (f"line {first.line}" if first.line is not None else "",
                                            f"turn {first.turn}" if first.turn else "") if part)
        where += ": " if where else ""  # an iKAT JSON response has a turn and no line
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"[{first.check}] {where}{first.message}{more}")


@dataclass(frozen=True)
class Budget:
    """The most a real run of the task holds, with room to spare, counted on the upload's
    bytes before anything is decoded: per turn of the topics, `depth` results (iKAT JSON: a
    passage is one object of 4 fields, so 2 x depth objects and lists and 8 x depth values;
    TREC: 2 x depth lines). A '{' or ',' inside a string counts too: the count errs upward.
    A full iKAT 2023 run (332 turns x 1000 passages, 41.8 MB) holds 334k objects and lists
    and 1.66M values (664k and 2.66M allowed) and decodes to 139 MB; a value decodes to at
    most ~60 bytes, so no upload decodes to much more than ~200 MB whatever its shape."""

    turns: int
    depth: int

    def exceeded(self, data: bytes) -> str:
        """Why a JSON upload is refused before decoding it ('' when it is not)."""
        containers = data.count(b"{") + data.count(b"[")
        values = containers + data.count(b",")
        for count, what, allowed in ((containers, "objects and lists", 2), (values, "values", 8)):
            if count > allowed * self.turns * self.depth:
                return (f"{count} JSON {what}, more than the {allowed * self.turns * self.depth} a run of "
                        f"{self.turns} turns x {self.depth} results could hold")
        longest = max((match.end() - match.start() for match in _BETWEEN_QUOTES.finditer(data)), default=0)
        if longest > MAX_STRING:
            return f"a string (or a stretch without '\"') of {longest} bytes; no field of a run needs {MAX_STRING}"
        return ""

    def exceeded_lines(self, data: bytes) -> str:
        """Why a TREC upload is refused before reading it ('' when it is not)."""
        lines = data.count(b"\n")
        if lines > 2 * self.turns * self.depth:
            return f"{lines} lines, more than twice the {self.turns} turns x {self.depth} results the task ranks"
        return ""


class TaskRuntime:
    def __init__(self, config: TaskConfig) -> None:
        self.config = config

    @cached_property
    def conversations(self):
        from harness.topics.ikat import load_topics

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
        from harness.topics import read_qrels_spec

        # its warnings are the team's, which can change its run, not the task
        return Evaluator(read_qrels_spec(self.config.qrels), self.config.measures, spelling=TEAM)

    @cached_property
    def notes(self) -> list[str]:
        """What the board's means do not say, under its legend: `ceiling_notes` of the task's
        qrels, measures and depth (queries no run can score on at a measure's rel=), as `harness
        compare` and `harness run` say them."""
        from harness.evaluate import ceiling_notes

        return ceiling_notes(self.evaluator.table, self.config.measures, self.config.depth)

    @cached_property
    def scored_with(self) -> dict[str, Any]:
        """What a score depends on besides the file and the measures' names, recorded with it:
        a start scores again each row scored otherwise (a qrels file or `depth` changed under
        the same measure names). The qrels by their judgments, as `harness run` records them."""
        from harness.runner.provenance import qrels_hash

        return {"qrels": qrels_hash(self.evaluator.qrels), "depth": self.config.depth,
                "passage_separator": self.config.passage_separator}

    def scored_with_format(self, fmt: str) -> dict[str, Any]:
        """`scored_with` for an upload of format `fmt`, as recorded with its scores and compared
        at start: the same for every format, unless the reading of one changed (a response task's)."""
        return self.scored_with

    def board_terms(self) -> dict[str, Any]:
        """What the board compares, as its legend words it, and how it takes a run's mean:
        none given, queries and trec_eval's mean (harness.report.compare's defaults)."""
        return {}

    @cached_property
    def budget(self) -> Budget:
        return Budget(len(self.turn_ids), self.config.depth or DEFAULT_DEPTH)

    def prepare(self, at: Node) -> None:
        """Read the topics and qrels now, so that the first upload does not wait for them. Qrels
        judging none of the topics' turns (another year's) are refused, as a config error at the
        task's node `at`: an upload may rank only those turns, so every run would score 0, and
        the board's turn depths cover none."""
        from harness.evaluate import judges_none

        _ = self.turn_ids, self.depths, self.evaluator, self.scored_with
        if problem := judges_none(self.evaluator.qrels, list(self.depths), self.config.topics):
            raise at.child("qrels", None).error(problem)

    # --- checking ------------------------------------------------------------------------

    def check(self, path: Path, display: str) -> Verdict:
        """The validator's verdict on an upload; `display` is the name messages give it.

        The file is read once and decoded once; before decoding, its size in values is held
        to what the task's topics could need (`Budget`), so no upload costs more memory than
        a small multiple of a real run of the task."""
        data = path.read_bytes()
        refused = refused_on_sight(data, display, self.record_refused)
        if refused is not None:
            return refused
        if not data.removeprefix(UTF8_BOM).lstrip().startswith((b"{", b"[")):
            return self._checked("trec", self._check_trec(path, data, display), display)
        over = self.budget.exceeded(data)
        if over:
            return Verdict(None, "", [Message("error", "size", over, display)])
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as problem:
            return Verdict(None, "", [_not_utf8(data, problem, display)])
        del data
        from harness.ikat.validate import decode_submission

        decoded = decode_submission(Path("upload"), text)  # the year from the content, not the name
        return self._checked(file_format(decoded.year), self._check_ikat(decoded, display), display)

    def record_refused(self, record: RunRecord) -> str:
        """What the board says of `harness run`'s record uploaded for a run: the run to upload where
        the task takes TREC runs; where it takes iKAT files only, that run is refused too: from-trec."""
        if "trec" in self.config.formats:
            return not_a_run(record, None, "upload")
        return (not_a_run(record, None, None, "an iKAT submission") + f": this task takes "
                f"{', '.join(self.config.formats)}: upload the submission `harness ikat from-trec` makes of that run")

    def _checked(self, fmt: str, check: Callable[[], Verdict], display: str) -> Verdict:
        """`check()` of a file of format `fmt`, or only the format error when the task refuses it."""
        if fmt not in self.config.formats:
            problem = f"this is a {fmt} file; the task accepts {', '.join(self.config.formats)}"
            return Verdict(fmt, "", [Message("error", "format", problem, display)])
        verdict = check()
        verdict.format = fmt
        return verdict

    def _check_ikat(self, decoded, display: str) -> Callable[[], Verdict]:
        def check() -> Verdict:
            from harness.ikat.convert import decoded_rankings
            from harness.ikat.validate import COVERAGE_CHECKS, validate_decoded

            turns = decoded.raw.get("turns") if isinstance(decoded.raw, dict) else decoded.entries
            if isinstance(turns, list) and len(turns) > 2 * len(self.turn_ids):
                problem = f"{len(turns)} turns, more than twice the {len(self.turn_ids)} turns of the task's topics"
                return Verdict(None, "", [Message("error", "turn-count", problem, display)])
            path = Path(display)
            report = validate_decoded(path, decoded, self.conversations, per_check=MAX_MESSAGES + 1,
                                      skip=COVERAGE_CHECKS if self.config.partial else ())
            messages = [Message(f.level, f.check, f.message, display, f.line, f.turn) for f in report.findings]
            verdict = Verdict(None, "", [m for m in messages if m.level == "error"],
                              [m for m in messages if m.level == "warning"])
            if verdict.ok:
                try:
                    runs = decoded_rankings(path, decoded, report.submission)
                except InputError as problem:  # well-formed for the validator, not for the converter
                    verdict.errors.append(Message("error", "convert", problem.problem, display, problem.line))
                else:
                    verdict.run_name = runs.run_name
                    # the validator says nothing of them; first, before its capped warnings
                    if repeated := runs.passages.duplicates:
                        verdict.warnings.insert(0, Message(
                            "warning", "passage-repeated", f"{counted(repeated, 'passage')} "
                            f"{verb(repeated, 'is', 'are')} listed again in the same response: the first "
                            "is scored, the repeat dropped", display))
            return verdict

        return check

    def _check_trec(self, path: Path, data: bytes, display: str) -> Callable[[], Verdict]:
        def check() -> Verdict:
            from harness.trec import read_run

            over = self.budget.exceeded_lines(data)
            if over:
                return Verdict(None, "", [Message("error", "size", over, display)])
            verdict = Verdict(None, "")
            unknown: set[str] = set()
            for number, line in enumerate(io.BytesIO(data), start=1):  # an unknown query holds no memory
                if len(line) > MAX_TREC_LINE:
                    problem = f"a line of {len(line)} bytes; a TREC run's lines are short (at most {MAX_TREC_LINE})"
                    return Verdict(None, "", [Message("error", "trec", problem, display, number)])
                fields = (line.removeprefix(UTF8_BOM) if number == 1 else line).split()
                if len(fields) == 6:
                    qid = fields[0].decode("utf-8", "replace")
                    verdict.run_name = verdict.run_name or fields[5].decode("utf-8", "replace")
                    if qid not in self.turn_ids and len(unknown) < MAX_MESSAGES:
                        unknown.add(qid)
            for qid in sorted(unknown):
                verdict.errors.append(Message("error", "qid", f"query {qid!r} is not a turn of the task's topics", display))
            if verdict.errors:
                return verdict
            try:
                run = read_run(path, depth=self.config.depth)
            except InputError as problem:
                return Verdict(None, "", [Message("error", "trec", problem.problem, display, problem.line)])
            if not self.config.partial and (problem := self._coverage(set(run.scores))):
                verdict.warnings.append(Message("warning", "coverage", problem, display))
            if run.duplicates:
                verdict.warnings.append(Message("warning", "duplicate", f"{run.duplicates} repeated documents (highest score kept)", display))
            return verdict

        return check

    def _coverage(self, answered: set[str]) -> str:
        """The turns a TREC run has no results for, judged ones (scored 0, as `harness eval` scores
        them) apart from the others (not scored at all: "scored 0" on them made a team think its
        judged turns were dropped); '' for none. Where teams see their means only, counted among
        all the topics' turns, as a response task's are, so as not to tell which turns are judged."""
        missing = self.turn_ids - answered
        if not missing:
            return ""
        said = f"{counted(len(missing), 'turn')} {verb(len(missing))} no results"
        if not self.config.per_query_scores:
            return f"{said} (a judged turn scores 0)"
        judged = len(missing & self.evaluator.qrels.judgments.keys())
        if judged == len(missing):
            return f"{said} (judged: scored 0, as empty rankings)"
        if not judged:
            return f"{said} (not judged: not scored)"
        return f"{said}: {judged} judged (scored 0, as empty rankings), {len(missing) - judged} not judged (not scored)"

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

    def scoring_warnings(self, evaluation) -> list[str]:
        """What scoring found that the scores do not show, for the team: the run's documents
        almost never judged (`harness eval`'s docid warning: passage ids against a task judging
        documents, ids in another case), which is otherwise a board row of zeros, unexplained.
        Where teams see their means only, without the count and the id it gives: how many of a
        set the team chose (its top 10s) are judged, and a judged id, tell what the qrels judge."""
        if not evaluation.docid_warning:
            return []
        return [evaluation.docid_warning if self.config.per_query_scores else UNJUDGED_IDS]


# the docid warning where the qrels are hidden (`per_query_scores: false`): what to check, not what was found
UNJUDGED_IDS = ("many documents in the run's top 10s are not judged in the task's qrels as they are written (which "
                "documents are judged is hidden on this task: no count or id is given): check that the run's ids are "
                "the document ids of the task's collection, written as it writes them, case included (ids are "
                "compared exactly, as trec_eval compares them); where they are passage ids, ask the organisers "
                "whether the task judges documents by their best passage")


def refused_on_sight(data: bytes, display: str, record_refused: Callable[[RunRecord], str]) -> Verdict | None:
    """An upload that starts as a compressed file or UTF-16/UTF-32 text refused, named as the harness's
    readers name it (harness.errors.not_text), and `harness run`'s record of a run, said as the task
    says it (`record_refused`: what to upload instead); None for any other. Read on, a compressed file's
    bytes made one garbage query id a line, UTF-16 text NUL bytes in every field, and a run's record some
    twenty errors of the iKAT schema."""
    found = not_text(data)
    if found is not None:
        return Verdict(None, "", [Message("error", "format" if found.compressed else "encoding",
                                          found.problem("upload the run itself, uncompressed"), display)])
    if (record := recorded_run(data)) is not None:
        return Verdict(None, "", [Message("error", "format", record_refused(record), display)])
    return None


def _not_utf8(data: bytes, problem: UnicodeDecodeError, display: str) -> Message:
    """The line and column of the first byte that is not UTF-8, as the harness's readers say it."""
    start = data.rfind(b"\n", 0, problem.start) + 1
    message = bad_byte(data[start:problem.start + 1], problem.start - start)
    return Message("error", "encoding", message, display, data.count(b"\n", 0, problem.start) + 1)


def ranked_board(runs: list[RunScores], **terms: Any):
    """`harness compare`'s leaderboard with the best run on the main measure as the only
    baseline: paired t-tests, Holm-corrected over every run and measure; `terms` as the task
    has them (TaskRuntime.board_terms)."""
    from harness.evaluate import added_in_order
    from harness.report.compare import leaderboard

    if not runs:
        raise HarnessError("no scored runs")
    main = runs[0].measures[0]
    top = max(runs, key=lambda run: added_in_order(run.per_query[main][qid] for qid in sorted(run.per_query[main])))
    return leaderboard(runs, [top.run_name], test="paired-t", correction="holm", **terms)
