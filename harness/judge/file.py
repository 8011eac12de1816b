"""`file`: labels recorded earlier (a qrels file, e.g. the iKAT organisers' GPT-4 judgments of
the 2024 pool), answered by (qid, docid), so published labels are used and compared exactly.
Labels a judge made keep the scale their sidecar records: filed again under another, a 'yes'
(1) would pass for iKAT's 1, and the scale warnings downstream (eval --fill) would never fire."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.judge.base import JUDGES, SCALE, counts, now, read_provenance
from harness.judge.model import Item, Judgment
from harness.judge.scales import SCALES, Scale, not_found
from harness.paths import file_sha256
from harness.registry import Param
from harness.errors import InputError
from harness.trec import qrels_lines, read_qrels


class FileJudge:
    name = "file"

    def __init__(self, path: str | Path, scale: Scale) -> None:
        self.path = Path(path)
        self.scale = scale
        self.labels = read_qrels(self.path).judgments
        self.source = read_provenance(self.path)
        recorded = recorded_scale(self.path, self.source)
        if recorded is not None and recorded != scale.name:
            # worded for the Python API (or a config) and the command line alike: each builds this judge
            raise InputError(self.path, f"its provenance sidecar records its labels on the scale "
                                        f"{SCALES.get(recorded).span()}, not {scale.span()}: give the scale "
                                        f"{recorded}, the one they were made on (the file judge's `scale`; on the "
                                        f"command line --scale {recorded}, or no --scale)")
        self._check_scale()
        self._counts: dict[str, int] = {}

    def _check_scale(self) -> None:
        """The recorded labels are the user's input, not a model's answers: one off the scale
        (labels of another scale, or the wrong file) is an error naming its line, not a pair
        counted "unparseable" and left out of the output."""
        grades = {grade for judged in self.labels.values() for grade in judged.values()}
        if grades <= set(self.scale.labels):
            return
        for number, fields in qrels_lines(self.path):
            if int(fields[3]) not in self.scale.labels:
                raise InputError(self.path, f"grade {fields[3]} is outside {self.scale.span()}: give the scale "
                                            "the labels were recorded on (the file judge's `scale`, --scale on the "
                                            "command line)", line=number)

    def judge(self, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
        """Every label is on the scale (checked when the file was read); a pair the file does
        not hold is "missing"."""
        judgments = []
        for item in items:
            qid, docid = item.key[:2]
            label = self.labels.get(qid, {}).get(docid)
            if label is None:
                judgments.append(Judgment(item.key, None, "missing", "", cached=False))
            else:
                judgments.append(Judgment(item.key, label, "ok", str(label), cached=False))
        self._counts = counts(judgments)
        return judgments

    def provenance(self) -> dict:
        record = {"judge": self.name, "labels": str(self.path), "labels_sha256": file_sha256(self.path),
                  "scale": self.scale.name, "date": now(), "counts": dict(self._counts)}
        if self.source is not None:  # labels a judge made earlier: keep who made them
            record["source_provenance"] = self.source
        return record


def recorded_scale(path: str | Path, source: dict | None) -> str | None:
    """The scale labels file `path`'s provenance sidecar (read_provenance's `source`) records;
    None without a sidecar, one recording no scale, or one written for another version of the
    file (its scale is not this file's: the provenance line warns of it). A scale not found
    here (a plug-in's, its package not installed) is an error naming it: the labels' scale is
    known, and filing them on another would take a 'yes' (1) for iKAT's 1."""
    name = source.get("scale") if source and source["matches_file"] else None
    if name is None:
        return None
    why = not_found(name)
    if why is not None:
        raise InputError(path, f"its provenance sidecar records its labels on the scale {name!r}, {why}")
    return name


JUDGES.add("file", FileJudge, "labels recorded earlier (a qrels file), answered by (qid, docid); "
           "in harness responses, file:PATH is the assignments judge", [
    Param("path", Path | str, desc="the qrels file of recorded labels"), SCALE])
