"""`harness responses eval`: score generated responses (iKAT 2024/2025 runs, TREC RAG answers,
CONE-RAG files) against a nugget bank through a judge: nuggetizer's scores, grade-weighted
recall, citation support, a leaderboard with paired tests, breakdowns, md/csv/json/html."""

from __future__ import annotations

import argparse
import math
import sys

from harness.cli import add_format, add_named, add_output, number_in
from harness.errors import HarnessError, counted
from harness.paths import refuse_overwriting
from harness.registry import Registry, split_spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.judge.cli_judge import LlmOption, add_llm_arguments
    from harness.report.formats import FORMAT_HELP, FORMATS
    from harness.report.cli_options import add_paired_tests
    from harness.responses.judges import JUDGE_NAMES

    sub = parser.add_subparsers(dest="responses_command", required=True, metavar="ACTION")
    ev = sub.add_parser("eval", help="score response runs against nuggets, with a leaderboard and paired tests")
    ev.add_argument("responses", nargs="+", metavar="RESPONSES",
                    help="response files: iKAT 2023/2024 JSON, iKAT 2025 JSONL, TREC RAG 2024/2025 JSONL, "
                         "CONE-RAG {turn: {run: response}} JSON (several runs)")
    add_named(ev, "--response-format", _response_formats, lambda: _format_help("the responses'", _response_formats()))
    ev.add_argument("--nuggets", required=True, metavar="BANK",
                    help="nugget bank: CONE-RAG gold nuggets JSON (grades 1-4) or nuggetizer nuggets JSONL")
    add_named(ev, "--nuggets-format", _banks, lambda: _format_help("the nugget bank's", _banks()))
    ev.add_argument("--vital-grade", type=number_in(0, math.inf, whole=True), default=3,
                    help="graded nuggets at or above this grade are vital (default 3)")
    ev.add_argument("--judge", required=True, metavar="NAME",
                    help=f"who assigns nuggets: {', '.join(JUDGE_NAMES)} (minilm is an offline baseline)")
    ev.add_argument("--citations", action="store_true",
                    help="also judge each cited (sentence, passage) pair: support precision and recall")
    ev.add_argument("--passages", metavar="CORPUS",
                    help="texts of cited passages the responses do not carry (a corpus file or spec)")
    ev.add_argument("--topics", metavar="BENCHMARK",
                    help="the benchmark's turns: their utterances fill the prompts where the nugget bank states "
                         "no query (before the responses' topic), every one of them with nuggets is evaluated (a run "
                         "missing it scores 0 there, as on a hosted board), and a response to another turn is "
                         "an error")
    llm = add_llm_arguments(ev, "nugget_support.txt ({question}, {nugget}, {response})")
    llm.add_argument("--citation-prompt", action=LlmOption,
                     help="the citation template (default: the harness's citation_support.txt: {question}, "
                          "{sentence}, {passage})")
    ev.add_argument("--assignments-out", metavar="JSONL",
                    help="write every assignment as nuggetizer's assignment output (readable by --judge "
                         "assignments: or file:)")
    add_paired_tests(ev)
    add_format(ev, FORMATS.names(), help=FORMAT_HELP)
    ev.add_argument("--per-turn", action="store_true", help="add every (run, turn) row to JSON output (json only)")
    add_output(ev, stdout=True, help="write the report here (atomically) instead of stdout")
    ev.set_defaults(responses_run=_eval)


def _response_formats() -> Registry:
    from harness.responses.readers import FORMATS

    return FORMATS


def _banks() -> Registry:
    from harness.responses.nuggets import BANKS

    return BANKS


def _format_help(whose: str, registry: Registry) -> str:
    return (f"{whose} format (default: told from the content): {', '.join(registry.names())}, or a plug-in's "
            "python:MODULE:ATTR")


def run(args: argparse.Namespace) -> int:
    return args.responses_run(args)


def _judge(args: argparse.Namespace, task: str):
    """--judge's judge for nugget assignment or citation support; `llm` from the judge
    layer's options (--model, --base-url, --prompt or --citation-prompt, ...), with the task's
    shipped prompt."""
    from dataclasses import asdict, replace

    from harness.judge.cli_judge import llm_options
    from harness.responses.judges import make_judge

    if args.judge != "llm":
        return make_judge(args.judge, task=task)
    options = llm_options(args)
    return make_judge(args.judge, task=task,
                      **asdict(replace(options, prompt=args.citation_prompt) if task == "citations" else options))


def _eval(args: argparse.Namespace) -> int:
    from harness.judge.base import sidecar
    from harness.judge.cli_judge import check_llm_options
    from harness.report.formats import report_format
    from harness.report.cli_options import baselines
    from harness.report.stats import Resampling
    from harness.responses.assign import write_assignments
    from harness.responses.evaluation import evaluate_runs
    from harness.responses.judges import RECORDED
    from harness.responses.nuggets import read_bank
    from harness.responses.questions import topic_questions, turn_questions
    from harness.responses.readers import cited_passages, read_responses
    from harness.responses.report import build_report, render

    check_llm_options(args)
    for option, value in (("--passages", args.passages), ("--citation-prompt", args.citation_prompt)):
        if value is not None and not args.citations:  # was ignored without a word, the file never opened
            raise HarnessError(f"{option} serves --citations (citation support), which is not given: add "
                               f"--citations, or leave {option} out")
    typed, argument = split_spec(args.judge)
    recorded = argument if typed in RECORDED else None  # the judge's own input: runs not evaluated are in it too
    refuse_overwriting([*args.responses, args.nuggets, args.passages, recorded, args.prompt, args.citation_prompt],
                       [("--output", args.out), ("--assignments-out", args.assignments_out),
                        ("--assignments-out", args.assignments_out and sidecar(args.assignments_out))])
    fmt = report_format(args.format, args.out)
    if args.per_turn and fmt != "json":  # before the judging: the rows would be left out unsaid
        raise HarnessError(f"--per-turn adds the (run, turn) rows to JSON output alone, and this report is {fmt}: "
                           "give --format json (or an --output ending .json), or leave --per-turn out")
    held = [(str(path), read_responses(path, args.response_format)) for path in args.responses]
    runs = [run for _, file_runs in held for run in file_runs]
    chosen = baselines(args, {path: [run.name for run in file_runs] for path, file_runs in held})  # before the judging
    bank = read_bank(args.nuggets, args.nuggets_format, vital_grade=args.vital_grade)
    unreachable = bank.unreachable_vital_grade()
    if unreachable:
        print(f"warning: {unreachable}", file=sys.stderr)
    topics, turns = None, None
    if args.topics:
        from harness.topics import load

        topics = topic_questions(load(args.topics).conversations)
        turns = set(topics)
    judge = _judge(args, "nuggets")
    citation_judge = _judge(args, "citations") if args.citations else None
    if args.citations and not any(r.cited for run in runs for r in run.responses.values()):
        raise HarnessError("--citations: none of the responses cites a passage")
    passages = cited_passages(args.passages, runs) if args.passages is not None else None
    evaluation = evaluate_runs(runs, bank, judge, citation_judge=citation_judge, passages=passages,
                               questions=turn_questions(runs, bank, topics), turns=turns, evaluated_turns=turns,
                               progress=True)
    for note in evaluation.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.assignments_out:
        nugget_judge = evaluation.judge["nuggets"] if evaluation.citations else evaluation.judge
        write_assignments(args.assignments_out, evaluation.records,
                          {**nugget_judge, "nuggets": str(args.nuggets), "nugget_rule": evaluation.rule,
                           "responses": [str(path) for path in args.responses]})
    report = build_report(evaluation, chosen, test=args.test,
                          correction=args.correction, alpha=args.alpha,
                          resampling=Resampling(args.resamples, args.seed))
    for warning in report.leaderboard.warnings():  # as `harness compare` warns
        print(f"warning: {warning}", file=sys.stderr)
    content = render(evaluation, report, fmt, per_turn=args.per_turn)
    if args.out is not None:
        from harness.atomic import atomic_write

        with atomic_write(args.out, "wb") as handle:
            handle.write(content)
        print(f"report written to {args.out}", file=sys.stderr)  # as `harness compare --output` says it
    else:
        sys.stdout.buffer.write(content)
    judges = evaluation.judge.values() if evaluation.citations else [evaluation.judge]
    failed = sum(record.get("counts", {}).get("failed", 0) for record in judges)
    if failed and evaluation.judge.get("file"):  # recorded `failed`: as unfinished as the run that recorded them
        from harness.responses.assign import finish_failed

        print(f"warning: {failed} of the {evaluation.judge['counts']['pairs']} nugget judgments are recorded failed "
              f"(scored as not supported): {finish_failed(evaluation.judge)}", file=sys.stderr)
        return 1
    if failed:  # as `harness judge`: scores with endpoint failures in them are not a clean result
        from harness.judge.base import failed_why

        print(f"warning: {counted(failed, 'judgment')} {failed_why(judges)} (scored as not supported); run again "
              "to ask them again (the answers received are cached)", file=sys.stderr)
        return 1
    return 0
