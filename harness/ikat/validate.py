"""Check a TREC iKAT submission before uploading it, as the official validators do.

The checks and their classes (error = the official tool refuses the file, warning = it is
counted and reported) follow irlabamsterdam/iKAT 2023/scripts/run_validation (main.py,
utils.py), 2024/scripts/run_validation (same, with the 2024 run.proto) and
2025/scripts/validate_trec_ikat25.py. Each check is one function in `CHECKS`
(harness/ikat/checks_2023.py, checks_2025.py); a check names the turn it is about. Where a
check deliberately differs from the official tools, its docstring says so (and the README
lists them). Fields are read as protobuf's JSON parser reads them. The official gRPC lookup
of passage ids in the ClueWeb22 collection is the `passage-exists` check, run against the
collection given with `--passages` (`read_passage_ids`).

Unlike the official tools, which stop at the first error, every error is reported, and the
expected topics and turns come from the topics file given rather than constants (25 topics
and 332 turns in 2023, 17 and 218 in 2024).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from harness import jsonl
from harness.errors import HarnessError, InputError, counted, open_input, read_input
from harness.ikat.checks import CHECKS, Context, Finding, error, topic_index
from harness.ikat.checks_2023 import parse_submission
from harness.ikat.submission import YEARS, Submission
from harness.topics.model import Conversation
from harness.trec import looks_like_qrels_line, looks_like_run_line

MAX_WARNINGS = 2000  # the 2023/2024 validators' default --max_warnings
# Checks that need the whole test set in the file; skipped for a partial (development) run.
COVERAGE_CHECKS = frozenset({"turn-count", "topics-covered", "turns-covered"})


@dataclass
class ValidationReport:
    """What `harness ikat validate` found in one submission (not a comparison report)."""

    path: Path
    year: int
    findings: list[Finding] = field(default_factory=list)
    turns: int = 0
    submission: Submission | None = None  # 2023/2024, once the structure checks passed
    decoded: Decoded | None = None  # the file as read for the checks (the CLI's notes read it too)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        verdict = "valid" if self.ok else "INVALID"
        by_check = Counter(f"{f.level} {f.check}" for f in self.findings)
        detail = "; ".join(f"{n} x {key}" for key, n in sorted(by_check.items()))
        return (
            f"{self.path.name} (iKAT {self.year}): {self.turns} turns, {len(self.errors)} errors, "
            f"{len(self.warnings)} warnings: {verdict}" + (f" ({detail})" if detail else "")
        )


# --- driver -----------------------------------------------------------------------------


def guess_year(path: Path, text: str) -> int:
    """2025 files are JSON Lines; a 2024 run has eval_response or bare PTKB numbers."""
    try:
        return _year_of(path, text, jsonl.loads(text))
    except json.JSONDecodeError:
        return _year_of(path, text, _UNDECODED)


_UNDECODED = object()  # the text is not one JSON document


def _year_of(path: Path, text: str, raw: Any) -> int:
    """guess_year on a text already decoded (`raw`), or found not to be one JSON document."""
    if raw is _UNDECODED:
        # JSON Lines if its first line is a whole object (a cut-off 2023 file starts with "{" too)
        return 2025 if path.suffix == ".jsonl" or _json_lines(text) else 2023
    if isinstance(raw, dict) and "metadata" in raw:
        return 2025
    if isinstance(raw, dict) and ("eval_response" in raw or _bare_ptkb(raw)):
        return 2024
    return 2023


def _lines(text: str) -> Iterator[str]:
    """The text's lines (ending at '\n'), one at a time: the first may be all that is needed."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def _bare_ptkb(raw: dict) -> bool:
    turns = raw.get("turns") if isinstance(raw.get("turns"), list) else []
    return any(
        not isinstance(p, dict)
        for t in turns if isinstance(t, dict) and isinstance(t.get("responses"), list)
        for r in t["responses"] if isinstance(r, dict) and isinstance(r.get("ptkb_provenance"), list)
        for p in r["ptkb_provenance"]
    )


def decode_lines(text: str) -> list[tuple[int, Any]]:
    """(line number, value or its JSONDecodeError) per non-blank line (harness.jsonl). Lines end
    at '\n' only, as in a file read line by line: a JSON string may hold U+2028 or U+0085. Each
    line is stripped first, as the official 2025 validator strips it (str.strip: a form feed, a
    no-break space or U+2028 at either end is not JSON whitespace, yet passes there)."""
    return list(jsonl.decode(map(str.strip, text.split("\n"))))


_BOM_PROBLEM = ("starts with a byte-order mark (U+FEFF), on which the official iKAT tools stop "
                "('Unexpected UTF-8 BOM'): save the file without it")


def submission_text(path: Path, text: str | None = None) -> str:
    """A submission's text as the official tools read it: UTF-8, a byte-order mark refused. `text`: the
    file's text read already, as here (a pipe, `/dev/stdin`, gives its bytes once)."""
    text = read_input(path, encoding="utf-8") if text is None else text
    if text.startswith("\ufeff"):
        raise InputError(path, _BOM_PROBLEM, line=1)
    return text


@dataclass
class Decoded:
    """A submission's text decoded once: the year, and the JSON object (2023/2024) or the
    lines (2025), or the finding that stops validation (a byte-order mark, not JSON)."""

    year: int
    raw: Any = None
    entries: list[tuple[int, Any]] = field(default_factory=list)
    problem: Finding | None = None
    structure_passed: bool = False  # the year's structure checks found nothing, not a warning, in `raw`: not run again


def decode_submission(path: Path, text: str, year: int | None = None, topics_year: int | None = None) -> Decoded:
    """Decode a submission's text, guessing its year (when not given) from the same parse, which
    also tells a JSON Lines year's file that is one JSON document (_not_json_lines). JSON
    nested too deeply or holding too long an integer is not JSON to the validator (a finding),
    as a syntax error is (harness.jsonl.loads). `topics_year`: the year of the topics it is
    checked against, when known; a year guessed that is not theirs is one finding (_format_year)."""
    body = text.removeprefix("\ufeff")
    raw, problem, given = _UNDECODED, None, year
    try:
        raw = jsonl.loads(body)
    except json.JSONDecodeError as found:
        problem = found
    year = year or _year_of(path, body, raw)
    if year not in YEARS:
        raise HarnessError(f"iKAT year must be one of {', '.join(map(str, YEARS))}, not {year}")
    adopted, clean = _fits(raw, topics_year) if not given and topics_year and year != topics_year else (False, False)
    if adopted:
        year = topics_year  # a 2023/2024 file showing neither year's form (no eval_response, no PTKB) is both
    decoded = Decoded(year)
    if text.startswith("\ufeff"):
        decoded.problem = error("bom", _BOM_PROBLEM, line=1)
    elif not given and topics_year and year != topics_year and (raw is not _UNDECODED or YEARS[year].json_lines):
        decoded.problem = error("format-year", _format_year(year, topics_year, _turn_ids(raw, text, year)))
    elif YEARS[year].json_lines:
        decoded.entries = decode_lines(text)
        if (shape := _not_json_lines(body, decoded.entries, raw)) is not None:
            decoded.problem = error("json", shape)
            decoded.entries = []  # no line is a turn
    elif problem is not None:
        decoded.problem = error("json", f"not JSON: {problem.msg} (line {problem.lineno}, column {problem.colno})"
                                        # a year guessed is 2025 where the text is JSON Lines: no hint to give
                                        + (_trec_run_hint(body) or (_json_lines_hint(body) if given else "")))
    else:
        other, passed = _other_years_format(path, body, raw, year) if given else (None, clean)
        if other:
            decoded.problem = error("format-year", other)
        else:
            decoded.raw, decoded.structure_passed = raw, passed
    return decoded


def _turn_ids(raw: Any, text: str, year: int) -> set[str]:
    """The turn ids a file answers, read as loosely as can be (for a message, not a check)."""
    turns = [value for _, value in decode_lines(text)] if YEARS[year].json_lines else (
        raw.get("turns") if isinstance(raw, dict) and isinstance(raw.get("turns"), list) else [])
    return {turn["turn_id"] for turn in turns if isinstance(turn, dict) and isinstance(turn.get("turn_id"), str)}


def _format_year(year: int, topics_year: int, turns: set[str]) -> str:
    """A file of one year's format checked against another year's topics: the track of the topics'
    year takes its own format only (its validator refuses the other's fields: 2023's scored PTKB
    provenance are no int32 in 2024's run.proto, 2024's eval_response no field of 2023's). A file
    whose turns are of its own format's year is checked against the wrong topics, more likely."""
    if turns and turns_year(turns) == year:
        return (f"the file is an iKAT {year} submission (its format and its turns), but the topics are iKAT "
                f"{topics_year}'s: give the topics of the file's year")
    return (f"the file is in the iKAT {year} format, but the topics are iKAT {topics_year}'s, whose validator takes "
            f"the {topics_year} format only: write it with `harness ikat from-trec --year {topics_year}` (from its "
            f"TREC run: `harness ikat to-trec` writes one), or give --year {year} to check it against these topics "
            "as it is")


def _fits(raw: Any, year: int) -> tuple[bool, bool]:
    """Whether a decoded 2023/2024 file passes the structure checks of `year` (a JSON document
    year), and whether they found nothing at all (_structure)."""
    if raw is _UNDECODED or YEARS[year].json_lines:
        return False, False
    found, clean = _structure(raw, year)
    return found is None, clean


def _structure(raw: Any, year: int) -> tuple[Finding | None, bool]:
    """The first error of the year's structure checks (those the later checks need to pass) on
    a decoded 2023/2024 file, or None; and whether they found nothing, not even a warning: only
    then may validation leave them out (Decoded.structure_passed), or it would drop what they found."""
    ctx = Context(year, {}, raw=raw)
    clean = True
    for name in CHECKS:
        chosen = CHECKS.get(name)
        if chosen.structural and year in chosen.years:
            for finding in chosen.run(ctx):
                if finding.level == "error":
                    return finding, False
                clean = False
    return None, clean


def _other_years_format(path: Path, text: str, raw: Any, year: int) -> tuple[str | None, bool]:
    """A 2023/2024 file given --year of the other, whose year (guessed) it parses as while it
    fails `year`'s structure checks: what it is, said once, not an error for each of its fields.
    With it, whether `year`'s structure checks were run here and found nothing (not to be run again)."""
    guessed = _year_of(path, text, raw)
    if guessed == year:
        return None, False
    found, clean = _structure(raw, year)
    if found is None:
        return None, clean
    if not _fits(raw, guessed)[0]:
        return None, False
    return (f"the file is in the iKAT {guessed} format, not {year}'s ({found.message}): leave --year out (the year is "
            "guessed from the file) or give the file's year"), False


def _trec_run_hint(text: str) -> str:
    """The classic mistake of giving a TREC run where a submission belongs, said with its cure."""
    first = next((line.split() for line in islice(_lines(text), 100) if line.strip()), [])
    if looks_like_run_line(first):
        return ("; this looks like a TREC run ('qid Q0 docid rank score tag'), not an iKAT submission: "
                "`harness ikat from-trec` writes one from it")
    return ""


def _not_json_lines(text: str, entries: list[tuple[int, Any]], raw: Any) -> str | None:
    """A file read as JSON Lines that is a 2023/2024 submission (one JSON document holding
    `turns`; `raw` is the text decoded as one document, or _UNDECODED), or in which no line is
    an object (a TREC run), or that holds no line at all: what it looks like, said once, not an
    error for each of its lines (or for each turn it leaves unanswered). None for a file of
    JSON lines."""
    if not entries:
        lines_years = " and ".join(str(year) for year, form in YEARS.items() if form.json_lines)
        return (f"the file is empty (or blank lines only): iKAT {lines_years} submissions are JSON Lines, an object a "
                "line for each turn")
    if isinstance(raw, dict) and isinstance(raw.get("turns"), list):
        document_years = " and ".join(str(year) for year, form in YEARS.items() if not form.json_lines)
        return (f"one JSON document holding a list of turns, as iKAT {document_years} submissions are written, not "
                "JSON Lines (an object a line): leave --year out (the year is guessed from the file) or give the "
                "file's year")
    if not any(isinstance(value, dict) for _, value in entries):
        return f"not JSON Lines: none of its {counted(len(entries), 'line')} is a JSON object{_trec_run_hint(text)}"
    return None


def _json_lines(text: str) -> bool:
    """A text that is not one JSON document is JSON Lines when its first line is an object (harness.jsonl)."""
    return isinstance(jsonl.first_line(_lines(text))[1], dict)


def _json_lines_hint(text: str) -> str:
    """A JSON Lines file (an iKAT 2025 submission) given with another year: said with the year to give."""
    lines_years = [str(year) for year, form in YEARS.items() if form.json_lines]
    return (f"; this looks like JSON Lines (an object a line), as iKAT {' and '.join(lines_years)} submissions are "
            f"written: give --year {lines_years[-1]}") if lines_years and _json_lines(text) else ""


def validate_file(
    path: str | Path,
    topics: Iterable[Conversation],
    year: int | None = None,
    *,
    max_warnings: int | None = MAX_WARNINGS,
    skip: Iterable[str] = (),
    passages: Container[str] | None = None,
    topics_year: int | None = None,
) -> ValidationReport:
    """Run every check registered for the year (guessed from the file when not given).

    `skip` names checks to leave out (e.g. COVERAGE_CHECKS for a file that answers only
    some turns); `max_warnings` (2023/2024: fatal when exceeded, as upstream) None for no limit;
    `passages` the collection's passage ids, to check that every cited passage exists;
    `topics_year` the topics' iKAT year (harness.ikat.validate.topics_year), when known: a file guessed to be of another
    year's format is one error.
    """
    path = Path(path)
    decoded = decode_submission(path, read_input(path, encoding="utf-8"), year, topics_year)
    return validate_decoded(path, decoded, topics, max_warnings=max_warnings, skip=skip, passages=passages)


def validate_decoded(
    path: Path,
    decoded: Decoded,
    topics: Iterable[Conversation],
    *,
    max_warnings: int | None = MAX_WARNINGS,
    skip: Iterable[str] = (),
    passages: Container[str] | None = None,
    per_check: int | None = None,
) -> ValidationReport:
    """validate_file on a decoded submission; `per_check` keeps at most that many findings of
    each check (a server returning a few hundred need not hold one per turn per check)."""
    year = decoded.year
    ctx = Context(year, topic_index(topics), raw=decoded.raw, entries=decoded.entries, passages=passages)
    turn_ids = {value.get("turn_id") for _, value in decoded.entries if isinstance(value, dict)}  # 2025: the turns its lines answer
    report = ValidationReport(path, year, turns=sum(isinstance(turn_id, str) for turn_id in turn_ids), decoded=decoded)
    if decoded.problem is not None:
        report.findings.append(decoded.problem)
        return report
    skip = set(skip)
    checks = [chosen for name in CHECKS if year in (chosen := CHECKS.get(name)).years and name not in skip
              and not (chosen.structural and decoded.structure_passed)]
    for stage in (True, False):
        for chosen in (c for c in checks if c.structural == stage):
            report.findings.extend(islice(chosen.run(ctx), per_check))
        if stage and not YEARS[year].json_lines:
            if report.errors:
                return report
            ctx.submission = report.submission = parse_submission(ctx.raw, year)
            report.turns = len(ctx.submission.turns)
    if not YEARS[year].json_lines and max_warnings is not None and len(report.warnings) > max_warnings:
        report.findings.append(
            error("max-warnings", f"{len(report.warnings)} warnings, more than the {max_warnings} allowed")
        )
    report.findings.sort(key=_file_order(ctx))
    return report


def topics_year(conversations: Iterable[Conversation]) -> int | None:
    """The iKAT year of topics (a benchmark's, a copy of its file, or some of its topics)."""
    return turns_year({turn.qid for conversation in conversations for turn in conversation.turns})


def turns_year(turns: set[str]) -> int | None:
    """The iKAT year whose shipped topics files (any split) hold every one of `turns`, None where
    none or several do."""
    from harness.topics.ikat import read_topics, topics_path

    years = {year for year in YEARS for split in ("test", "train") if (path := topics_path(year, split)).exists()
             and turns <= {turn.qid for conversation in read_topics(path) for turn in conversation.turns}}
    return years.pop() if len(years) == 1 else None


def _file_order(ctx: Context) -> Callable[[Finding], int]:
    """Findings in the order of the file: whole-file findings first, then by line or turn."""
    position: dict[str, int] = {}
    for turn_id in (t.turn_id for t in ctx.submission.turns) if ctx.submission else ():
        position.setdefault(turn_id, len(position) + 1)
    return lambda f: f.line if f.line is not None else position.get(f.turn or "", 0)


def read_submission(path: str | Path, year: int | None = None, text: str | None = None) -> tuple[Submission, int]:
    """A 2023/2024 run file as a `Submission`; a file that is not well-formed, or JSON Lines
    (an iKAT 2025 run, TREC RAG answers), is an InputError. `text`: as submission_text takes it."""
    path = Path(path)
    text = submission_text(path, text)
    year = year or guess_year(path, text)
    if YEARS[year].json_lines:
        raise InputError(path, "is JSON Lines (one JSON object per line), not the one JSON document of an iKAT "
                               "2023 or 2024 run (iKAT 2025 runs and TREC RAG answers are JSON Lines)")
    try:
        raw = jsonl.loads(text)
    except json.JSONDecodeError as problem:
        raise InputError(path, f"not JSON: {problem.msg}{_trec_run_hint(text) or _json_lines_hint(text)}",
                         line=problem.lineno) from None
    other, passed = _other_years_format(path, text, raw, year)
    if other:
        raise InputError(path, other)
    if not passed and (finding := _structure(raw, year)[0]) is not None:
        raise InputError(path, finding.message, record=f"turn {finding.turn}" if finding.turn else None)
    return parse_submission(raw, year), year


def read_passage_ids(spec: str) -> frozenset[str]:
    """The passage ids of a collection, for the `passage-exists` check: `benchmark:NAME` (its
    corpus), an iKAT passage file (.jsonl: `doc_id` + `passage_id`, or `id`), or a text file
    of ids, one per line ('#' lines are comments)."""
    if spec.startswith("benchmark:"):
        from harness.corpus.readers import open_corpus

        return frozenset(document.id for document in open_corpus(spec).documents())
    path = Path(spec)
    if ".jsonl" not in path.suffixes:  # ids, one per line (also .txt.gz)
        with open_input(path) as handle:
            return _some(path, frozenset(_passage_id(path, number, line) for number, line in enumerate(handle, 1)
                                         if line.strip() and not line.lstrip().startswith("#")))
    ids = set()
    for line, record in jsonl.read(path):  # streamed: a collection's passage file can be large
        if isinstance(record, dict) and isinstance(record.get("doc_id"), str) and "passage_id" in record:
            ids.add(f"{record['doc_id']}:{record['passage_id']}")
        elif isinstance(record, dict) and isinstance(record.get("id"), str):
            ids.add(record["id"])
        else:
            raise InputError(path, "expected a JSON object with doc_id and passage_id, or id", line=line)
    return _some(path, frozenset(ids))


def _passage_id(path: Path, number: int, line: str) -> str:
    """A line's first field: its id. JSON there (a submission, a passages file not named .jsonl),
    a qrels or a TREC run (its first field is a turn id) would make every passage 'not in the
    collection'."""
    fields = line.split()
    if fields[0][0] in "{[":
        raise InputError(path, "looks like JSON, not one passage id per line (a passages file is read as JSON lines "
                               "when its name ends in .jsonl)", line=number)
    for looks_like, kind in ((looks_like_qrels_line, "qrels ('qid iter docid grade')"),
                             (looks_like_run_line, "a TREC run ('qid Q0 docid rank score tag')")):
        if looks_like(fields):
            raise InputError(path, f"looks like {kind}, not one passage id per line: give the collection the run "
                                   "searched (benchmark:NAME, an iKAT passage .jsonl, or a file of its passage ids)",
                             line=number)
    return fields[0]


def _some(path: Path, ids: frozenset[str]) -> frozenset[str]:
    """An empty collection would warn of every passage as unknown: an empty file is refused."""
    if not ids:
        raise InputError(path, "holds no passage id: expected one id per line, or JSON lines with doc_id and "
                               "passage_id (or id)")
    return ids
