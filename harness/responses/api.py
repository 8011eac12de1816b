"""The response evaluation as DataFrames, for notebooks (`harness responses eval`'s numbers).

    from harness.responses import evaluate, compare
    per_turn, aggregate = evaluate("run.jsonl", "nuggets.json", judge="minilm")
    board = compare(["a.jsonl", "b.jsonl"], "nuggets.json", judge="minilm")   # paired t, Holm

Responses are files (any format harness.responses.readers reads) or `ResponseRun`s; the bank
a file or a `NuggetBank`; a file's format is told from its content, or named by `response_format=` and
`nuggets_format=` as --response-format and --nuggets-format name it (a plug-in's registered name or
`python:MODULE:ATTR` spec); the judge a name (`minilm`, `assignments:PATH` or `file:PATH`, `llm` with `model` and
`base_url`, and optionally `prompt` for nuggets and `citation_prompt` for citations) or a judge object.
`topics=` is `--topics`: a benchmark name (`NAME[:SPLIT]`), a `harness.topics.Benchmark` or its
conversations, whose turns are the ones evaluated and whose utterances fill `{question}` where the
bank states no `query` (harness.responses.questions).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import ARGUMENTS

if TYPE_CHECKING:
    import pandas as pd

    from harness.responses.evaluation import ResponseEvaluation
    from harness.responses.model import NuggetBank, ResponseRun
    from harness.topics import Benchmark
    from harness.topics.model import Conversation


def _topics(topics: str | Benchmark | Sequence[Conversation] | None) -> dict[str, str] | None:
    """topics= as turn -> utterance (None: not given), read as --topics reads its benchmark."""
    from harness.errors import HarnessError
    from harness.responses.questions import topic_questions
    from harness.topics import Benchmark, load
    from harness.topics.model import Conversation

    if topics is None:
        return None
    conversations = load(topics).conversations if isinstance(topics, str) else (
        topics.conversations if isinstance(topics, Benchmark) else topics)
    if not isinstance(conversations, Sequence) or not all(isinstance(c, Conversation) for c in conversations):
        raise HarnessError("topics=: expected a benchmark name (NAME[:SPLIT], as --topics), a harness.topics.Benchmark "
                           f"or a list of its Conversations, not {type(topics).__name__}")
    return topic_questions(conversations)


def _evaluation(responses: Any, nuggets: Any, judge: Any, *, citations: bool, passages: Mapping | str | Path | None,
                vital_grade: int, topics: str | Benchmark | Sequence[Conversation] | None,
                baselines: Sequence[str] = (), formats: tuple[str | None, str | None] = (None, None),
                citation_prompt: str | Path | None = None, **judge_settings: Any) -> ResponseEvaluation:
    """`prompt` is the nugget judge's template, `citation_prompt` the citation judge's (the shipped
    citation_support.txt without it), as --prompt and --citation-prompt are: one prompt= for both
    asked a citation for {nugget}, an error before any request. `formats`: the response files' and
    the nugget file's formats (response_format=, nuggets_format=), as --response-format and
    --nuggets-format name them; None: told from the content."""
    from harness.errors import HarnessError
    from harness.report.compare import check_baselines
    from harness.responses.evaluation import evaluate_runs
    from harness.responses.judges import make_judge
    from harness.responses.model import NuggetBank, ResponseRun
    from harness.responses.nuggets import bank_problem, read_bank
    from harness.responses.questions import turn_questions
    from harness.responses.readers import cited_passages, read_responses, run_problem

    if citation_prompt is not None and not citations:  # as the CLI's --citation-prompt: not ignored
        raise HarnessError("citation_prompt= serves citations=True (citation support), which is not given: pass "
                           "citations=True, or leave citation_prompt out")
    if citation_prompt is not None and judge != "llm":
        raise HarnessError(f"citation_prompt= is a template of judge='llm', not of judge={judge!r}")
    given: Sequence = [responses] if isinstance(responses, (str, Path, ResponseRun)) else responses
    response_format, nuggets_format = formats
    if response_format is not None and all(isinstance(x, ResponseRun) for x in given):
        raise HarnessError("response_format= says how to read response files, and none is given (ResponseRuns are "
                           "read already): leave it out")
    if nuggets_format is not None and isinstance(nuggets, NuggetBank):
        raise HarnessError("nuggets_format= says how to read a nugget file, and nuggets= is a NuggetBank (read "
                           "already): leave it out")
    for setting, wrong in (("responses", run_problem([x for x in given if isinstance(x, ResponseRun)])),
                           ("nuggets", bank_problem(nuggets) if isinstance(nuggets, NuggetBank) else None)):
        if wrong is not None:  # checked as a plug-in reader's answer is
            raise HarnessError(f"{setting}= holds {wrong}")
    runs = [item for x in given for item in ([x] if isinstance(x, ResponseRun) else read_responses(x, response_format))]
    check_baselines(baselines, [run.name for run in runs])  # before the judging, which may cost an LLM's calls
    bank = nuggets if isinstance(nuggets, NuggetBank) else read_bank(nuggets, nuggets_format, vital_grade=vital_grade)
    questions = _topics(topics)  # before the judging, as the CLI reads --topics
    turns = set(questions) if questions is not None else None
    unreachable = bank.unreachable_vital_grade(ARGUMENTS)
    if unreachable:  # as `harness responses eval` warns it, before the judging
        warnings.warn(unreachable, stacklevel=3)
    nugget_judge = make_judge(judge, **judge_settings) if isinstance(judge, str) else judge
    citation_judge = None
    if citations:
        citation_judge = (make_judge(judge, task="citations", **{**judge_settings, "prompt": citation_prompt})
                          if isinstance(judge, str) else judge)
    if isinstance(passages, (str, Path)):  # a corpus file or spec, read as the CLI's --passages reads it
        passages = cited_passages(passages, runs)
    evaluation = evaluate_runs(runs, bank, nugget_judge, citation_judge=citation_judge, passages=passages,
                               questions=turn_questions(runs, bank, questions), turns=turns, evaluated_turns=turns)
    for note in evaluation.notes:  # what the CLI's notes say (empty answers, missing turns, ...), not silent here
        warnings.warn(note, stacklevel=3)
    return evaluation


def evaluate(responses: str | Path | ResponseRun | Sequence[str | Path | ResponseRun], nuggets: str | Path | NuggetBank,
             judge: Any = "minilm", *, citations: bool = False, passages: Mapping[str, str] | str | Path | None = None,
             citation_prompt: str | Path | None = None, vital_grade: int = 3,
             topics: str | Benchmark | Sequence[Conversation] | None = None, response_format: str | None = None,
             nuggets_format: str | None = None, **judge_settings: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per turn: one row per run and evaluated turn; aggregate: one row per run, with the judge).
    `passages`: the cited passages' texts, {id: text} or a corpus file or spec (as --passages).
    `topics`: as --topics (the module docstring): every turn of them with nuggets is evaluated, a
    run missing one scoring 0 there, as on a hosted board.
    The CLI's notes (empty answers, turns a run misses, ...) are warnings, and `aggregate.attrs["notes"]`;
    the judge's provenance, as the CLI's JSON report records it (a plug-in's `plugin` too: what it is,
    however it was given), is `aggregate.attrs["judge"]`."""
    evaluation = _evaluation(responses, nuggets, judge, citations=citations, passages=passages,
                             vital_grade=vital_grade, topics=topics, citation_prompt=citation_prompt,
                             formats=(response_format, nuggets_format), **judge_settings)
    from harness.responses.report import judge_label

    aggregate = evaluation.aggregate()
    aggregate["judge"] = judge_label(evaluation)
    aggregate.attrs["notes"] = list(evaluation.notes)
    aggregate.attrs["judge"] = evaluation.judge
    return evaluation.per_turn(), aggregate


def compare(responses: Sequence[str | Path | ResponseRun], nuggets: str | Path | NuggetBank, judge: Any = "minilm",
            *, baseline: str | Sequence[str] | None = None, test: str = "paired-t", correction: str = "holm",
            alpha: float = 0.05, resamples: int | None = None, vital_grade: int = 3,
            topics: str | Benchmark | Sequence[Conversation] | None = None, response_format: str | None = None,
            nuggets_format: str | None = None, **judge_settings: Any) -> pd.DataFrame:
    """The leaderboard on per-turn scores, as `harness.compare` gives it for rankings (resamples=:
    the bootstrap and permutation tests', as there). It ranks the runs on their nugget scores only:
    a citation setting is refused in its own words (passed on, citation_prompt= advised
    citations=True, which was then a TypeError). The judge's provenance is `attrs["judge"]`, as evaluate's."""
    import pandas as pd

    from harness.errors import HarnessError
    from harness.report.stats import Resampling
    from harness.responses.report import build_report

    citation = next((key for key in ("citations", "citation_prompt") if key in judge_settings), None)
    if citation is not None:
        raise HarnessError(f"{citation}=: compare ranks the runs on their nugget scores only, not on citation "
                           "support; harness.responses.evaluate(..., citations=True) scores the citations")
    baselines = [baseline] if isinstance(baseline, str) else list(baseline or [])
    resampling = Resampling.of(resamples)  # checked before the judge's work
    evaluation = _evaluation(responses, nuggets, judge, citations=False, passages=None, vital_grade=vital_grade,
                             topics=topics, baselines=baselines, formats=(response_format, nuggets_format),
                             **judge_settings)
    board = build_report(evaluation, baselines, test=test, correction=correction, alpha=alpha,
                         resampling=resampling).leaderboard
    board.warn()  # as `harness responses eval` warns on stderr: one turn, too few resamples
    table = pd.DataFrame(board.rows())
    table.attrs["judge"] = evaluation.judge
    return table
