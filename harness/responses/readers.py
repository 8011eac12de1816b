"""Responses in the formats people submit, as `ResponseRun`s.

- `ikat-json`: an iKAT 2023/2024 run (one JSON object, `turns[].responses[]`), read by
  harness.ikat's reader with its structure checks. The response of rank 1 (the lowest rank)
  is the one scored; its `passage_provenance` entries with `used: true` are its citations,
  with their `text` where the file gives it. A response that marks none used cites its top 5
  (`TOP_PROVENANCE`): the track's rule, as the official validator (2023, 2024) states it, "The
  top 5 passages will be used as provenance by default". The validator only warns when the list
  is not in decreasing score order, so the top 5 are the 5 best by score in trec_eval's order
  (as `harness ikat to-trec` ranks them), a passage listed twice counted once.
- `ikat-2025-jsonl`: one turn per line, `{metadata, turn_id, responses: [{text, citations:
  {passage id: score}}], references}`, checked by harness.ikat's 2025 checks. A turn's
  `responses` are one answer cut into pieces (sentences): the official validator counts their
  words together against the turn's 250-word limit and, over it, drops pieces from the end
  ("we remove sentences from the end", the track's 2025 README). They are read as TREC RAG's
  `answer` is, each piece a sentence citing its own `citations`, of the pieces the validator
  keeps (`kept_responses`): the answer the track scores; the pieces dropped are counted in a note.
- `trec-rag-jsonl`: TREC RAG 2024 (`{run_id, topic_id, topic, references: [ids],
  response_length, answer: [{text, citations: [index into references]}]}`, ragnarok's
  output and rag24 validator) and 2025 (`metadata: {team_id, run_id, narrative_id, narrative}`;
  citations as indexes or as segment ids). The response text is the sentences joined by one
  space, as nuggetizer joins them; `topic` (2025: `metadata.narrative`) is the question answered.
- `cone-rag-json`: the CONE-RAG resource's participant files, `{turn: {run: text}}` (or
  `{turn: {run: {response: text, ...}}}`, as in its `*_response_nuggets.json`): several runs.

iKAT 2023/2024 responses cite passages for the response as a whole: they read as one sentence
citing them all. A malformed file is an InputError naming the file, the line (or the turn) and
the field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import jsonl
from harness.errors import InputError, read_input
from harness.registry import Registry, answering, summary_of
from harness.responses.model import Response, ResponseRun, Sentence
from harness.trec import (RunRecord, canonical_order, file_stem, looks_like_run_line, not_a_run, recorded_run,
                          recorded_run_of)

if TYPE_CHECKING:
    from harness.ikat.submission import PassageProvenance

Reader = Callable[[Path], list[ResponseRun]]
FORMATS: Registry[Reader] = Registry("response format", group="harness.response_formats", summary=summary_of)
# a built-in reader: the file's path and its text, read once by read_responses (None: the reader reads it)
TextReader = Callable[[Path, str | None], list[ResponseRun]]
_TEXT_READERS: dict[str, TextReader] = {}


def _reads_text(name: str) -> Callable[[TextReader], TextReader]:
    """Registers the built-in reader `name`, which takes the text read_responses read: a pipe
    (`/dev/stdin`, `<(...)`) gives its bytes once, and a file is read once."""
    def register(reader: TextReader) -> TextReader:
        FORMATS.register(name)(reader)
        _TEXT_READERS[name] = reader
        return reader

    return register

# a record's field: its name, its value, whether the value fits, what was expected (`first_off`)
Field = tuple[str, Any, Callable[[Any], bool], str]


def is_str(value: Any) -> bool:
    return isinstance(value, str)


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_tuple_of(kind: type | tuple[type, ...]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, (tuple, list)) and all(isinstance(item, kind) for item in value)


def is_map_of_str(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def first_off(where: str, fields: Iterable[Field]) -> str | None:
    """`where`'s first field whose value does not fit, with the value and what was expected, in
    words (`run 'r', turn '0_2': text None (NoneType); expected a string`); None where all fit."""
    for name, value, fits, expected in fields:
        if not fits(value):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return f"{where}: {name} {shown} ({type(value).__name__}); expected {expected}"
    return None


def plugin_named(registry: Registry, name: str) -> str:
    """The plug-in `name` of `registry` as its errors name it: its kind and name (a `python:`
    spec names its module) and, for an entry point, the package it comes from."""
    origin = registry.origin(name) or {}
    package = f" (package {origin['distribution']} {origin['version']})" if origin.get("distribution") else ""
    return f"{registry.kind} {name!r}{package}"


def checking(registry: Registry, call: str, answer: str, right: Callable[[Any], bool],
             problem: Callable[[Any], str | None]) -> Callable[[str, Any], Callable]:
    """The adapter of a reader kind (`answering`): its answer, where not `right` or where
    `problem` finds a record in it off the model (a str where a Response goes, a grade "3"), one
    line naming the plug-in, its package and that record, where it was a traceback from the
    harness's code that reads it. Built-in readers check their files instead, and are not adapted."""
    return answering(registry.kind, call, answer, right, problem, functools.partial(plugin_named, registry))


def run_problem(runs: list[ResponseRun]) -> str | None:
    """The first field of `runs` off the types of harness.responses.model, which the harness
    reads as a built-in reader leaves them; a response is keyed by its own turn (a Response
    under another turn's key was scored there silently)."""
    for run in runs:
        where = f"run {run.name!r}"
        wrong = first_off(where, [
            ("name", run.name, lambda v: is_str(v) and v != "", "a non-empty string"),
            ("path", run.path, lambda v: isinstance(v, Path), "the pathlib.Path read"),
            ("format", run.format, is_str, "a string"),
            ("responses", run.responses, lambda v: isinstance(v, dict) and all(map(is_str, v)),
             "a dict {turn id (a string): harness.responses.model.Response}")])
        if wrong is not None:
            return wrong
        for turn, response in run.responses.items():
            wrong = first_off(f"{where}, turn {turn!r}", [
                ("the response", response, lambda v: isinstance(v, Response), "a harness.responses.model.Response")])
            wrong = wrong or first_off(f"{where}, turn {turn!r}", [
                ("turn", response.turn, lambda v: v == turn, f"its key {turn!r}"),
                ("text", response.text, is_str, "a string"),
                ("sentences", response.sentences, is_tuple_of(Sentence),
                 "a tuple of harness.responses.model.Sentence"),
                ("passages", response.passages, is_map_of_str, "a mapping {passage id: text} of strings"),
                ("line", response.line, lambda v: v is None or is_whole(v) and v > 0, "None or a line number"),
                ("cites_top", response.cites_top, lambda v: isinstance(v, bool), "True or False"),
                ("dropped", response.dropped, lambda v: is_whole(v) and v >= 0, "a count (0 or more)"),
                ("question", response.question, lambda v: v is None or is_str(v), "None or a string")])
            if wrong is None:  # its sentences are Sentences
                wrong = next(filter(None, (first_off(f"{where}, turn {turn!r}, sentences[{index}]", [
                    ("text", sentence.text, is_str, "a string"),
                    ("citations", sentence.citations, is_tuple_of(str), "a tuple of passage ids (strings)")])
                    for index, sentence in enumerate(response.sentences))), None)
            if wrong is not None:
                return wrong
    return None


FORMATS.adapter(checking(FORMATS, "f(path)", "a list of harness.responses.model.ResponseRun",
                         lambda runs: isinstance(runs, list) and all(isinstance(run, ResponseRun) for run in runs),
                         run_problem))


def _text(path: Path, text: str | None = None) -> str:
    from harness.ikat.validate import submission_text

    return submission_text(path, text)


class _Object(dict):
    """A JSON object that remembers the keys the file gives it more than once (json keeps
    the last value silently, which would drop a turn, a run's answer or a nugget unseen)."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    found = _Object(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        found.repeated = tuple(dict.fromkeys(key for key, _ in pairs if key in seen or seen.add(key)))
    return found


def json_object(path: Path, shape: str, text: str | None = None) -> dict:
    """A file holding one JSON object (a syntax error names its line); its objects remember
    their repeated keys, for `once`. `text`: the file's text read already, its byte-order mark
    kept (read away here, as jsonl.read_document reads the file)."""
    document = (jsonl.read_document(path, object_pairs_hook=_object) if text is None
                else jsonl.parse_document(text.removeprefix("\ufeff"), path, object_pairs_hook=_object))
    if not isinstance(document, dict):
        raise InputError(path, f"expected a JSON object {shape}")
    return document


def once(mapping: dict, path: Path, what: str, record: str | None = None) -> None:
    """An object of a json_object file gives each key once: a key given twice (a turn, a run
    or a nugget) is an InputError naming the file, the record and the key."""
    repeated = getattr(mapping, "repeated", ())
    if repeated:
        raise InputError(path, f"{what} {repeated[0]} is given twice (a JSON object's keys must be unique)",
                         record=record)


IKAT_2025_KEYS = {"turn_id", "responses"}
GIVE_BANK = "give it to --nuggets, and the responses as RESPONSES"
TREC_RAG_KEYS = {"answer", "topic_id", "metadata"}
NUGGETIZER_KEYS = {"qid", "nuggets"}  # a nugget bank's line (harness.responses.nuggets), given in the responses' place


def detect_format(path: Path, text: str | None = None) -> str:
    """The format by content: one JSON document (iKAT `turns`, else CONE-RAG's turn map) or
    JSON Lines (a `turn_id` line: iKAT 2025; an `answer` line: TREC RAG). `text`: the file's,
    read already."""
    text = _text(path, text)
    if not text.strip():
        raise InputError(path, "empty file: no responses")
    document = jsonl.document(text, path)
    # a one-line JSON Lines file is one JSON document too: these keys say it is a response line
    if isinstance(document, dict) and not (IKAT_2025_KEYS | TREC_RAG_KEYS) & set(document) \
            and not NUGGETIZER_KEYS <= set(document):
        return "ikat-json" if "turns" in document else "cone-rag-json"
    first, entry = jsonl.first_line(line + "\n" for line in text.split("\n"))
    line = first.count("\n")  # of the first non-blank line
    if looks_like_run_line(first.split()):
        raise InputError(path, "this looks like a TREC run ('qid Q0 docid rank score tag'), not responses: responses "
                               "eval scores what a system answers (`harness eval` scores a ranking)", line=line)
    if isinstance(entry, json.JSONDecodeError):
        raise InputError(path, f"neither one JSON document nor JSON Lines: {entry.msg} (column {entry.colno})",
                         line=line)
    if isinstance(entry, dict) and IKAT_2025_KEYS & set(entry):
        return "ikat-2025-jsonl"
    if isinstance(entry, dict) and TREC_RAG_KEYS & set(entry):  # the reader names a missing field
        return "trec-rag-jsonl"
    if isinstance(entry, dict) and NUGGETIZER_KEYS <= set(entry):
        raise InputError(path, f"this looks like a nugget bank (nuggetizer's {{qid, nuggets}} lines), not responses: "
                               f"{GIVE_BANK}", line=line)
    raise InputError(path, "not a response format: expected an iKAT run (turns / turn_id), a TREC RAG answer "
                           "line (answer) or a CONE-RAG {turn: {run: response}} file", line=line)


def read_responses(path: str | Path, format: str | None = None) -> list[ResponseRun]:
    """The runs in one file (CONE-RAG files hold several). `harness run`'s record of a run is refused
    first, in any format: read as one, it drew that format's schema errors about a record. The file is
    read once, for that check, the format's detection and its reader: a pipe (`/dev/stdin`, `<(...)`)
    gives its bytes once. A plug-in format's reader reads the file itself, after the check has read it."""
    path = Path(path)
    if format is not None and format not in _TEXT_READERS:
        _refuse_record(path, recorded_run_of(path))
        runs = FORMATS.get(format)(path)
    else:
        text = read_input(path, encoding="utf-8")  # a byte-order mark kept: each reader says what it makes of one
        # recorded_run reads bytes: the text encoded only where it may be a record (it holds the key)
        _refuse_record(path, recorded_run(text.encode()) if '"hashes"' in text else None)
        runs = _TEXT_READERS[format or detect_format(path, text)](path, text)
    if not any(run.responses for run in runs):  # `{}` or `{"turns": []}`: not a run of zeros
        raise InputError(path, "holds no response: nothing to evaluate")
    return runs


def _refuse_record(path: Path, record: RunRecord | None) -> None:
    if record is not None:
        raise InputError(path, not_a_run(record, path, None, "responses") + ": responses eval scores what a system "
                               "answers (`harness eval` scores its run)")


def _add(responses: dict[str, Response], response: Response, path: Path) -> None:
    if response.turn in responses:
        first = responses[response.turn].line
        raise InputError(path, f"turn {response.turn} is answered twice"
                               + (f" (first on line {first})" if first else ""), line=response.line,
                         record=None if response.line else f"turn {response.turn}")
    responses[response.turn] = response


TOP_PROVENANCE = 5  # the passages an iKAT response marking none `used` cites


def _top(provenance: tuple[PassageProvenance, ...]) -> list[PassageProvenance]:
    """The TOP_PROVENANCE best passages: a repeat dropped (its first entry kept, as to-trec keeps
    it), then trec_eval's order on the 32-bit scores the format stores, as its reader keeps them
    (score descending, ties by id descending), not the list's order, which the official validator
    only warns about."""
    first = {p.id: p for p in reversed(provenance)}  # reversed: the first entry of an id wins
    ranked = canonical_order((pid, p.score) for pid, p in first.items())
    return [first[pid] for pid, _ in ranked[:TOP_PROVENANCE]]


@_reads_text("ikat-json")
def read_ikat_json(path: Path, text: str | None = None) -> list[ResponseRun]:
    """An iKAT 2023/2024 run: one JSON object, each turn's response of rank 1 scored, citing its used passages."""
    from harness.ikat.validate import read_submission

    submission, year = read_submission(path, text=text)
    responses: dict[str, Response] = {}
    for turn in submission.turns:
        if not turn.responses:
            raise InputError(path, "responses: the turn has no response", record=f"turn {turn.turn_id}")
        best = min(turn.responses, key=lambda r: r.rank)
        used = [p for p in best.passage_provenance if p.used] or _top(best.passage_provenance)
        sentence = Sentence(best.text, tuple(dict.fromkeys(p.id for p in used)))
        _add(responses, Response(turn.turn_id, best.text, (sentence,), {p.id: p.text for p in used if p.text},
                                 cites_top=bool(used) and not any(p.used for p in used)), path)
    return [ResponseRun(submission.run_name or file_stem(path), path, f"ikat-{year}-json", responses)]


def _lines(path: Path, text: str | None) -> list[tuple[int, Any]]:
    from harness.ikat.validate import decode_lines

    entries = decode_lines(_text(path, text))
    for line, entry in entries:
        if isinstance(entry, json.JSONDecodeError):
            raise jsonl.invalid(path, entry, line)
        if not isinstance(entry, dict):
            raise InputError(path, "the line must be a JSON object", line=line)
    return entries


def _answer(turn: str, sentences: list[Sentence], line: int, dropped: int = 0, question: str | None = None) -> Response:
    """An answer given as sentences (TREC RAG's `answer`, iKAT 2025's `responses`): its text is
    the sentences joined by one space, as nuggetizer joins them, each sentence keeping its own
    citations for support."""
    return Response(turn, " ".join(s.text for s in sentences), tuple(sentences), line=line, dropped=dropped,
                    question=question)


@_reads_text("ikat-2025-jsonl")
def read_ikat_2025(path: Path, text: str | None = None) -> list[ResponseRun]:
    """An iKAT 2025 run: JSON lines, a turn's answer a line, the pieces the validator keeps within 250 words."""
    from harness.ikat.checks import CHECKS, Context
    from harness.ikat.checks_2025 import is_score_map, kept_responses

    entries = _lines(path, text)
    context = Context(2025, {}, entries=entries)
    for name in ("metadata", "references", "responses", "turn-repeated"):
        finding = next((f for f in CHECKS.get(name).run(context) if f.level == "error"), None)
        if finding is not None:
            raise InputError(path, f"{name}: {finding.message}", line=finding.line)
    responses: dict[str, Response] = {}
    run_name = None
    for line, entry in entries:
        turn = entry.get("turn_id")
        if not isinstance(turn, str) or not turn:
            raise InputError(path, f"turn_id: expected the turn's id as a string, got {turn!r}", line=line)
        run_name = run_name or str(entry["metadata"]["run_id"])
        answers = entry.get("responses", [])
        if not answers:
            raise InputError(path, "responses: the turn has no response", line=line)
        kept = kept_responses(answers)  # checked above, by the responses check
        for index, piece in enumerate(answers[len(kept):], start=len(kept)):  # the pieces it leaves unchecked
            if not isinstance(piece, dict) or not isinstance(piece.get("text"), str) \
                    or not is_score_map(piece.get("citations")):
                raise InputError(path, f"responses[{index}]: expected an object {{text, citations: {{passage id: "
                                       "number}}", line=line)
        sentences = [Sentence(piece["text"], tuple(piece["citations"])) for piece in kept]
        _add(responses, _answer(turn, sentences, line, dropped=len(answers) - len(kept)), path)
    return [ResponseRun(run_name or file_stem(path), path, "ikat-2025-jsonl", responses)]


@_reads_text("trec-rag-jsonl")
def read_trec_rag(path: Path, text: str | None = None) -> list[ResponseRun]:
    """A TREC RAG 2024/2025 run: JSON lines, a topic's answer a line, its sentences citing references."""
    responses: dict[str, Response] = {}
    run_name = None
    for line, entry in _lines(path, text):
        metadata = entry.get("metadata")
        if isinstance(metadata, dict):  # 2025
            turn, run, question = metadata.get("narrative_id"), metadata.get("run_id"), metadata.get("narrative")
            turn_field, run_field, question_field = "metadata.narrative_id", "metadata.run_id", "metadata.narrative"
        else:  # 2024
            turn, run, question = entry.get("topic_id"), entry.get("run_id"), entry.get("topic")
            turn_field, run_field, question_field = "topic_id", "run_id", "topic"
        if isinstance(turn, bool) or not isinstance(turn, (str, int)) or str(turn) == "":
            raise InputError(path, f"{turn_field}: expected the topic id (a string or integer), got {turn!r}", line=line)
        if run is not None and not isinstance(run, str):
            raise InputError(path, f"{run_field}: expected a string, got {run!r}", line=line)
        if question is not None and not isinstance(question, str):
            raise InputError(path, f"{question_field}: expected the question answered (a string), got {question!r}",
                             line=line)
        if run_name is not None and run is not None and run != run_name:
            raise InputError(path, f"{run_field}: {run!r} differs from the first line's {run_name!r}; "
                                   "one file holds one run", line=line)
        run_name = run_name or run
        references = entry.get("references", [])
        if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
            raise InputError(path, "references: expected a list of passage ids (strings)", line=line)
        answer = entry.get("answer")
        if not isinstance(answer, list):
            raise InputError(path, "answer: expected a list of {text, citations} sentences", line=line)
        sentences = []
        for index, sentence in enumerate(answer):
            if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str):
                raise InputError(path, f"answer[{index}].text: expected a string", line=line)
            cited = sentence.get("citations", [])
            if not isinstance(cited, list):
                raise InputError(path, f"answer[{index}].citations: expected a list", line=line)
            ids = []
            for citation in cited:
                if isinstance(citation, int) and not isinstance(citation, bool):
                    if not 0 <= citation < len(references):
                        raise InputError(path, f"answer[{index}].citations: index {citation} is outside the "
                                               f"{len(references)} references", line=line)
                    ids.append(references[citation])
                elif isinstance(citation, str) and citation in references:
                    ids.append(citation)
                else:
                    raise InputError(path, f"answer[{index}].citations: {citation!r} is neither an index into "
                                           "references nor one of its ids", line=line)
            sentences.append(Sentence(sentence["text"], tuple(dict.fromkeys(ids))))
        _add(responses, _answer(str(turn), sentences, line, question=question or None), path)
    return [ResponseRun(run_name or file_stem(path), path, "trec-rag-jsonl", responses)]


@_reads_text("cone-rag-json")
def read_cone_rag(path: Path, text: str | None = None) -> list[ResponseRun]:
    """CONE-RAG's participant responses: one JSON object {turn: {run: response}}, several runs."""
    document = json_object(path, "{turn: {run: response}}", text)
    once(document, path, "turn")
    runs: dict[str, dict[str, Response]] = {}
    for turn, answers in document.items():
        if not isinstance(answers, dict):
            raise InputError(path, "expected an object {run: response}", record=f"turn {turn}")
        once(answers, path, "run", record=f"turn {turn}")
        for run, answer in answers.items():
            text = answer.get("response") if isinstance(answer, dict) else answer
            if isinstance(answer, dict) and text is None and {"text", "relevance"} <= set(answer):
                raise InputError(path, "this looks like a nugget bank ({turn: {nugget id: {text, relevance}}}), not "
                                       f"responses: {GIVE_BANK}", record=f"turn {turn}")
            if not isinstance(text, str):
                raise InputError(path, f"{run}: expected the response text (or an object with a string "
                                       "'response')", record=f"turn {turn}")
            runs.setdefault(run, {})[turn] = Response(turn, text, (Sentence(text),))
    return [ResponseRun(run, path, "cone-rag-json", responses) for run, responses in runs.items()]


def cited_passages(spec: str | Path, runs: Sequence[ResponseRun]) -> dict[str, str]:
    """The texts of the passages `runs` cite, from a corpus file or spec (`--passages`, the API's
    `passages=` path), as `harness judge` reads a passage: the title, where the corpus has one,
    then the contents (document_text)."""
    from harness.corpus.readers import open_documents
    from harness.corpus.segment import document_text

    wanted = {pid for run in runs for r in run.responses.values() for s in r.sentences for pid in s.citations}
    return {d.id: document_text(d) for d in open_documents(str(spec)).documents() if d.id in wanted}
