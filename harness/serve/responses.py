"""Response tasks on the hosted leaderboard: teams upload generated responses, scored against
nuggets the organiser keeps hidden (like qrels) by the judge the organiser configures.

    tasks:
      - name: ikat2024-responses
        topics: ikat2024                     # the turns a response may answer
        nuggets: nuggets/gold_nuggets_human.json   # hidden: never served (CONE-RAG or nuggetizer JSONL)
        # nuggets_format: cone-rag-json      # the bank's format (`harness components nugget-bank`); default:
                                             # told from its content, as `harness responses eval` tells it
        judge: llm                           # or file:ASSIGNMENTS.jsonl, or minilm (an offline baseline)
        llm: {model: qwen2.5:7b-instruct, base_url: "http://127.0.0.1:11434/v1"}   # for judge: llm
        main_measure: all                    # all, vital, strict_all, strict_vital or weighted
        formats: [ikat-2024-json, ikat-2025-jsonl, trec-rag-jsonl]

The config is read by harness.serve.config (`_response_task`). Scoring is `harness responses
eval`'s (harness.responses) on the task's test set: every turn of its topics the bank has
nuggets for; a turn a run does not answer, or answers with no text, scores 0, and the
upload's warnings say so. An `llm` judge's `{question}` is the turn's, by `harness responses
eval`'s rule (harness.responses.questions) from the organiser's files alone: the bank's `query`,
then the topics' utterance; never the upload's own (a TREC RAG `topic`), which would let a team
write the judge's prompt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import jsonl
from harness.errors import HarnessError, InputError, counted, verb
from harness.serve.config import RESPONSE_FORMATS
from harness.serve.tasks import MAX_MESSAGES, Message, Refused, TaskRuntime, Verdict, refused_on_sight
from harness.trec import not_a_run

if TYPE_CHECKING:
    from harness.responses.model import ResponseRun
    from harness.responses.questions import Questions
    from harness.runner.config import Node
    from harness.trec import RunRecord

# Raised when what a `file:` judge's task checks before it scores an answer changes (2: an answer
# must be the one its recorded line's answer_text holds), so that a start scores again, with the
# checks of today, the responses scored under earlier ones: nothing else they were scored with
# changed. Recorded with a `file:` judge alone: other judges' responses are not judged again.
FILE_JUDGE_RULES = 2
# Raised, a format at a time, when the responses reader's reading of that format changes what is
# scored (ikat-2025-jsonl 2: a turn's answer is all its `responses`, one answer cut into sentences,
# where the first alone was scored), so that a start scores again that format's responses scored
# under the earlier reading, and no other format's. Recorded with that format's uploads alone.
READER_RULES = {"ikat-2025-jsonl": 2}


@dataclass(frozen=True)
class ScoredResponses:
    """What the service keeps of a scored upload (as of an Evaluation)."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]


class ResponseTaskRuntime(TaskRuntime):
    @cached_property
    def bank(self):
        from harness.responses.nuggets import read_bank

        return read_bank(self.config.nuggets, self.config.nuggets_format, vital_grade=self.config.vital_grade)

    @cached_property
    def judge(self):
        from harness.responses.judges import make_judge

        settings = dict(self.config.judge_settings)
        return make_judge(self.config.judge, model=settings.get("model"), base_url=settings.get("base_url"),
                          prompt=settings.get("prompt"))

    @cached_property
    def questions(self) -> Questions:
        """Each turn's question for the judges' {question}, from the bank and the topics (the
        module docstring)."""
        from harness.responses.questions import topic_questions, turn_questions

        return turn_questions(None, self.bank, topic_questions(self.conversations))

    @cached_property
    def evaluated_turns(self) -> frozenset[str]:
        return frozenset(t for t in self.turn_ids if self.bank.of(t))

    @cached_property
    def scored_with(self) -> dict[str, Any]:
        """The bank's file, the grade that makes a nugget vital, and the judge: its name, model
        and prompt, and the content of a file it reads (recorded assignments, a prompt: the
        task's own or the shipped one, which a newer harness may reword), not the file's path;
        nor its endpoint: either may move while answering alike (TaskRuntime.scored_with). A
        file's content is the hash the judge took of it as it read it: hashed once a start,
        and the hash of what scores, should the file change later. A `file:` judge's holds the
        number of its task's rules (FILE_JUDGE_RULES) too; `assignments:PATH` is keyed as `file:PATH`
        (one judge, two names); a plug-in judge's, what it is (its code's sha256, version, ...:
        harness.judge.base.plugin_of), so that another version of its code scores again. Where an
        `llm` judge's prompt reads {question}, the questions the evaluated turns are asked with, by
        their hash: responses judged before the board asked any (every prompt's question was
        empty), or under other questions (other topics, or the topics' utterance asked before the
        bank's query), are judged again. A `nuggets_format` the task names is recorded too where it
        is not the one the content is told as (another format may read the same file otherwise);
        none named, or the content's, the format is the content's, which the file's hash holds:
        naming it, or no longer, scores nothing again."""
        from harness.judge.base import plugin_of
        from harness.paths import file_sha256
        from harness.registry import split_spec
        from harness.responses.judges import RECORDED
        from harness.runner.provenance import canonical_hash

        settings = dict(self.config.judge_settings)
        name, _ = split_spec(self.config.judge)
        recorded = name in RECORDED
        judge = {"judge": "file" if recorded else self.config.judge, "model": settings.get("model"),
                 "prompt": self.judge.template.sha256 if name == "llm" else None,
                 "assignments": self.judge.sha256 if recorded else None,
                 "rules": FILE_JUDGE_RULES if recorded else None, "plugin": plugin_of(self.judge)}
        scored = {"nuggets": file_sha256(self.config.nuggets), "vital_grade": self.config.vital_grade,
                  "judge": {key: value for key, value in judge.items() if value is not None}}
        if self.config.nuggets_format not in (None, _told_format(self.config.nuggets)):
            scored["nuggets_format"] = self.config.nuggets_format
        if name == "llm" and "question" in self.judge.template.names:
            scored["questions"] = canonical_hash({turn: self.questions.text.get(turn, "")
                                                  for turn in self.evaluated_turns})
        return scored

    def scored_with_format(self, fmt: str) -> dict[str, Any]:
        """`scored_with`, and for a format whose reading changed the number of its reader's rules
        (READER_RULES)."""
        rules = READER_RULES.get(fmt)
        return self.scored_with if rules is None else {**self.scored_with, "reader": rules}

    def prepare(self, at: Node) -> None:
        """Read the topics, the bank and the files a judge reads (recorded assignments, a prompt:
        `scored_with` has the judge read them) now. Refused at start: a bank with no nugget for
        any turn of the topics (another year's: every upload would be accepted, then fail), as a
        run task's qrels are; a board ranked by `weighted` over a bank with no graded nugget, or
        by `vital` or `strict_vital` over one whose grades never reach the vital grade, which
        could never be drawn (undefined on every turn). A bank its `nuggets_format` does not read
        is an error at that key."""
        try:
            _ = self.bank
        except InputError as error:
            if self.config.nuggets_format is None:
                raise
            raise at.child("nuggets_format", None).error(str(error)) from None
        _ = self.turn_ids, self.depths, self.evaluated_turns, self.scored_with
        if not self.evaluated_turns:
            first = next((f"its first turn {turn!r}" for turn, nuggets in self.bank.nuggets.items() if nuggets),
                         "it holds no nugget")
            topics_first = next(iter(self.depths))
            raise at.child("nuggets", None).error(
                f"{self.config.nuggets} has no nugget for any turn of {self.config.topics} ({first}, the topics' "
                f"first turn {topics_first!r}): give the topics' own nugget bank")
        if self.config.main_measure == "weighted" and not any(
                nugget.grade for turn in self.evaluated_turns for nugget in self.bank.of(turn)):
            raise at.child("main_measure", None).error(
                f"weighted is undefined on every turn, since every nugget of {self.config.nuggets} has grade 0; rank "
                "the board by another measure")
        if self.config.main_measure in ("vital", "strict_vital") and self.bank.unreachable_vital_grade():
            raise at.child("main_measure", None).error(
                f"{self.config.main_measure} is undefined on every turn, since no nugget of {self.config.nuggets} "
                f"reaches vital_grade {self.config.vital_grade}; rank the board by another measure, or lower "
                "vital_grade")

    @cached_property
    def notes(self) -> list[str]:
        """None: a response task has no qrels (its bank's vital grade is checked at start)."""
        return []

    def board_terms(self) -> dict[str, Any]:
        """Turns, and nuggetizer's mean: as `harness responses eval`'s board has them."""
        from harness.responses.report import BOARD

        return BOARD

    def record_refused(self, record: RunRecord) -> str:
        """A response task takes what a system answers: its run is refused too."""
        return (not_a_run(record, None, None, "responses") + f": this task scores what a system answers (it takes "
                f"{', '.join(self.config.formats)}), not its ranking")

    def check(self, path: Path, display: str) -> Verdict:
        from harness.responses.readers import detect_format, read_responses

        data = path.read_bytes()
        # not as the reader says it: it names the stored file
        refused = refused_on_sight(data, display, self.record_refused)
        if refused is not None:
            return refused
        over = self.budget.exceeded(data)  # the same bound as a run's, before decoding
        del data
        if over:
            return Verdict(None, "", [Message("error", "size", over, display)])
        try:
            reader = detect_format(path)
            fmt = next((name for name, known in RESPONSE_FORMATS.items() if known == reader), reader)
            if fmt not in self.config.formats:
                if _holds_no_response(path, reader):  # `{}` is a CONE-RAG file of no turn
                    empty = Message("error", "read", "holds no response: nothing to evaluate", display)
                    return Verdict(fmt, "", [empty])
                return Verdict(fmt, "", [Message("error", "format", f"this is a {fmt} file; the task accepts "
                                                                    f"{', '.join(self.config.formats)}", display)])
            runs = read_responses(path, reader)
        except InputError as problem:  # JSON Python cannot hold is a "json" error, as the iKAT board's validator says
            check = "json" if isinstance(problem.__cause__, jsonl.Unreadable) else "read"
            return Verdict(None, "", [Message("error", check, problem.problem, display, problem.line)])
        if len(runs) != 1:
            return Verdict(fmt, "", [Message("error", "runs", f"the file holds {len(runs)} runs; upload one", display)])
        [run] = runs
        verdict = Verdict(fmt, run.name)
        for response in run.responses.values():
            if response.turn not in self.turn_ids:
                verdict.errors.append(Message("error", "turn", f"turn {response.turn!r} is not a turn of the task's "
                                                               "topics", display, response.line, response.turn))
        if verdict.ok:
            self._check_recorded(run, verdict, display)
        if verdict.ok:
            verdict.warnings.extend(self._scored_0(run, display))
        return verdict

    def _check_recorded(self, run: ResponseRun, verdict: Verdict, display: str) -> None:
        """A `file:` judge scores only the runs and answers its recorded assignments hold: an
        upload of another run name, or answering a turn with nuggets with a text no line was
        recorded for, is refused here, before it is queued (scoring it would fail, or score the
        recorded answer's labels for another answer). Only turns with nuggets are checked (the
        assignments hold no others), so where the task hides per-turn scores the refusal names
        no turn or line, which would say which turns the hidden bank covers, and is charged to
        the quota: that it is refused says it as well, a turn per upload."""
        from harness.responses.assign import RecordedAssignments

        judge = self.judge
        if not isinstance(judge, RecordedAssignments):
            return
        if run.name not in judge.runs:
            problem = (f"run {run.name!r}: this task scores only the runs its recorded nugget assignments hold, and "
                       "they hold none of this name")
            verdict.errors.append(Message("error", "assignments", problem, display))
            return
        errors = []
        for response in run.responses.values():
            if response.turn not in self.evaluated_turns or not response.text.strip():
                continue  # not scored, or an empty answer: supports nothing, the judge is not asked
            if (response.turn, run.name) not in judge.answers:
                problem = f"the recorded nugget assignments hold no answer of run {run.name!r} to this turn"
            elif judge.other_answer(response.turn, run.name, response.text) is not None:
                problem = (f"the answer is not the one of run {run.name!r} the recorded nugget assignments were "
                           "made for")
            else:
                continue
            errors.append(Message("error", "assignments", f"{problem}; this task scores only the answers they hold",
                                  display, response.line, response.turn))
        if errors and not self.config.per_query_scores:
            problem = (f"some answers of run {run.name!r} are not ones the recorded nugget assignments hold; this task "
                       "scores only the answers they hold (it names no turn: it keeps its per-turn scores hidden)")
            verdict.errors.append(Message("error", "assignments", problem, display))
            verdict.charged = True
            return
        verdict.errors.extend(errors[:MAX_MESSAGES])

    def _scored_0(self, run: ResponseRun, display: str) -> list[Message]:
        """Turns of the topics the upload does not answer, or answers with no text: those with
        nuggets score 0, which the team is told (as a TREC upload missing turns is), not left to
        guess. Counted and named among all the topics' turns, as a means-only run task's are: not
        among the turns with nuggets, which would tell teams what the hidden bank covers."""
        from harness.responses.model import first_few

        missing = [turn for turn in self.depths if turn not in run.responses]
        empty = [r.turn for r in run.responses.values() if not r.text.strip()]
        warnings = []
        if missing:
            warnings.append(Message("warning", "coverage", f"{len(missing)} of the {len(self.depths)} turns of the "
                                                           f"topics {verb(len(missing))} no response (a turn with "
                                                           f"nuggets scores 0): {first_few(missing)}", display))
        if empty:
            warnings.append(Message("warning", "response-text", f"{counted(len(empty), 'response')} "
                                                                f"{verb(len(empty))} no text (a turn with nuggets "
                                                                f"scores 0): {first_few(empty)}", display))
        return warnings

    def score(self, path: Path, fmt: str) -> ScoredResponses:
        from harness.responses.evaluation import MEASURES, evaluate_runs
        from harness.responses.readers import read_responses
        from harness.responses.scores import mean

        [run] = read_responses(path, RESPONSE_FORMATS[fmt])
        checked = Verdict(fmt, run.name)  # by today's checks: it may have been accepted before one was added
        self._check_recorded(run, checked, path.name)
        if not checked.ok:
            raise Refused(checked.errors)
        evaluation = evaluate_runs([run], self.bank, self.judge, questions=self.questions, turns=self.turn_ids,
                                   evaluated_turns=self.evaluated_turns)
        per_query = {m: {turn: score for turn, score in evaluation.measure_scores(m)[run.name].items()
                         if not math.isnan(score)} for m in MEASURES}  # undefined (NaN) left out, as in the mean
        return ScoredResponses({m: mean(v.values()) for m, v in per_query.items() if v}, per_query)

    def scoring_warnings(self, evaluation: ScoredResponses) -> list[str]:
        """None: a response run ranks no documents whose ids could miss the judgments (turns
        scored 0 for want of an answer are warned of as the upload is checked: `_scored_0`)."""
        return []


def _holds_no_response(path: Path, reader: str) -> bool:
    """Whether the file, read as the format it was detected as, holds no response at all."""
    from harness.responses.readers import FORMATS

    try:
        return not any(run.responses for run in FORMATS.get(reader)(path))
    except InputError:
        return False


def _told_format(path: Path) -> str | None:
    """The bank format the file's content is told as; None where it is told as none (a plug-in
    format's file)."""
    from harness.responses.nuggets import bank_format

    try:
        return bank_format(path)
    except HarnessError:
        return None
