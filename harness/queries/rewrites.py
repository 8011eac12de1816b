"""`rewrites:FILE`: rewrites made elsewhere (an LLM, T5, a colleague), one per turn.

FILE is TSV (`qid<TAB>text`, no header) or JSON lines (`{"qid": ..., "text": ...}`, `.jsonl`;
`"query"` for `"text"`, as `harness topics export --format jsonl` writes it).
Each qid of the benchmark must be there exactly once: a missing, repeated or extra qid is an
error naming the file (and line), found when a config names the file. An empty rewrite is sent
as it is, an empty query, with a warning naming its line, as `manual` sends an empty official
rewrite, so that `harness topics export BENCHMARK --strategy manual` (TSV or JSONL) feeds back
unchanged. The rewrite is read for the current turn only, so this strategy cannot read a later
turn unless the file itself was made from one. The run JSON records the file and its sha256
(`inputs`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness import jsonl
from harness.errors import InputError, read_input
from harness.paths import file_sha256, home_expanded
from harness.queries import Strategy, add
from harness.queries.history import build, current
from harness.registry import Param
from harness.topics.model import Conversation, Query
from harness.trec import looks_like_header


@dataclass(frozen=True)
class RewritesFile:
    path: Path
    sha256: str
    texts: dict[str, str]
    lines: dict[str, int]  # qid -> its line, for errors found once the benchmark is known


def _records(path: Path):
    """(line number, qid, text) of a TSV or JSONL rewrites file, read as every user file is
    (a BOM read away, a bad byte named at its line)."""
    if path.suffix.lower() in {".jsonl", ".json"}:
        for number, record in jsonl.read(path):
            if isinstance(record, dict) and "text" in record and "query" in record:  # (which is the rewrite?)
                raise InputError(path, 'found both "text" and "query": give the rewrite as one of them', line=number)
            text = record.get("text", record.get("query")) if isinstance(record, dict) else None  # (export's key)
            if not isinstance(record, dict) or not isinstance(record.get("qid"), str) or not isinstance(text, str):
                raise InputError(path, 'expected {"qid": "...", "text": "..."} ("query" for "text", as '
                                 "`harness topics export --format jsonl` writes, is read too)", line=number)
            yield number, record["qid"], text
        return
    for number, line in enumerate(read_input(path).split("\n"), start=1):  # lines end at '\n' only
        if not line.strip():
            continue
        qid, tab, text = line.partition("\t")
        if not tab or not qid.strip():
            raise InputError(path, "expected 'qid<TAB>text'", line=number)
        if "\t" in text.rstrip():  # a third column would silently become part of the query
            raise InputError(path, f"expected 'qid<TAB>text', found {line.count(chr(9)) + 1} tab-separated fields",
                             line=number)
        yield number, qid.strip(), text


@lru_cache(maxsize=8)
def _read(path: Path, stamp: tuple[int, int]) -> RewritesFile:
    """The file's rewrites, parsed once per version of the file (its empty ones are warned of
    by the stream that sends them, `Rewrites.empty`)."""
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, qid, text in _records(path):
        if qid in texts:
            raise InputError(path, f"qid {qid!r} appears twice", line=number)
        texts[qid] = " ".join(text.split())
        lines[qid] = number
    return RewritesFile(path, file_sha256(path), texts, lines)


def load(file: str) -> RewritesFile:
    path = home_expanded(file)  # `rewrites:~/x.tsv`, as a config's paths read `~`
    try:
        stat = os.stat(path)
    except OSError:
        raise InputError(path, "no such rewrites file") from None
    return _read(path.resolve(), (stat.st_mtime_ns, stat.st_size))


class Rewrites(Strategy):
    def query(self, conversation: Conversation, turn_index: int, file: str) -> Query:
        rewrites = load(file)
        turn = current(conversation, turn_index)
        if turn.qid not in rewrites.texts:
            raise InputError(rewrites.path, f"no rewrite for turn {turn.qid}")
        return build(conversation, turn_index, [rewrites.texts[turn.qid]])

    def check(self, file: str) -> None:
        load(file)

    def empty(self, qid: str, file: str) -> str:
        rewrites = load(file)
        return (f"{rewrites.path}:{rewrites.lines[qid]}: qid {qid!r} has an empty rewrite, so the query is empty and "
                "retrieves nothing (sent as it is, as `manual` sends an empty official rewrite)")

    def check_topics(self, conversations: Sequence[Conversation], file: str) -> None:
        """Every turn has a rewrite and every rewrite is a turn's, checked when a config names the
        file (so the error names its key) and before any query is built."""
        rewrites = load(file)
        qids = {turn.qid: None for conversation in conversations for turn in conversation.turns}  # in turn order
        extra = sorted(set(rewrites.texts) - set(qids))
        header = next((qid for qid in extra if rewrites.lines[qid] == 1), None)
        if header is not None and looks_like_header([header, *rewrites.texts[header].split()]):
            raise InputError(rewrites.path, f"looks like a header row ({header + ' ' + rewrites.texts[header]!r}); "
                                            "rewrites files have none: delete it", line=1)
        if missing := next((qid for qid in qids if qid not in rewrites.texts), None):
            raise InputError(rewrites.path, f"no rewrite for turn {missing}")
        if extra:
            raise InputError(rewrites.path, f"{len(extra)} qid(s) are not turns of this benchmark, e.g. {extra[0]!r}")

    def inputs(self, file: str) -> dict:
        rewrites = load(file)
        return {"rewrites_file": str(rewrites.path), "sha256": rewrites.sha256}


add(Rewrites("rewrites", "rewrites made elsewhere (an LLM, T5, a colleague), one per turn, read from FILE", [
    Param("FILE", str, desc="a file of rewrites, TSV 'qid<TAB>text' or JSON lines {\"qid\", \"text\"} "
          "(or \"query\", as topics export writes)")]))
