"""`harness eval`: score runs against qrels; numbers equal `trec_eval -c -M<depth>`."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.atomic import atomic_write
from harness.cli import add_format, add_output, add_preset, add_runs, distinct_runs, swallowed
from harness.errors import FLAGS, HarnessError
from harness.evaluate import (JUDGED, Evaluation, Evaluator, JudgedQueries, RunFileOptions, ceiling_notes, csv_value,
                              evaluate_files, keep_measures, parse_measures, printed, report_reading, with_judged)
from harness.evaluate import presets
from harness.evaluate.depths import asked_of, unequal_depths
from harness.evaluate.lean import LeanScores, lean_scores, said
from harness.evaluate.names import CASE_RULE
from harness.paths import output_format, refuse_overwriting
from harness.trec import Qrels

if TYPE_CHECKING:  # numpy's and pyarrow's: imported where the numpy route scores (lean_scores answers None)
    from harness.evaluate.moved import FillMoves
    from harness.evaluate.tables import QrelsTable



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qrels", required=True, help="qrels file (qid iter docid grade), irds:ID, or "
                        "benchmark:NAME[:SPLIT]: the qrels a benchmark ships or derives")
    add_runs(parser, "one or more TREC run files")
    parser.add_argument("--measures", nargs="+",
                        help="ir-measures names (nDCG@3 'P(rel=2)@3' RR) or trec_eval's (ndcg_cut_3 P_5 map); "
                        f"{CASE_RULE}; {presets.DEFAULT_HELP}. Give run files before it, or end it with --")
    add_preset(parser)
    parser.add_argument("--depth", type=int, help="evaluate the top N documents per query (trec_eval -M)")
    parser.add_argument("--per-query", action="store_true", help="also report every query's value")
    parser.add_argument("--strict", action="store_true", help="a duplicate (qid, docid) in a run is an error")
    parser.add_argument(
        "--passage-separator",
        help="runs rank passages '<docid><SEP><n>': judge documents by their best passage (MaxP)",
    )
    add_format(parser, list(FORMATTERS),
               help="an aligned text table, CSV, or JSON (run -> measure -> mean; with --per-query, every query's "
               "values too); default: as --output's suffix says, .csv .json, .txt or .table for the table; the table "
               "on stdout or to a name without a suffix")
    add_output(parser, stdout=True, help="write the scores here (atomically) instead of stdout")
    add_fill(parser)


def add_fill(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fill", metavar="QRELS",
                        help="fill the holes of --qrels with these labels (e.g. from `harness judge`): human "
                             f"labels first; {JUDGED} with and without the fill is reported")


def scoring_qrels(args: argparse.Namespace) -> tuple[Qrels | QrelsTable, list[str], QrelsTable]:
    """--qrels, with its holes filled from --fill if given, and the notes saying so (what filled
    them and who made those labels: a score must never hide that some labels are a model's), and
    --qrels alone (the human labels, for `unfilled`)."""
    from harness.evaluate.tables import read_qrels_table

    human = read_qrels_table(args.qrels)
    if not args.fill:
        return human, [], human
    from harness.judge.fill import fill

    filled = fill(human.qrels, args.fill)
    for warning in filter(None, (filled.misfit, filled.scale_warning)):
        print(f"warning: {warning}", file=sys.stderr)
    return filled.qrels, filled.notes(args.fill), human


def unfilled(human: QrelsTable, filled: list[Evaluation], files: list[str],
             options: RunFileOptions) -> list[Evaluation]:
    """The runs scored on the human labels alone, by the code and the measures that scored them
    with the holes filled (`filled`): the 'before' of what --fill changed (Judged@10, the cells).
    Its measures' warnings were said as the filled qrels were scored: not twice."""
    return evaluate_files(Evaluator(human, filled[0].measures, announce=False), files, options)


def judged_notes(before: list[Evaluation], after: list[Evaluation], judged: str) -> list[str]:
    """Each run's mean Judged@10 with the human labels alone and with the holes filled."""
    return [f"{b.run_name}: {JUDGED} {b.means[judged]:.4f} with the human labels, {a.means[judged]:.4f} with the "
            "holes filled" for b, a in zip(before, after)]


def run(args: argparse.Namespace) -> int:

    files = distinct_runs(args)
    refuse_overwriting([args.qrels, args.fill, *files], [("--output", args.out)])
    # as `harness compare` and `qrels agree` choose it: an --output suffix naming no format is said before any work
    args.format = output_format(args.format, args.out, list(FORMATTERS), "table", {"txt": "table"})
    measures, depth, separator = measure_settings(args)
    lean = None if args.fill or separator else lean_scores(args.qrels, files, measures, depth, args.strict)
    if lean is not None:
        evaluations, notes, moves = _said(lean, measures, depth), [], None
    else:
        evaluations, notes, moves = _numpy_route(args, files, measures, depth, separator)
    names = [e.run_name for e in evaluations]
    if notes and args.format == "json" and (taken := next((n for n in names if n in RESERVED), None)):
        raise HarnessError(f"{files[names.index(taken)]}: a run named {taken!r} would share its key with "
                           f"the {RESERVED[taken]} that JSON output with --fill carries; rename the file")
    for evaluation in evaluations:
        _report_coverage(evaluation, qrels_path=args.qrels)
    # either route: each run's usual depth
    if (shallower := unequal_depths(evaluations, FLAGS, asked=asked_of(files, evaluations))) is not None:
        print(f"warning: {shallower}", file=sys.stderr)
    if notes_on_stderr(args.format, args.out):
        for note in notes + (moves.lines() if moves else []):
            print(f"note: {note}", file=sys.stderr)
    output = _with_notes(FORMATTERS[args.format](evaluations, args.per_query), notes, args.format, moves)
    if args.out is None:
        sys.stdout.write(output)
        return 0
    with atomic_write(args.out) as handle:
        handle.write(output)
    print(f"scores written to {args.out}", file=sys.stderr)  # as `harness compare --output` says it
    return 0


def _said(lean: LeanScores, measures: list[str], depth: int | None) -> list[Evaluation]:
    """The compiled route's evaluations, after what the numpy route says before it scores, in
    its order: the measures' translated names, a rel= no grade reaches, the ceilings."""
    evaluations = said(lean, measures)
    _say_ceilings(lean.qrels, measures, depth)
    return evaluations


def _say_ceilings(qrels: JudgedQueries, measures: list[str], depth: int | None) -> None:
    """ceiling_notes on stderr, said once (as the unreachable rel= warning is), by either route."""
    for note in ceiling_notes(qrels, measures, depth):
        print(f"note: {note}", file=sys.stderr)


def _numpy_route(args: argparse.Namespace, files: list[str], measures: list[str], depth: int | None,
                 separator: str | None) -> tuple[list[Evaluation], list[str], FillMoves | None]:
    """The runs scored by numpy (harness.evaluate.tables and ranked), with --fill's notes and
    moved cells where it is given."""
    from harness.evaluate.moved import fill_moves
    from harness.evaluate.tables import spare_memory

    spare_memory()
    qrels, notes, human = scoring_qrels(args)
    # with --fill, Judged@10 comes out of the same pass (the notes give it with and without the fill)
    scored, judged = with_judged(measures) if args.fill else (measures, JUDGED)
    options = RunFileOptions(strict=args.strict, passage_separator=separator, depth=depth)
    evaluator = Evaluator(qrels, scored)
    _say_ceilings(evaluator.table, measures, depth)
    filled = evaluate_files(evaluator, files, options)
    evaluations = [keep_measures(evaluation, measures) for evaluation in filled]
    if not args.fill:
        return evaluations, notes, None
    before = unfilled(human, filled, files, options)
    return evaluations, notes + judged_notes(before, filled, judged), fill_moves(before, evaluations)


def notes_on_stderr(fmt: str, out: str | None) -> bool:
    """Whether an output's own notes are said on stderr too: on a terminal they are on the screen
    already (not twice); a CSV has none (stderr alone), a file or a pipe is not the screen."""
    return fmt == "csv" or out is not None or not sys.stdout.isatty()


# the keys JSON output with --fill adds beside the runs' (a run of that name would lose its scores)
RESERVED = {"notes": "notes (where the filled labels came from)", "fill_moves": "cells the fill moved"}


def _with_notes(output: str, notes: list[str], fmt: str, moves: FillMoves | None = None) -> str:
    """Scores that use filled labels say so in the output itself, not only on stderr: '#' lines
    before a table and what the fill moved after it, "notes" and "fill_moves" in JSON. A CSV stays
    one header and its rows, which csv readers and pandas read as they are (a '#' line above the
    header broke them): its notes are stderr's."""
    if not notes or fmt == "csv":
        return output
    if fmt == "json":
        return json.dumps({**json.loads(output), "notes": notes, **({"fill_moves": moves.as_dict()} if moves else {})},
                          indent=2) + "\n"
    return "".join(f"# {note}\n" for note in notes) + output + "".join(f"# {line}\n" for line in
                                                                      (moves.lines() if moves else []))


def measure_settings(args: argparse.Namespace, judged_too: bool = False) -> tuple[list[str], int | None, str | None]:
    """Measures, depth and passage separator from --measures/--preset/--depth/--passage-separator
    (shared with `harness compare`). A run file among the measures, the positionals filled by
    others before it, is said as the parser says one swallowed (no measure is a file). A depth
    shallower than a measure reads is warned of, JUDGED counted with them where the output shows
    it too (`judged_too`: compare's column)."""
    if files := [name for name in args.measures or [] if Path(name).is_file()]:
        raise HarnessError(swallowed("--measures", files, "RUN..."))
    measures, depth, separator = presets.measure_settings(args.measures, args.preset, args.depth,
                                                          args.passage_separator, spelling=FLAGS)
    # compare's column, read as deep as the measures but not asked for: not one to ask for shorter
    added = with_judged(measures)[0][len(measures):] if judged_too else []
    column = {name: measure.params["cutoff"] for name, measure in zip(added, parse_measures(added, announce=False))}
    if (warning := presets.depth_warning(measures, depth, args.depth, args.preset, spelling=FLAGS,
                                         others=column)) is not None:
        print(f"warning: {warning}", file=sys.stderr)
    return measures, depth, separator


def _report_coverage(evaluation: Evaluation, qrels_path: str) -> None:
    """What trec_eval leaves silent: which queries counted as 0 and which were ignored."""
    report_reading(evaluation, qrels_path)
    print(evaluation.coverage_note(), file=sys.stderr)


def _as_json(evaluations: list[Evaluation], per_query: bool) -> str:
    document = {}
    for evaluation in map(Evaluation.whole_counts, evaluations):
        entry: dict = dict(evaluation.means)
        if per_query:
            entry["per_query"] = evaluation.per_query
        document[evaluation.run_name] = entry
    return json.dumps(document, indent=2) + "\n"


def _rows(evaluations: list[Evaluation], per_query: bool, cell: Callable[[float, bool], str]) -> list[list[str]]:
    """run, qid ('all' for the mean, as trec_eval prints it), one value per measure, as `cell`
    writes a value (and whether it is a count)."""
    rows = []
    for evaluation in evaluations:
        measures = evaluation.measures
        counts = [m in evaluation.counts for m in measures]
        if per_query:
            columns = [evaluation.per_query[m] for m in measures]
            for qid in columns[0]:
                rows.append([evaluation.run_name, qid, *map(cell, [column[qid] for column in columns], counts)])
        rows.append([evaluation.run_name, "all", *map(cell, [evaluation.means[m] for m in measures], counts)])
    return rows


def _as_csv(evaluations: list[Evaluation], per_query: bool) -> str:
    """For programs: every value unrounded, as JSON gives it (the table prints trec_eval's 4 decimals)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "qid", *evaluations[0].measures])
    writer.writerows(_rows(evaluations, per_query, csv_value))
    return out.getvalue()


def _as_table(evaluations: list[Evaluation], per_query: bool) -> str:
    """Counts as whole numbers, other measures to 4 decimals, as trec_eval prints them."""
    header = ["run", "qid", *evaluations[0].measures]
    rows = _rows(evaluations, per_query, printed)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row))
             for row in [header, *rows]]
    return "\n".join(lines) + "\n"


FORMATTERS = {"table": _as_table, "csv": _as_csv, "json": _as_json}
