"""Human qrels with their holes filled from a judge's qrels (`harness eval/compare --fill`).

Human labels come first: a filled label is used only for a (qid, docid) the human qrels do not
judge, and only on queries they judge (a query no person judged stays out of the scores, as
it is without the fill).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError
from harness.judge.base import describe_provenance, first_maker, read_provenance
from harness.judge.scales import SCALES, SUPPORT_0_2, not_found
from harness.trec import Qrels, file_stem, read_qrels

FILLED = "each filled label is scored as the human grade of the same number"  # what a scale mismatch does here


@dataclass(frozen=True)
class Filled:
    qrels: Qrels  # human labels plus the filled holes
    added: int  # labels taken from the fill
    overlapping: int  # pairs both judge: the human label kept
    other_queries: int  # fill labels on queries without human judgments: not used
    provenance: str  # one line: who made the filled labels
    scale_warning: str | None = None  # the filled labels' top grade is not the human labels'
    incomplete: str | None = None  # the judge left pairs it was asked to judge without a label
    misfit: str | None = None  # the fill cannot be the holes of these human labels (swapped, another year's)

    def notes(self, fill_path: str | Path) -> list[str]:
        return [f"holes filled from {fill_path}: {self.added} labels added, {self.overlapping} pairs already "
                f"judged by people (their label kept), {self.other_queries} on queries people did not judge "
                "(not used)", f"filled labels: {self.provenance}"] + ([f"WARNING: {self.incomplete}"]
                                                                     if self.incomplete else [])


def fill(human: Qrels, fill_path: str | Path) -> Filled:
    """An empty fill file (a judge found no holes) fills nothing."""
    try:
        extra = read_qrels(fill_path).judgments
    except InputError as error:
        if not error.problem.startswith("empty qrels"):
            raise
        extra = {}
    judgments = {qid: dict(docs) for qid, docs in human.judgments.items()}
    added = overlapping = other = 0
    for qid, docs in extra.items():
        target = judgments.get(qid)
        if target is None:
            other += len(docs)
            continue
        for docid, grade in docs.items():
            if docid in target:
                overlapping += 1
            else:
                target[docid] = grade
                added += 1
    name = f"{human.name}+{file_stem(fill_path)}"
    record = read_provenance(fill_path)
    return Filled(Qrels(name, judgments), added, overlapping, other, describe_provenance(fill_path, record),
                  scale_warning(human, fill_path, record, FILLED), incomplete(fill_path, record),
                  _misfit(human, fill_path, record, added + overlapping, other))


def _misfit(human: Qrels, fill_path: str | Path, record: dict | None, shared: int, elsewhere: int) -> str | None:
    """A warning when the fill cannot be what fills these human labels' holes, which the scores
    would not show (they are other numbers, not zeros): --qrels made by `harness judge` (its
    sidecar) and a --fill without a sidecar, the two files swapped; or a fill judging none of
    the queries --qrels judges (another year's qrels), which adds nothing (an empty fill, a
    judge that found no holes, is none of these)."""
    if human.path is not None and record is None and read_provenance(human.path) is not None:
        return (f"--qrels {human.path} was made by `harness judge` (it has a provenance sidecar) and --fill "
                f"{fill_path} has none: did you swap --qrels and --fill? (the people's labels go to --qrels)")
    if not shared and elsewhere:
        return (f"--fill {fill_path} judges none of the {len(human.judgments)} queries --qrels "
                f"{human.path or human.name} judges: 0 labels added; is it the qrels of the same benchmark and year?")
    return None


def incomplete(path: str | Path, record: dict | None, consequence: str = "") -> str | None:
    """Pairs the judge was asked for and could not label (no answer after the retries, an answer
    off the scale, no recorded label), as the sidecar of its qrels `path` counts them: filled,
    their holes stay holes, and a board called filled must say so (a script that ignores `harness
    judge`'s exit status would not); compared (`qrels agree`), they drop out of the agreement, and
    `consequence` says so. None for a complete file, one without a sidecar, or one whose sidecar
    is of another version of the file (its counts are not this file's: the provenance line warns of it)."""
    tally = record.get("counts") if record and record["matches_file"] else None
    if not isinstance(tally, dict):
        return None
    unlabelled = {status: n for status in ("failed", "unparseable", "missing")
                  if isinstance(n := tally.get(status), int) and n > 0}
    if not unlabelled:
        return None
    cures = ["rerun `harness judge` to finish it"] if "failed" in unlabelled else []  # no answer: asked again
    if "unparseable" in unlabelled and record.get("judge") == "file":  # a recorded label off the scale
        cures.append("an unparseable label is the --labels file's: check it and --scale")
    elif "unparseable" in unlabelled:  # its answer is cached: asking again gives it again
        cures.append("an unparseable answer is cached: check the judge's --prompt and --scale")
    return (f"{Path(path).name}: {sum(unlabelled.values())} of the {tally.get('pairs', '?')} pairs it was asked "
            f"to judge got no label (its sidecar: {', '.join(f'{n} {status}' for status, n in unlabelled.items())})"
            + consequence + (f": {'; '.join(cures)}" if cures else ""))


def scale_warning(reference: Qrels, path: str | Path, record: dict | None, use: str) -> str | None:
    """A warning when the top grade of the scale the sidecar of qrels `path` records is not the
    top grade of `reference` (the human labels): a label is read as the reference's grade of the
    same number (`use` says where: filled and scored, compared), so a model's 'yes' (1) would count
    as iKAT's 'related' (1), below every rel=2 measure. The top grades alone are compared: qrels
    listing only relevant documents (OpenDialKG's all 1, PragmatiCQA's 1 and 2) have no 0 for a
    scale's 0 to match. None when they agree, or the file has no sidecar, one written for another
    version of the file (its scale is not this file's: the provenance line warns of it). A scale
    not found here (a plug-in's, its package not installed) is said to be, as the grades are not
    checked: a warning too."""
    name = record.get("scale") if record and record["matches_file"] else None
    grades = {grade for docs in reference.judgments.values() for grade in docs.values()}
    if name is None or not grades:
        return None
    why = not_found(name)
    if why is not None:
        return (f"{path}: its provenance sidecar puts its labels on the scale {name!r}, {why}; whether it fits "
                f"the top grade {max(grades)} of {reference.path or reference.name} is not checked")
    scale, top = SCALES.get(name), max(grades)
    if max(scale.labels) == top:
        return None
    # support-0-2 grades how far a text backs a statement (nuggets, citations), not relevance
    fitting = [other for other in SCALES.names()
               if other in SCALES and SCALES.get(other) is not SUPPORT_0_2 and max(SCALES.get(other).labels) == top]
    scales = f"--scale {' or '.join(fitting)}" if fitting else f"a --scale whose top grade is {top}"
    maker = first_maker(record)  # the file judge keeps the scale of labels a judge made: ask that one
    if isinstance(maker.get("plugin"), dict):  # a plug-in judge names its own scale: --scale is not its to take
        named = maker["plugin"].get("spec") or maker["plugin"].get("class")  # a judge object has no spec (plugin_of)
        cure = (f"they are the labels of the plug-in judge {named}, on the scale it names "
                "itself: judge with one on " + (f"the scale {' or '.join(fitting)}" if fitting else
                                                f"a scale whose top grade is {top}"))
    elif maker is record:
        cure = f"judge with {scales}"
    else:
        cure = (f"the file judge keeps the scale of the labels it recorded: rerun the judge that made them (judge "
                f"{maker.get('judge')}" + (f", model {maker['model']}" if maker.get("model") else "")
                + f") with {scales}")
    return (f"{path}: its provenance sidecar puts its labels on the scale {scale.span()}, but the top grade "
            f"of {reference.path or reference.name} is {top}: {use}, mixing the two scales; {cure}")
