"""What the server does, apart from HTTP: accept an upload, score in the background, rank.

The API and the pages both call `Service.submit`, so a browser and a script meet the same
checks in the same order: task and quota, size, validation, duplicate, durable storage.
"""

from __future__ import annotations

import contextlib
import math
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import IO, Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from harness.serve import NOT_KEPT
from harness.serve import store as st
from harness.runner.config import Node
from harness.serve.config import ServeConfig
from harness.serve.responses import ResponseTaskRuntime
from harness.serve.tasks import MAX_MESSAGES, Refused, TaskRuntime, Verdict, ranked_board

log = logging.getLogger("harness.serve")
MAX_DESCRIPTION = 2000
VALIDATIONS = 2  # uploads checked at once; the others wait (each may hold ~200 MB decoded)
VALIDATION_WAIT_S = 120  # longer than this in the queue: 503, try again
SCORING = "scoring: "  # opens a warning its scoring found, replaced when the row is scored again
_DISPLAY = re.compile(r"[^A-Za-z0-9_.+-]")
# C0 and C1 control characters but tab and line breaks: what a description not in UTF-8 (UTF-16,
# Windows-1252's quotes) holds once the form parser has read it as Latin-1, as it reads such text
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def kept_warnings(warnings: list) -> list[str]:
    """The first MAX_MESSAGES warnings, and a last one saying how many more were not kept (a
    run without PTKB provenance draws one a turn), so that no reader takes 200 for all."""
    kept = [str(warning) for warning in warnings[:MAX_MESSAGES]]
    if len(warnings) > MAX_MESSAGES:
        kept.append(NOT_KEPT.format(len(warnings) - MAX_MESSAGES))
    return kept


@dataclass
class Outcome:
    """An upload's answer: 202 (stored, `id`), 422 (`messages`), 404, 413, 429 or 503 (`detail`)."""

    status: int
    id: str | None = None
    detail: str = ""
    messages: list[dict] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)  # a 429's Retry-After
    # of a 202: accepted (new), duplicate (a file this team gave this task before: no new submission)
    # or restored (that, whose stored copy was gone: stored again, and queued where it was stale or failed)
    answer: str = "accepted"

    def why(self) -> str:
        """A refusal's detail and its first message, for the organisers' log."""
        if not self.messages:
            return self.detail
        first = self.messages[0]
        where = ":".join(str(first[key]) for key in ("file", "line") if first.get(key) is not None)
        turn = f" turn {first['turn']}" if first.get("turn") else ""
        return f"{self.detail}; first: {where}{turn} [{first['check']}]: {first['message']}"

    def body(self) -> dict[str, Any]:
        if self.status == 202:
            return {"id": self.id, "status": self.answer}
        body: dict[str, Any] = {"detail": self.detail}
        if self.messages:
            body["errors"] = self.messages
        return body


def garbled(field: str, text: str) -> str | None:
    """Why a form's text field is refused: a control character, shown on the public board as
    garbage (a UTF-16 description read as Latin-1 was 'ÿþ' and NULs); None where it is text."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    return (f"{field}: holds the control character U+{ord(found[0]):04X} (character {found.start() + 1}), which is "
            "no text: send it as UTF-8 (text in another encoding, such as UTF-16 or Windows-1252, is read as Latin-1)")


def display_name(filename: str | None) -> str:
    """The uploader's file name, reduced to a safe base name, for messages only."""
    base = (filename or "upload").replace("\\", "/").rsplit("/", 1)[-1]
    return _DISPLAY.sub("_", base)[:100] or "upload"


class Service:
    def __init__(self, config: ServeConfig) -> None:
        """Every task's topics and qrels are read before the database and storage are opened:
        a malformed file is one line naming it, and leaves nothing new on disk."""
        self.config = config
        self.tasks = {name: (TaskRuntime if task.nuggets is None else ResponseTaskRuntime)(task)
                      for name, task in config.tasks.items()}
        for index, runtime in enumerate(self.tasks.values()):  # now, not on the first upload
            runtime.prepare(Node(config.path, f"tasks[{index}]", None))  # config's order: its list's
        self.store = st.Store(config.database, config.storage)
        self._quota_lock = threading.Lock()  # count-then-insert per team (in the database too: lock_team)
        self._validations = threading.BoundedSemaphore(VALIDATIONS)
        self._board_locks = {name: threading.Lock() for name in config.tasks}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._boards: dict[str, tuple[tuple, Any]] = {}

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        changes = self.store.add_teams({team.name: team.token_sha256 for team in self.config.teams.values()})
        for old, new in changes.renamed:
            log.warning("team %s is now %s (teams: gives its token that name): its submissions, scores and quota "
                        "are %s's", old, new, new)
        for name in changes.new_token:
            log.warning("team %s has another token than at the last start: its submissions stay its own (a lost "
                        "token replaced); browser sessions opened with the old token are ended", name)
        removed = self.store.discard_incomplete()
        if removed:
            log.info("removed %d incomplete uploads", removed)
        self._rescore_stale()
        self._worker = threading.Thread(target=self._work, name="harness-serve-scorer", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=30)
        self.store.close()

    def _rescore_stale(self) -> None:
        """Queue again, to be scored from its stored file, each scored submission whose scores
        are not those its task gives now: the config changed its measures, or its qrels or
        depth under the same measure names (`scored_with`), since. Ranked beside the new scores,
        such a run scored 0 on every query of a measure it lacked (one lacking the main
        measure made the board a KeyError, 500), or was scored on other judgments. A row that
        scoring again failed before (STALE) is tried again; one whose scores are its task's
        again (the config changed back) is back on the board as it was; one its task's checks
        refused, which has none, is tried at every start."""
        stale: dict[tuple[str, str], int] = {}
        restored: dict[str, int] = {}
        with self.store.session() as session:
            for row in session.scalars(select(st.Submission).where(st.Submission.status.in_((st.SCORED, st.STALE)))
                                       .options(defer(st.Submission.per_query))):  # read where _holds needs it
                runtime = self.tasks.get(row.task)
                reason = None if runtime is None else _stale(row, runtime)
                if reason is not None:
                    row.status, row.error = st.QUEUED, None  # a stale row's note is of its last try
                    stale[row.task, reason] = stale.get((row.task, reason), 0) + 1
                elif row.status == st.STALE and runtime is not None:
                    row.status, row.error = st.SCORED, None
                    restored[row.task] = restored.get(row.task, 0) + 1
            session.commit()
        for (task, reason), count in stale.items():
            log.info("task %s: %d scored submissions to score again (%s)", task, count, reason)
        for task, count in restored.items():
            log.info("task %s: %d submissions back on the board with their earlier scores, which are the task's "
                     "again", task, count)

    # --- accepting -----------------------------------------------------------------------

    def submit(self, team: str, task: str, source: IO[bytes], filename: str | None, description: str) -> Outcome:
        runtime = self.tasks.get(task)
        if runtime is None:
            return Outcome(404, detail=f"no task {task!r}")
        problem = garbled("description", description)
        if problem is not None:
            return Outcome(422, detail=problem)
        received = self.store.receive(source, self.config.max_upload_bytes)
        if received is None:
            return Outcome(413, detail=f"the file is larger than the {self.config.max_upload_bytes >> 20} MiB allowed")
        try:
            return self._submit(team, runtime, received, display_name(filename), description[:MAX_DESCRIPTION])
        finally:
            received.done()

    def _submit(self, team: str, runtime: TaskRuntime, received: st.Received, display: str, description: str) -> Outcome:
        task, sha256 = runtime.config.name, received.sha256
        ident = st.submission_id(task, team, sha256)
        with self.store.session() as session:
            # by its team, not its id: a renamed team's submissions keep the ids made from its name then
            known = session.scalars(select(st.Submission).where(
                st.Submission.task == task, st.Submission.team == team, st.Submission.sha256 == sha256)).first()
            if known is not None and self.store.lost(sha256):
                return self._restore(session, known, received)
            if known is not None:
                self.store.audit(session, team=team, task=task, sha256=sha256, event="duplicate", detail=known.id)
                session.commit()
                return Outcome(202, id=known.id, answer="duplicate")
            over = self._over_quota(session, team, task, sha256)  # before spending time on validation
            if over is not None:
                return over
        if not self._validations.acquire(timeout=VALIDATION_WAIT_S):
            return Outcome(503, detail="the server is busy checking other uploads; try again in a few minutes")
        try:
            verdict = runtime.check(received.path, display)
        finally:
            self._validations.release()
        if not verdict.ok:
            return self._refuse(team, task, sha256, verdict, display)
        with self._charging(team, task, sha256) as (session, over):  # again, now that no one else can add
            if over is not None:
                return over
            self.store.keep(received)
            session.add(st.Submission(
                id=ident, task=task, team=team, sha256=sha256, format=verdict.format,
                run_name=(verdict.run_name or display)[:200], description=description,
                warnings=kept_warnings(verdict.warnings), status=st.QUEUED,
            ))
            self.store.audit(session, team=team, task=task, sha256=sha256, event="accepted", detail=ident)
            try:
                session.commit()  # the 202 goes out only after this
            except IntegrityError:  # the same file raced in twice: one row, one id
                session.rollback()
                return Outcome(202, id=ident)
        log.info("accepted submission %s of team %s for task %s", ident, team, task)
        self._wake.set()
        return Outcome(202, id=ident)

    def _restore(self, session: Session, row: st.Submission, received: st.Received) -> Outcome:
        """The exact bytes of a submission whose stored file is gone (a restore that missed the
        storage folder): stored again, and one whose scoring failed for the want of them (stale,
        failed) queued to be scored, where a `duplicate` dropped them and left it stale for good.
        Not charged: it is the same submission, and its bytes are those accepted."""
        self.store.keep(received)
        requeued = row.status in (st.STALE, st.FAILED)
        if requeued:
            row.status, row.error = st.QUEUED, None
        self.store.audit(session, team=row.team, task=row.task, sha256=row.sha256, event="restored", detail=row.id)
        session.commit()
        log.info("stored again the lost file of submission %s of team %s for task %s%s", row.id, row.team, row.task,
                 "; queued for scoring" if requeued else "")
        self._wake.set()
        return Outcome(202, id=row.id, answer="restored")

    def _refuse(self, team: str, task: str, sha256: str, verdict: Verdict, display: str) -> Outcome:
        """422 with the validator's messages. A refusal `verdict.charged` is counted against the
        day's quota as a submission is, under the same lock, counted first: over the quota it is a
        429, which, as before the file was checked, says nothing of the file."""
        count = len(verdict.errors)
        detail = f"{display} is not a valid run for {task}: {count} error{'s' * (count != 1)}"
        event = "rejected"
        with self._charging(team, task, sha256, charged=verdict.charged) as (session, over):
            if over is not None:
                return over
            if verdict.charged:
                event = st.CHARGED
                detail += (f"; this refusal is charged to team {team}'s {self.config.quota} submissions for today "
                           "(UTC), as a submission is: that an upload is refused tells what this task keeps hidden")
            self.store.audit(session, team=team, task=task, sha256=sha256, event=event,
                             detail=f"{count} errors, first: {verdict.errors[0]}"[:2000])
            session.commit()
        return Outcome(422, detail=detail, messages=[m.as_dict() for m in verdict.errors[:MAX_MESSAGES]])

    @contextlib.contextmanager
    def _charging(self, team: str, task: str, sha256: str, *,
                  charged: bool = True) -> Iterator[tuple[Session, Outcome | None]]:
        """A session to add an upload charged to the team's quota in, with the 429 where the quota
        is spent: counted under this process's lock and the team's row, so that no other thread or
        process adds for the team meanwhile. Not `charged`: a session, nothing counted or locked."""
        if not charged:
            with self.store.session() as session:
                yield session, None
            return
        with self._quota_lock, self.store.session() as session:
            self.store.lock_team(session, team)
            yield session, self._over_quota(session, team, task, sha256)

    def _over_quota(self, session, team: str, task: str, sha256: str) -> Outcome | None:
        if self.store.charged_today(session, team) < self.config.quota:
            return None
        self.store.audit(session, team=team, task=task, sha256=sha256, event="quota")
        session.commit()
        frees = (st.midnight() + timedelta(days=1) - st.now()).total_seconds()  # the day's count starts again
        return Outcome(429, detail=f"team {team} has used its {self.config.quota} uploads today (UTC) across all tasks",
                       headers={"Retry-After": str(max(1, math.ceil(frees)))})

    # --- scoring -------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.score_next()
                if not busy:  # the queue is empty: rank the new scores now, not for the next visitor
                    for task in self.tasks:
                        self.board(task)
            except Exception as problem:  # noqa: BLE001  (e.g. the database is away: retry, do not die)
                log.error("scoring worker: %s; retrying", type(problem).__name__)
                busy = False
            if not busy:
                self._wake.wait(timeout=1.0)
                self._wake.clear()

    def score_next(self) -> bool:
        """Score the oldest queued submission of a task this process serves; False when none
        waits. Another task's stays queued, for the process that serves it (PostgreSQL: several
        share the database). With PostgreSQL the row stays locked until the score is committed,
        and another process's worker skips it (SKIP LOCKED); a process killed meanwhile leaves
        it queued for the next."""
        with self.store.session() as session:
            row = session.scalars(select(st.Submission)
                                  .where(st.Submission.status == st.QUEUED, st.Submission.task.in_(list(self.tasks)))
                                  .order_by(st.Submission.created_at, st.Submission.id).limit(1)
                                  .with_for_update(skip_locked=True)).first()
            if row is None:
                return False
            started = time.perf_counter()
            runtime = self.tasks[row.task]
            try:
                evaluation = runtime.score(self.store.stored_file(row.sha256), row.format)
            except Exception as problem:  # noqa: BLE001  (a scoring bug must not stop the worker)
                _failed(row, problem)
            else:
                row.means, row.per_query = evaluation.means, evaluation.per_query
                row.scored_with = runtime.scored_with_format(row.format)
                found = runtime.scoring_warnings(evaluation)
                row.warnings = [SCORING + warning for warning in found] + [
                    warning for warning in row.warnings if not warning.startswith(SCORING)]
                for warning in found:  # the organisers' too: a task's settings may be what to fix
                    log.warning("task %s: submission %s: %s", row.task, row.id, warning)
                row.status, row.error, row.scored_at = st.SCORED, None, st.now()
            session.commit()
        if row.status == st.SCORED:
            log.info("scored submission %s in %.2f s", row.id, time.perf_counter() - started)
        return True

    # --- reading -------------------------------------------------------------------------

    def submission(self, ident: str) -> st.Submission | None:
        with self.store.session() as session:
            return session.get(st.Submission, ident)

    def team_submissions(self, team: str) -> list[st.Submission]:
        with self.store.session() as session:
            query = select(st.Submission).where(st.Submission.team == team).order_by(st.Submission.created_at.desc())
            return list(session.scalars(query))

    def board(self, task: str, draw: Callable[[dict], Any] | None = None) -> dict[str, Any]:
        """Ranked rows (means only: per-query scores never leave the server) and the
        significance tier of each run against the top run on the main measure. Built once
        per set of scored runs, under the task's lock: visitors arriving meanwhile wait for
        that one build; `draw(board)`, once per build too, becomes board["depth_plot"].
        `unranked` counts the task's other submissions by status, so that a board whose runs
        are all queued or held off it (stale) does not read as one nobody submitted to."""
        scored = (st.Submission.task == task, st.Submission.status == st.SCORED)
        with self._board_locks[task]:
            with self.store.session() as session:
                key = tuple(session.scalars(select(st.Submission.id).where(*scored).order_by(st.Submission.id)))
                cached = self._boards.get(task)
                if cached is None or cached[0] != key:
                    rows = list(session.scalars(select(st.Submission).where(*scored).order_by(st.Submission.created_at)))
                    cached = (key, _board(self.tasks[task], rows))
                    self._boards[task] = cached
                counts = dict(session.execute(
                    select(st.Submission.status, func.count()).where(st.Submission.task == task,
                                                                     st.Submission.status.in_(st.UNRANKED))
                    .group_by(st.Submission.status)).all())
            if draw is not None and "depth_plot" not in cached[1]:
                cached[1]["depth_plot"] = draw(cached[1])
            return {**cached[1], "unranked": {status: counts.get(status, 0) for status in st.UNRANKED}}


def _failed(row: st.Submission, problem: Exception) -> None:
    """Mark a row whose scoring failed. One its task's checks refuse (Refused: its task changed
    since it was accepted: checks added, assignments recorded again) is STALE with their message,
    its scores, if any, dropped (they are of an upload the task does not score now: a gamed one
    must not keep them), and tried again at each start: the organiser may record its answers
    again, and FAILED, never retried, its file a `duplicate` if uploaded again, would lose an
    honest run for good. Another scored before (queued again at start: its task changed) keeps
    its earlier scores, what they were scored with and when, STALE: off the board, which ranks
    runs scored alike, shown to its owner, and tried again at the next start (not before: the
    worker would retry it at once, forever); FAILED would lose it for good."""
    # its message too, in the organisers' log (the team is told only that it failed): what to fix
    why = ": ".join(filter(None, (type(problem).__name__, str(problem))))
    if isinstance(problem, Refused):
        log.error("submission %s of task %s is refused by the task's checks as it is scored: %s; it is off the board "
                  "(status stale, no scores) and tried again at each start", row.id, row.task, problem)
        row.status = st.STALE
        row.error = (f"refused by the task's checks as it was scored: {problem}; it is kept, off the board and without "
                     "scores, and scored again at each start of the server (the organisers have been told)")
        row.means = row.per_query = row.scored_with = row.scored_at = None
        return
    if row.means is None:
        log.error("scoring submission %s failed: %s", row.id, why)
        row.status, row.error = st.FAILED, "scoring failed; the organisers have been told"
        return
    log.error("scoring submission %s of task %s again failed: %s; its earlier scores are kept, off the board (status "
              "stale), and it is tried again at the next start", row.id, row.task, why)
    row.status = st.STALE
    row.error = ("scoring it again with the task's current settings failed; these are its earlier scores, off the "
                 "board until a start scores it again; the organisers have been told")


def _holds(row: st.Submission, measures: tuple[str, ...]) -> bool:
    """Whether a scored row has scores for exactly the task's measures. Its means' keys say so
    (its per-query scores, far larger, are not read); only where a measure has no mean, as a
    response measure undefined on every turn has none, do its per-query scores' keys decide."""
    return set(row.means or {}) == set(measures) or set(row.per_query or {}) == set(measures)


def _stale(row: st.Submission, runtime: TaskRuntime) -> str | None:
    """Why a scored row's scores are not those its task gives now; None when they are."""
    if row.means is None:  # stale without scores: refused by its task's checks (_failed), tried at each start
        return "refused by the task's checks when last scored"
    if not _holds(row, runtime.config.measures):
        return "the task's measures changed"
    if row.scored_with is None:
        return "scored by an earlier version, which did not record what it was scored with"
    now = runtime.scored_with_format(row.format)
    changed = sorted(key for key in row.scored_with.keys() | now.keys() if row.scored_with.get(key) != now.get(key))
    return f"the task's {' and '.join(changed)} changed" if changed else None


def _board(runtime: TaskRuntime, rows: list[st.Submission]) -> dict[str, Any]:
    from harness.report import breakdown as bd
    from harness.report.compare import RunScores
    from harness.report.html import FEW_QUERIES

    measures = list(runtime.config.measures)
    main = runtime.config.main_measure
    result: dict[str, Any] = {"task": runtime.config.name, "title": runtime.config.title, "main_measure": main,
                              "measures": measures, "rows": [], "legend": "", "notes": runtime.notes, "depth": None}
    if not rows:
        return result
    label = {row.id: f"{row.team}/{row.run_name} ({row.id[:6]})" for row in rows}
    by_label = {label[row.id]: row for row in rows}
    board = ranked_board([RunScores(label[row.id], measures, row.per_query) for row in rows], **runtime.board_terms())
    top = board.baselines[0]
    ranks = board.ranks()  # equal means share a rank, the next run's the place after them (1, 1, 3)
    for name in board.ranked_runs:
        row = by_label[name]
        comparison = next(iter(board.comparisons_of(name, main)), None)
        if comparison is None:
            tier, p = "top", None
        elif not comparison.tested:  # one query: no test, which "tied" read as tested and not different
            tier, p = "untested", None
        else:
            tier = ("below" if comparison.difference < 0 else "above") if board.significant(comparison) else "tied"
            p = comparison.p_adjusted
        result["rows"].append({
            "rank": ranks[name], "team": row.team, "run_name": row.run_name, "description": row.description,
            "submitted": row.created_at.isoformat(timespec="seconds") + "Z",
            "measures": {m: board.summaries[name, m].mean if m in board.measures else None  # None: undefined
                         for m in measures},
            "tier": tier, "p_adjusted": p,
        })
    result["top"] = by_label[top].run_name
    # the page and the API show tiers and p-values, not compare's marks
    result["legend"] = f"{board.test_note()} {board.missing_note()}"
    mean = runtime.board_terms().get("mean")
    pooled = pooled_depths(bd.breakdown(board.scores, main, runtime.depths, bd.DEPTH, mean).counts, FEW_QUERIES)
    depth = bd.breakdown(board.scores, main, {qid: pooled[d] for qid, d in runtime.depths.items() if d in pooled},
                         bd.DEPTH, mean)
    ranked = board.ranked_runs[:10]
    result["depth"] = bd.Breakdown(depth.name, depth.measure, depth.groups, depth.counts,
                                   {run: depth.means[run] for run in ranked}, depth.unassigned)
    result["depth_counts"] = runtime.config.per_query_scores  # how many turns each depth judges: hidden with them
    return result


class Depths(NamedTuple):
    """Turn depths `first` to `last` as one point of the public by-depth plot: `2-3`, or `7`."""

    first: int
    last: int

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


def pooled_depths(counts: dict[int, int], least: int) -> dict[int, Depths]:
    """Each turn depth's point on the public plot: deeper depths pooled with shallower ones until
    a point holds `least` judged turns (a leftover deepest few join the point before), for a point
    of one judged turn was that turn's score for every team's run, and a deep turn is one of few."""
    points: list[list[int]] = [[]]
    for depth in sorted(counts):
        if sum(counts[d] for d in points[-1]) >= least:
            points.append([])
        points[-1].append(depth)
    if len(points) > 1 and sum(counts[d] for d in points[-1]) < least:
        deepest = points.pop()
        points[-1] += deepest
    return {depth: Depths(point[0], point[-1]) for point in points for depth in point}
