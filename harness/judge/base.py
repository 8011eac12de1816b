"""The judge protocol, the registry of judges, and qrels written with their provenance.

Provenance rule: a qrels file a judge writes gets a sidecar `QRELS.provenance.json` (judge,
model, endpoint, the endpoints that answered and when, prompt sha256, scale, date, counts, a
plug-in judge's identity, and the qrels file's own sha256); a score or report that uses those
labels quotes it (`describe_provenance`).
"""

from __future__ import annotations

import datetime
import json
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from harness.atomic import atomic_write
from harness.errors import HarnessError, InputError, counted
from harness.judge.model import STATUSES, Item, Judgment
from harness.judge.scales import Scale
from harness.paths import file_sha256
from harness.queries.llm import NO_TEXT
from harness.registry import Param, Registry, installed_by, object_origin

SIDECAR_SUFFIX = ".provenance.json"
UNRECORDED = "not recorded"  # answered_by's key for answers cached before cache lines named their endpoint


class Judge(Protocol):
    name: str
    scale: Scale

    def judge(self, items: Sequence[Item], progress: bool = False) -> Iterable[Judgment]:
        """One judgment per item, naming it by its key, in any order (`answered` checks it)."""
        ...

    def provenance(self) -> dict:
        """judge, model, prompt sha256, endpoint, scale, date and the counts of the last judge()."""
        ...


# name -> factory(**options) -> Judge; higher rooms register theirs too (harness/_assembly.py)
JUDGES: Registry[Callable[..., Judge]] = Registry("judge", ("harness.judge.file", "harness.judge.llm"),
                                                  group="harness.judges")


@JUDGES.adapter
def _maker(name: str, obj: Any) -> Callable[..., Judge]:
    """A plug-in judge is what makes the judge from its parameters (a class, a function): anything
    else (a constant, a string) is a one-line error when it is looked up, not a TypeError when called."""
    if not callable(obj):
        raise HarnessError(f"judge {name!r}: got {type(obj).__name__}; expected a judge class or a function that "
                           "returns a judge (README: Your own system)")
    return obj


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
    check_scale(judge, f"judge {spec!r} ({type(judge).__name__})")


def check_scale(judge: Judge, who: str) -> None:
    """A judge's scale (a plug-in's own `Scale(...)`: SCALES checks a registered one as it is
    looked up) is refused, in one line naming the judge, where its labels and meanings are not
    well formed (Scale.problem): every label it gave was refused as off its scale, or stated
    beside another label's meaning."""
    problem = judge.scale.problem()
    if problem is not None:
        raise HarnessError(f"{who}: its scale {judge.scale.name!r} {problem}")


def judge_named(judge: Judge) -> str:
    """The judge as an error names it: its name, and where it is not the harness's own, its class
    (the plug-in's module: `judge 'mine' (class lab.judges.Mine)`)."""
    kind = _plugin_class(judge)
    return f"judge {judge.name!r}" + ("" if kind is None else f" (class {kind})")


def _plugin_class(judge: Judge) -> str | None:
    """`module.qualname` of the judge's class, None where it is the harness's own."""
    kind = type(judge)
    own = kind.__module__ == "harness" or kind.__module__.startswith("harness.")
    return None if own else f"{kind.__module__}.{kind.__qualname__}"


def answered(judge: Judge, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
    """The judge's judgments of `items`, checked, in the items' order: its answer, any iterable
    (a generator too), is read once, and each judgment must name an item it was given by its
    `item_key`, one per item, in any order, with a status of STATUSES and, with status ok alone,
    a label on the judge's scale. Anything else is an error naming the judge and the first
    offending item, before anything is written or scored: fewer judgments were silently fewer
    labels, and judgments paired by position scored a reordered answer against the wrong nuggets."""
    who = judge_named(judge)
    check_scale(judge, who)  # a judge object not made by the factory (the Python API's) is checked here
    answer = judge.judge(items, progress=progress)
    try:
        given = list(answer)
    except TypeError:
        raise HarnessError(f"{who} answered {type(answer).__name__}; expected an iterable of "
                           "harness.judge.model.Judgment, one per item") from None
    slots: dict[tuple[str, ...], list[int]] = {}  # an item's key -> its places (a plug-in bank may repeat a key)
    for index, item in enumerate(items):
        slots.setdefault(item.key, []).append(index)
    found: list[Judgment | None] = [None] * len(items)
    for judgment in given:
        if not isinstance(judgment, Judgment):
            text = repr(judgment)
            raise HarnessError(f"{who} answered {text if len(text) <= 60 else type(judgment).__name__} among its "
                               "judgments; expected a harness.judge.model.Judgment per item")
        key = judgment.item_key
        try:
            free = slots.get(key)
        except TypeError:  # an unhashable key (a list) names no item
            free = None
        if free is None:
            raise HarnessError(f"{who} answered a judgment for item_key {key!r}, which names no item it was given")
        if not free:
            raise HarnessError(f"{who} answered item {key!r} twice; expected one judgment per item")
        _check_judgment(judge, judgment, who)
        if judgment.label is not None and type(judgment.label) is not int:  # numpy's: written and cached as int
            judgment = replace(judgment, label=int(judgment.label))
        found[free.pop(0)] = judgment
    unanswered = [items[index].key for index, judgment in enumerate(found) if judgment is None]
    if unanswered:
        raise HarnessError(f"{who} answered {len(given)} judgments for {len(items)} items: none for item "
                           f"{unanswered[0]!r}" + (f" (and {len(unanswered) - 1} more)" if len(unanswered) > 1 else "")
                           + "; expected one judgment per item, its item_key the item's key")
    return found  # type: ignore[return-value]  # every place filled


def _check_judgment(judge: Judge, judgment: Judgment, who: str) -> None:
    """A status of STATUSES, and a label on the judge's scale with status ok, None with another
    (a label beside "failed" would be scored as a judged one)."""
    if judgment.status not in STATUSES:
        raise HarnessError(f"{who} answered status {judgment.status!r} for item {judgment.item_key!r}; expected "
                           f"one of {', '.join(STATUSES)}")
    if judgment.status == "ok":
        judge.scale.check(judgment.label, who)
    elif judgment.label is not None:
        raise HarnessError(f"{who} answered label {judgment.label!r} with status {judgment.status!r} for item "
                           f"{judgment.item_key!r}; a label goes with status ok alone (else None)")


def provenance_of(judge: Judge) -> dict:
    """What the judge's labels are recorded with: its provenance(), with its name where that
    gives none and, whatever it says, the scale the harness checked its labels on (a plug-in's
    may give neither: --fill's scale warning and --judge file read it) and, a plug-in's, what it
    is (`plugin_of`: two versions of its code are told apart). One that is not a dict a JSON
    sidecar can hold is an error naming the judge and the key, before anything is written."""
    who = judge_named(judge)
    record = judge.provenance()
    if not isinstance(record, dict):
        raise HarnessError(f"{who}: provenance() answered {type(record).__name__}; expected a dict")
    for key, value in record.items():
        try:
            json.dumps({key: value}, ensure_ascii=False)
        except (TypeError, ValueError) as error:
            raise HarnessError(f"{who}: provenance() holds {key!r}: {value!r}, which JSON cannot hold ({error}); "
                               "expected strings, numbers, booleans, None, and lists and dicts of them") from None
    plugin = plugin_of(judge)
    return {"judge": judge.name, **record, "scale": judge.scale.name, **({"plugin": plugin} if plugin else {})}


# a judge the factory made (harness.judge.make) -> what it was made of (its spec and the registry's origin), by
# the judge's id, with a weak reference to it where it takes one (forgotten with it): a record of what was made,
# as the registry's of what it loaded, so that its provenance says it wherever the judge goes (`plugin_of`)
_MADE: dict[int, tuple[Callable[[], object], dict]] = {}


def made_of(judge: Judge, identity: dict) -> None:
    """Record with the plug-in judge `judge` what the factory made it of (`identity`: its spec and
    the registry's origin of it): provenance_of reads it, whichever command, Python API call or
    hosted board the judge goes to."""
    key = id(judge)
    try:
        held: Callable[[], object] = weakref.ref(judge, lambda _: _MADE.pop(key, None))
    except TypeError:  # a class with __slots__ and no __weakref__: held while the process lives
        held = lambda: judge  # noqa: E731
    _MADE[key] = (held, identity)


def plugin_of(judge: Judge) -> dict | None:
    """What a plug-in judge is, for its provenance's `plugin`, as a run's JSON records a plug-in
    retriever: one the factory made, its spec as given and the registry's origin of it (entry
    point or `python:` spec, distribution, version, module, code sha256); one built by its user
    and handed over (the Python API), what its class tells: `class` (module.qualname), the
    distribution that installed its top-level package and its version where exactly one did, and
    its code's origin as a plug-in handed to the Python API is keyed (module, sha256 of its file,
    its own helper modules'). None for the harness's own judges."""
    made = _MADE.get(id(judge))
    if made is not None and made[0]() is judge:
        return made[1]
    kind = _plugin_class(judge)
    if kind is None:
        return None
    return {"class": kind, **installed_by(type(judge).__module__), **object_origin(type(judge))}


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
    sidecar, each atomically, both made before either is written: a sidecar that cannot be
    made leaves no qrels without one. Returns the number of qrels lines."""
    import hashlib

    lines = [f"{qid} 0 {docid} {judgment.label}\n" for judgment in judgments if judgment.status == "ok"
             for qid, docid in [judgment.item_key]]
    text = "".join(lines)
    record = {**provenance, "qrels": str(path), "qrels_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
              "labels_written": len(lines)}
    sidecar_text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    with atomic_write(path) as out:
        out.write(text)
    with atomic_write(sidecar(path)) as out:
        out.write(sidecar_text)
    return len(lines)


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
