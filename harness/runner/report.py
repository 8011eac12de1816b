"""The report of a `harness run`: per family of comparable runs (families()), its runs
tested against the family's first run (paired t-test, Holm-corrected over runs x measures),
Judged@10 beside the measures, and the scores by turn depth; written as one self-contained
HTML file. The Markdown leaderboard (runner/leaderboard.py) has the same families and
baselines, so the two never disagree on a mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from harness.atomic import atomic_write
from harness.errors import CONFIG
from harness.evaluate import JUDGED, ceiling_notes
from harness.evaluate.depths import hits_asked, unequal_depths
from harness.report import breakdown as bd
from harness.report.compare import Leaderboard, leaderboard
from harness.report.model import Report
from harness.runner import provenance

if TYPE_CHECKING:
    from harness.runner.runner import Outcome


class Family(NamedTuple):
    """What the runs of a family share (families())."""

    topics: str
    task: str
    judgments: str  # the qrels' hash (provenance.qrels_hash)
    measures: tuple[str, ...]
    passage_separator: str | None
    depth: int | None


def families(outcomes: Sequence["Outcome"]) -> list[list["Outcome"]]:
    """The runs that can be tested against each other: the same topics and task, scored on the
    same judgments (by content, not file name) with the same measures to the same depth, the
    same way (passages judged as their documents, MaxP, or not), whichever experiments they
    come from (the paired tests need the same queries and scores of the same thing).
    In config order, families on the same topics and task next to each other. A run that is
    not scored is in none (`unscored_note` names it)."""
    return [members for _, members in _keyed_families(outcomes)]


def _keyed_families(outcomes: Sequence["Outcome"]) -> list[tuple[Family, list["Outcome"]]]:
    """families(), each with what its runs share."""
    judgments: dict[int, str] = {}  # the runs of an experiment share one Qrels object
    grouped: dict[Family, list[Outcome]] = {}
    for outcome in outcomes:
        experiment, qrels = outcome.run.experiment, outcome.qrels
        if outcome.evaluation is None or qrels is None:
            continue
        if id(qrels) not in judgments:
            judgments[id(qrels)] = provenance.qrels_hash(qrels)
        key = Family(experiment.topics, experiment.task, judgments[id(qrels)], tuple(outcome.evaluation.measures),
                     experiment.passage_separator, outcome.evaluation.depth)
        grouped.setdefault(key, []).append(outcome)
    first_of_topic = {key[:2]: index for index, key in reversed(list(enumerate(grouped)))}
    return [(key, grouped[key]) for key in sorted(grouped, key=lambda key: first_of_topic[key[:2]])]


def depth_warnings(outcomes: Sequence["Outcome"]) -> dict[int, str]:
    """The depth warning (harness.evaluate.depths) over each set of families that differ by depth
    alone (their experiments' k or preset's depth): scored apart, their runs stand side by side on
    the board, and R@1000 or AP of a run cut at k: 20 is lower than one ranked 1000 deep for its
    depth; within one family too, where a retriever ranks fewer documents than k (its hint, knowing
    each run's k, says so). Keyed by the index in families() of the set's last family, under whose
    table the leaderboard and the report say it, once its runs are all shown: worked out once, by
    `harness run` and harness.run, for stderr, the leaderboard and the report."""
    sets: dict[Family, list[int]] = {}
    keyed = _keyed_families(outcomes)
    for index, (key, _) in enumerate(keyed):
        sets.setdefault(key._replace(depth=None), []).append(index)
    warnings = {}
    for indices in sets.values():
        runs = [outcome for index in indices for outcome in keyed[index][1]]
        asked = {outcome.evaluation.run_name: hits_asked(outcome.run.experiment.k, {
            "name": outcome.run.retriever.name, "params": outcome.run.retriever.params}) for outcome in runs}
        if (line := unequal_depths([outcome.evaluation for outcome in runs], CONFIG, "k", asked.get)) is not None:
            warnings[indices[-1]] = line
    return warnings


def unscored_note(outcomes: Sequence["Outcome"]) -> str | None:
    """The runs written without scores (their topics ship no qrels), in one line; None when
    every run is scored. The leaderboard and the report say it, so that a run missing from
    their tables is not taken for one that failed."""
    unscored = [outcome for outcome in outcomes if outcome.evaluation is None]
    if not unscored:
        return None
    reasons = "; ".join(dict.fromkeys(outcome.run.experiment.unscored or "" for outcome in unscored))
    return f"Not scored ({reasons}): {', '.join(outcome.run.tag for outcome in unscored)}."


def family_notes(outcomes: Sequence["Outcome"]) -> list[str]:
    """What a family's numbers do not say, above its table in the leaderboard and the report:
    its experiments' notes, then `ceiling_notes` of the qrels, measures and depth it shares."""
    notes = list(dict.fromkeys(outcome.run.experiment.note for outcome in outcomes if outcome.run.experiment.note))
    first = outcomes[0]
    return notes + ceiling_notes(first.qrels, first.evaluation.measures, first.evaluation.depth)


def tested(outcomes: Sequence["Outcome"]) -> Leaderboard:
    """The runs against the first one, Holm-corrected over the whole family."""
    return leaderboard([o.evaluation for o in outcomes], [outcomes[0].evaluation.run_name], correction="holm")


def family_name(outcomes: Sequence["Outcome"]) -> str:
    """The names of the experiments a family's runs come from."""
    return " + ".join(dict.fromkeys(outcome.run.experiment.name for outcome in outcomes))


def family_report(outcomes: Sequence["Outcome"]) -> Report:
    board = tested(outcomes)
    report = Report(board, title=family_name(outcomes))
    report.untested = {JUDGED: {o.evaluation.run_name: o.judged for o in outcomes}}
    depths = bd.depths_from_topics(outcomes[0].benchmark.conversations)
    report.breakdowns = [bd.breakdown(board.scores, m, depths, bd.DEPTH) for m in board.measures]
    return report


def write_html(outcomes: Sequence["Outcome"], path: str | Path, title: str, deep: dict[int, str]) -> Path:
    """The report; `deep`: depth_warnings(outcomes), each said after the last family of the runs it
    names, as the leaderboard says it."""
    from harness.report.html import page, sections

    body = []
    for index, members in enumerate(families(outcomes)):
        experiment = members[0].run.experiment
        report = family_report(members)
        body.append(f"<hr><h2>{escape(report.title)}: {escape(experiment.topics)}, {escape(experiment.task)}</h2>")
        for note in family_notes(members):
            body.append(f"<p class='legend'>{escape(note)}</p>")
        body += sections(report, h="h3")
        if index in deep:
            body.append(f"<p class='legend'>Warning: {escape(deep[index])}.</p>")
    if (note := unscored_note(outcomes)) is not None:
        body.append(f"<hr><p class='legend'>{escape(note)}</p>")
    with atomic_write(path, "wb") as handle:
        handle.write(page(title, body))
    return Path(path)
