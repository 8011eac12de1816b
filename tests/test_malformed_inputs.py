"""Every reader, reached through the user's command, answers a malformed file with one line
naming the file and line, and no traceback; a byte-order mark is read away, except where the
reference tool would not: trec_eval reads it into the first query id of a run or qrels file,
and the official iKAT tools stop on it; there it is refused.

The corpus: `tests/malformed/<reader>/<case>[@<line>].<ext>`, one small text file per case
(`@<line>`: the line the error must name). The binary cases (a BOM, a byte that is not
UTF-8, compressed files) are made at test time from a good file of each reader, itself cut
from the shipped real data.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import json
import lzma
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main
from harness.paths import data_root
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS
from tests.serve_support import zipped
from tests.test_topics_malformed import shadow  # noqa: F401  (fixture)

MALFORMED = Path(__file__).parent / "malformed"
TOPIC_FILE = "cosrec/dataset/curated/conversations.jsonl"


def _head(path: Path, lines: int) -> str:
    with path.open(encoding="utf-8") as handle:
        return "".join(itertools.islice(handle, lines))


def _good_config() -> str:
    return "k: 10\nexperiments:\n  # pragmaticqa with bm25\n  - name: pqa\n    topics: pragmaticqa:val\n    strategies: [raw]\n" \
           "    retrievers: [bm25]\n    measures: [nDCG@10]\n"


def _good_corpus() -> str:
    """iKAT 2023 provenance passages as a JSONL corpus {id, contents}."""
    source = data_root() / "ikat" / "2023" / "data" / "2023_train_topics_psg_text.jsonl"
    records = [json.loads(line) for line in _head(source, 4).splitlines()]
    return "".join(json.dumps({"id": f"{r['doc_id']}:{r['passage_id']}", "contents": r["passage_text"]}) + "\n"
                   for r in records)


def _good_2025() -> str:
    """Four turns of the 2025 layout, passages and scores of the iKAT 2023 sample run."""
    sample = json.loads((data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" /
                         "sample_run.json").read_text(encoding="utf-8"))
    lines = []
    for number, turn in enumerate(sample["turns"][:4], start=1):
        passages = turn["responses"][0]["passage_provenance"]
        references = {p["id"]: p["score"] for p in passages}
        lines.append(json.dumps({"metadata": {"team_id": "harness", "run_id": "sample", "run_type": "automatic"},
                                 "turn_id": f"1-{number}", "responses": [], "references": references}))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Reader:
    """How a user reaches one reader: the command (argv given the file and a scratch folder),
    the file's extension, and a good file (text) to derive the BOM and bad-byte cases from."""

    command: Callable[[Path, Path], list[str]]
    ext: str
    good: Callable[[], str]
    place: str | None = None  # a data file the reader loads by benchmark name (shadowed)


def _tiny_run(folder: Path) -> Path:
    path = folder / "tiny.run"
    path.write_text(_head(CAST2021_DOC_RUNS[0], 20), encoding="utf-8")
    return path


READERS: dict[str, Reader] = {
    "run": Reader(lambda f, d: ["eval", "--qrels", str(CAST2021_QRELS), "--run", str(f), "--format", "json"],
                  "run", lambda: _head(CAST2021_DOC_RUNS[0], 20)),
    "qrels": Reader(lambda f, d: ["eval", "--qrels", str(f), "--run", str(_tiny_run(d)), "--format", "json"],
                    "qrel", lambda: _head(CAST2021_QRELS, 30)),
    "config": Reader(lambda f, d: ["run", str(f), "--dry-run", "--output", str(d / "runs")], "yaml", _good_config),
    "topics": Reader(lambda f, d: ["topics", "export", "cosrec-curated", "--out", str(d / "out.jsonl")], "jsonl",
                     lambda: (data_root() / TOPIC_FILE).read_text(encoding="utf-8"), place=TOPIC_FILE),
    "ikat2025": Reader(lambda f, d: ["ikat", "to-trec", str(f), "--out", str(d / "out.run"), "--ptkb-out",
                                     str(d / "out.ptkb.run")], "jsonl", _good_2025),
    "corpus": Reader(lambda f, d: ["segment", str(f), "--out", str(d / "out.jsonl"), "--splitter", "fast",
                                   "--processes", "1"], "jsonl", _good_corpus),
    "votes": Reader(lambda f, d: ["arena", "--votes", str(f), "--bootstrap", "10"], "csv",
                    lambda: _head(data_root() / "crsarena" / "votes_open.csv", 12)),
}

CASES = sorted(
    (reader.name, case) for reader in MALFORMED.iterdir() if reader.is_dir() for case in sorted(reader.iterdir())
)


def _expected_line(case: Path) -> int | None:
    _, at, line = case.name.split(".")[0].partition("@")
    return int(line) if at else None


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _place(tmp_path: Path, reader: Reader, content: bytes, shadow, name: str = "input") -> Path:  # noqa: F811
    """Write the input where the reader will read it: a scratch file, or over a shadowed data file."""
    if reader.place:
        _, target = shadow(reader.place)
    else:
        target = tmp_path / "in" / f"{name}.{reader.ext}"
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return target


def assert_one_line_error(code: int, err: str, path: Path, line: int | None) -> None:
    errors = [text for text in err.splitlines() if text.startswith("harness ") and ": error: " in text]
    assert code == 2 and len(errors) == 1, err
    assert "Traceback" not in err
    where = f"{path}:{line}:" if line is not None else str(path)
    assert where in errors[0], errors[0]


def test_the_corpus_covers_every_reader():
    assert {reader for reader, _ in CASES} == set(READERS)


@pytest.mark.parametrize(("reader", "case"), CASES, ids=[f"{r}/{c.name}" for r, c in CASES])
def test_malformed_input_is_one_line_naming_file_and_line(reader, case, tmp_path, capsys, shadow):  # noqa: F811
    spec = READERS[reader]
    path = _place(tmp_path, spec, case.read_bytes(), shadow)
    code, _, err = _run(spec.command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, _expected_line(case))


BOM_REFUSED = ("run", "qrels", "ikat2025")


@pytest.mark.parametrize("reader", BOM_REFUSED)
def test_a_byte_order_mark_is_refused_where_the_reference_tool_refuses_it(reader, tmp_path, capsys, shadow):  # noqa: F811
    spec = READERS[reader]
    path = _place(tmp_path, spec, b"\xef\xbb\xbf" + spec.good().encode("utf-8"), shadow)
    code, _, err = _run(spec.command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 1)
    assert "byte-order mark" in err


@pytest.mark.parametrize("reader", sorted(set(READERS) - set(BOM_REFUSED)))
def test_a_byte_order_mark_is_read_away(reader, tmp_path, capsys, shadow):  # noqa: F811
    """Same output with and without a BOM (no BOM glued to the first qid or key)."""
    spec = READERS[reader]
    good = spec.good().encode("utf-8")
    outputs = []
    for variant, content in (("plain", good), ("bom", b"\xef\xbb\xbf" + good)):
        folder = tmp_path / variant
        folder.mkdir()
        path = _place(folder, spec, content, shadow)
        code, out, err = _run(spec.command(path, folder), capsys)
        assert code == 0, err
        written = sorted(p.read_bytes() for p in folder.glob("out.*"))
        outputs.append((out.replace(str(folder), "<folder>"), written))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_bad_byte_is_reported_at_its_real_line(reader, tmp_path, capsys, shadow):  # noqa: F811
    spec = READERS[reader]
    lines = spec.good().encode("utf-8").splitlines(keepends=True)
    bad = min(len(lines), 3)  # past the first line: the old reader said line 1 whatever the line
    lines[bad - 1] = lines[bad - 1].replace(b" ", b" \xff", 1)
    path = _place(tmp_path, spec, b"".join(lines), shadow)
    code, _, err = _run(spec.command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, bad)


@pytest.mark.parametrize(("compress", "suffix"), [(gzip.compress, "gz"), (bz2.compress, "bz2")])
def test_a_bad_byte_in_a_compressed_corpus_is_reported_at_its_real_line(compress, suffix, tmp_path, capsys):
    """Far past the decoder's first 8 KB block, in a compressed file."""
    good = _good_corpus().encode("utf-8")
    lines = (good * 60).splitlines(keepends=True)
    lines = [line.replace(b'"id": "', b'"id": "%d-' % n, 1) for n, line in enumerate(lines)]
    lines[200] = lines[200].replace(b"contents", b"con\xfftents", 1)
    path = tmp_path / f"corpus.jsonl.{suffix}"
    path.write_bytes(compress(b"".join(lines)))
    code, _, err = _run(READERS["corpus"].command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 201)


ENCODED = {"gzip": (gzip.compress, "gzip-compressed"),
           "UTF-16 LE": (lambda data: data.decode("utf-8").encode("utf-16"), "UTF-16 text (byte-order mark FF FE)"),
           "UTF-16 BE": (lambda data: b"\xfe\xff" + data.decode("utf-8").encode("utf-16-be"),
                         "UTF-16 text (byte-order mark FE FF)"),
           "UTF-32 LE": (lambda data: b"\xff\xfe\x00\x00" + data.decode("utf-8").encode("utf-32-le"),
                         "UTF-32 text (byte-order mark FF FE 00 00)"),
           "UTF-32 BE": (lambda data: b"\x00\x00\xfe\xff" + data.decode("utf-8").encode("utf-32-be"),
                         "UTF-32 text (byte-order mark 00 00 FE FF)")}


@pytest.mark.parametrize("encoding", sorted(ENCODED))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_compressed_or_utf16_or_utf32_file_is_said_as_such(reader, encoding, tmp_path, capsys, shadow):  # noqa: F811
    """A gzip file without its .gz suffix or a UTF-16 or UTF-32 file is named for what it is, with
    what to do, not as a stray byte at line 1 (UTF-32 LE's byte-order mark starts as UTF-16 LE's)."""
    spec, (encode, said) = READERS[reader], ENCODED[encoding]
    path = _place(tmp_path, spec, encode(spec.good().encode("utf-8")), shadow)
    code, _, err = _run(spec.command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 1)
    assert f"{said}, not UTF-8 text: " in err and "byte 0x" not in err


@pytest.mark.parametrize(("compress", "said"), [
    (bz2.compress, "bzip2-compressed, not UTF-8 text: rename it run.bz2, which is read decompressed"),
    (zipped, "zip-compressed, not UTF-8 text: decompress it (only .gz and .bz2 files are read decompressed)"),
], ids=["bzip2", "zip"])
def test_a_compressed_run_whose_first_line_decodes_is_said_as_such(tmp_path, capsys, compress, said):
    """A bzip2 or zip header can hold a newline before any byte that is not UTF-8 (1 run in 100
    or so): the file's start names it, not the stray byte on line 2."""
    lines = CAST2021_DOC_RUNS[0].read_bytes().splitlines(keepends=True)
    packed = (compress(b"".join(lines[:count])) for count in range(1, len(lines)))
    first_lines = ((data, data.split(b"\n", 1)[0]) for data in packed)
    data = next(data for data, first in first_lines if first.decode("utf-8", "replace").encode("utf-8") == first)
    path = tmp_path / "run"
    path.write_bytes(data)
    code, _, err = _run(READERS["run"].command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 1)
    assert f"{path}:1: {said}" in err


def test_a_text_run_starting_with_bzip2_s_letters_is_told_its_bad_byte_not_called_compressed(tmp_path, capsys):
    """bzip2's magic begins with the letters BZh, as a query id may: a file is called bzip2 only
    when its whole header is there."""
    path = tmp_path / "run"
    path.write_bytes(b"BZh1 Q0 d1 1 2.0 r\nBZh1 Q0 d2 2 1.0 r\nBZh1 Q0 d\xe9 3 0.5 r\n")
    code, _, err = _run(READERS["run"].command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 3)
    assert "not UTF-8 text (byte 0xe9 at column 10)" in err and "compressed" not in err


_DECOMPRESS_ONCE = "it was compressed twice: decompress it once and"


@pytest.mark.parametrize(("name", "compress", "said"), [
    ("run", bz2.compress, "bzip2-compressed, not UTF-8 text: rename it run.bz2, which is read decompressed"),
    ("run", lzma.compress, "xz-compressed, not UTF-8 text: decompress it (only .gz and .bz2 files are read "
                           "decompressed)"),
    ("twice.run.gz", lambda data: gzip.compress(gzip.compress(data)),
     f"gzip-compressed, not UTF-8 text: {_DECOMPRESS_ONCE} keep the .gz"),
    ("twice.run.gz", lambda data: gzip.compress(bz2.compress(data)),
     f"bzip2-compressed, not UTF-8 text: {_DECOMPRESS_ONCE} name it twice.run.bz2"),
], ids=["bzip2", "xz", "gzip-twice", "bzip2-in-gz"])
def test_a_compressed_run_is_said_as_such_with_how_to_read_it(tmp_path, capsys, name, compress, said):
    """Every format the hosted board names (harness.errors.not_text), with what makes it readable
    here: a suffix read decompressed, or decompressing it (once, when it was compressed twice)."""
    path = tmp_path / name
    path.write_bytes(compress(_head(CAST2021_DOC_RUNS[0], 20).encode("utf-8")))
    code, _, err = _run(READERS["run"].command(path, tmp_path), capsys)
    assert_one_line_error(code, err, path, 1)
    assert f"{path}:1: {said}" in err


@pytest.mark.parametrize("qrels, run", [("q1 0 d1 1\n", "q1 Q0 d1 {long} 3 r\n"),  # a rank
                                        ("q1 0 d1 1\n", "q1 Q0 d1 1 {long} r\n"),  # a score
                                        ("q1 0 d1 {long}\n", "q1 Q0 d1 1 3 r\n"),  # a grade
                                        ("q1 0 d1 1\n", "q1 Q0 {long} 1 3 r\n")],  # a run of unjudged documents
                         ids=["rank", "score", "grade", "unjudged docid"])
def test_a_message_quotes_a_long_field_cut_not_whole(tmp_path, capsys, qrels, run):
    """A field of a million characters made a message of a million characters (50 MB to the terminal)."""
    long = "x" * 100_000
    (tmp_path / "q.txt").write_text(qrels.format(long=long))
    (tmp_path / "r.run").write_text(run.format(long=long))
    main(["eval", "--qrels", str(tmp_path / "q.txt"), str(tmp_path / "r.run")])
    err = capsys.readouterr().err
    assert "'xxxxxxxx" in err and "... (100002 characters)" in err and len(err) < 1000, err[:300]


def test_a_message_quotes_an_id_of_a_real_length_whole(tmp_path, capsys):
    """Real ids run past 80 characters (a derived qrels' 84): a warning comparing the run's ids with the
    qrels' cut at 80 would hide what tells them apart."""
    docid = "c12ccee1-0998-4bca-b5a7-991a4e51752d:" * 2 + "passage-2"
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.run").write_text(f"q1 Q0 {docid} 1 3 r\n")
    assert main(["eval", "--qrels", str(tmp_path / "q.txt"), str(tmp_path / "r.run")]) == 0
    assert f"the run ranks {docid!r} first; the qrels judge 'd1'" in capsys.readouterr().err
