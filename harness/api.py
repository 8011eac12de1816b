"""The notebook API: the CLI's numbers as pandas DataFrames.

    import harness
    per_query, aggregate = harness.evaluate("runs/x.run", "qrels/cast/2019qrels.txt", ["nDCG@3", "AP"])
    board = harness.compare(["a.run", "b.run"], "qrels.txt", ["nDCG@3"])   # one row per run x measure
    by_depth = harness.breakdown(per_query, "turn depth", topics="cast2021")  # compare's breakdown tables
    per_query, aggregate = harness.run("configs/quick.yaml")
    per_query, aggregate = harness.run(config_dict, retrievers={"mine": my_search}, leaderboard=True)

Runs are TREC run files, `harness.trec.Run`s or DataFrames with `qid`, `docno` (or `doc_id`)
and `score` columns (a PyTerrier result frame); qrels are a qrels file, a `Qrels` or a
DataFrame with `qid`, `docno`/`doc_id` and `label`/`relevance`. Scoring goes through the same
code as `harness eval` / `compare` / `run`: trec_eval's conventions, the same values.
`harness.evaluate` is this module's `evaluate`, not the package harness/evaluate (import from
that with `from harness.evaluate import ...`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.evaluate import score_runs
from harness.evaluate.frames import Frames, QrelsLike, RunLike, as_qrels, as_run, frames

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Frames", "as_qrels", "as_run", "breakdown", "compare", "evaluate", "frames", "run", "strategy"]


def evaluate(runs: RunLike | Sequence[RunLike] | dict[str, RunLike], qrels: QrelsLike,
             measures: str | Sequence[str] | None = None, *, preset: str | None = None, depth: int | None = None,
             passage_separator: str | None = None) -> Frames:
    """`harness eval`'s numbers as DataFrames: `(per_query, aggregate)`, one row per run and
    judged query, and one per run (the `all` line).

    runs: one run or several (a list, or {name: run}); each a TREC run file, a `Run` or a
    DataFrame (`qid`, `docno`, `score`). qrels: a file, a `Qrels` or a DataFrame (`qid`,
    `docno`, `label`). measures: one name (`"nDCG@3"`) or several, in ir-measures syntax;
    default: the preset's, else `harness eval`'s. depth: keep each query's top N (trec_eval
    -M). passage_separator: judge `<docid><sep><n>` passages as their documents (MaxP).
    """
    return frames(score_runs(runs, qrels, measures, preset=preset, depth=depth, passage_separator=passage_separator))


def compare(runs: Sequence[RunLike] | dict[str, RunLike], qrels: QrelsLike, measures: str | Sequence[str] | None = None,
            *, baseline: str | Sequence[str] | None = None, preset: str | None = None, depth: int | None = None,
            passage_separator: str | None = None, test: str = "paired-t", correction: str = "holm",
            alpha: float = 0.05, resamples: int | None = None, seed: int | None = None) -> "pd.DataFrame":
    """`harness compare`'s leaderboard: per run and measure the mean and its interval, and
    against each baseline (default: the first run) the difference, corrected p-value and
    whether it is significant."""
    import pandas as pd

    from harness.report.compare import leaderboard
    from harness.registry import number_problem
    from harness.report.stats import Resampling

    baselines = [baseline] if isinstance(baseline, str) else baseline if baseline is not None else []
    if not isinstance(baselines, (list, tuple)) or not all(isinstance(name, str) for name in baselines):
        raise HarnessError(f"baseline: expected a run's name or a list of names, not {type(baseline).__name__}")
    # as `harness compare`'s argparse types (number_in) check them on the command line
    if problem := number_problem(alpha, 0, 1, open_low=True):
        raise HarnessError(f"alpha {problem}, not {alpha!r}")
    resampling = Resampling.of(resamples, seed)
    scored = score_runs(runs, qrels, measures, preset=preset, depth=depth, passage_separator=passage_separator)
    board = leaderboard(scored, list(baselines), test=test, correction=correction, alpha=alpha, resampling=resampling)
    board.warn()  # as `harness compare` warns on stderr: one query, too few resamples
    return pd.DataFrame(board.rows())


def breakdown(per_query: "pd.DataFrame", by: str = "turn depth", *, topics: str | None = None) -> "pd.DataFrame":
    """`harness compare`'s breakdown tables from a per-query frame (`harness.evaluate`'s or
    `harness.run`'s): one row per measure and group, its number of queries and each run's mean
    over them, the values `harness compare` prints "by turn depth" and "by conversation".

    by: "turn depth" (a turn's position in its conversation) or "conversation". topics: the
    benchmark the runs answer (`NAME[:SPLIT]`), whose turns give both, as `harness compare
    --topics` does (CAsT 2022's tree ids need it); without it both are read from the qids
    (`106_3` is turn 3 of conversation 106). A run's mean over a "conversation" table's rows is
    `harness compare`'s mean over conversations."""
    import warnings

    import pandas as pd

    from harness.errors import ARGUMENTS
    from harness.report import breakdown as bd
    from harness.report.compare import Scores
    from harness.report.markdown import unassigned_note

    if by not in (bd.DEPTH, bd.CONVERSATION):
        raise HarnessError(f"by: expected {bd.DEPTH!r} or {bd.CONVERSATION!r}, not {by!r}")
    columns = list(getattr(per_query, "columns", []))
    if not {"run", "qid"} <= set(columns):
        raise HarnessError("per_query: expected the per-query DataFrame of harness.evaluate or harness.run "
                           f"(run, qid and a column a measure), not {type(per_query).__name__}")
    measures = columns[columns.index("qid") + 1:]
    _check_per_query(per_query, measures)
    runs, qids = list(dict.fromkeys(per_query["run"])), list(dict.fromkeys(per_query["qid"]))
    table = per_query.pivot(index="qid", columns="run", values=measures).reindex(qids)
    if table.isna().to_numpy().any():
        raise HarnessError("per_query: its runs are scored on different queries or measures (runs of several "
                           "benchmarks?): break down one benchmark's runs at a time")
    scores = Scores(runs, measures, qids, {m: {run: table[m][run].to_numpy(float) for run in runs} for m in measures})
    benchmark = None
    if topics is not None:
        from harness.topics import load

        benchmark = load(topics)
    groups = bd.turn_groups(by, qids, benchmark, ARGUMENTS)
    rows = []
    for measure in measures:
        means = bd.breakdown(scores, measure, groups, by)
        rows += [{"measure": measure, by: group, "queries": means.counts[group],
                  **{run: means.means[run][group] for run in runs}} for group in means.groups]
    if means.unassigned:  # as `harness compare` notes it under the table
        warnings.warn(unassigned_note(means), stacklevel=2)
    return pd.DataFrame(rows)


def _check_per_query(per_query: "pd.DataFrame", measures: list[str]) -> None:
    """Refuse, in one line, the frames `breakdown` cannot pivot into one value per run, query and
    measure: pandas' own errors there (a missing mean, a string to float, a duplicate index)
    do not say which column or row is wrong."""
    import pandas as pd

    if not measures:
        raise HarnessError("per_query: no measure column after qid: expected harness.evaluate's or harness.run's "
                           "per-query frame, its measures after run and qid")
    for measure in measures:
        values = per_query[measure]
        bad = values[pd.to_numeric(values, errors="coerce").isna() & values.notna()]
        if len(bad):
            raise HarnessError(f"per_query: column {measure!r} after qid holds {bad.iloc[0]!r}, not a measure's "
                               "value: expected only measures after qid")
    repeated = per_query[per_query.duplicated(["run", "qid"])]
    if len(repeated):
        run, qid = repeated.iloc[0][["run", "qid"]]
        raise HarnessError(f"per_query: run {run!r} has qid {qid!r} on more than one row (one run scored twice, "
                           "concatenated?): expected one row per run and qid")


def run(config: str | Path | Mapping[str, Any], *, retrievers: Mapping[str, Any] | None = None,
        strategies: Mapping[str, Any] | None = None, only: Iterable[str] = (), force: bool = False,
        output: str | Path | None = None, quiet: bool = False, leaderboard: bool = False,
        report: bool = False, keep_going: bool = False) -> Frames:
    """Run (or reuse the finished runs of) a benchmark config as `harness run` does; the
    frames carry experiment, tag, strategy and retriever columns in front.

    `config` is a YAML file or the same document as a dict. `retrievers` and `strategies`
    name objects the config may use by those names, for this call only (nothing global
    changes): a search function `f(query, k) -> [(docid, score), ...]`, a class or object
    with `search(queries, k)`, a PyTerrier transformer; a strategy `f(conversation,
    turn_index, arg=None) -> str`. Their source is hashed into the resume key, so a changed
    function is run again. `leaderboard` / `report` write OUTPUT/leaderboard.md and
    OUTPUT/report.html as `harness run [--report]` does (over every finished run of the config).
    Runs that are not scored (topics without qrels, `measures: []`) are written, not in the frames.
    The command's notes (warnings, a run ranked again or left out, ...) are warnings, and
    `aggregate.attrs["notes"]`; `quiet` leaves out the progress on stderr only.
    `keep_going`, as `harness run --keep-going`: a run that fails (a plug-in raising, an input
    missing) does not end the call; the others are made and returned, and each failed run is a
    warning (its tag and error in one line), then one saying how many failed; `aggregate.attrs["failed"]`
    holds {tag: that line} ({} when none failed). The same call again redoes the failed runs alone;
    `only=[tag]` without it raises a failed run's error, traceback and all."""
    import dataclasses
    import io
    import warnings
    from contextlib import ExitStack

    from harness.queries import STRATEGIES
    from harness.retrieve import RETRIEVERS
    from harness.runner.config import load_config, parse_config
    from harness.runner.cli import Failures
    from harness.runner.provenance import canonical_hash
    from harness.runner.runner import run_config

    if not isinstance(config, (str, Path, Mapping)):
        raise HarnessError(f"config: expected a YAML file's path or the same document as a dict, "
                           f"not {type(config).__name__}")
    for name, objects in (("retrievers", retrievers), ("strategies", strategies)):
        if objects is not None and not isinstance(objects, Mapping):
            raise HarnessError(f"{name}: expected {{name: object}}, the names a config uses for them; "
                               f"got {type(objects).__name__}")
    with ExitStack() as stack:
        stack.enter_context(RETRIEVERS.using(retrievers or {}))
        stack.enter_context(STRATEGIES.using(strategies or {}))
        if isinstance(config, Mapping):
            document = dict(config)
            loaded = dataclasses.replace(parse_config(Path("<config>"), document),
                                         content_sha256=canonical_hash(document))  # what tells two dicts apart
        else:
            loaded = load_config(config)
        if output is not None:
            loaded = dataclasses.replace(loaded, output=Path(output))
        log = io.StringIO() if quiet else None
        said: list[str] = []
        failures = Failures(said.append)
        try:
            outcomes = run_config(loaded, only=only, force=force, log=log, with_finished=leaderboard or report,
                                  say=said.append, failed=failures if keep_going else None)
        except BaseException as error:  # its notes ride on the error, which a warning (-W error) would hide
            for note in said:
                error.add_note(note)
            raise
        if failures.lines:  # the call that shows the traceback: without its objects, their names are unknown
            given = [f"{name}=..., " for name, passed in (("retrievers", bool(retrievers)),
                                                          ("strategies", bool(strategies)),
                                                          ("output", output is not None)) if passed]
            said.append(failures.summary(
                "the frames hold the finished ones" if outcomes else "no run is finished: the frames are empty",
                "the call without force=True" if force else "the same call",
                f"harness.run(config, {''.join(given)}only=[{next(iter(failures.lines))!r}])"))
        from harness.runner.report import depth_warnings

        deep = depth_warnings(outcomes)  # as harness run says it, on the board and in the report too
        said += [f"warning: {line}" for line in deep.values()]
        notes = [note.removeprefix("warning: ") for note in said]  # the command's prefix: a warning says it
        for note in notes:
            warnings.warn(note, stacklevel=2)
        if leaderboard:
            from harness.runner.leaderboard import write

            write(outcomes, loaded.output, title=f"Leaderboard: {loaded.path}", deep=deep)
        if report:
            from harness.runner.report import write_html

            write_html(outcomes, loaded.output / "report.html", title=f"Report: {loaded.path}", deep=deep)
    outcomes = [o for o in outcomes if o.evaluation is not None]
    labels = {
        "experiment": [o.run.experiment.name for o in outcomes],
        "strategy": [o.run.strategy for o in outcomes],
        "retriever": [o.run.retriever.label for o in outcomes],
    }
    per_query, aggregate = frames((o.evaluation for o in outcomes), **labels)
    aggregate.attrs["notes"] = notes
    aggregate.attrs["failed"] = dict(failures.lines)
    return Frames(per_query, aggregate)


def strategy(name: str, benchmark: str) -> Any:
    """A query strategy (`hqe`, `rewrites:FILE`, `llm`, a plug-in's name...) as a PyTerrier
    transformer over the turns of `benchmark` (`NAME[:SPLIT]`), for pt.Experiment pipelines:
    `harness.strategy("hqe", "ikat2023:test") >> bm25`."""
    from harness.queries.pyterrier import transformer

    return transformer(name, benchmark)
