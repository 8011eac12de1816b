"""`harness compare`: a leaderboard of runs with corrected paired tests, breakdowns by turn
depth / conversation / any qid grouping, optional arena ratings, as md, csv, json or html."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

from harness.cli import add_format, add_output, add_preset, add_runs, distinct_runs, number_in
from harness.errors import FLAGS, HarnessError
from harness.evaluate import (JUDGED, Evaluator, RunFileOptions, ceiling_notes, evaluate_files, keep_measures,
                              report_reading, with_judged)
from harness.evaluate.cli import add_fill, measure_settings, scoring_qrels, unfilled
from harness.evaluate.depths import asked_of, unequal_depths
from harness.evaluate.lean import lean_scores, said
from harness.evaluate.moved import fill_moves
from harness.evaluate.presets import DEFAULT_HELP
from harness.report import breakdown as bd
from harness.report.compare import Leaderboard, leaderboard
from harness.report.formats import FORMAT_HELP, FORMATS, report_format, write_report
from harness.report.model import Report
from harness.report.cli_options import add_paired_tests, baselines
from harness.report.stats import Resampling
from harness.paths import refuse_overwriting
from harness.trec import file_stem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runs(parser, "TREC run files, each named by its file name less its suffix (r.run and r.run.gz: r)")
    parser.add_argument("--qrels", required=True, help="qrels file (qid iter docid grade), irds:ID, or "
                        "benchmark:NAME[:SPLIT]: the qrels a benchmark ships or derives")
    parser.add_argument("--measures", nargs="+", help=f"ir-measures names, e.g. nDCG@3 'P(rel=2)@3' RR ({DEFAULT_HELP})")
    add_preset(parser)
    parser.add_argument("--depth", type=int, help="evaluate the top N documents per query (trec_eval -M)")
    parser.add_argument("--passage-separator", help="judge passage runs '<docid><SEP><n>' by document (MaxP)")
    add_paired_tests(parser)
    add_format(parser, FORMATS.names(), help=FORMAT_HELP)
    add_output(parser, stdout=True, help="write the report here (atomically) instead of stdout")
    parser.add_argument("--topics", metavar="BENCHMARK",
                        help="take turn depths and conversations (and --group-field) from this benchmark's "
                        "adapter, e.g. cast2021, instead of reading them from the qids")
    parser.add_argument("--group-field", help="break results down by this field of --topics' turns (or of their "
                        "conversations), one of one value per turn (not a list) the benchmark declares (`harness "
                        "components benchmark`; e.g. type for cosrec-curated)")
    parser.add_argument("--groups", help="break results down by a 'qid group' file (whitespace separated; a '#' "
                        "starts a comment at a line's start or after the qid, whose own '#' it keeps)")
    parser.add_argument("--arena-votes", nargs="+", metavar="CSV", help="add arena ratings from these vote files")
    parser.add_argument("--dialogues", nargs="+", metavar="JSON",
                        help="CRSArena dialogues for satisfaction rates (with --arena-votes)")
    parser.add_argument("--arena-bootstrap", type=number_in(1, math.inf, whole=True), default=1000,
                        help="bootstrap resamples of the Bradley-Terry intervals (default 1000; fewer are warned of)")
    add_fill(parser)


def run(args: argparse.Namespace) -> int:
    if args.group_field and not args.topics:
        raise HarnessError("--group-field needs --topics (the benchmark whose turns carry that field)")
    if args.dialogues and not args.arena_votes:  # satisfaction rates are a column of the arena ratings
        raise HarnessError("--dialogues needs --arena-votes (the votes whose systems' satisfaction it adds)")
    if args.group_field:
        bd.check_group_field(args.topics, args.group_field)
    if args.arena_votes:
        from harness.report.cli_arena import refuse_given_twice

        refuse_given_twice(args.arena_votes, args.dialogues or [])
    measures, depth, separator = measure_settings(args, judged_too=True)  # its Judged@10 column too
    files = distinct_runs(args)
    # each file holds one run, named by its file stem: a misspelt --baseline is said before any scoring
    chosen = baselines(args, {path: [file_stem(path)] for path in files})
    inputs = [args.qrels, args.fill, *files, args.groups, *(args.arena_votes or []), *(args.dialogues or [])]
    refuse_overwriting(inputs, [("--output", args.out)])
    fmt = report_format(args.format, args.out)
    # Judged@10 comes out of the same pass and is shown beside the measures, outside the test family
    scored_measures, judged = with_judged(measures)
    options = RunFileOptions(passage_separator=separator, depth=depth)  # as `harness eval` reads them
    # all runs at once, as `harness eval` scores them: by the compiled route where it gives what numpy gives
    lean = None if args.fill or separator else lean_scores(args.qrels, files, scored_measures, depth, strict=False)
    if lean is not None:
        scored, judgments, notes = said(lean, scored_measures), lean.qrels, []
    else:
        qrels, notes, human = scoring_qrels(args)
        evaluator = Evaluator(qrels, scored_measures)
        scored, judgments = evaluate_files(evaluator, files, options), evaluator.table
    evaluations = [keep_measures(evaluation, measures) for evaluation in scored]
    for evaluation in evaluations:
        report_reading(evaluation, args.qrels)
        # the tests pair their 0s with the other runs' scores: said, as eval says it (all missing: warned of above)
        if 0 < len(evaluation.missing_queries) < evaluation.num_queries:
            print(f"note: {evaluation.run_name}: {evaluation.judged_note()}", file=sys.stderr)
    # said in the report too, as a note
    if (shallower := unequal_depths(evaluations, FLAGS, asked=asked_of(files, evaluations))) is not None:
        print(f"warning: {shallower}", file=sys.stderr)
        notes.append(f"Warning: {shallower}.")
    board = leaderboard(
        evaluations,
        chosen,
        test=args.test, correction=args.correction, alpha=args.alpha,
        resampling=Resampling(args.resamples, args.seed),
    )
    for warning in board.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    # a level some judged queries never reach caps the board's means: said in the report, as the fill is
    notes += ceiling_notes(judgments, measures, depth)
    report = Report(board, title=f"Run comparison against {Path(args.qrels).name}", notes=notes)
    if args.fill:
        report.title += f", holes filled from {Path(args.fill).name}"
        before = unfilled(human, scored, files, options)
        report.untested = {f"{JUDGED} {side}": {e.run_name: e.means[judged] for e in evaluated}
                           for side, evaluated in (("human", before), ("filled", scored))}
        report.fill_moves = fill_moves(before, evaluations)  # the cells of `evaluations`' measures
    elif judged not in measures:
        report.untested = {JUDGED: {evaluation.run_name: evaluation.means[JUDGED] for evaluation in scored}}
    add_breakdowns(report, args)
    if args.arena_votes:
        from harness.report.cli_arena import build_arena

        report.arena = build_arena(args.arena_votes, args.dialogues or [], args.seed, args.arena_bootstrap)
        if fmt == "csv":
            print("note: the CSV holds no arena ratings (md, html and json do; harness arena --format csv writes "
                  "them alone)", file=sys.stderr)
    content = write_report(report, fmt, args.out)
    if args.out is None:
        sys.stdout.buffer.write(content)
    else:
        print(f"report written to {args.out}", file=sys.stderr)
    return 0


def add_breakdowns(report: Report, args: argparse.Namespace) -> None:
    """Depth and conversation breakdowns (from --topics or the qids), plus any grouping asked for."""
    board: Leaderboard = report.leaderboard
    scores = board.scores
    benchmark = None
    if args.topics:
        from harness.topics import load

        benchmark = load(args.topics)
    try:
        depths, conversations = [bd.turn_groups(by, scores.qids, benchmark) for by in (bd.DEPTH, bd.CONVERSATION)]
    except HarnessError as error:  # read from qids that are not turn ids (the benchmark's turns raise none)
        print(f"note: no turn-depth or conversation breakdown: {error}", file=sys.stderr)
        depths, conversations = {}, {}
    if benchmark is not None and depths and not depths.keys() & set(scores.qids):
        raise HarnessError(f"--topics {args.topics}: none of its {len(depths)} turns is a compared query (its "
                           f"first turn is {next(iter(depths))!r}, the first compared query {scores.qids[0]!r}): "
                           "give the benchmark the runs answer")
    if depths:
        report.breakdowns += [bd.breakdown(scores, m, depths, bd.DEPTH) for m in board.measures]
    if conversations:
        report.conversation_means = {m: bd.conversation_means(scores, m, conversations) for m in board.measures}
        report.breakdowns.append(bd.breakdown(scores, board.measures[0], conversations, bd.CONVERSATION))
    groupings = []
    if args.group_field:
        groupings.append((args.group_field, bd.groups_from_topics(benchmark, args.group_field)))
    if args.groups:
        groupings.append((file_stem(args.groups), bd.read_groups(args.groups)))
        if empty := bd.empty_groups(groupings[-1][1], scores.qids):
            print(f"warning: --groups {args.groups}: {empty}", file=sys.stderr)
    for name, groups in groupings:
        # the breakdowns first: they say a mapping covers none of the compared queries (no group to test)
        breakdowns = [bd.breakdown(scores, m, groups, name) for m in board.measures]
        tests = bd.tested_groups(board, groups) if board.comparisons else {}
        report.breakdowns += [replace(b, tests=tests) for b in breakdowns]
        said: dict[str, list[str]] = {}  # each group board's warnings, as the board's own are said, once each
        for group, group_board in tests.items():
            for warning in group_board.warnings():
                said.setdefault(warning, []).append(repr(str(group)))
        for warning, within in said.items():
            print(f"warning: within {name} {', '.join(within)}: {warning}", file=sys.stderr)
