"""Nugget banks: what a good response to each turn says, with how much each nugget matters.

- `cone-rag-json`: the CONE-RAG resource's gold nuggets (human `gold_nuggets_human*.json`,
  LLM `gold_nuggets_llm*.json`): `{turn: {nugget id: {text, relevance: "1".."4"}}}`.
- `nuggetizer-jsonl`: nuggetizer's nugget files, one turn a line, `{qid, query, nuggets:
  [{text, importance: vital|okay}]}` (its assignment output, which adds `assignment`, reads
  too); a nugget's id is its 1-based position in the line; `query`, the question nuggetizer's
  assigner puts in its prompt, is the turn's question (`NuggetBank.questions`).

The importance rule, declared (IMPORTANCE_RULE; recorded with every score):
- a graded nugget is vital when its grade is at least `vital_grade` (3 by default: the upper
  half of CONE-RAG's 1-4 grades, the relevance of the passage the nugget came from), okay
  otherwise; its weight in grade-weighted recall is its grade;
- a nuggetizer nugget keeps its importance; its grade (and weight) is 2 when vital, 1 when okay.
  Any other importance (nuggetizer writes its LLM's label lower-cased as it came, and `failed`
  where it gave up) is an error naming the line: deliberately, as the vital scores are not
  defined without it (nuggetizer's metric counts such a nugget in `all` as if okay).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import jsonl
from harness.errors import HarnessError, InputError, open_input
from harness.registry import Registry, summary_of
from harness.responses.model import Nugget, NuggetBank
from harness.responses.readers import (NUGGETIZER_KEYS, checking, first_off, is_map_of_str, is_str, is_tuple_of,
                                       is_whole, json_object, once)
from harness.trec import looks_like_qrels_line, looks_like_run_line

VITAL_GRADE = 3
NUGGETIZER_GRADES = {"vital": 2, "okay": 1}
IMPORTANCE_RULE = ("graded nuggets: vital when grade >= {vital_grade}, weight = grade; "
                   "nuggetizer nuggets: vital/okay as given, weight 2/1")

BankReader = Callable[[Path, int], NuggetBank]
BANKS: Registry[BankReader] = Registry("nugget bank format", group="harness.nugget_banks", summary=summary_of)


def bank_problem(bank: NuggetBank) -> str | None:
    """The first field of `bank` off the types of harness.responses.model, as a built-in reader
    checks its file: a grade an int of 0 or more (a grade "3" failed comparing to vital_grade),
    a nugget's text not blank, and its id once in its turn (the id keys its judgment)."""
    wrong = first_off(f"bank {bank.name!r}", [
        ("name", bank.name, is_str, "a string"),
        ("nuggets", bank.nuggets, lambda v: isinstance(v, dict) and all(map(is_str, v)),
         "a dict {turn id (a string): tuple of harness.responses.model.Nugget}"),
        ("rule", bank.rule, is_str, "the importance rule in words (a string)"),
        ("vital_grade", bank.vital_grade, lambda v: v is None or is_whole(v), "None or a whole number"),
        ("questions", bank.questions, is_map_of_str, "a dict {turn id: question} of strings")])
    for turn, nuggets in bank.nuggets.items() if wrong is None else ():
        wrong = first_off(f"turn {turn!r}", [
            ("nuggets", nuggets, is_tuple_of(Nugget), "a tuple of harness.responses.model.Nugget")])
        seen: set[str] = set()
        for index, nugget in enumerate(nuggets if wrong is None else ()):
            wrong = first_off(f"turn {turn!r}, nuggets[{index}]", [
                ("id", nugget.id, is_str, "a string"),
                ("text", nugget.text, lambda v: is_str(v) and v.strip() != "", "a non-blank string"),
                ("grade", nugget.grade, lambda v: is_whole(v) and v >= 0, "a whole number of 0 or more"),
                ("vital", nugget.vital, lambda v: isinstance(v, bool), "True or False"),
                ("id", nugget.id, lambda v: v not in seen, "an id given once in the turn (it keys the judgment)")])
            if wrong is not None:
                break
            seen.add(nugget.id)
        if wrong is not None:
            break
    return wrong


BANKS.adapter(checking(BANKS, "f(path, vital_grade)", "a harness.responses.model.NuggetBank",
                       lambda bank: isinstance(bank, NuggetBank), bank_problem))


def read_bank(path: str | Path, format: str | None = None, vital_grade: int = VITAL_GRADE) -> NuggetBank:
    """A format given (`--nuggets-format`, a task's `nuggets_format`) that does not read the
    file is said in its error, with the format the content reads as: a CONE-RAG bank read as
    nuggetizer's was `invalid JSON` at line 1, sending its owner to fix a file that is fine."""
    path = Path(path)
    if format is None:
        return BANKS.get(bank_format(path))(path, vital_grade)
    try:
        return BANKS.get(format)(path, vital_grade)
    except InputError as error:
        raise InputError(error.path, f"{error.problem} (read as {format}, the format given{_reads_as(path, format)})",
                         line=error.line, record=error.record) from None


def _reads_as(path: Path, given: str) -> str:
    """'; it reads as F: ...' where the format told from the content is another, F, that reads it."""
    try:
        told = bank_format(path)
        BANKS.get(told)(path, VITAL_GRADE)
    except HarnessError:
        return ""
    return "" if told == given else \
        f"; it reads as {told}: give that, or leave the format out to have it told from the content"


def bank_format(path: Path) -> str:
    """By content, whatever the file's name: nuggetizer's JSON Lines when its first line is a
    {qid, nuggets} object (`nuggets.json` too), CONE-RAG's one JSON object when the file is one
    (a `.jsonl` name too); else by the name (`.jsonl`: nuggetizer's, whose reader names the line).
    An empty file, and qrels or a run given in its place, are said so, not as invalid JSON."""
    with open_input(path) as handle:
        first, entry = jsonl.first_line(handle)
        if not first.strip():
            raise InputError(path, "empty file: no nuggets")
        fields = first.split()
        if looks_like_qrels_line(fields) or looks_like_run_line(fields):
            kind = "qrels ('qid iter docid grade')" if looks_like_qrels_line(fields) else \
                "a TREC run ('qid Q0 docid rank score tag')"
            raise InputError(path, f"this looks like {kind}, not a nugget bank (each turn's nuggets: "
                                   "CONE-RAG's JSON or nuggetizer's JSON Lines)", line=first.count("\n"))
        if isinstance(entry, dict) and NUGGETIZER_KEYS <= set(entry):
            return "nuggetizer-jsonl"
        if ".jsonl" not in path.suffixes:
            return "cone-rag-json"
        whole = jsonl.document(first + handle.read(), path)  # read on only where the first line is no nuggetizer record
    return "cone-rag-json" if isinstance(whole, dict) else "nuggetizer-jsonl"


def _rule(vital_grade: int) -> str:
    return IMPORTANCE_RULE.format(vital_grade=vital_grade)


@BANKS.register("cone-rag-json")
def read_cone_rag_bank(path: Path, vital_grade: int) -> NuggetBank:
    """CONE-RAG's gold nuggets: one JSON object {turn: {nugget id: {text, relevance}}}, graded 1 to 4."""
    document = json_object(path, "{turn: {nugget id: {text, relevance}}}")
    once(document, path, "turn")
    nuggets = {}
    for turn, entries in document.items():
        if not isinstance(entries, dict):
            raise InputError(path, "expected an object {nugget id: {text, relevance}}", record=f"turn {turn}")
        once(entries, path, "nugget", record=f"turn {turn}")
        found = []
        for nugget_id, entry in entries.items():
            where = f"turn {turn}, nugget {nugget_id}"
            if isinstance(entry, str) or isinstance(entry, dict) and "response" in entry:
                raise InputError(path, "this looks like responses ({turn: {run: response}}), not a nugget bank: give "
                                       "it as RESPONSES, and the nugget bank to --nuggets", record=f"turn {turn}")
            if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
                raise InputError(path, "text: expected the nugget's text (a string)", record=where)
            if not entry["text"].strip():  # no nugget to support: every response would miss it
                raise InputError(path, "text: empty", record=where)
            grade = entry.get("relevance")
            if isinstance(grade, bool) or not (isinstance(grade, int) and grade >= 0 or
                                               isinstance(grade, str) and grade.isdecimal()):
                # a negative weight would make grade-weighted recall leave [0, 1], or divide by 0
                raise InputError(path, f"relevance: expected a whole-number grade of 0 or more, got {grade!r}",
                                 record=where)
            grade = int(grade)
            found.append(Nugget(nugget_id, entry["text"], grade, grade >= vital_grade))
        nuggets[turn] = tuple(found)
    return NuggetBank(path.name, nuggets, _rule(vital_grade), vital_grade)


@BANKS.register("nuggetizer-jsonl")
def read_nuggetizer_bank(path: Path, vital_grade: int) -> NuggetBank:
    """nuggetizer's nuggets: JSON lines {qid, nuggets: [{text, importance}]}, each vital or okay."""
    nuggets, questions = {}, {}
    for line, record in jsonl.read(path):
        if not isinstance(record, dict) or isinstance(record.get("qid"), bool) \
                or not isinstance(record.get("qid"), (str, int)):
            raise InputError(path, "qid: expected the topic id (a string or integer)", line=line)
        if not isinstance(record.get("nuggets"), list):
            raise InputError(path, "nuggets: expected a list of {text, importance}", line=line)
        turn = str(record["qid"])
        if turn in nuggets:
            raise InputError(path, f"qid {turn} appears twice", line=line)
        query = record.get("query")
        if query is not None and not isinstance(query, str):
            raise InputError(path, f"query: expected the question (a string), got {query!r}", line=line)
        if query and query.strip():
            questions[turn] = query
        found = []
        for index, nugget in enumerate(record["nuggets"]):
            if not isinstance(nugget, dict) or not isinstance(nugget.get("text"), str):
                raise InputError(path, f"nuggets[{index}].text: expected a string", line=line)
            if not nugget["text"].strip():
                raise InputError(path, f"nuggets[{index}].text: empty", line=line)
            importance = nugget.get("importance")
            if importance not in NUGGETIZER_GRADES:
                raise InputError(path, f"nuggets[{index}].importance: expected 'vital' or 'okay', got {importance!r}",
                                 line=line)
            found.append(Nugget(str(index + 1), nugget["text"], NUGGETIZER_GRADES[importance], importance == "vital"))
        nuggets[turn] = tuple(found)
    return NuggetBank(path.name, nuggets, _rule(vital_grade), questions=questions)
