"""`harness ikat`: check a submission before uploading it, turn one into TREC runs, or
write one from TREC runs."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.atomic import OutputError, output_problem
from harness.cli import add_output, number_in, print_lines
from harness.errors import HarnessError, InputError, command, counted, listed, open_input, verb
from harness.ikat.submission import PROVENANCE_LIMIT, PTKB_DEPTH, YEARS, score_precision
from harness.paths import in_package, refuse_overwriting

if TYPE_CHECKING:
    from harness.ikat.submission import OrderKept
    from harness.ikat.validate import ValidationReport
    from harness.topics import Benchmark
    from harness.trec import Run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="ikat_command", required=True, metavar="ACTION")

    validate = sub.add_parser("validate", help="check a run file as the official iKAT validators do")
    validate.add_argument("run", type=Path, help="the submission (2023/2024 JSON, 2025 JSONL)")
    validate.add_argument(
        "--topics", required=True,
        help="the year's test topics file (e.g. data/ikat/2023/data/2023_test_topics.json) or a benchmark name (ikat2023)",
    )
    validate.add_argument("--year", type=int, choices=sorted(YEARS), help="format year (default: guessed from the file)")
    validate.add_argument("--max-warnings", type=number_in(0, math.inf, whole=True), default=2000,
                          help="2023/2024: more warnings is an error (default 2000)")
    validate.add_argument(
        "--partial", action="store_true",
        help="check only the turns in the file (skip the checks that every test turn is answered)",
    )
    validate.add_argument(
        "--passages", nargs="+", action="extend", metavar="SPEC",
        help="2023/2024: warn for passage ids not in this collection, as the official gRPC service does "
        "(benchmark:NAME[:SPLIT], an iKAT passage .jsonl, or a file of ids; several are one collection, as a "
        "config's corpus: list: the default config's runs search benchmark:ikat2023:test benchmark:ikat2023:train)",
    )
    validate.add_argument("--quiet", action="store_true", help="print the summary only")
    validate.set_defaults(ikat_run=_validate)

    to_trec = sub.add_parser("to-trec", help="the submission's passage (and PTKB) ranking as TREC runs")
    to_trec.add_argument("run", type=Path, help="the submission (2023/2024 JSON, 2025 JSONL)")
    add_output(to_trec, type=Path, help="passage run (default: RUN with suffix .run)")
    to_trec.add_argument("--ptkb-out", type=Path, help="also write the PTKB provenance ranking here")
    to_trec.add_argument("--year", type=int, choices=sorted(YEARS), help="format year (default: guessed from the file)")
    to_trec.add_argument("--tag", help="run tag (default: the submission's run name)")
    to_trec.set_defaults(ikat_run=_to_trec)

    from_trec = sub.add_parser("from-trec", help="write a submission from a TREC passage run")
    from_trec.add_argument("trec_run", type=Path, metavar="RUN", help="a TREC run of passages, one ranking per turn")
    from_trec.add_argument("--benchmark", required=True,
                           help=f"one of {', '.join(ikat_benchmarks())} (turn order, PTKB texts)")
    add_output(from_trec, type=Path, required=True, help="the submission to write")
    from_trec.add_argument("--year", type=int, choices=sorted(YEARS),
                           help="the format to write: 2023 or 2024 JSON, 2025 JSON Lines (needs --team-id); default: "
                           "the benchmark's year (ikat2024: 2024)")
    from_trec.add_argument("--run-name", required=True, help="the submission's run name (2025: metadata.run_id)")
    from_trec.add_argument("--run-type", default="automatic",
                           help="default automatic; " + "; ".join(f"{year}: {', '.join(sorted(entry.run_types))}"
                                                                  for year, entry in YEARS.items()))
    from_trec.add_argument("--team-id", default="", help="2025 metadata.team_id")
    from_trec.add_argument("--ptkb-run", type=Path,
                           help=f"a TREC run of PTKB statements per turn (its top {PTKB_DEPTH} per turn are written as "
                           "the turn's PTKB provenance)")
    from_trec.add_argument("--depth", type=number_in(1, PROVENANCE_LIMIT, whole=True), default=PROVENANCE_LIMIT,
                           help=f"passages per turn (1 to {PROVENANCE_LIMIT})")
    from_trec.add_argument(
        "--passages", metavar="SPEC", nargs="+", action="extend",
        help="where the passage texts come from: any corpus the harness reads (an iKAT passages .jsonl, TREC "
        "or ClueWeb22 files, irds:ID, benchmark:NAME) or a Lucene index folder with stored contents or raw "
        "documents; several are searched in order (default: the passages every split of the benchmark ships: "
        "iKAT 2023's test and train provenance pools)",
    )
    from_trec.set_defaults(ikat_run=_from_trec)


def run(args: argparse.Namespace) -> int:
    return args.ikat_run(args)


def _validate(args: argparse.Namespace) -> int:
    from harness.ikat.checks import CHECKS
    from harness.ikat.validate import COVERAGE_CHECKS, read_passage_ids, topics_year, validate_file
    from harness.topics import held_by
    from harness.topics.ikat import load_topics

    refuse_run_record(args.run)
    passages = frozenset().union(*map(read_passage_ids, args.passages)) if args.passages else None
    topics = load_topics(args.topics, flag="--topics")
    year = topics_year(topics)
    report = validate_file(
        args.run,
        topics,
        args.year,
        max_warnings=args.max_warnings,
        skip=COVERAGE_CHECKS if args.partial else (),
        passages=passages,
        topics_year=year,
    )
    if args.year and year and args.year != year:  # as asked (a harness leaderboard may take another year's format)
        print(f"note: --year {args.year} checks the file in the iKAT {args.year} format, which the iKAT {year} "
              f"validator of --topics {args.topics} does not take (it takes the {year} format only)", file=sys.stderr)
    if not args.quiet:
        print_lines(report.findings)
    unknown = [finding.turn for finding in report.errors if finding.check in ("turn-id-known", "turns-known")]
    if report.turns and len(set(unknown)) >= report.turns:  # every turn (in file order): another year's topics?
        print(f"note: none of the file's {counted(report.turns, 'turn')} is a turn of --topics {args.topics} (the "
              f"file's first: {unknown[0]!r}): give the topics of the file's year", file=sys.stderr)
    unknown_passages = _unknown_passages(report, passages)
    if unknown_passages and (others := _splits_holding(args.passages, unknown_passages)):
        n = len(unknown_passages)
        print(f"note: {counted(n, 'passage id')} {verb(n, 'is', 'are')} not in --passages {' '.join(args.passages)}; "
              f"the benchmark's other splits ship passages too: add {held_by(others)} if the run searched "
              "them (the default config's iKAT 2023 runs search both splits' pools)", file=sys.stderr)
    if args.passages and report.year not in CHECKS.get("passage-exists").years:
        print(f"note: --passages was not used: the iKAT {report.year} validator looks up no passage (it checks "
              "references against the ClueWeb22 id pattern only)", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    for note in _harness_notes(args.run, report):
        print(f"note: {note}", file=sys.stderr)
    return 0 if report.ok else 1


def _harness_notes(path: Path, report: ValidationReport) -> list[str]:
    """What the harness itself finds in a file the official checks pass, said after their verdict
    and kept out of its counts (the verdict and counts stay the official tools'): what `ikat
    to-trec` and a hosted board refuse (an id holding whitespace, which upstream only looks up),
    the passages to-trec drops, and (2025, where upstream checks no text) empty answers."""
    from harness.ikat.checks_2025 import empty_answers
    from harness.ikat.convert import decoded_rankings

    notes, decoded = [], report.decoded
    if report.ok:
        try:
            runs = decoded_rankings(path, decoded, report.submission)
        except InputError as problem:
            notes.append(f"`harness ikat to-trec` and a hosted leaderboard's run task refuse this file: {problem}")
        else:
            if repeated := runs.passages.duplicates:
                notes.append(f"{counted(repeated, 'passage')} {verb(repeated, 'is', 'are')} listed again in "
                             "the same response: `harness ikat to-trec` keeps the first (as the official "
                             "generate_run.py), a hosted board too")
    empty, answers, first = empty_answers(decoded.entries) if YEARS[decoded.year].json_lines else (0, 0, None)
    if empty:
        line, turn = first
        notes.append(f"{empty} of {counted(answers, 'answer')} {verb(empty)} no text (the first: line {line}"
                     + (f", turn {turn}" if turn else "") + "), which the official iKAT "
                     f"{decoded.year} validator does not check: an empty answer supports no nugget, it scores 0 on "
                     "the response task")
    return notes


def _unknown_passages(report: ValidationReport, passages: frozenset[str] | None) -> set[str]:
    """The distinct passage ids the submission cites that are not in --passages (the
    passage-exists findings are one per turn per id)."""
    if passages is None or report.submission is None:
        return set()
    return {p.id for turn in report.submission.turns for r in turn.responses for p in r.passage_provenance} - passages


def _splits_holding(specs: list[str], unknown: set[str]) -> dict[str, int]:
    """The `benchmark:` specs of the corpora that the splits of the benchmarks named in `specs`
    ship and `specs` leave out (`benchmark:ikat2023` is the test split's pool alone), each that
    holds some of the `unknown` passage ids, with how many: a split given as a file holds none."""
    from harness.topics import shipped_corpora, splits_holding

    named = [shipped_corpora(spec.removeprefix("benchmark:")) for spec in specs if spec.startswith("benchmark:")]
    given = {next(iter(corpora.values())).name for corpora in named if corpora}  # each spec's own corpus first
    left_out = {spec: corpus for corpora in named for spec, corpus in corpora.items() if corpus.name not in given}
    return splits_holding(left_out, unknown)


def _to_trec(args: argparse.Namespace) -> int:
    from harness.ikat.convert import to_trec

    refuse_run_record(args.run)
    out = args.out or args.run.with_suffix(".run")
    if args.out is None:  # beside RUN: a read-only folder, or a shipped sample run's in an install's package
        problem = output_problem(out) or ("it is inside the installed harness package" if in_package(out) else None)
        if problem:
            raise OutputError(f"cannot write {out} (the default output, beside the submission): {problem}; "
                              "give --output")
    refuse_overwriting([args.run], [("--output" if args.out else "the default output", out),
                                    ("--ptkb-out", args.ptkb_out)])
    runs = to_trec(args.run, out, args.ptkb_out, args.year, args.tag)
    passages = sum(map(len, runs.passages.scores.values()))
    empty = sum(not ranking for ranking in runs.passages.scores.values())  # in the submission, not in the run file
    unranked = f" ({counted(empty, 'turn')} of the submission {verb(empty, 'ranks', 'rank')} no passage)"
    dropped = runs.passages.duplicates  # listed again in the same response
    repeated = f"; {counted(dropped, 'repeated passage')} dropped (listed again in the same response: the first kept)"
    print(f"{out}: {counted(passages, 'passage')} over {counted(len(runs.passages) - empty, 'turn')}"
          + (unranked if empty else "") + (repeated if dropped else ""), file=sys.stderr)
    if args.ptkb_out is not None:
        print(f"{args.ptkb_out}: PTKB provenance of {counted(len(runs.ptkb), 'turn')}", file=sys.stderr)
    return 0


def refuse_run_record(path: Path) -> None:
    """`harness run`'s record of a run (runs/<tag>.json, gzipped too) given for a submission, refused
    in one line naming the from-trec command that makes one of its run: checked, it drew 22 schema errors."""
    from harness.trec import not_a_run, record_beside, recorded_run_of

    record = recorded_run_of(path)
    if record is None:
        return
    benchmarks = ikat_benchmarks()
    topics = record.topics or "topics it does not name"
    if topics.partition(":")[0] not in benchmarks:
        raise InputError(path, not_a_run(record, path, None, "an iKAT submission") + f", and its run ranks the "
                         f"queries of {topics}, which `harness ikat from-trec` does not take (it takes "
                         f"{', '.join(benchmarks)})")
    run = record_beside(record, path) or record.run
    year = _named_year(topics)  # None for a plug-in benchmark named without its year: from-trec needs --year
    lines = year is not None and YEARS[year].json_lines
    ranked = ["PASSAGE_RUN", "--ptkb-run", run] if record.task == "ptkb" else [run]
    make = command("harness", "ikat", "from-trec", *ranked, "--benchmark", topics,
                   *(["--year", "YEAR"] if year is None else []), "--run-name", record.tag,
                   *(["--team-id", "TEAM"] if lines else []), "--output", f"{record.tag}.ikat.json{'l' * lines}")
    made_of = "make the PTKB provenance of a submission of" if record.task == "ptkb" else "make a submission of"
    unnamed = "" if year is not None else (  # not benchmark_year's error: it blames a --benchmark not given here
        f" (YEAR: the iKAT format to write, {', '.join(map(str, YEARS))}, as {topics} names no year; "
        f"{listed([str(each) for each in YEARS if YEARS[each].json_lines])}'s, JSON Lines, also needs --team-id TEAM "
        "and a .jsonl output)")
    raise InputError(path, not_a_run(record, path, made_of, "an iKAT submission") + f": `{make}`{unnamed}")


def ikat_benchmarks() -> list[str]:
    """The benchmarks whose turns are iKAT's: they declare the PTKB provenance field."""
    from harness import topics

    return [name for name in topics.names() if any(field.name == "ptkb_provenance" for field in topics.fields(name))]


def _from_trec(args: argparse.Namespace) -> int:
    from harness.ikat.submission import build_submission, keep_order, write_submission
    from harness.topics import load
    from harness.trec import read_run

    if args.benchmark.partition(":")[0] not in ikat_benchmarks():
        raise HarnessError(f"--benchmark {args.benchmark!r}: from-trec writes iKAT submissions, so it takes an iKAT "
                           f"benchmark ({', '.join(ikat_benchmarks())})")
    own_year = _named_year(args.benchmark)
    args.year = args.year or own_year or benchmark_year(args.benchmark)
    if args.run_type not in YEARS[args.year].run_types:
        raise HarnessError(f"--run-type {args.run_type!r} is not one of {', '.join(sorted(YEARS[args.year].run_types))} "
                           f"(iKAT {args.year})")
    if YEARS[args.year].json_lines and not args.team_id:
        raise HarnessError(f"--year {args.year}: the format's metadata names the team: give --team-id")
    refuse_overwriting([args.trec_run, args.ptkb_run, *map(Path, args.passages or ())], [("--output", args.out)])
    benchmark = load(args.benchmark)
    run = read_run(args.trec_run)
    _answered_turns(args.trec_run, run, benchmark, args.benchmark, "passages")
    rankings = {qid: run.ranked(qid) for qid in run.scores}
    ptkb = None
    if args.ptkb_run is not None:
        ptkb_run = read_run(args.ptkb_run)
        _answered_turns(args.ptkb_run, ptkb_run, benchmark, args.benchmark, "PTKB statements")
        _check_statements(args.ptkb_run, ptkb_run, benchmark)
        ptkb = {qid: ptkb_run.ranked(qid) for qid in ptkb_run.scores}
    source, source_name = _passage_source(args.passages, args.benchmark)
    submission = build_submission(
        rankings,
        source,
        run_name=args.run_name,
        run_type=args.run_type,
        ptkb_rankings=ptkb,
        conversations=benchmark.conversations,
        depth=args.depth,
        team_id=args.team_id,
    )
    submission, lowered = keep_order(submission, args.year)
    write_submission(args.out, submission, args.year)
    print(f"{args.out}: {counted(len(submission.turns), 'turn')} (iKAT {args.year} format)", file=sys.stderr)
    if lowered.passages:
        _report_lowered(lowered, args.year)
    responses = [response for turn in submission.turns for response in turn.responses]
    empty = sum(not response.text.strip() for response in responses)
    if empty:  # a turn's text is its best passage's (extractive), none where no passage has one
        print(f"note: {empty} of {counted(len(responses), 'response')} {verb(empty)} no text (its passages have "
              "none): write the answers into it before submitting to a response task, where an empty answer "
              "scores 0", file=sys.stderr)
    if own_year is not None and args.year != own_year:
        _other_year(args.out, benchmark, args.benchmark, own_year, args.year)
    _report_texts(submission, source_name)
    _report_size(args.out, args.depth, submission, args.year)
    return 0


def _report_lowered(lowered: OrderKept, year: int) -> None:
    """Scores written other than the run's are said, with why: the format could not hold its order."""
    turn, passage, run_score, written = lowered.first
    count = lowered.passages
    print(f"note: {counted(count, 'passage')} in {counted(lowered.turns, 'turn')} {verb(count, 'is', 'are')} written "
          f"with a score below the run's, to keep its order: the iKAT {year} format holds scores "
          f"{score_precision(year)}, in which {verb(count, 'its', 'their')} run score would not rank below the "
          "passage's above (the official run ranks tied passages by id), so each is given the nearest score below "
          f"that one's (the first: turn {turn}, passage {passage}, {run_score!r} written as {written!r})",
          file=sys.stderr)


def benchmark_year(benchmark: str) -> int:
    """The iKAT year a benchmark's name carries (ikat2024: 2024), whose format its turn ids fit."""
    year = _named_year(benchmark)
    if year is None:
        raise HarnessError(f"--benchmark {benchmark!r} names no iKAT year: give --year ({', '.join(map(str, YEARS))})")
    return year


def _named_year(benchmark: str) -> int | None:
    year = benchmark.partition(":")[0].removeprefix("ikat")
    return int(year) if year.isdigit() and int(year) in YEARS else None


def _other_year(path: Path, benchmark: Benchmark, name: str, own: int, year: int) -> None:
    """A --year other than the benchmark's is written as asked (a harness leaderboard may take any
    year's format for any topics: its task names the formats), with a warning that the track of
    the benchmark's year does not take it (its validator reads its own format only) and what the
    year's validator says of the file's turn ids, found by running it."""
    from harness.ikat.validate import validate_file

    report = validate_file(path, benchmark.conversations, year, max_warnings=None)
    refused = [finding for finding in report.errors if finding.check == "turn-id-format"]
    message = (f"warning: --year {year} writes {name}'s turns (iKAT {own}) in the iKAT {year} format, which the iKAT "
               f"{own} validator does not take")
    if refused:
        message += (f", nor the iKAT {year} validator the turn ids of {len(refused)} of its "
                    f"{counted(report.turns, 'turn')} ({refused[0].message})")
    else:
        validate = command("harness", "ikat", "validate", path, "--topics", name, "--year", year)
        message += f" (a harness leaderboard may: `{validate}` checks it)"
    print(f"{message}: leave --year out to write the {own} format", file=sys.stderr)


def _answered_turns(path: Path, run: Run, benchmark: Benchmark, name: str, what: str) -> None:
    """A run (of passages, or of PTKB statements) that answers no turn of the benchmark is an
    error; turns it leaves out are said in one line (they are written with no `what`)."""
    turns = [turn.qid for conversation in benchmark.conversations for turn in conversation.turns]
    answered = set(run.scores) & set(turns)
    if not answered:
        raise HarnessError(f"{path}: none of its {len(run.scores)} queries is a turn of {name} "
                           f"(its first is {next(iter(run.scores))!r}; {name}'s first turn is {turns[0]!r})")
    if len(answered) < len(turns):
        missing = len(turns) - len(answered)
        print(f"{path}: {missing} of {counted(len(turns), 'turn')} of {name} {verb(missing)} no {what} in the run "
              "(written with none)", file=sys.stderr)


def _check_statements(path: Path, run: Run, benchmark: Benchmark) -> None:
    """Every statement a PTKB run ranks for a turn is one of that turn's PTKB statements (an
    unknown id would be written with an empty text, which the validators refuse)."""
    statements = {turn.qid: [s.id for s in conversation.personal]
                  for conversation in benchmark.conversations for turn in conversation.turns}
    unknown = next(((qid, docid) for qid, ranking in run.scores.items() if qid in statements
                    for docid in ranking if docid not in statements[qid]), None)
    if unknown is None:
        return
    line = None
    with open_input(path) as handle:  # the first unknown statement's line, to name it
        for number, text in enumerate(handle, start=1):
            fields = text.split()
            if len(fields) >= 3 and fields[0] in statements and fields[2] not in statements[fields[0]]:
                unknown, line = (fields[0], fields[2]), number
                break
    qid, docid = unknown
    known = statements[qid]
    raise InputError(path, f"turn {qid}: {docid!r} is not a statement of its PTKB "
                           f"(its statement ids: {', '.join(known) if known else 'none'})", line=line)


def _passage_source(specs: list[str] | None, benchmark: str):
    """The passage texts from --passages (corpus specs or Lucene indexes), else from the
    corpora every split of the benchmark ships (iKAT 2023: the test and the train provenance
    pools, which the default config searches as one): each read in turn for the passages not
    found yet, first found first."""
    from functools import partial

    from harness.corpus import find_texts

    if specs:
        sources = [_one_source(spec) for spec in specs]
        name = ", ".join(name for _, name in sources)
    else:
        from harness.registry import split_spec
        from harness.topics import shipped_corpora

        corpora = shipped_corpora(benchmark)
        sources = [(corpus, spec) for spec, corpus in corpora.items()]
        name = (f"the passages {split_spec(benchmark)[0]} ships "
                f"({', '.join(corpus.name for corpus in corpora.values()) or 'it ships none'})")

    return partial(find_texts, [source for source, _ in sources]), name


def _one_source(spec: str):
    """A --passages spec's texts (a Lucene index, else a corpus) and its name in messages."""
    from harness.retrieve.lucene import is_index

    if is_index(spec):
        from functools import partial

        from harness.retrieve.lucene import stored_texts

        return partial(stored_texts, spec), f"the Lucene index {spec}"
    from harness.corpus.readers import open_documents

    return open_documents(spec), spec


def _report_texts(submission, source_name: str) -> None:
    """Passages written without text: say how many, and where texts would come from."""
    passages = [p for turn in submission.turns for r in turn.responses for p in r.passage_provenance]
    empty = sum(not p.text for p in passages)
    if empty:
        print(f"warning: {empty} of {counted(len(passages), 'passage')} {verb(empty)} no text in {source_name} (written with an empty "
              "text): give --passages the collection the run retrieved from (its passages file or a Lucene "
              "index with stored contents)", file=sys.stderr)


# a hosted harness leaderboard's default upload limit (harness.serve.config.DEFAULT_MAX_UPLOAD_MB,
# which imports this package: a test keeps the two equal)
DEFAULT_MAX_UPLOAD_MB = 64


def _fitting_depth(submission, size: int, limit: float, depth: int, texts: bool) -> int:
    """The largest depth whose file would be at most `limit` bytes: the file less its passages,
    plus each turn's first passages at their own sizes (`texts`: a passage's text is in the file).
    A turn ranking fewer than the depth keeps them all, and top passages are not of the mean
    size: the file does not shrink in proportion to the depth."""
    import json
    from itertools import accumulate

    sizes = [[len(json.dumps(p.id)) + PASSAGE_BYTES + (len(json.dumps(p.text)) if texts else 0)
              for r in turn.responses for p in r.passage_provenance] for turn in submission.turns]
    rest = size - sum(map(sum, sizes))
    totals = [list(accumulate(turn)) for turn in sizes if turn]  # a turn's first d passages: totals[d - 1]
    fitting = 1
    for d in range(1, depth + 1):  # the size grows with the depth: the first too large ends the search
        if rest + sum(total[min(d, len(total)) - 1] for total in totals) > limit:
            break
        fitting = d
    return fitting


# a passage's bytes in a 2023/2024 file beside its id and text (its keys, score and indentation:
# 93 with a score of 17 digits); a 2025 reference takes fewer
PASSAGE_BYTES = 100


def _report_size(path: Path, depth: int, submission, year: int) -> None:
    """The size of the file to upload, against a hosted leaderboard's default limit; when over,
    the depth that fits."""
    size = path.stat().st_size
    limit = DEFAULT_MAX_UPLOAD_MB << 20
    message = f"{path}: {size / 2**20:.1f} MiB to upload"
    if size > limit:
        fitting = _fitting_depth(submission, size, limit * 0.95, depth, texts=not YEARS[year].json_lines)
        message = (f"warning: {message}, over the {DEFAULT_MAX_UPLOAD_MB} MiB a hosted harness leaderboard takes by "
                   f"default (max_upload_mb): about --depth {fitting} would fit")
    print(message, file=sys.stderr)
