"""`harness qrels`: how far two sets of labels agree.

    harness qrels agree A B            # kappa on the shared pairs, confusion, per-query kappa
    harness qrels rank-agree A B RUN...  # Kendall's tau and tau_AP between the system orderings
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys

from harness.cli import add_format, add_output, add_preset, add_runs, distinct_runs, no_runs, number_in
from harness.judge.agree import THRESHOLDS, WEIGHTINGS, Agreement, PairAgreement, RankingAgreement
from harness.trec import Qrels


QRELS_FORMATS = ("table", "csv", "json")
QRELS_FORMAT_HELP = ("an aligned text table, CSV, or JSON (default: as --output's suffix says, .csv .json, .txt or "
                     ".table for the table; the table on stdout or to a name without a suffix)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.evaluate.presets import DEFAULT_HELP

    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    agree = sub.add_parser("agree", help="Cohen's kappa, weighted kappa and confusion of two qrels on shared pairs",
                           description="Agreement of qrels A and B on the (qid, docid) pairs both judge.")
    agree.add_argument("a", metavar="A", help="qrels file A (e.g. the human labels)")
    agree.add_argument("b", metavar="B", help="qrels file B (e.g. an LLM's labels)")
    agree.add_argument("--thresholds", nargs="+", type=number_in(-2**31, 2**31 - 1, whole=True), metavar="T",
                       help=f"binary kappa of grade >= T, for each T (default {' '.join(map(str, THRESHOLDS))})")
    agree.add_argument("--per-query", action="store_true", help="also every query's kappas (table; CSV and JSON always have them)")
    add_format(agree, QRELS_FORMATS, help=QRELS_FORMAT_HELP)
    add_output(agree, stdout=True, help="write here (atomically) instead of stdout")
    agree.set_defaults(_action=run_agree)

    rank = sub.add_parser("rank-agree", help="Kendall's tau and tau_AP between the run orderings two qrels give",
                          description="Score the runs with qrels A and with qrels B, on the queries both judge, and "
                                      "compare the two orderings per measure (tau_AP takes A's ordering as the truth).")
    rank.add_argument("a", metavar="A", help="qrels file A (the reference ordering, e.g. human labels)")
    rank.add_argument("b", metavar="B", help="qrels file B (the ordering compared, e.g. LLM labels)")
    add_runs(rank, "TREC run files (two or more)", least=2)
    rank.add_argument("--measures", nargs="+", help=f"ir-measures names, e.g. nDCG@5 'P(rel=2)@10' ({DEFAULT_HELP})")
    add_preset(rank)
    rank.add_argument("--depth", type=int, help="evaluate the top N documents per query (trec_eval -M)")
    rank.add_argument("--passage-separator", help="judge passage runs '<docid><SEP><n>' by document (MaxP)")
    rank.add_argument("--moves", type=number_in(0, 10**6, whole=True), default=3,
                      help="list the runs whose rank changes most (default 3 per measure)")
    add_format(rank, QRELS_FORMATS, help=QRELS_FORMAT_HELP)
    add_output(rank, stdout=True, help="write here (atomically) instead of stdout")
    rank.set_defaults(_action=run_rank_agree)


def run(args: argparse.Namespace) -> int:
    args.sidecars = Sidecars()
    return args._action(args)


class Sidecars:
    """The provenance sidecars of qrels A and B, each read, and its qrels file hashed, once however many
    notes and headers say who made the labels (read_provenance hashes the file its sidecar describes)."""

    def __init__(self) -> None:
        self._records: dict[str, dict | None] = {}
        self._digests: dict[str, str] = {}

    def digest(self, path: str) -> str:
        """The file's sha256 (harness.paths.file_sha256), kept here too: that memo keeps only files
        unchanged for 2 s, and qrels `harness judge` has just written are hashed again by it."""
        from harness.paths import file_sha256

        if path not in self._digests:
            self._digests[path] = file_sha256(path)
        return self._digests[path]

    def record(self, path: str) -> dict | None:
        """The file's provenance sidecar (harness.judge.base.read_provenance), None where it has none."""
        from harness.judge.base import read_provenance, sidecar

        if path not in self._records:
            self._records[path] = read_provenance(path, sha256=self.digest(path) if sidecar(path).exists() else None)
        return self._records[path]


def _format(args: argparse.Namespace) -> str:
    """--format, else as --output's suffix says (agree.csv: csv; .txt: the table), else the table."""
    from harness.paths import output_format

    return output_format(args.format, args.out, QRELS_FORMATS, "table", {"txt": "table"})


def _emit(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    from harness.atomic import atomic_write

    with atomic_write(out) as handle:
        handle.write(text)


def _number(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"


# -- agree ------------------------------------------------------------------------------


def run_agree(args: argparse.Namespace) -> int:
    from harness.judge.agree import compare_labels
    from harness.paths import refuse_overwriting
    from harness.trec import read_qrels

    refuse_overwriting([args.a, args.b], [("--output", args.out)])
    args.format = _format(args)  # an --output suffix naming no format: said before any work
    a, b = read_qrels(args.a), read_qrels(args.b)
    # a warning names a threshold as the user gave it, or as the default they did not give
    given = "--thresholds" if args.thresholds is not None else "the default --thresholds"  # binary qrels: 2
    thresholds = args.thresholds if args.thresholds is not None else list(THRESHOLDS)
    result = compare_labels(a, b, thresholds)
    if not result.overall.pairs:
        args.warnings = [_no_pair_in_common(args, 'every kappa is n/a')]
    else:
        args.warnings = _threshold_warnings(a, b, args, thresholds, given)
    args.warnings += _label_warnings(args, {"A": a, "B": b},
                                     "each of its labels is compared with the grade of the same number there",
                                     ", none of them in the agreement, which is over the pairs both files label")
    _say(args)
    formats = {"table": _agree_table, "csv": _agree_csv, "json": _agree_json}
    _emit(formats[args.format](result, args), args.out)
    return 0


def _no_pair_in_common(args: argparse.Namespace, consequence: str) -> str:
    """The warning that qrels A and B share no judged pair, and why where B's sidecar knows:
    `harness judge --qrels A` labels only the pairs A lacks, so its qrels can never agree with A;
    with --judged-queries-only it labels A's pairs too, so none in common means the runs' top k
    held none of the documents people judged."""
    a, b = args.a, args.b
    warning = f"{a} and {b} judge no (qid, docid) pair in common: {consequence}"
    inputs = (args.sidecars.record(b) or {}).get("inputs") or {}
    if args.sidecars.digest(a) not in (inputs.get("qrels") or {}).values():
        return warning
    if inputs.get("judged_queries_only"):
        return warning + (f"; {b} was judged with --judged-queries-only on the runs' top {inputs.get('depth')}, "
                          f"none of which {a} judges (its sidecar says so): judge runs ranking the documents "
                          "people judged, or deeper")
    return warning + (f"; {b} holds only the pairs {a} lacks (its sidecar says `harness judge` made it with --qrels "
                      f"{a}): to measure agreement, judge the pairs people judged, without --qrels")


def _threshold_warnings(a: Qrels, b: Qrels, args: argparse.Namespace, thresholds: list[int], given: str) -> list[str]:
    """A threshold above every grade of both qrels makes every label 0 on both sides, one at or
    below every grade every label 1, so its kappa is n/a: the first said in the words `harness
    eval` uses for such a rel=. One that puts every label of one file on the same side (a yes-no
    file's 1s at grade >= 2) leaves that file nothing to agree with: its kappa is 0 (n/a where the
    other's shared labels are constant too) whatever the other file says, which reads as agreement
    no better than chance but measures nothing."""
    from harness.evaluate import unreachable

    grades = {path: [grade for docs in qrels.judgments.values() for grade in docs.values()]
              for path, qrels in ((args.a, a), (args.b, b))}
    top, bottom = max(map(max, grades.values())), min(map(min, grades.values()))
    warnings = []
    for threshold in dict.fromkeys(thresholds):
        if threshold > top:
            warnings.append(f"{unreachable(f'{given} {threshold}', f'{args.a} or {args.b}', threshold, top)}, "
                            "so its kappa is n/a")
        elif threshold <= bottom:
            warnings.append(f"{given} {threshold}: every judgment in qrels {args.a} and {args.b} reaches grade "
                            f"{threshold} (the lowest is {bottom}), so its kappa is n/a")
        else:
            for path, own in grades.items():
                constant = "0" if threshold > max(own) else "1" if threshold <= min(own) else None
                if constant is None:
                    continue
                reach = (unreachable(f"{given} {threshold}", path, threshold, max(own)) if constant == "0" else
                         f"{given} {threshold}: every judgment in qrels {path} reaches grade {threshold} "
                         f"(the lowest is {min(own)})")
                warnings.append(f"{reach}, so each of its labels is {constant} there: its kappa (0 or n/a, "
                                "whatever the other file says) is not informative")
    return warnings


def _label_warnings(args: argparse.Namespace, qrels: dict[str, Qrels], use: str, consequence: str) -> list[str]:
    """What the sidecars of A and B say about the labels compared, as `eval --fill` says it
    (harness.judge.fill, the same functions): pairs a judge was asked and left without a label
    (off the scale, failed), which drop out (`consequence`: of what), and labels on a scale whose
    top grade is not the other file's, compared number for number (`use`: how), said once (from
    the first file whose sidecar finds it)."""
    from harness.judge.fill import incomplete, scale_warning

    paths = {"A": args.a, "B": args.b}
    warnings = [note for side in paths if (note := incomplete(paths[side], args.sidecars.record(paths[side]),
                                                              consequence))]
    for side, other in (("A", "B"), ("B", "A")):
        if found := scale_warning(qrels[other], paths[side], args.sidecars.record(paths[side]), use):
            return warnings + [found]
    return warnings


def _say(args: argparse.Namespace) -> None:
    """The warnings on stderr too, unless the output that carries them is on the screen (as `eval` says
    its notes: a CSV carries none)."""
    from harness.evaluate.cli import notes_on_stderr

    if notes_on_stderr(args.format, args.out):
        for warning in args.warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _columns(result: Agreement) -> list[str]:
    """The headers of _values, from the thresholds the result holds (a threshold given twice is
    one column, as it is one value)."""
    return [f"kappa(>={t})" for t in result.overall.kappa] + [f"kappa({w})" for w in WEIGHTINGS]


def _values(part: PairAgreement) -> list[float]:
    return [*part.kappa.values(), *(part.weighted[w] for w in WEIGHTINGS)]


def _agree_table(result: Agreement, args: argparse.Namespace) -> str:
    overall = result.overall
    lines = [f"A: {_origin(args, args.a)}", f"B: {_origin(args, args.b)}",
             f"pairs: {overall.pairs} in both, {result.a_only} in A only, {result.b_only} in B only; queries: "
             f"{result.queries['both']} in both ({result.queries['A']} in A, {result.queries['B']} in B)",
             *(f"warning: {warning}" for warning in args.warnings), ""]
    for threshold, value in overall.kappa.items():
        lines.append(f"Cohen's kappa, grade >= {threshold}: {_number(value)}")
    for weighting in WEIGHTINGS:
        lines.append(f"weighted kappa ({weighting}): {_number(overall.weighted[weighting])}")
    lines += ["", "confusion of grades (rows A, columns B):"]
    header = ["A \\ B", *map(str, overall.grades), "total"]
    rows = [[str(grade), *map(str, row), str(sum(row))] for grade, row in zip(overall.grades, overall.confusion)]
    rows.append(["total", *(str(sum(column)) for column in zip(*overall.confusion)), str(overall.pairs)])
    lines += _aligned([header, *rows])
    if args.per_query:
        lines += ["", "per query:"]
        lines += _aligned([["qid", "pairs", *_columns(result)]] +
                          [[qid, str(part.pairs), *map(_number, _values(part))]
                           for qid, part in result.per_query.items()])
    return "\n".join(lines) + "\n"


def _origin(args: argparse.Namespace, path: str) -> str:
    """The path, and who made its labels where a judge wrote it (its provenance sidecar)."""
    from harness.judge.base import describe_provenance

    record = args.sidecars.record(path)
    return f"{path} ({describe_provenance(path, record)})" if record is not None else path


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(widths[i]) if i else cell.ljust(widths[i]) for i, cell in enumerate(row))
            for row in rows]


def _agree_csv(result: Agreement, args: argparse.Namespace) -> str:
    """One row per query and one 'all' row: pairs, kappas, and the confusion cells A<g>_B<h>."""
    from harness.evaluate import csv_statistic

    grades = result.overall.grades
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["qid", "pairs", *_columns(result), *(f"A{g}_B{h}" for g in grades for h in grades)])
    for qid, part in [*result.per_query.items(), ("all", result.overall)]:
        writer.writerow([qid, part.pairs, *map(csv_statistic, _values(part)),
                         *(cell for row in part.confusion for cell in row)])
    return out.getvalue()


def _part_json(part: PairAgreement) -> dict:
    from harness.evaluate import json_number

    return {"pairs": part.pairs,
            "kappa": {str(t): json_number(v) for t, v in part.kappa.items()},
            "weighted_kappa": {w: json_number(part.weighted[w]) for w in WEIGHTINGS},
            "confusion": part.confusion}


def _agree_json(result: Agreement, args: argparse.Namespace) -> str:
    document = {
        "a": args.a, "b": args.b, "provenance": {"a": args.sidecars.record(args.a), "b": args.sidecars.record(args.b)},
        "grades": result.overall.grades,
        "counts": {"both": result.overall.pairs, "a_only": result.a_only, "b_only": result.b_only},
        "queries": result.queries, "warnings": args.warnings, **_part_json(result.overall),
        "per_query": {qid: _part_json(part) for qid, part in result.per_query.items()},
    }
    return json.dumps(document, indent=2) + "\n"


# -- rank-agree -------------------------------------------------------------------------


def run_rank_agree(args: argparse.Namespace) -> int:
    from harness.errors import HarnessError
    from harness.evaluate import Evaluator, RunFileOptions, evaluate_file, reading_warnings
    from harness.evaluate.cli import measure_settings
    from harness.evaluate.names import said_once
    from harness.judge.agree import compare_orderings
    from harness.paths import refuse_overwriting
    from harness.trec import Qrels, read_qrels

    files = distinct_runs(args)
    if len(files) < 2:
        raise HarnessError(no_runs(2))  # as none is said when the command line is read
    refuse_overwriting([args.a, args.b, *files], [("--output", args.out)])
    args.format = _format(args)
    measures, depth, separator = measure_settings(args)  # as eval's: a depth shallower than a measure is said
    options = RunFileOptions(passage_separator=separator, depth=depth)
    qrels = {"A": read_qrels(args.a), "B": read_qrels(args.b)}
    shared = set(qrels["A"].judgments) & set(qrels["B"].judgments)
    if not shared:
        raise HarnessError(f"{args.a} and {args.b} judge no query in common: there is no ordering to compare")
    args.queries = (len(shared), len(qrels["A"].judgments), len(qrels["B"].judgments))
    args.warnings = []
    if not any(qrels["A"].judgments[qid].keys() & qrels["B"].judgments[qid].keys() for qid in shared):
        consequence = ("the ordering under B reflects only B's labels, of documents A does not judge, so tau and "
                       "tau_AP do not measure how far the labels agree")
        args.warnings.append(_no_pair_in_common(args, consequence))
    args.warnings += _label_warnings(args, qrels,
                                     "the runs are scored on its labels as on that file's grades of the same number",
                                     # its counts name no query: one it labels no pair of is not scored at all
                                     f", which count as unjudged in the runs' scores under it where their queries "
                                     f"are among the {len(shared)} scored (its sidecar does not say which they are)")
    _say(args)
    means = {}
    with said_once():  # a measure's translation, said by A's evaluator, is not said again by B's
        for side, labels in qrels.items():
            # the same queries on both sides: the orderings differ by the labels, not by the topic sets
            labels = Qrels(labels.name, {q: docs for q, docs in labels.judgments.items() if q in shared}, labels.path)
            evaluator = Evaluator(labels, measures)
            means[side] = [evaluate_file(evaluator, file, options) for file in files]
            for evaluation in means[side]:  # a run a qrels hardly judges (a PTKB run a glob took): said, as eval
                for warning in reading_warnings(evaluation, args.a if side == "A" else args.b):
                    print(f"warning: {warning}", file=sys.stderr)
    results = [compare_orderings(measure,
                                 {e.run_name: e.means[measure] for e in means["A"]},
                                 {e.run_name: e.means[measure] for e in means["B"]})
               for measure in means["A"][0].measures]
    formats = {"table": _rank_table, "csv": _rank_csv, "json": _rank_json}
    _emit(formats[args.format](results, args), args.out)
    return 0


def _rank_table(results: list[RankingAgreement], args: argparse.Namespace) -> str:
    shared, in_a, in_b = args.queries
    lines = [f"orderings of {results[0].runs} runs under A: {_origin(args, args.a)} and B: {_origin(args, args.b)} "
             "(tau_AP: A's ordering taken as the truth)",
             f"scored on the {shared} queries both judge ({in_a} in A, {in_b} in B)",
             *(f"warning: {warning}" for warning in args.warnings)]
    lines += _aligned([["measure", "tau", "tau_AP", "largest moves (run: rank A -> rank B)"]] +
                      [[r.measure, _number(r.tau), _number(r.tau_ap), _moves(r, args.moves)] for r in results])
    return "\n".join(lines) + "\n"


def _moves(result: RankingAgreement, limit: int) -> str:
    """Where every run ties under A or B (tau n/a), why, not moves: they would be the other side's
    ordering alone, which no disagreement made."""
    tied = [side for side, at in (("A", 1), ("B", 2)) if all(move[at] == 1 for move in result.moves)]
    if tied:
        return f"n/a: every run ties under {' and '.join(tied)}"
    return ", ".join(f"{run}: {a} -> {b}" for run, a, b in result.moves[:limit] if a != b) or "none"


def _rank_csv(results: list[RankingAgreement], args: argparse.Namespace) -> str:
    """One row per (measure, run): the measure's tau and tau_AP, the run's ranks under A and B."""
    from harness.evaluate import csv_statistic

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["measure", "tau", "tau_ap", "run", "rank_a", "rank_b"])
    for result in results:
        for run, a, b in result.moves:
            writer.writerow([result.measure, csv_statistic(result.tau), csv_statistic(result.tau_ap), run, a, b])
    return out.getvalue()


def _rank_json(results: list[RankingAgreement], args: argparse.Namespace) -> str:
    from harness.evaluate import json_number

    shared, in_a, in_b = args.queries
    document = {"a": args.a, "b": args.b,
                "provenance": {"a": args.sidecars.record(args.a), "b": args.sidecars.record(args.b)},
                "queries": {"both": shared, "A": in_a, "B": in_b}, "warnings": args.warnings,
                "measures": {
        r.measure: {"runs": r.runs, "tau": json_number(r.tau), "tau_ap": json_number(r.tau_ap),
                    "moves": [{"run": run, "rank_a": a, "rank_b": b} for run, a, b in r.moves]}
        for r in results}}
    return json.dumps(document, indent=2) + "\n"
