"""`harness run CONFIG`: run a benchmark config and print its leaderboard."""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import gc
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from harness.atomic import OutputError, check_outputs, in_the_way, not_writable
from harness.cli import add_output, said_error
from harness.errors import InputError, command, counted
from harness.runner.config import DEFAULT_OUTPUT, ConfigError, Node, RunSpec, config_file, load_config, read_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="a benchmark config (YAML), e.g. configs/default.yaml, or a shipped "
                        "config by name: default, quick")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME",
        help="run only this experiment (its name) or run (its tag); repeatable. The leaderboard still lists every finished run",
    )
    parser.add_argument("--force", action="store_true", help="redo runs even when finished with the same inputs")
    parser.add_argument("--keep-going", action="store_true",
                        help="a run that fails (a plug-in raising, an input missing) is said in one line, its tag "
                        "and the error, and the other runs go on: the leaderboard lists the finished ones and the "
                        "exit status is 1; the same command again redoes the failed runs alone (a failed run is never "
                        "taken for finished). Without it, the first failure ends the command")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the config and list its runs with their queries and judged queries, and what "
                        "the command would do with each (with --force: 'finished, forced: to run'; a run file edited "
                        "since it was written, or inputs changed since it was made: 'to run (why)'); retrieve nothing. "
                        "To know whether a run is finished, its queries are formed (ptkb_topk ranks PTKB statements "
                        "for them) and its corpus files hashed (read through; one of 64 MiB or more again only once "
                        "changed); qrels_restrict_to_corpus reads the corpus's ids")
    add_output(parser, dest="output", type=Path, help="write runs here instead of the config's `output`")
    parser.add_argument("--report", action="store_true",
                        help="also write OUTPUT/report.html: tests against each leaderboard section's first run, plots")


def run(args: argparse.Namespace) -> int:
    from harness.runner.runner import plan, run_config

    _left_to_the_system_at_exit()
    try:
        config = load_config(args.config)
    except InputError as error:
        if not args.report or args.dry_run or "no such" not in error.problem:
            raise
        raise InputError(error.path, error.problem + from_recorded_runs(args.config, args.output)) from None
    if args.output is not None:
        config = dataclasses.replace(config, output=args.output)
    try:  # the folder it will write: before --dry-run says all is well
        if not args.dry_run:
            check_outputs(config.output, folder=True)
        elif problem := in_the_way(config.output, folder=True):  # seen without writing: a dry run only reads
            raise OutputError(f"cannot write {config.output}: {problem}")
    except OutputError as error:  # the config's `output:` is what to fix, as a file in its way says
        if args.output is not None:
            raise
        raise ConfigError(args.config, "output", str(error)) from None
    if args.dry_run:
        runs = config.selected(args.only)  # (an unknown --only, or an extra missing: said before where the runs go)
        print(destination(config.output))
        for prepared, (finished, why) in plan(config, runs):
            state = ("finished, forced: to run" if args.force else "finished") if finished else (
                f"to run ({why})" if why else "to run")
            judged = f"{prepared.judged()} judged" if prepared.qrels is not None else "not scored"
            print(f"{prepared.run.tag}\t{len(prepared.queries)} queries\t{judged}\t{state}")
        return 0
    from harness.runner import leaderboard  # not for a dry run: it brings scipy (2 s)
    from harness.runner.report import depth_warnings

    # the leaderboard and report show every finished run of the config, not only those run now
    failures = Failures(lambda line: print(f"harness run: error: {line}", file=sys.stderr))
    outcomes = run_config(config, only=args.only, force=args.force, with_finished=True,
                          failed=failures if args.keep_going else None)
    deep = depth_warnings(outcomes)  # runs of other depths side by side: said here, on the board and in the report
    for warning in deep.values():
        print(f"warning: {warning}", file=sys.stderr)
    board, path = leaderboard.write(outcomes, config.output, title=f"Leaderboard: {args.config}", deep=deep)
    sys.stdout.write(board)
    print(f"leaderboard written to {path}", file=sys.stderr)
    if args.report:
        from harness.runner.report import write_html

        path = write_html(outcomes, config.output / "report.html", title=f"Report: {args.config}", deep=deep)
        print(f"report written to {path.resolve()}")
    if failures.lines:
        listing = ("the leaderboard lists the finished ones" if outcomes
                   else "no run is finished: the leaderboard is empty")
        print("harness run: " + failures.summary(
            listing, "the command without --force" if args.force else "the same command",
            command("harness", "run", args.config, "--only", next(iter(failures.lines)))), file=sys.stderr)
        return 1
    return 0


@dataclasses.dataclass
class Failures:
    """Keep-going's word on the runs that raised (`harness run --keep-going`, `harness.run(...,
    keep_going=True)`), run_config's `failed`: each run's tag and its error in one line, said as it
    fails, as the CLI says the error (a plug-in's frames left out: the run alone shows them); the
    harness's own fault (no such line) still ends the command with its traceback."""

    say: Callable[[str], None]
    lines: dict[str, str] = dataclasses.field(default_factory=dict)  # tag -> its error's line

    def __call__(self, run: RunSpec, error: Exception) -> None:
        said = said_error(error)
        if said is None:
            raise error
        self.lines[run.tag] = said.line
        self.say(f"{run.tag}: {said.line}")

    def summary(self, listing: str, again: str, alone: str) -> str:
        """The last word: which runs failed, what `listing` holds, and that `again` redoes them
        alone (a failed run leaves no file, so it is never taken for finished)."""
        return (f"{counted(len(self.lines), 'run')} failed, said above ({', '.join(self.lines)}); {listing}; "
                f"{again} again redoes the failed runs alone, and `{alone}` shows a plug-in's traceback")


def from_recorded_runs(config: str, output: Path | None) -> str:
    """What `--report` says where the config's inputs are missing (runs/ handed on with its config
    alone): it checks each run against them, so it cannot rebuild the board, but the runs' JSONs
    record what `harness compare` needs to, from the output folder alone: per set of runs scored
    alike, their qrels file (copied or written into OUTPUT/qrels/), measures, depth and separator."""
    if output is None:
        try:
            path = config_file(config)
            document = read_yaml(path)
            given = document.get("output", DEFAULT_OUTPUT) if isinstance(document, dict) else None
            if not isinstance(given, str):
                return ""
            output = Node(path, "output", given).path()  # its {data}, {qrels}, {cache} filled, as a run reads it
        except InputError:  # a ConfigError too: a bad placeholder
            return ""
    sections: dict[tuple, list[str]] = {}
    for path in sorted(output.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            scored, run = record["scores"]["for"], output / record["run"]
            key = (record["scores"]["qrels_file"], tuple(scored["measures"]), scored["depth"],
                   scored["passage_separator"])
        except (OSError, ValueError, KeyError, TypeError):  # not a run's JSON, or one not scored
            continue
        if key[0] is not None and run.is_file():
            here = output / "qrels" / Path(key[0]).name  # the copy in the folder handed on, not where it was made
            key = (str(here), *key[1:]) if here.is_file() else key
            sections.setdefault(key, []).append(str(run))
    if not sections:
        return ""
    lines = [command("harness", "compare", "--qrels", qrels, *runs, "--measures", *measures, "--depth", depth,
                     *(["--passage-separator", separator] if separator else []))
             for (qrels, measures, depth, separator), runs in sections.items()]
    return ("\n--report checks each run against the config's inputs, so it needs them; without them, the runs' "
            f"JSONs in {output} say how to score them from {output} alone, a leaderboard section a line "
            "(--baseline RUN: the board's first run; --format html --output FILE: a report):\n" + "\n".join(lines))


def destination(output: Path) -> str:
    """Where the runs go, as a dry run says first: a relative `output` is read from the folder
    harness runs in, not the config's, so from another folder the runs listed 'to run' may be
    finished ones elsewhere. A folder this user cannot write (a colleague's runs, shared read-only)
    is said, not tried: a dry run only reads."""
    notes = [] if output.is_absolute() else [f"output: {output}, relative to the folder harness runs in"]
    if problem := not_writable(output, folder=True):
        notes.append(f"{problem}: a run would stop, a dry run only reads")
    return f"runs go to {os.path.abspath(output)}" + (f" ({'; '.join(notes)})" if notes else "")


@functools.cache
def _left_to_the_system_at_exit() -> None:
    """At exit the process's objects are frozen, not collected one by one: Python's last full
    collection walked torch's, transformers' and the JVM wrappers' objects for 2-4 s after the
    report was written. Files are closed and flushed by then (atomic writes, `with` blocks)."""
    atexit.register(gc.freeze)
