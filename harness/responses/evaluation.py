"""Score response runs against a nugget bank through a judge: per-turn rows, run means, and a
leaderboard with the harness's paired tests (harness.report).

Declared rules (each tested in tests/test_responses.py):
- The evaluated turns are the turns some given run answers and the bank has nuggets for
  (the runs' shared test set, as qrels define it for rankings); given `evaluated_turns` (the
  CLI's --topics, a hosted task's topics), those of them the bank has nuggets for, so one run
  scores alone as it does beside others (a hosted board's number).
- A run that does not answer an evaluated turn scores 0 there (as trec_eval -c does); the
  notes count such turns per run.
- An empty response (blank text) supports no nugget: scored 0, the judge is not asked; the
  notes count them per run (a run of blank answers is not a system that knows nothing).
- A turn whose bank entry has no nugget is not scored (no recall is defined); it is listed.
  A turn whose nuggets all have grade 0 has no weighted recall (NaN): left out of that
  score's means, tests and breakdowns, its other scores kept; the notes count and list them.
  A graded bank none of whose nuggets reaches the vital grade has no vital nugget: vital and
  strict_vital are undefined (NaN) on every turn, not nuggetizer's 0 (harness.responses.cli
  and harness.responses.api warn). A turn with nuggets none of which is vital scores 0 on
  vital and strict_vital, as nuggetizer scores it; the notes count such turns.
- Nuggets repeating the text of a nugget of their turn are scored as the bank gives them,
  each counted (the CONE-RAG human bank repeats 74); the notes count them.
- A response to a turn the bank does not have is not scored and is listed; with known turns
  given (`turns`, e.g. a benchmark's), a response to a turn outside them is an error naming
  the file and line, as harness ikat validate refuses invented turns.
- A nugget the judge gave no label (a failed request, an unparseable or a missing answer) is
  counted as not supported and counted in `unjudged`; the run's notes say how many, by cause
  (recorded assignments' `failed` as failed: harness.responses.assign).
  A run none of whose nuggets a recorded-labels judge answers would score 0 everywhere: it is
  left out, the notes naming the file and how many of its lines match no run; with no run
  left, it is an error naming the file (harness.responses.assign). It is left out before the
  citations are judged: the citation judge is never asked about a left-out run's citations.
- The judges are asked each turn under one question, by harness.responses.questions' rule;
  where a judge's prompt reads it, its provenance counts the turns by the question's source and
  the notes count the turns asked with none or with one another source states otherwise.
- Citation support (when asked) is scored on responses with citations; a response without
  any has no support precision (NaN, left out of the run's mean) and support recall 0, and so
  has a turn the run does not answer. A blank response's citations are not judged and count
  no support (precision and recall 0). A cited pair the judge gave no label counts as no
  support and is counted in the notes. An iKAT response that marks no passage used cites its
  top 5 (harness.responses.readers); the notes count them per run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from harness.errors import HarnessError, InputError, counted, verb
from harness.judge.base import Judge, answered, check_parsed, counts, provenance_of, quoting
from harness.judge.model import Item, Judgment
from harness.responses import assign
from harness.responses.model import Nugget, NuggetBank, Response, ResponseRun, first_few
from harness.responses.questions import Questions
from harness.responses.readers import TOP_PROVENANCE
from harness.responses.scores import (CITATION_SCORES, NUGGET_SCORES, SUPPORT_WEIGHT, NuggetScores, citation_scores,
                                      mean, nugget_scores)

if TYPE_CHECKING:
    import pandas as pd

    from harness.report.compare import RunScores

HINT = "check the judge's prompt (--prompt, --citation-prompt: does it ask for one label?) and --model"
# NUGGET_SCORES in leaderboard order: `all` ranks
MEASURES = ("all", "vital", "strict_all", "strict_vital", "weighted")
ANSWERED, OF_TOPICS = "answered by some run and with nuggets", "every turn of the topics with nuggets"  # test sets


@dataclass(frozen=True)
class TurnAnswer:
    """Which run's answer to which turn, and what of the turn's nuggets was judged."""

    run: str
    turn: str
    answered: bool
    empty: bool
    nuggets: int
    vital_nuggets: int
    unjudged: int


@dataclass(frozen=True)
class TurnResult(NuggetScores, TurnAnswer):
    """A per-turn row: TurnAnswer's fields, then the nugget scores (NuggetScores's), then the
    citation scores (dataclass fields follow the bases from the last: the row's column order)."""

    cited_pairs: int = 0
    support_precision: float = math.nan
    support_recall: float = math.nan


@dataclass
class ResponseEvaluation:
    runs: list[str]
    turns: list[str]
    results: list[TurnResult]
    judge: dict  # the judge's provenance
    rule: str  # the bank's importance rule
    notes: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)  # nuggetizer assignment records
    judgments: int = 0
    seconds: float = 0.0
    citations: bool = False
    test_set: str = ANSWERED  # which turns are evaluated, in words

    def per_turn(self) -> pd.DataFrame:
        import pandas as pd

        frame = pd.DataFrame([asdict(r) for r in self.results])
        return frame if self.citations else frame.drop(columns=["cited_pairs", *CITATION_SCORES])

    def aggregate(self) -> pd.DataFrame:
        """One row per run: the mean of each score over the evaluated turns, and counts."""
        frame = self.per_turn()
        scores = list(MEASURES) + (list(CITATION_SCORES) if self.citations else [])
        grouped = frame.groupby("run", sort=False)
        table = grouped[scores].agg(mean)  # NaN support precision (nothing cited) is left out
        table["turns"] = grouped.size()
        table["answered"] = grouped["answered"].sum()
        table["empty"] = grouped["empty"].sum()
        table["unjudged"] = grouped["unjudged"].sum()
        return table.reset_index()

    def measure_scores(self, measure: str) -> dict[str, dict[str, float]]:
        """run -> turn -> score, for the leaderboard (NaN where the score is undefined)."""
        found: dict[str, dict[str, float]] = {run: {} for run in self.runs}
        for r in self.results:
            found[r.run][r.turn] = getattr(r, measure)
        return found


def run_scores(evaluation: ResponseEvaluation) -> list[RunScores]:
    """Each run's per-turn scores, for harness.report's leaderboard."""
    from harness.report.compare import RunScores

    measures = list(MEASURES) + (["support_recall"] if evaluation.citations else [])
    tables = {m: evaluation.measure_scores(m) for m in measures}
    return [RunScores(run, measures, {m: tables[m][run] for m in measures}) for run in evaluation.runs]


def _check_names(runs: Sequence[ResponseRun]) -> None:
    """Runs are told apart by name: two of one name are an error naming both files (and the line
    each first gives it on, in a JSON Lines file), or saying the one file is given twice."""
    seen: dict[str, ResponseRun] = {}
    for run in runs:
        first = seen.setdefault(run.name, run)
        if first is run:
            continue
        if first == run:  # one file's runs read twice
            raise HarnessError(f"{run.path} is given twice")
        raise HarnessError(f"two runs share the name {run.name}: {_where(first)} and {_where(run)}; each run needs "
                           "its own name: rename one in its file (its run_id, run_name or CONE-RAG run key)")


def _where(run: ResponseRun) -> str:
    """The run's file, and the line it is first named on where its responses have lines."""
    lines = [response.line for response in run.responses.values() if response.line]
    return f"{run.path}:{min(lines)}" if lines else str(run.path)


def evaluate_runs(
    runs: Sequence[ResponseRun],
    bank: NuggetBank,
    judge: Judge,
    *,
    citation_judge: Judge | None = None,
    passages: Mapping[str, str] | None = None,
    questions: Questions | None = None,
    turns: Collection[str] | None = None,
    evaluated_turns: Collection[str] | None = None,
    progress: bool = False,
) -> ResponseEvaluation:
    """Judge and score every run (see the module docstring for the rules). `evaluated_turns`
    fixes the test set instead (a hosted task: every turn of its topics with nuggets). `questions`
    fill the judges' {question} (harness.responses.questions; none: empty), and where a judge's
    prompt reads it, its provenance counts their sources and the notes the turns without one."""
    if not runs:
        raise HarnessError("no response runs to evaluate")
    _check_names(runs)
    questions = questions or Questions()
    notes = []
    for run in runs:
        if turns is not None:
            invented = next((r for r in run.responses.values() if r.turn not in turns), None)
            if invented is not None:
                raise InputError(run.path, f"turn {invented.turn} is not a turn of the topics", line=invented.line,
                                 record=None if invented.line else f"run {run.name}, turn {invented.turn}")
        unknown = sorted(t for t in run.responses if t not in bank.nuggets)
        if unknown:
            notes.append(f"{run.name}: {len(unknown)} responses answer turns the nugget bank does not have "
                         f"(not scored): {first_few(unknown)}")
    evaluated = _evaluated(runs, bank, evaluated_turns)
    if not evaluated:
        raise HarnessError(f"no answered turn has nuggets in {bank.name}: do the runs and the bank use the same "
                           "turn ids?")

    started = time.perf_counter()
    nugget_groups: dict[tuple[str, str], list] = {}
    cite_groups: dict[tuple[str, str], list] = {}  # now: a cited passage without text fails before any request
    for run in runs:
        for turn in evaluated:
            response = run.responses.get(turn)
            if response is None or not response.text.strip():
                continue
            nugget_groups[run.name, turn] = assign.nugget_items(run.name, response, bank.of(turn),
                                                                questions.text.get(turn, ""))
            if citation_judge is not None and response.cited:
                cite_groups[run.name, turn] = assign.citation_items(run.name, response, passages,
                                                                    questions.text.get(turn, ""), run.path)
    if nugget_groups:
        assign.check_assigns(judge.scale)
    if cite_groups and citation_judge.scale.name != "support-0-2":
        raise HarnessError(f"citation support needs a judge on the support-0-2 scale, not {citation_judge.scale.name}")
    by_slot = _judge_groups(judge, nugget_groups, progress)
    judgments = [j for found in by_slot.values() for j in found]
    example = check_parsed(judgments, judge.scale, _unparsed_hint(judge))
    unrecorded = _unrecorded(by_slot)
    if unrecorded:  # scored, they would be 0 everywhere: left out, in a note, before their citations are judged
        notes.append(_left_out(judge, unrecorded, len(runs)))
        runs = [run for run in runs if run.name not in unrecorded]
        judgments = [j for j in judgments if j.item_key[1] not in unrecorded]
        cite_groups = {key: items for key, items in cite_groups.items() if key[0] not in unrecorded}
        if not runs:
            raise HarnessError(f"the {judge.name} judge has no recorded label for any run's nuggets")
        evaluated = _evaluated(runs, bank, evaluated_turns)  # a turn only a run left out answered is not one
    cite_by_slot = _judge_groups(citation_judge, cite_groups, progress) if cite_groups else {}
    cite_judgments = [j for found in cite_by_slot.values() for j in found]
    cite_example = check_parsed(cite_judgments, citation_judge.scale, HINT) if cite_judgments else None
    vital_undefined = bank.unreachable_vital_grade() is not None
    notes += _turn_notes(runs, bank, evaluated_turns, evaluated, vital_undefined)

    results, records = [], []
    unjudged_total = cite_unjudged = 0
    for run in runs:
        for turn in evaluated:
            nuggets = bank.of(turn)
            response = run.responses.get(turn)
            found = by_slot.get((run.name, turn))
            if found is None:  # unanswered or empty: nothing supported
                labelled = [assign.AssignedNugget(n, assign.NOT, True) for n in nuggets]
            else:
                labelled = assign.assigned(judge.scale, nuggets, found)
            scores = nugget_scores(nuggets, [a.assignment for a in labelled])
            if vital_undefined:
                scores = replace(scores, vital=math.nan, strict_vital=math.nan)
            unjudged = sum(not a.judged for a in labelled)
            unjudged_total += unjudged
            extra = {}
            if citation_judge is not None:  # an unanswered turn: no sentence supported, recall 0
                extra, missing = _citation_fields(response or Response(turn, ""), cite_by_slot.get((run.name, turn), []))
                cite_unjudged += missing
            results.append(TurnResult(run.name, turn, response is not None,
                                      response is not None and not response.text.strip(), len(nuggets),
                                      sum(n.vital for n in nuggets), unjudged, **asdict(scores), **extra))
            # an unanswered turn too (answer_text "", every nugget not_support), so that nuggetizer's mean of
            # --assignments-out is the run's mean over the same turns, the unanswered scoring 0 there
            records.append(assign.nuggetizer_record(turn, run.name, response or Response(turn, ""), labelled))
    notes += _run_notes(runs, results, citation_judge is not None)
    if unjudged_total:
        notes.append(_unlabelled("nugget", judgments, "not supported", example,
                                 isinstance(judge, assign.RecordedAssignments)))
    if cite_unjudged:
        notes.append(_unlabelled("citation", cite_judgments, "no support", cite_example))
    provenance = _asking(quoting(provenance_of(judge), example), judge, questions, evaluated)
    if citation_judge is not None:
        provenance = {"nuggets": provenance, "citations": _asking(quoting(provenance_of(citation_judge), cite_example),
                                                                  citation_judge, questions, evaluated)}
    if _reads_question(judge) or citation_judge is not None and _reads_question(citation_judge):
        notes += questions.notes(evaluated)
    asked = sum(map(len, nugget_groups.values())) + len(cite_judgments)
    return ResponseEvaluation([run.name for run in runs], evaluated, results, provenance, bank.rule, notes, records,
                              asked, time.perf_counter() - started, citation_judge is not None,
                              ANSWERED if evaluated_turns is None else OF_TOPICS)


def _reads_question(judge: Judge) -> bool:
    """Whether the judge's prompt reads {question} (an llm judge's template): only then do the
    questions' sources matter to its labels."""
    from harness.judge.llm import LLMJudge

    return isinstance(judge, LLMJudge) and "question" in judge.template.names


def _asking(provenance: dict, judge: Judge, questions: Questions, turns: Sequence[str]) -> dict:
    """The judge's provenance, with (where its prompt reads {question}) how many of the turns
    took their question from each source (`questions`: {source: turns}, "none" for none)."""
    return {**provenance, "questions": questions.counts(turns)} if _reads_question(judge) else provenance


def _judge_groups(judge: Judge, groups: Mapping[tuple[str, str], Sequence[Item]],
                  progress: bool) -> dict[tuple[str, str], list[Judgment]]:
    """Every group's items judged in one judge() call (its concurrency and progress span them
    all), the judgments given back by group, each its item's by key (`answered` puts them in
    the items' order, whatever order the judge answered in)."""
    judgments = answered(judge, [item for items in groups.values() for item in items], progress=progress)
    found, start = {}, 0
    for key, items in groups.items():
        found[key] = judgments[start:start + len(items)]
        start += len(items)
    return found


def _answered(runs: Sequence[ResponseRun], evaluated_turns: Collection[str] | None) -> set[str]:
    return set(evaluated_turns) if evaluated_turns is not None else {t for run in runs for t in run.responses}


def _evaluated(runs: Sequence[ResponseRun], bank: NuggetBank, evaluated_turns: Collection[str] | None) -> list[str]:
    """The test set: the turns some run answers (or `evaluated_turns`) that have nuggets."""
    return sorted(t for t in _answered(runs, evaluated_turns) if bank.of(t))


def _turn_notes(runs: Sequence[ResponseRun], bank: NuggetBank, evaluated_turns: Collection[str] | None,
                evaluated: Sequence[str], vital_undefined: bool) -> list[str]:
    """The notes on turns not scored (no nuggets), on turns without a weighted recall, on
    turns without a vital nugget (0 for every run: a board's vital scores are deflated by
    them), and on nuggets whose text their turn repeats (counted again: a double count)."""
    notes = []
    empty_turns = sorted(t for t in _answered(runs, evaluated_turns) if t in bank.nuggets and not bank.nuggets[t])
    if empty_turns:
        notes.append(f"turns without nuggets (not scored): {', '.join(empty_turns)}")
    weightless = [t for t in evaluated if not any(n.grade for n in bank.of(t))]
    if weightless:
        notes.append(f"no weighted recall where every nugget has grade 0, left out of its means, tests and "
                     f"breakdowns ({len(weightless)} turn{'s' * (len(weightless) > 1)}: {first_few(weightless)})")
    vital_less = [] if vital_undefined else [t for t in evaluated if not any(n.vital for n in bank.of(t))]
    if vital_less:
        none_vital = "none marked vital" if bank.vital_grade is None else f"none of grade {bank.vital_grade} or more"
        notes.append(f"{len(vital_less)} of {len(evaluated)} evaluated turns {verb(len(vital_less))} no vital nugget "
                     f"({none_vital}): vital and strict_vital score 0 there for every run, as nuggetizer scores them "
                     f"({first_few(vital_less)})")
    repeats = {t: count for t in evaluated if (count := _repeated_texts(bank.of(t)))}
    if repeats:
        repeated = sum(repeats.values())
        notes.append(f"{counted(repeated, 'nugget')} {verb(repeated, 'repeats', 'repeat')} the text of an earlier "
                     f"nugget of {verb(repeated, 'its', 'their')} turn (spacing aside) and "
                     f"{verb(repeated, 'is', 'are')} counted again ({counted(len(repeats), 'turn')}: "
                     f"{first_few(list(repeats))}); a deduplicated bank counts each text once")
    return notes


def _repeated_texts(nuggets: Sequence[Nugget]) -> int:
    """How many of the nuggets repeat an earlier one's text, whitespace aside (CONE-RAG's
    texts differ by a trailing space where the organisers' deduplicated bank drops them)."""
    return len(nuggets) - len({" ".join(n.text.split()) for n in nuggets})


def _run_notes(runs: Sequence[ResponseRun], results: Sequence[TurnResult], citations: bool) -> list[str]:
    """Per run, the evaluated turns it scores 0 on without a judgment (no answer, a blank
    one), and with citations judged, the responses whose top passages stand for the citations
    they did not mark: each a number a reader of the board must not take for a judged one."""
    notes = []
    by_run: dict[str, list[TurnResult]] = {}
    for result in results:  # in order, as each run's rows were listed
        by_run.setdefault(result.run, []).append(result)
    for run in runs:
        rows = by_run.get(run.name, [])
        missing = [r.turn for r in rows if not r.answered]
        if missing:
            notes.append(f"{run.name}: no answer to {len(missing)} of the {len(rows)} evaluated turns, scored 0 "
                         f"({first_few(missing)})")
        empty = [r.turn for r in rows if r.empty and not run.responses[r.turn].dropped]  # trimmed empty: below
        if empty:
            notes.append(f"{run.name}: {counted(len(empty), 'empty answer')} (blank text), scored 0 "
                         f"({first_few(empty)})")
        trimmed = [r for r in rows if r.answered and run.responses[r.turn].dropped]
        if trimmed:
            from harness.ikat.submission import RESPONSE_WORD_LIMIT

            pieces = sum(run.responses[r.turn].dropped for r in trimmed)
            emptied = sum(r.empty for r in trimmed)
            notes.append(f"{run.name}: {counted(len(trimmed), 'answer')} over the {RESPONSE_WORD_LIMIT}-word limit "
                         f"{verb(len(trimmed), 'is', 'are')} scored without {verb(len(trimmed), 'its', 'their')} last "
                         f"{counted(pieces, 'piece')}, as the official iKAT 2025 validator drops them to fit"
                         + (f", {emptied} left with none (scored 0)" if emptied else "")
                         + f" ({first_few([r.turn for r in trimmed])})")
        top = [r.turn for r in rows if r.answered and run.responses[r.turn].cites_top]
        if citations and top:
            its = verb(len(top), "its", "their")
            notes.append(f"{run.name}: {counted(len(top), 'response')} {verb(len(top), 'marks', 'mark')} no passage "
                         f"used: {its} top {TOP_PROVENANCE} passages count as {its} citations, the rule the official "
                         f"iKAT validator states ({first_few(top)})")
    return notes


def _unrecorded(by_slot: Mapping[tuple[str, str], Sequence]) -> list[str]:
    """The runs all of whose nugget judgments are "missing": a recorded-labels judge has none."""
    statuses: dict[str, set[str]] = {}
    for (run, _), found in by_slot.items():
        statuses.setdefault(run, set()).update(judgment.status for judgment in found)
    return [run for run, seen in statuses.items() if seen == {"missing"}]


def _unparsed_hint(judge: Judge) -> str:
    """What to check where none of the judge's answers is a label: recorded assignments'
    file (nothing was asked: a prompt or model is not the cause), else the prompt and model."""
    if isinstance(judge, assign.RecordedAssignments):
        return f"{judge.path} records no assignment of these nuggets as support, partial_support or not_support: " \
               "assign them again"
    return HINT


def _left_out(judge: Judge, unrecorded: Sequence[str], runs: int) -> str:
    """The note on runs left out for want of recorded labels: the file, and how many of its
    lines match no run evaluated (a run_id that is not the run's name)."""
    record = judge.provenance()
    where = record.get("file") or f"the {judge.name} judge"
    lines = (f"{record['lines_matching_no_run']} of its {record['lines']} lines match no run evaluated; "
             if "lines" in record else "")
    return (f"{where}: {lines}no recorded assignment for {len(unrecorded)} of the {runs} runs, left out (not scored): "
            f"{first_few(unrecorded)}")


def _unlabelled(what: str, judgments: Sequence, counted_as: str, example: str | None, recorded: bool = False) -> str:
    """The note on judgments without a label, by cause: only failed requests are asked again
    on a rerun (an LLM judge caches what it was answered; `recorded` labels are as they are:
    their failed ones wait for the judge that made them)."""
    found = counts(judgments)
    again = "recorded failed: their judge gave no label" if recorded else "a rerun asks them again"
    causes = [f"{found['failed']} failed ({again})" if found["failed"] else "",
              f"{found['unparseable']} unparseable, e.g. {example!r}" if found["unparseable"] else "",
              f"{found['missing']} with no recorded label" if found["missing"] else ""]
    return (f"{sum(j.label is None for j in judgments)} of {len(judgments)} {what} judgments have no label "
            f"({', '.join(filter(None, causes))}): counted as {counted_as}")


def _citation_fields(response: Response, judgments: Sequence) -> tuple[dict, int]:
    """The turn's citation scores, and how many of its cited pairs the judge gave no label
    (counted as no support, and counted in the notes: never a silent 0). A blank answer's
    citations are not judged: it supports nothing, so each of them counts no support."""
    weights = {} if response.text.strip() else {(index, pid): 0.0 for index, sentence in enumerate(response.sentences)
                                                for pid in sentence.citations}
    for judgment in judgments:
        _, _, index, pid = judgment.item_key
        weights[int(index), pid] = SUPPORT_WEIGHT[judgment.label] if judgment.label is not None else 0.0
    precision, recall = citation_scores(response.sentences, weights)
    missing = sum(judgment.label is None for judgment in judgments)
    return {"cited_pairs": len(weights), "support_precision": precision, "support_recall": recall}, missing


__all__ = ["MEASURES", "NUGGET_SCORES", "ResponseEvaluation", "TurnResult", "evaluate_runs", "run_scores"]
