"""`harness topics list` and `harness topics export NAME[:SPLIT] [--strategy S] [--format F] [--out FILE]`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from harness.atomic import atomic_write
from harness.cli import add_output
from harness.errors import HarnessError
from harness.queries import STRATEGIES, get as strategy, stream
from harness.topics import Benchmark, load, names

FORMATS = ("jsonl", "tsv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="each benchmark with its conversations, turns and judged turns")
    export = actions.add_parser("export", help="write a benchmark's query stream under one strategy")
    export.add_argument("name", metavar="NAME[:SPLIT]",
                        help=f"benchmark, e.g. ikat2023 or cast2019:train; one of {', '.join(names())} "
                             "(`harness components benchmark` lists their splits)")
    export.add_argument("--strategy", default="raw",
                        help=f"query strategy NAME[:ARG], e.g. variant:1; one of {', '.join(STRATEGIES.names())} "
                             "(default raw)")
    export.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="jsonl: one object per query (qid, query, conversation_id, turn_index, context: "
                             "the texts the strategy made the query from, in order; the turn's own utterance or "
                             "rewrite alone for raw and manual, earlier turns too for all_history, hqe, ...; not "
                             "the conversation history); tsv: 'qid<TAB>query' (default jsonl)")
    add_output(export, stdout=True, help="output file (written atomically); default standard output")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return list_benchmarks(sys.stdout)
    try:
        strategy(args.strategy)
    except HarnessError as error:  # a mistake on the command line: main adds the --help that lists them
        raise HarnessError(f"--strategy: {error}") from None
    benchmark = load(args.name)
    with _output(args.out) as out:
        count = export(benchmark, args.strategy, args.format, out)
    print(f"{count} queries", file=sys.stderr)
    return 0


def counts(benchmark: Benchmark) -> tuple[int, int, int]:
    """(conversations, distinct turns, turns the qrels judge)."""
    qids = {turn.qid for turn in benchmark.turns}
    judged = len(qids & benchmark.qrels().judgments.keys()) if benchmark.qrels else 0
    return len(benchmark.conversations), len(qids), judged


def list_benchmarks(out: IO[str]) -> int:
    """A table of every registered adapter's default split; a failing adapter is reported, not hidden."""
    failed = 0
    out.write(f"{'name':<18} {'conversations':>13} {'turns':>7} {'judged':>7}\n")
    for name in names():
        try:
            conversations, turns, judged = counts(load(name))
        except HarnessError as error:
            failed += 1
            print(f"harness topics list: {name}: {error}", file=sys.stderr)
            continue
        out.write(f"{name:<18} {conversations:>13} {turns:>7} {judged:>7}\n")
    return 2 if failed else 0


def export(benchmark: Benchmark, strategy: str, fmt: str, out: IO[str]) -> int:
    if fmt not in FORMATS:
        raise HarnessError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    count = 0
    # the whole stream first (topics are small): a strategy's error, such as a rewrites file
    # lacking a turn, found at its end, leaves stdout empty as it leaves --output unwritten
    for query in list(stream(benchmark.conversations, strategy)):
        if fmt == "jsonl":
            record = {"qid": query.qid, "query": query.text, "conversation_id": query.conversation_id,
                      "turn_index": query.turn_index, "context": list(query.context)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            out.write(f"{query.qid}\t{' '.join(query.text.split())}\n")
        count += 1
    return count


@contextmanager
def _output(path: str | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
    else:
        with atomic_write(path) as handle:
            yield handle
