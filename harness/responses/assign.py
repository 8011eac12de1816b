"""Assignment: every nugget of a turn against the response, and every cited (sentence,
passage) pair, as judge items; judges' labels as nuggetizer's assignments; recorded
assignments (nuggetizer's assignment output) as a judge.

Item keys: (turn, run, nugget id) for a nugget, (turn, run, sentence index, passage id) for a
citation. Item fields: `question` (the turn's question where known, else empty), `nugget` and
`response`; or `question`, `sentence` and `passage`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import jsonl
from harness.atomic import atomic_write
from harness.errors import HarnessError, InputError, command, open_input
from harness.judge.base import JUDGES, counts, first_maker, read_provenance
from harness.judge.model import Item, Judgment
from harness.judge.scales import SUPPORT_0_2, YES_NO, Scale
from harness.paths import file_sha256
from harness.registry import Param
from harness.responses.model import Nugget, Response, Sentence, first_few
from harness.responses.scores import NOT, PARTIAL, SUPPORT
from harness.trec import looks_like_qrels_line

# a judge's label as nuggetizer's assignment, per scale
ASSIGNMENTS: dict[str, dict[int, str]] = {
    SUPPORT_0_2.name: {2: SUPPORT, 1: PARTIAL, 0: NOT},
    YES_NO.name: {1: SUPPORT, 0: NOT},
}
LABELS = {SUPPORT: 2, PARTIAL: 1, NOT: 0}  # nuggetizer's assignment on the support-0-2 scale
FAILED = "failed"  # nuggetizer's assignment where its LLM gave no label


def check_assigns(scale: Scale) -> None:
    """A judge whose scale has no nugget assignments is refused before it is asked anything."""
    if scale.name not in ASSIGNMENTS:
        raise HarnessError(f"a judge on the {scale.name} scale cannot assign nuggets; use one on "
                           f"{' or '.join(ASSIGNMENTS)}")


def assignment_of(scale: Scale, label: int) -> str:
    """The assignment of a label on a scale check_assigns has let through."""
    scale.check(label)  # a plug-in judge's label off its own scale
    return ASSIGNMENTS[scale.name][label]


def nugget_items(run: str, response: Response, nuggets: Sequence[Nugget], question: str = "") -> list[Item]:
    return [Item((response.turn, run, nugget.id), {"question": question, "nugget": nugget.text,
                                                   "response": response.text}) for nugget in nuggets]


def sample_item(task: str) -> Item:
    """An item of `task`'s kind ("nuggets", "citations"), its fields empty: built by the same
    code as the judged ones, so an llm judge's prompt is filled once with the fields its items
    will carry before any request (harness.judge.llm.check_prompt)."""
    response = Response("", "", (Sentence("", ("p",)),), {"p": ""})
    if task == "citations":
        return citation_items("", response, None)[0]
    return nugget_items("", response, [Nugget("", "", 0, False)])[0]


def citation_items(run: str, response: Response, passages: Mapping[str, str] | None, question: str = "",
                   path: Path | None = None) -> list[Item]:
    """A cited passage without text (neither `response.passages` nor `passages`, the texts
    given if any, holds it) is an error naming the run's file (`path`) and the response's
    line, or its run and turn."""
    items = []
    for index, sentence in enumerate(response.sentences):
        for pid in sentence.citations:
            text = response.passages.get(pid, (passages or {}).get(pid))
            if text is None:
                given = (", nor in the passages given (--passages)" if passages is not None
                         else "; give the collection with --passages")
                raise InputError(path or f"run {run}", f"turn {response.turn}: cited passage {pid} has no text in "
                                                       f"the run file{given}", line=response.line)
            items.append(Item((response.turn, run, str(index), pid),
                              {"question": question, "sentence": sentence.text, "passage": text}))
    return items


@dataclass(frozen=True)
class AssignedNugget:
    nugget: Nugget
    assignment: str
    judged: bool  # False: the judge gave no label (failed, unparseable, missing): counted as not_support


class RecordedAssignments:
    """The `assignments` judge (`file:PATH` in `harness responses`, its alias; `file` in its
    provenance, as before it had a name of its own), for nugget assignments recorded elsewhere:
    nuggetizer's assignment output (JSON lines `{qid, run_id, nuggets: [{text, importance, assignment}]}`, a nugget
    identified by its `id` where written, else by its position among the line's nuggets,
    matched in order by text: nuggetizer leaves out the last nuggets of a window whose LLM
    answer has fewer labels, and the nuggets after them keep their bank's nugget). A recorded
    nugget's text must equal the bank's; an item with no recorded assignment is a "missing"
    judgment (counted as not supported, where nuggetizer's metric leaves the nugget out).
    An assignment other than the three (nuggetizer writes its LLM's label lower-cased as it
    came) is an "unparseable" judgment, its value kept: it counts as not supported, as
    nuggetizer's metric counts it, and is counted in the notes. `failed` (nuggetizer's where its
    LLM gave up, --assignments-out's where the judge gave no label) is a "failed" judgment, the
    board unfinished until the judge that made the file is run again (harness.responses.cli
    exits 1, as the llm judge's own run does); except where the file's sidecar counts no failed
    judgment of its maker: there it stands for the maker's unparseable answers, which a rerun
    gives again."""

    scale = SUPPORT_0_2

    def __init__(self, path: str | Path) -> None:
        self.name = "file"
        self.path = Path(path)
        self.labels: dict[tuple[str, str, str], tuple[int | str, str, int]] = {}  # key -> (label, text, line)
        self.positional: set[tuple[str, str]] = set()  # (qid, run) of lines whose nuggets have no id
        self.answers: dict[tuple[str, str], tuple[str | None, int]] = {}  # (qid, run) -> (answer_text, line)
        self._check_not_qrels()
        for line, record in jsonl.read(self.path):
            if not isinstance(record, dict) or not isinstance(record.get("nuggets"), list):
                raise InputError(self.path, "expected {qid, run_id, nuggets: [...]}", line=line)
            qid, run = record.get("qid"), record.get("run_id", self.path.stem)
            if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not isinstance(run, str):
                raise InputError(self.path, "qid / run_id: expected a string qid and run_id", line=line)
            answer = record.get("answer_text")
            if answer is not None and not isinstance(answer, str):
                raise InputError(self.path, "answer_text: expected the judged answer's text, a string", line=line)
            self.answers.setdefault((str(qid), run), (answer, line))
            if not any(isinstance(nugget, dict) and "id" in nugget for nugget in record["nuggets"]):
                self.positional.add((str(qid), run))
            for index, nugget in enumerate(record["nuggets"]):
                if not isinstance(nugget, dict) or "assignment" not in nugget:
                    raise InputError(self.path, f"nuggets[{index}].assignment: expected support, partial_support "
                                                "or not_support, found none", line=line)
                assignment = nugget["assignment"]
                nugget_id = str(nugget.get("id", index + 1))
                key = (str(qid), run, nugget_id)
                if key in self.labels:
                    raise InputError(self.path, f"turn {qid}, run {run}, nugget {nugget_id} is assigned twice",
                                     line=line)
                label = LABELS[assignment] if isinstance(assignment, str) and assignment in LABELS else str(assignment)
                self.labels[key] = (label, str(nugget.get("text", "")), line)
        self.sha256 = file_sha256(self.path)  # of the labels just read: each provenance() and a board's key
        source = read_provenance(self.path, "assignments_sha256", self.sha256)
        self.maker = first_maker(source) if source is not None else None  # who made them (its sidecar's judge)
        tally = self.maker.get("counts") if self.maker and self.maker.get("matches_file") else None
        self.failed_status = "unparseable" if isinstance(tally, dict) and tally.get("failed") == 0 else "failed"
        self._counts: dict[str, int] = {}
        self._lines = (0, 0)  # of the last judge(): lines whose run_id names no run asked about, lines

    def _check_not_qrels(self) -> None:
        """A qrels file given here (a mix-up with `harness judge --judge file --labels`) is said
        so, not blamed on its first line's JSON."""
        with open_input(self.path) as handle:
            first, entry = jsonl.first_line(handle)
        lines = first.splitlines()  # up to the first non-blank line
        if isinstance(entry, json.JSONDecodeError) and looks_like_qrels_line(lines[-1].split()):
            raise InputError(self.path, "looks like a qrels file; --judge file: takes nuggetizer assignment JSONL "
                                        "{qid, run_id, nuggets}", line=len(lines))

    @property
    def runs(self) -> set[str]:
        """The run_ids the file records assignments for."""
        return {run for _, run in self.answers}

    def other_answer(self, turn: str, run: str, text: str) -> int | None:
        """The line recording (turn, run) when its `answer_text` is not `text` (surrounding
        whitespace aside): labels judged for one answer say nothing of another, so such a line
        cannot score it. None when the texts agree, or the line records no answer_text."""
        recorded, line = self.answers.get((turn, run), (None, 0))
        return line if recorded is not None and recorded.strip() != text.strip() else None

    def judge(self, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
        """A recorded line whose answer_text is not the answer asked about is an error naming
        the file, line, run and turn: its labels were not given for this answer."""
        answers = {(i.key[0], i.key[1]): i.fields["response"] for i in items if "response" in i.fields}
        for (turn, run), text in answers.items():  # in the items' order: the first such turn is named
            if (line := self.other_answer(turn, run, text)) is not None:
                raise InputError(self.path, f"turn {turn}, run {run}: recorded for another answer text (the "
                                            "line's answer_text is not the run's answer): rescore with a judge",
                                 line=line)
        found = []
        aligned = self._aligned(items)
        for item in items:
            recorded = self.labels.get(aligned.get(item.key, item.key))
            if recorded is None:
                found.append(Judgment(item.key, None, "missing", "", False))
                continue
            label, text, line = recorded
            if text and "nugget" in item.fields and text.strip() != item.fields["nugget"].strip():
                raise InputError(self.path, f"turn {item.key[0]}, run {item.key[1]}, nugget {item.key[2]}: the "
                                            "recorded text differs from the nugget bank's; were the assignments "
                                            "made with another bank?", line=line)
            status = self.failed_status if label == FAILED else "unparseable"
            found.append(Judgment(item.key, label, "ok", str(label), False) if isinstance(label, int)
                         else Judgment(item.key, None, status, label, False))
        self._check_some_run_is_recorded(found)
        self._counts = counts(found)
        if self._counts["failed"] and not self._counts["ok"]:  # every run would score 0: nothing was judged
            raise InputError(self.path, f"none of the {len(found)} nugget assignments asked is support, "
                                        f"partial_support or not_support, {self._counts['failed']} recorded "
                                        f"{FAILED}: {finish_failed(self.provenance())}")
        return found

    def _aligned(self, items: Sequence[Item]) -> dict[tuple[str, ...], tuple[str, str, str] | None]:
        """For lines whose nuggets have no id: each asked nugget's recorded key, the line's
        nuggets matched to the bank's in order by text (None: left out of the line). A line
        some of whose nuggets match none is not aligned: its positions stand (the bank's ids,
        such as CONE-RAG's `[2]`, are not its positions), and the text check names the first
        that differs."""
        groups: dict[tuple[str, str], list[Item]] = {}
        for item in items:
            if tuple(item.key[:2]) in self.positional and "nugget" in item.fields:
                groups.setdefault((item.key[0], item.key[1]), []).append(item)
        found: dict[tuple[str, ...], tuple[str, str, str] | None] = {}
        for (qid, run), group in groups.items():
            position, keys = 1, {}
            for item in group:
                key = (qid, run, str(position))
                recorded = self.labels.get(key)
                text = recorded[1].strip() if recorded is not None else None
                matches = text is not None and (not text or text == item.fields["nugget"].strip())
                keys[item.key] = key if matches else None
                position += matches
            if (qid, run, str(position)) in self.labels:  # not aligned: the i-th asked is the i-th recorded
                keys = {item.key: (qid, run, str(index)) for index, item in enumerate(group, 1)}
            found.update(keys)
        return found

    def _check_some_run_is_recorded(self, found: Sequence[Judgment]) -> None:
        """Count the lines (turn, run) whose run_id names no run asked about. When no run asked
        about has a recorded assignment every score would be 0: an error naming the file, how
        many of its lines match no run, and their run_ids (renaming is instant, and nuggetizer
        never scores a run it has no assignment for). A run that only some others' lines leave
        uncovered is left out by harness.responses.evaluate, in a note."""
        lines: dict[str, set[int]] = {}  # run_id -> its lines
        for (_, run, _), (_, _, line) in self.labels.items():
            lines.setdefault(run, set()).add(line)
        asked = {j.item_key[1] for j in found}
        names = sorted(name for name in lines if name not in asked)
        self._lines = (sum(len(lines[name]) for name in names), len(set().union(*lines.values())))
        if not found or any(j.status != "missing" for j in found):
            return
        if not lines:
            raise InputError(self.path, "records no nugget assignment: every run would score 0")
        unanswered = sorted(asked, key=lambda name: (name in lines, name))  # a run the file does not name first
        run = unanswered[0]
        more = f" (nor for {len(unanswered) - 1} more runs)" if len(unanswered) > 1 else ""
        if run in lines:
            first = next(j.item_key for j in found if j.item_key[1] == run)
            recorded = next(key for key in self.labels if key[1] == run)
            raise InputError(self.path, f"none of the {len(lines[run])} lines of run {run}{more} assigns a nugget "
                                        f"it is asked about (asked: turn {first[0]} nugget {first[2]}; recorded: turn "
                                        f"{recorded[0]} nugget {recorded[2]}); were they made for these turns and bank?")
        raise InputError(self.path, f"{self._lines[0]} of the {self._lines[1]} lines match no run evaluated (their "
                                    f"run_ids: {first_few(names)}), and no line "
                                    f"is for run {run}{more}; a line's run_id must be the name of the run it assigns")

    def provenance(self) -> dict:
        """No date: the assignments were made when they were recorded, which only their
        sidecar (source_provenance) knows; the time they are read again is not it."""
        record = {"judge": self.name, "file": str(self.path), "sha256": self.sha256,
                  "scale": self.scale.name, "recorded": len(self.labels), "counts": dict(self._counts),
                  "lines": self._lines[1], "lines_matching_no_run": self._lines[0]}
        if self.maker is not None:  # assignments a judge made earlier (--assignments-out): keep who made them
            record["source_provenance"] = self.maker
        return record


def finish_failed(record: dict) -> str:
    """What finishes the `failed` assignments of a recorded-assignments judge's provenance
    `record`: running again the judge that made the file (its sidecar's counts quoted, where it
    has one of this file), an llm judge asking only what it has no answer to."""
    maker, name = record.get("source_provenance") or {}, Path(record["file"]).name
    tally = maker.get("counts") if maker.get("matches_file") else None
    if not maker:
        return (f"the judge that made {name} gave them no label (no provenance sidecar says which): rerun it to "
                "finish them")
    unlabelled = [f"{tally[status]} {status}" for status in ("failed", "unparseable", "missing")
                  if isinstance(tally, dict) and tally.get(status)]
    said = f" (its sidecar: {', '.join(unlabelled)})" if unlabelled else ""
    rerun = command("harness", "responses", "eval", "--judge", "llm", "--model", maker.get("model"))
    how = f"`{rerun}` with --assignments-out, whose cache answers the others," if maker.get("judge") == "llm" else "it"
    return f"the {maker.get('judge')} judge that made {name} gave them no label{said}: rerun {how} to finish them"


JUDGES.add("assignments", RecordedAssignments,
           "nugget assignments recorded earlier, as nuggetizer writes them (harness responses; file:PATH there too)",
           [Param("path", Path | str, desc="the assignments: JSON lines {qid, run_id, nuggets: [{text, assignment}]}")])


def assigned(scale: Scale, nuggets: Sequence[Nugget], judgments: Iterable[Judgment]) -> list[AssignedNugget]:
    """Each nugget's assignment from its judgment, on a scale check_assigns has let through."""
    return [AssignedNugget(nugget, assignment_of(scale, j.label) if j.label is not None else NOT, j.label is not None)
            for nugget, j in zip(nuggets, judgments, strict=True)]


def nuggetizer_record(turn: str, run: str, response: Response, nuggets: Sequence[AssignedNugget]) -> dict:
    """One line of nuggetizer's assignment output (plus each nugget's id and grade). A nugget
    the judge gave no label is written `failed`, as nuggetizer writes one its LLM gave none:
    scored the same (no support), and read back it is counted unlabelled again, not taken for
    a judged `not_support`."""
    return {"qid": turn, "run_id": run, "answer_text": response.text,
            "nuggets": [{"id": a.nugget.id, "text": a.nugget.text, "importance": "vital" if a.nugget.vital else "okay",
                         "grade": a.nugget.grade, "assignment": a.assignment if a.judged else FAILED} for a in nuggets]}


def write_assignments(path: str | Path, records: Iterable[dict], provenance: dict) -> None:
    """The assignments as nuggetizer's assignment output, then their provenance sidecar
    (PATH.provenance.json: the judge's provenance and the file's sha256), each atomically."""
    from harness.judge.base import sidecar

    with atomic_write(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with atomic_write(sidecar(path)) as handle:
        json.dump({**provenance, "assignments": str(path), "assignments_sha256": file_sha256(path)}, handle,
                  indent=2, ensure_ascii=False)
        handle.write("\n")
