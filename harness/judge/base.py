"""The judge protocol, the registry of judges, and qrels written with their provenance.

Provenance rule: a qrels file a judge writes gets a sidecar `QRELS.provenance.json` (judge,
model, endpoint, the endpoints that answered and when, prompt sha256, scale, date, counts, and
the qrels file's own sha256); a score or report that uses those labels quotes it
(`describe_provenance`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from harness.atomic import atomic_write
from harness.errors import HarnessError, InputError, counted
from harness.judge.model import STATUSES, Item, Judgment
from harness.judge.scales import Scale
from harness.paths import file_sha256
from harness.queries.llm import NO_TEXT
from harness.registry import Param, Registry

SIDECAR_SUFFIX = ".provenance.json"
UNRECORDED = "not recorded"  # answered_by's key for answers cached before cache lines named their endpoint


class Judge(Protocol):
    name: str
    scale: Scale

    def judge(self, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
        """One judgment per item, in the items' order."""
        ...

    def provenance(self) -> dict:
        """judge, model, prompt sha256, endpoint, scale, date and the counts of the last judge()."""
        ...


# name -> factory(**options) -> Judge; higher rooms register theirs too (harness/_assembly.py)
JUDGES: Registry[Callable[..., Judge]] = Registry("judge", ("harness.judge.file", "harness.judge.llm"),
                                                  group="harness.judges")
SCALE = Param("scale", Scale, desc="the label scale answers are read on (harness.judge.scales)")
CACHE_DIR = Param("cache_dir", Path | None, None, "answer cache folder (default: the harness cache's judge/)")


def check_judge(judge: object, spec: str) -> None:
    """A plug-in lacking a member of the `Judge` protocol is refused when it is made, in one
    line, not with a traceback halfway through judging."""
    members = {"name": isinstance(getattr(judge, "name", None), str),
               "scale": isinstance(getattr(judge, "scale", None), Scale),
               "judge(items, progress)": callable(getattr(judge, "judge", None)),
               "provenance()": callable(getattr(judge, "provenance", None))}
    lacking = [member for member, present in members.items() if not present]
    if lacking:
        raise HarnessError(f"judge {spec!r} ({type(judge).__name__}) has no {', '.join(lacking)}: a judge needs "
                           "name (a str), scale (a harness.judge.scales.Scale), judge(items, progress) and "
                           "provenance() (README: Your own system)")


def checked(judge: Judge, judgments: Sequence[Judgment]) -> list[Judgment]:
    """The judgments, each labelled one on the judge's scale (else an error, before anything
    is written)."""
    for judgment in judgments:
        if judgment.status == "ok":
            judge.scale.check(judgment.label, f"judge {judge.name!r}")
    return list(judgments)


def quoting(provenance: dict, example: str | None) -> dict:
    """A judge's provenance with an answer off its scale quoted (check_parsed's), where there was one."""
    return provenance if example is None else {**provenance, "unparseable_example": example}


def failed_why(provenances: Iterable[dict]) -> str:
    """Why pairs failed, for the warnings that count them, only the causes there were: no answer
    after the retries (timeouts, 429s, 5xx answers, while pairs failed that a refusal or no text
    does not account for), refused by the endpoint (a passage past the model's window), the first
    refusal quoted, or answered with no text (a reasoning model out of tokens or only thinking, a
    content filter, neither retried), by finish_reason."""
    records = list(provenances)
    refused = sum(record.get("refused_requests", 0) for record in records)
    empty: dict[str, int] = {}  # `no text (finish_reason length)` -> requests
    retried = -refused  # failed requests of the retried causes (a refusal is counted under its HTTP status too)
    for record in records:
        for cause, n in (record.get("failed_requests") or {}).items():
            if cause.startswith(NO_TEXT):
                empty[cause] = empty.get(cause, 0) + n
            else:
                retried += n
    failed = sum(record.get("counts", {}).get("failed", 0) for record in records)
    why = []
    if retried > 0 and failed > refused + sum(empty.values()) or not (refused or empty):
        why.append("got no answer after the retries")
    if refused:
        example = next(record["refused_example"] for record in records if record.get("refused_requests"))
        why.append(f"got a refusal from the endpoint ({counted(refused, 'request')} refused, e.g. {example!r})")
    why += [f"got a reply with {cause} on {counted(n, 'request')}" for cause, n in empty.items()]
    return " or ".join(why)


def check_parsed(judgments: Sequence[Judgment], scale: Scale, hint: str) -> str | None:
    """An error, quoting an answer, when the judge's answers hold no label and some are off the
    scale (a prompt, scale or model that does not fit: every label would be missing); else
    the first answer off the scale, shortened, for the notes and the sidecar (None if none)."""
    raw = next((judgment.raw for judgment in judgments if judgment.status == "unparseable"), None)
    if raw is None:
        return None
    example = " ".join(raw.split())
    example = example if len(example) <= 80 else example[:77] + "..."
    if not any(judgment.status == "ok" for judgment in judgments):
        raise HarnessError(f"no answer of the judge is a label of {scale.span()}: e.g. {example!r} "
                           f"({sum(j.status == 'unparseable' for j in judgments)} such answers); {hint}")
    return example


def counts(judgments: Iterable[Judgment]) -> dict[str, int]:
    """Pairs by status, and how many were answered from the cache."""
    found = {"pairs": 0, **{status: 0 for status in STATUSES}, "cached": 0}
    for judgment in judgments:
        found["pairs"] += 1
        found[judgment.status] += 1
        found["cached"] += judgment.cached
    return found


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def sidecar(qrels: str | Path) -> Path:
    return Path(str(qrels) + SIDECAR_SUFFIX)


def write_qrels(path: str | Path, judgments: Iterable[Judgment], provenance: dict) -> int:
    """The labelled (status ok) (qid, docid) judgments as a qrels file, then its provenance
    sidecar, each atomically. Returns the number of qrels lines."""
    written = 0
    with atomic_write(path) as out:
        for judgment in judgments:
            if judgment.status == "ok":
                qid, docid = judgment.item_key
                out.write(f"{qid} 0 {docid} {judgment.label}\n")
                written += 1
    record = {**provenance, "qrels": str(path), "qrels_sha256": file_sha256(path), "labels_written": written}
    with atomic_write(sidecar(path)) as out:
        json.dump(record, out, indent=2, ensure_ascii=False)
        out.write("\n")
    return written


def read_provenance(qrels: str | Path, sha256_key: str = "qrels_sha256", sha256: str | None = None) -> dict | None:
    """The sidecar of a judge-made qrels file (or, with sha256_key="assignments_sha256", of a
    nugget assignment file), or None for a file without one (human labels, or labels from
    elsewhere). A sidecar written for another version of the file says so: the file's
    `sha256`, where the caller hashed it already, else hashed here."""
    path = sidecar(qrels)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise InputError(path, f"unreadable provenance sidecar ({error})") from None
    if not isinstance(record, dict):
        raise InputError(path, "a provenance sidecar must be a JSON object")
    record["matches_file"] = record.get(sha256_key) == (sha256 or file_sha256(qrels))
    return record


def first_maker(record: dict) -> dict:
    """The judge that made labels (or nugget assignments) `record`, a provenance sidecar, is of:
    for labels a `file` judge recorded from a file (`harness judge --judge file`, `responses eval
    --judge file:X --assignments-out Y`), the one its `source_provenance` names, followed down to
    the first maker; `record` itself otherwise. Its `matches_file` is False when any file on the
    way changed since its sidecar was written."""
    maker, matches = record, record.get("matches_file")
    while maker.get("judge") == "file" and isinstance(maker.get("source_provenance"), dict):
        maker = maker["source_provenance"]
        if maker.get("matches_file") is False:
            matches = False
    return maker if matches is None or maker.get("matches_file") == matches else {**maker, "matches_file": matches}


def provenance_line(record: dict) -> str:
    """A judge's provenance record in one line (judge, model, who answered, prompt sha256, ...):
    the endpoints that gave the answers (`answered_by`) and when (`answered_between`), not the
    endpoint and time of the last invocation, which may have answered nothing from its cache
    (the time the file was written is said as such where the answers' is not recorded); labels
    recorded from a judge's file name that judge too (`source_provenance`)."""
    parts = [f"judge {record.get('judge')}"]
    if record.get("model"):
        parts.append(f"model {record['model']}")
    parts.append(_answered_by(record))
    for key, label in (("prompt_sha256", "prompt sha256"), ("labels", "labels from"), ("file", "recorded in"),
                       ("scale", "scale")):
        if record.get(key):
            value = record[key][:12] if key == "prompt_sha256" else record[key]
            parts.append(f"{label} {value}")
    between = record.get("answered_between")
    if isinstance(between, list) and len(between) == 2:
        parts.append(f"answered {between[0]}" + (f" to {between[1]}" if between[1] != between[0] else ""))
    elif record.get("date"):
        parts.append(f"written {record['date']}")
    line = ", ".join(part for part in parts if part)
    if record.get("matches_file") is False:
        line += " (WARNING: the file changed since its sidecar was written)"
    if isinstance(record.get("source_provenance"), dict):
        line += f"; recorded from {provenance_line(record['source_provenance'])}"
    return line


def _answered_by(record: dict) -> str:
    """`answered by E1 (n1), E2 (n2)`, from the sidecar's count of answers by endpoint (a shared
    cache's answers credited to the endpoint that gave them); `endpoint E` where none is recorded."""
    answered = record.get("answered_by")
    if not isinstance(answered, dict):
        return f"endpoint {record['endpoint']}" if record.get("endpoint") else ""
    if not answered:
        return f"endpoint {record.get('endpoint')}, which answered no pair"
    return "answered by " + ", ".join(f"{'an endpoint not recorded' if endpoint == UNRECORDED else endpoint} ({n})"
                                      for endpoint, n in answered.items())


def describe_provenance(qrels: str | Path, record: dict | None) -> str:
    """One line on who made the labels in `qrels`, for reports, from its sidecar `record`
    (read_provenance's, read once by the caller, which may use it for more)."""
    if record is None:
        return f"{Path(qrels).name}: no provenance sidecar (labels of unknown origin)"
    return f"{Path(qrels).name}: " + provenance_line(record)
