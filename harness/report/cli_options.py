"""The options every leaderboard command shares (`harness compare`, `harness responses eval`):
which runs are baselines and how the paired tests run. The hosted board reads the same
settings from its config."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.cli import number_in
from harness.errors import HarnessError
from harness.report.compare import check_baselines
from harness.report.stats import CORRECTIONS, DEFAULT_RESAMPLES, DEFAULT_SEED, SEED_MAX, TESTS
from harness.trec import file_stem


def add_paired_tests(parser: argparse.ArgumentParser) -> None:
    """--baseline and the paired tests' settings, one definition for both commands."""
    parser.add_argument("--baseline", nargs="+", metavar="RUN",
                        help="run(s) every other run is tested against (name or path; default: the first run)")
    parser.add_argument("--test", choices=TESTS.names(), default="paired-t", help="paired test (default paired-t)")
    parser.add_argument("--correction", choices=CORRECTIONS.names(), default="holm",
                        help="multiple-testing correction over all runs x baselines x measures (default holm)")
    parser.add_argument("--alpha", type=number_in(0, 1, open_low=True), default=0.05,
                        help="significance level, above 0 to 1 (default 0.05)")
    parser.add_argument("--resamples", type=number_in(1, math.inf, whole=True), default=DEFAULT_RESAMPLES,
                        help=f"resamples of the permutation / bootstrap tests (default {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=number_in(0, SEED_MAX, whole=True), default=DEFAULT_SEED,
                        help=f"random seed of the resampling (default {DEFAULT_SEED})")


def baselines(args: argparse.Namespace, files: Mapping[str, Sequence[str]]) -> list[str]:
    """The --baseline runs by name. `files` maps each run file given to the runs it holds: a
    baseline is a run's name, or such a file's path (the run it holds: a file of several runs
    must be named by run), or another run file's path (named by its file stem); anything else as
    written, so that the error (one matching no run, naming the nearest) quotes what was typed."""
    names = [name for held in files.values() for name in held]
    held_by = {Path(path).resolve(): held for path, held in files.items()}
    chosen = []
    for given in args.baseline or []:
        held = held_by.get(Path(given).resolve(), []) if given not in names else [given]
        if len(held) > 1:
            raise HarnessError(f"--baseline {given}: that file holds {len(held)} runs ({', '.join(held)}): name one")
        chosen.append(held[0] if held else file_stem(given) if file_stem(given) in names else given)
    check_baselines(chosen, names)  # before any judging or scoring
    return chosen
