"""`harness ikat validate` and `to-trec` against the official iKAT tools themselves.

The official 2023/2024 validators (main.py: gRPC + protobuf), the 2025 validator and
`generate_run.py` run from a temporary copy of ../shared/reference/ikat-official, their
protobuf code generated here with grpcio-tools. Their passage-id gRPC service (which needs
the ClueWeb22 hash database) is replaced by a local one on 127.0.0.1 that knows the shipped
iKAT passages; the harness is given the same ids with `passages=`.

Inputs: the official sample runs, a complete valid run built from the topics and shipped
passages, and broken variants of it, one per rule. Verdicts and warning counts must be
equal, except on the variants marked as deliberate differences (each documented in its
check and in the README), where the difference itself is asserted.
"""

from __future__ import annotations

import copy
import json
import math
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.ikat.convert import to_trec
from harness.ikat.submission import FLOAT32_MAX, build_submission, write_submission
from harness.ikat.validate import CHECKS, read_passage_ids, validate_file
from harness.paths import data_root
from harness.topics.ikat import passages_path, read_topics, topics_path
from harness.cli import main
from harness.trec import read_run
from tests.conftest import qrels_root, reference_dir, saturated_ikat2024_run

pytestmark = [pytest.mark.reference, pytest.mark.slow]

SAMPLES = {
    2023: sorted((data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data").glob("*.json")),
    2024: sorted((data_root() / "ikat" / "2024" / "scripts" / "run_validation" / "tests" / "data").glob("*.json")),
}
QRELS = {2023: qrels_root() / "ikat" / "2023-qrels.all-turns.txt", 2024: qrels_root() / "ikat" / "2024-qrels.txt"}
TOPICS = {year: read_topics(topics_path(year)) for year in (2023, 2024, 2025)}

# Runs main.validate on each file, in one process per year, with the gRPC passage service
# replaced by a local one on 127.0.0.1 over the ids in argv[1]; argv[2] is the topics folder,
# argv[3] the result file, the rest the runs. Per run: exit code and logged warnings/errors.
DRIVER = '''
import json, logging, os, sys
from concurrent import futures
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "compiled_protobufs")]
import grpc
import passage_validator_pb2 as pb
import passage_validator_pb2_grpc as pb_grpc
import main

known = set(open(sys.argv[1]).read().split())

class LocalPassages(pb_grpc.PassageValidatorServicer):
    def validate_passages(self, request, context):
        return pb.PassageValidationResult(
            passage_validations=[pb.PassageValidation(is_valid=pid in known) for pid in request.passage_ids])

server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
pb_grpc.add_PassageValidatorServicer_to_server(LocalPassages(), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
main.get_stub = lambda *a, **k: pb_grpc.PassageValidatorStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
main.logger.handlers = [h for h in main.logger.handlers if not isinstance(h, logging.StreamHandler)
                        or isinstance(h, logging.FileHandler)]

class Count(logging.Handler):
    def __init__(self):
        super().__init__()
        self.levels = []
    def emit(self, record):
        self.levels.append(record.levelname)

results = {}
for path in sys.argv[4:]:
    counter = Count()
    main.logger.handlers = [counter]
    try:
        main.validate(path, sys.argv[2], 2000, False, 10.0)
        code = 0
    except SystemExit as stop:
        code = stop.code
    for handler in main.logger.handlers:
        handler.close()
    results[path] = {"exit": code, "warnings": counter.levels.count("WARNING"),
                     "errors": counter.levels.count("ERROR")}
server.stop(None)
json.dump(results, open(sys.argv[3], "w"))
'''


@pytest.fixture(scope="module")
def shipped_passages() -> frozenset[str]:
    return read_passage_ids(str(passages_path("test"))) | read_passage_ids(str(passages_path("train")))


def marked(check: str) -> bool:
    """The check's docstring declares its deliberate difference from the official tools."""
    return "Deliberate difference" in (CHECKS.get(check).run.__doc__ or "")


def official_copy(tmp_path: Path, year: int) -> Path:
    """The year's run_validation folder, with its protobuf code generated."""
    folder = tmp_path / f"official-{year}"
    shutil.copytree(reference_dir("ikat-official", str(year), "scripts", "run_validation"), folder)
    compiled = folder / "compiled_protobufs"
    compiled.mkdir(exist_ok=True)
    protos = sorted(p.name for p in (folder / "protocol_buffers").glob("*.proto"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "--proto_path=protocol_buffers",
                    "--python_out=compiled_protobufs", "--grpc_python_out=compiled_protobufs", *protos],
                   cwd=folder, check=True, capture_output=True)
    (compiled / "__init__.py").touch()
    return folder


def official_verdicts(folder: Path, year: int, runs: list[Path], known: frozenset[str]) -> dict[str, dict]:
    (folder / "known_ids.txt").write_text("\n".join(sorted(known)))
    (folder / "_driver.py").write_text(DRIVER)
    result = folder / "verdicts.json"
    done = subprocess.run(
        [sys.executable, "_driver.py", "known_ids.txt", str(topics_path(year).parent), str(result), *map(str, runs)],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(result.read_text())


# --- a complete valid run, and broken variants of it ---------------------------------------


def base_run(year: int, known: frozenset[str]) -> dict:
    """Every test turn answered by two responses citing shipped passages (with tied scores,
    so that generate_run.py's tie order matters), and a PTKB statement of the topic."""
    rng = random.Random(year)
    ids = sorted(known)
    turns = []
    for conversation in TOPICS[year]:
        statement = conversation.personal[0] if conversation.personal else None
        for turn in conversation.turns:
            responses = []
            for rank in (1, 2):
                scores = sorted((rng.choice([4.0, 3.0, 3.0, 1.5]) for _ in range(4)), reverse=True)
                passages = [{"id": pid, "text": "", "score": score, "used": i == 0}
                            for i, (pid, score) in enumerate(zip(rng.sample(ids, 4), scores))]
                if statement is None:
                    ptkb = []
                elif year == 2023:
                    ptkb = [{"id": statement.id, "text": statement.text, "score": 1.0}]
                else:
                    ptkb = [int(statement.id)]
                responses.append({"rank": rank, "text": "An answer.", "passage_provenance": passages,
                                  "ptkb_provenance": ptkb})
            turns.append({"turn_id": turn.qid, "responses": responses})
    run = {"run_name": "base", "run_type": "automatic", "turns": turns}
    if year == 2024:
        run["eval_response"] = True
    return run


Edit = Callable[[dict], None]


def _at(*path, value=None, delete=False) -> Edit:
    def edit(run: dict) -> None:
        target = run
        for key in path[:-1]:
            target = target[key]
        if delete:
            del target[path[-1]]
        else:
            target[path[-1]] = copy.deepcopy(value)

    return edit


R0 = ("turns", 0, "responses", 0)
P0 = (*R0, "passage_provenance", 0)


def _each_passage(change: Callable[[dict], None]) -> Edit:
    def edit(run: dict) -> None:
        for turn in run["turns"]:
            for response in turn["responses"]:
                for passage in response["passage_provenance"]:
                    change(passage)

    return edit


def _swap_scores(run: dict) -> None:
    passages = run["turns"][0]["responses"][0]["passage_provenance"]
    passages[0]["score"], passages[-1]["score"] = 0.5, 9.0


def _many_passages(run: dict) -> None:
    passages = run["turns"][0]["responses"][0]["passage_provenance"]
    passages.extend({**passages[-1], "id": f"{passages[-1]['id']}{i}"} for i in range(1001 - len(passages)))


def _duplicate_turn(run: dict) -> None:
    run["turns"][1]["turn_id"] = run["turns"][0]["turn_id"]


def _drop_turn(run: dict) -> None:
    del run["turns"][-1]


def _renamed_fields(run: dict) -> None:
    for turn in run["turns"]:
        turn["turnId"] = turn.pop("turn_id")


def _ptkb_scores_up(run: dict) -> None:
    """Statements 1 and 2 of the first turn's topic, the second scored higher (2023)."""
    topic = next(c for c in TOPICS[2023] if c.id == run["turns"][0]["turn_id"].rpartition("_")[0])
    texts = {s.id: s.text for s in topic.personal}
    run["turns"][0]["responses"][0]["ptkb_provenance"] = [
        {"id": "1", "text": texts["1"], "score": 1.0}, {"id": "2", "text": texts["2"], "score": 2.0}]


def _bad_ids(passage: dict) -> None:
    passage["id"] = "x"


def _both_spellings(run: dict) -> None:
    """turn_id, then turnId: json_format reads the object in order, so the later one counts."""
    run["turns"][0]["turnId"] = "bogus_1"


# (name, years, edit, deliberate difference: the harness check that marks it, or None)
VARIANTS: list[tuple[str, tuple[int, ...], Edit, str | None]] = [
    ("no-run-name-field", (2023, 2024), _at("run_name", delete=True), None),
    ("no-turns-field", (2023, 2024), _at("turns", delete=True), None),
    ("empty-run-name", (2023, 2024), _at("run_name", value=""), None),
    ("empty-run-type", (2023, 2024), _at("run_type", value=""), None),
    ("unknown-run-type", (2023, 2024), _at("run_type", value="semi-automatic"), None),
    ("only-response-run-type", (2023, 2024), _at("run_type", value="only_response"), None),
    ("zero-turns", (2023, 2024), _at("turns", value=[]), None),
    ("turn-dropped", (2023, 2024), _drop_turn, None),
    ("turn-id-malformed", (2023, 2024), _at("turns", 0, "turn_id", value="9-1-1"), None),
    ("turn-id-null", (2023, 2024), _at("turns", 0, "turn_id", value=None), None),
    ("turn-number-out-of-range", (2023, 2024), _at("turns", 0, "turn_id", value="X_99"), None),
    ("turn-repeated", (2023, 2024), _duplicate_turn, "turn-id-unique"),
    ("unknown-field", (2023, 2024), _at("turns", 0, "colour", value="red"), None),
    ("camel-case-fields", (2023, 2024), _renamed_fields, None),
    ("rank-0", (2023, 2024), _at(*R0, "rank", value=0), None),
    ("rank-null", (2023, 2024), _at(*R0, "rank", value=None), None),
    ("rank-missing", (2023, 2024), _at(*R0, "rank", delete=True), None),
    ("rank-negative", (2023, 2024), _at(*R0, "rank", value=-1), None),
    ("rank-string", (2023, 2024), _at(*R0, "rank", value="1"), None),
    ("rank-underscore-string", (2023, 2024), _at(*R0, "rank", value="1_0"), "response-rank"),
    ("rank-spaced-string", (2023, 2024), _at(*R0, "rank", value=" 1"), None),
    ("rank-fraction", (2023, 2024), _at(*R0, "rank", value=1.5), None),
    ("rank-true", (2023, 2024), _at(*R0, "rank", value=True), None),
    ("rank-too-large", (2023, 2024), _at(*R0, "rank", value=2**31), None),
    ("ranks-decreasing", (2023, 2024), _at("turns", 0, "responses", 1, "rank", value=1), "response-rank"),
    ("text-empty", (2023, 2024), _at(*R0, "text", value=""), None),
    ("text-number", (2023, 2024), _at(*R0, "text", value=5), None),
    ("score-true", (2023, 2024), _at(*P0, "score", value=True), None),
    ("score-string", (2023, 2024), _at(*P0, "score", value="9.5"), None),
    ("score-spaced-string", (2023, 2024), _at(*P0, "score", value=" 9.5"), None),
    ("score-word", (2023, 2024), _at(*P0, "score", value="abcdef"), None),
    ("score-quoted-nan", (2023, 2024), _at(*P0, "score", value="NaN"), "schema"),
    ("score-above-1e9", (2023, 2024), _at(*P0, "score", value=2e9), "passage-score-order"),
    ("score-too-large", (2023, 2024), _at(*P0, "score", value=1e39), None),
    ("scores-increasing", (2023, 2024), _swap_scores, None),
    ("score-null", (2023, 2024), _at(*P0, "score", value=None), None),
    ("passage-id-no-prefix", (2023, 2024), _at(*P0, "id", value="msmarco_1:2"), None),
    ("passage-id-two-colons", (2023, 2024), _at(*P0, "id", value="clueweb22-en0000-32-08101:1:2"), None),
    ("passage-id-unknown", (2023, 2024), _at(*P0, "id", value="clueweb22-en0000-00-00000:1"), None),
    ("passage-null", (2023, 2024), _at(*P0, value=None), None),
    ("used-none", (2023, 2024), _at(*P0, "used", value=False), None),
    ("used-number", (2023, 2024), _at(*P0, "used", value=1), None),
    ("passages-empty", (2023, 2024), _at(*R0, "passage_provenance", value=[]), None),
    ("passages-1001", (2023, 2024), _many_passages, None),
    ("too-many-warnings", (2023, 2024), _each_passage(_bad_ids), None),
    ("ptkb-empty", (2023, 2024), _at(*R0, "ptkb_provenance", value=[]), None),
    ("ptkb-unknown-2023", (2023,), _at(*R0, "ptkb_provenance", 0, "id", value="99"), None),
    ("ptkb-empty-id-2023", (2023,), _at(*R0, "ptkb_provenance", 0, "id", value=""), None),
    ("ptkb-text-2023", (2023,), _at(*R0, "ptkb_provenance", 0, "text", value="I like tea."), None),
    ("ptkb-score-order-2023", (2023,), lambda run: _ptkb_scores_up(run), None),
    ("ptkb-score-above-1e9-2023", (2023,), _at(*R0, "ptkb_provenance", 0, "score", value=2e9), "ptkb-score-order"),
    ("ptkb-unknown-2024", (2024,), _at(*R0, "ptkb_provenance", value=[99]), None),
    ("ptkb-zero-2024", (2024,), _at(*R0, "ptkb_provenance", value=[0]), "ptkb-id"),
    ("ptkb-string-2024", (2024,), _at(*R0, "ptkb_provenance", value=["1"]), None),
    ("ptkb-spaced-string-2024", (2024,), _at(*R0, "ptkb_provenance", value=[" 1"]), None),
    ("eval-response-word-2024", (2024,), _at("eval_response", value="yes"), None),
    ("text-unpaired-surrogate", (2023, 2024), _at(*R0, "text", value="\ud800"), None),
    ("turn-id-both-spellings", (2023, 2024), _both_spellings, None),
    ("score-integer-beyond-any-float", (2023, 2024), _at(*P0, "score", value=10**400), None),
    ("score-quoted-float32-max", (2023, 2024), _at(*P0, "score", value="3.4028235e38"), "passage-score-order"),
    ("turn-number-leading-zero", (2023, 2024),
     lambda run: run["turns"][0].update(turn_id=run["turns"][0]["turn_id"].replace("_", "_0")), "turn-id-known"),
    ("response-empty-list", (2023, 2024), _at("turns", 0, "responses", 0, value=[]), "schema"),
    ("passage-empty-string", (2023, 2024), _at(*P0, value=""), "schema"),
]


@pytest.mark.parametrize("year", [2023, 2024])
def test_validator_verdicts_and_warning_counts_equal_the_official_validator(tmp_path, shipped_passages, year):
    folder = official_copy(tmp_path, year)
    base = base_run(year, shipped_passages)
    files: dict[Path, str | None] = {}
    (tmp_path / "runs").mkdir()
    for sample in SAMPLES[year]:
        files[Path(shutil.copy(sample, tmp_path / "runs" / f"sample-{sample.name}"))] = None
    (tmp_path / "runs" / "base.json").write_text(json.dumps(base))
    files[tmp_path / "runs" / "base.json"] = None
    for name, years, edit, deliberate in VARIANTS:
        if year in years:
            run = copy.deepcopy(base)
            edit(run)
            path = tmp_path / "runs" / f"{name}.json"
            path.write_text(json.dumps(run))
            files[Path(path)] = deliberate
    official = official_verdicts(folder, year, list(files), shipped_passages)

    rows, same, differences = [], 0, []
    for path, deliberate in files.items():
        theirs = official[str(path)]
        their_ok = theirs["exit"] in (0, None) and theirs["errors"] == 0
        report = validate_file(path, TOPICS[year], year, passages=shipped_passages)
        verdict_equal = report.ok == their_ok
        warnings_equal = not (report.ok and their_ok) or len(report.warnings) == theirs["warnings"]
        rows.append(f"{path.stem}: harness ok={report.ok} warnings={len(report.warnings)}; "
                    f"official ok={their_ok} warnings={theirs['warnings']}")
        if deliberate is None:
            assert verdict_equal and warnings_equal, (rows[-1], [str(f) for f in report.findings][:5])
            same += 1
        else:
            # a marked difference: it is real, and the check's docstring says so
            assert not (verdict_equal and warnings_equal), rows[-1]
            assert marked(deliberate), deliberate
            differences.append(path.stem)
    assert files[tmp_path / "runs" / "base.json"] is None and official[str(tmp_path / "runs" / "base.json")]["exit"] == 0
    print(f"\niKAT {year}: {len(files)} files, {same} equal, deliberate differences: {', '.join(differences)}")
    assert len(files) - len(SAMPLES[year]) - 1 >= 40


@pytest.mark.parametrize("year", [2023, 2024])
def test_a_written_submission_holds_no_score_beyond_a_32_bit_float(tmp_path, shipped_passages, year):
    """run.proto stores scores as 32-bit floats and protobuf refuses the whole file for one
    beyond them, which a TREC run given to from-trec may hold: the largest is written and
    validates; a larger one is an error naming turn and passage, and nothing is written."""
    folder = official_copy(tmp_path, year)
    first, second = sorted(shipped_passages)[:2]
    rankings = {turn.qid: [(first, FLOAT32_MAX), (second, 1.0)] for c in TOPICS[year] for turn in c.turns}
    fits = tmp_path / "fits.json"
    write_submission(fits, build_submission(rankings, {}, run_name="r", conversations=TOPICS[year]), year)
    turn = next(iter(rankings))
    beyond = build_submission({**rankings, turn: [(first, 3.4028235e38)]}, {}, run_name="r", conversations=TOPICS[year])
    with pytest.raises(HarnessError, match=f"turn {turn}: passage {first} scores 3.40282e\\+38, not a finite 32-bit"):
        write_submission(tmp_path / "beyond.json", beyond, year)
    no_number = build_submission({**rankings, turn: [(first, math.nan)]}, {}, run_name="r", conversations=TOPICS[year])
    with pytest.raises(HarnessError, match=f"turn {turn}: passage {first} scores nan, not a finite 32-bit"):
        write_submission(tmp_path / "beyond.json", no_number, year)  # from Python: the CLI's run reader refuses it
    assert not (tmp_path / "beyond.json").exists()
    refused = tmp_path / "refused.json"  # the written file with that one score
    refused.write_text(fits.read_text().replace(json.dumps(FLOAT32_MAX), json.dumps(3.4028235e38), 1))
    verdicts = official_verdicts(folder, year, [fits, refused], shipped_passages)
    assert (verdicts[str(fits)]["exit"], verdicts[str(refused)]["exit"]) == (0, 255)
    assert validate_file(fits, TOPICS[year], year, passages=shipped_passages).ok


# --- 2025: the JSON Lines validator -------------------------------------------------------


def base_2025(known: frozenset[str]) -> list[dict]:
    rng = random.Random(2025)
    ids = sorted(known)
    lines = []
    for conversation in TOPICS[2025]:
        for turn in conversation.turns:
            cited = rng.sample(ids, 3)
            lines.append({
                "metadata": {"team_id": "harness", "run_id": "base", "run_type": "automatic"},
                "turn_id": turn.qid,
                "references": {pid: float(3 - i) for i, pid in enumerate(cited)},
                "responses": [{"text": "An answer.", "citations": {cited[0]: 3.0}, "ptkb_provenance": []}],
            })
    return lines


Edit2025 = Callable[[list[dict]], list]


def _first(change: Callable[[dict], None]) -> Edit2025:
    def edit(lines: list[dict]) -> list:
        change(lines[0])
        return lines

    return edit


VARIANTS_2025: list[tuple[str, Edit2025, str | None]] = [
    ("metadata-missing", _first(lambda e: e.pop("metadata")), None),
    ("metadata-no-team", _first(lambda e: e["metadata"].pop("team_id")), None),
    ("run-type-unknown", _first(lambda e: e["metadata"].update(run_type="semi")), None),
    ("run-type-missing", _first(lambda e: e["metadata"].pop("run_type")), None),
    ("references-list", _first(lambda e: e.update(references=list(e["references"]))), None),
    ("reference-id-pattern", _first(lambda e: e["references"].update({"msmarco_1": 0.5})), None),
    ("reference-scores-strings", _first(lambda e: e.update(references={k: str(v) for k, v in e["references"].items()})),
     "references"),
    ("reference-scores-mixed", _first(lambda e: e["references"].update({next(iter(e["references"])): "high"})), None),
    ("citation-not-referenced", _first(lambda e: e["responses"][0]["citations"].update({"clueweb22-en0000-00-00000:1": 1.0})), None),
    ("citation-score-string", _first(lambda e: e["responses"][0]["citations"].update(
        {next(iter(e["responses"][0]["citations"])): "high"})), "responses"),
    ("citations-missing", _first(lambda e: e["responses"][0].pop("citations")), None),
    ("ptkb-missing", _first(lambda e: e["responses"][0].pop("ptkb_provenance")), None),
    ("text-missing", _first(lambda e: e["responses"][0].pop("text")), None),
    ("responses-not-list", _first(lambda e: e.update(responses={})), None),
    ("response-not-object", _first(lambda e: e.update(responses=["text"])), None),
    ("response-too-long", _first(lambda e: e["responses"][0].update(text="word " * 300)), "response-length"),
    ("references-1001", _first(lambda e: e["references"].update(
        {f"clueweb22-en0000-00-{i:05d}:1": 0.1 for i in range(1001)})), None),
    ("turn-missing", lambda lines: lines[1:], None),
    ("turn-extra", lambda lines: [*lines, {**lines[0], "turn_id": "99_99"}], None),
    ("turn-id-missing", _first(lambda e: e.pop("turn_id")), None),
    ("turn-repeated", lambda lines: [*lines, lines[0]], "turn-repeated"),
    ("not-json", lambda lines: ["{oops", *lines[1:]], None),
    ("byte-order-mark", lambda lines: ["\ufeff" + json.dumps(lines[0]), *lines[1:]], None),
    ("line-ends-not-json-whitespace", lambda lines: [json.dumps(lines[0]) + "\x0c\u00a0\u2028", *lines[1:]], None),
    ("extra-line-without-turn-id", lambda lines: [*lines, {k: v for k, v in lines[0].items() if k != "turn_id"}], None),
    ("reference-score-integer-beyond-any-float",
     _first(lambda e: e["references"].update({next(iter(e["references"])): 10**400})), None),
    ("run-type-list", _first(lambda e: e["metadata"].update(run_type=["automatic"])), None),
    ("ptkb-null", _first(lambda e: e["responses"][0].update(ptkb_provenance=None)), None),
]
UPSTREAM_WARNINGS_2025 = {"references", "metadata"}  # the checks whose warnings upstream prints


def test_2025_validator_verdicts_and_warnings_equal_the_official_validator(tmp_path, shipped_passages):
    script = reference_dir("ikat-official", "2025", "scripts") / "validate_trec_ikat25.py"
    base = base_2025(shipped_passages)
    runs = {"base": (base, None)} | {
        name: (edit(copy.deepcopy(base)), deliberate) for name, edit, deliberate in VARIANTS_2025}
    same = 0
    for name, (lines, deliberate) in runs.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
        done = subprocess.run([sys.executable, str(script), "--input", str(path), "--topics", str(topics_path(2025))],
                              capture_output=True, text=True, timeout=120)
        their_ok = done.returncode == 0
        their_warnings = sum(1 for out in done.stdout.splitlines() if out.startswith("[Line") and "WARNING:" in out)
        report = validate_file(path, TOPICS[2025], 2025)
        ours = sum(1 for f in report.warnings if f.check in UPSTREAM_WARNINGS_2025)
        row = f"{name}: harness ok={report.ok} warnings={ours}; official ok={their_ok} warnings={their_warnings}"
        if deliberate is None:
            assert (report.ok, ours) == (their_ok, their_warnings), (row, [str(f) for f in report.findings][:5])
            same += 1
        else:
            assert deliberate in {f.check for f in report.findings} and marked(deliberate), row
    print(f"\niKAT 2025: {len(runs)} files, {same} equal")


@pytest.mark.parametrize("texts, official_ok", [(["word " * 300], True), (["A short answer.", "word " * 300], False)])
def test_2025_responses_are_checked_after_the_trim_as_the_official_validator_checks_them(
        tmp_path, shipped_passages, texts, official_ok):
    """An over-long response citing a passage not in its references: the official validator (default --fix-length)
    drops it and passes the file; a short response before it, citing that passage, is kept and fails it."""
    script = reference_dir("ikat-official", "2025", "scripts") / "validate_trec_ikat25.py"
    lines = base_2025(shipped_passages)
    lines[0]["responses"] = [{"text": text, "citations": {"clueweb22-en9999-00-00001:1": 1.0}, "ptkb_provenance": []}
                             for text in texts]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = subprocess.run([sys.executable, str(script), "--input", str(path), "--topics", str(topics_path(2025))],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert (done.returncode == 0) is official_ok and "Trimming responses" in done.stdout
    report = validate_file(path, TOPICS[2025], 2025)
    assert report.ok is official_ok and "response-length" in {f.check for f in report.warnings}


# --- to-trec against generate_run.py --------------------------------------------------------


def trec_eval_per_turn(binary: Path, qrels: Path, run: Path) -> str:
    return subprocess.run([str(binary), "-q", "-c", "-m", "ndcg_cut.3,5", "-m", "P.5", "-m", "recip_rank", "-m", "map",
                           str(qrels), str(run)], check=True, capture_output=True, text=True).stdout


def trec_eval_order(lines: list[list[str]]) -> list[tuple[str, str, str]]:
    """(turn, passage, printed score) in the order trec_eval ranks them."""
    ordered = sorted(lines, key=lambda f: f[2], reverse=True)
    ordered.sort(key=lambda f: float(f[4]), reverse=True)
    ordered.sort(key=lambda f: f[0])
    return [(f[0], f[2], f[4]) for f in ordered]


@pytest.mark.parametrize("year", [2023, 2024])
def test_to_trec_equals_generate_run_on_every_sample_run(tmp_path, trec_eval, shipped_passages, year):
    folder = official_copy(tmp_path, year)
    base = tmp_path / "base.json"
    base.write_text(json.dumps(base_run(year, shipped_passages)))
    compared = 0
    for sample in [*SAMPLES[year], base]:
        official = subprocess.run([sys.executable, "generate_run.py", str(sample)], cwd=folder,
                                  capture_output=True, text=True)
        ours_path = tmp_path / f"{sample.stem}.harness.run"
        if official.returncode != 0:  # the official script refuses it: so must the harness
            with pytest.raises(Exception, match=str(sample.name)):
                to_trec(sample, ours_path, year=year)
            continue
        theirs_path = folder / f"{sample.name}.run"
        to_trec(sample, ours_path, year=year)
        theirs = [line.split() for line in theirs_path.read_text().splitlines()]
        ours = [line.split() for line in ours_path.read_text().splitlines()]
        assert ours == sorted(ours, key=lambda f: f[0]) or len({f[0] for f in ours}) > 0
        by_turn = sorted(ours, key=lambda f: f[0])  # stable: the harness's order within a turn is kept
        assert [(f[0], f[2], f[4]) for f in by_turn] == trec_eval_order(theirs), sample.name
        assert trec_eval_per_turn(trec_eval, QRELS[year], ours_path) == \
            trec_eval_per_turn(trec_eval, QRELS[year], theirs_path), sample.name
        compared += 1
    assert compared >= 2


@pytest.mark.parametrize("ptkb", [[], None], ids=["ptkb-list", "ptkb-null"])
def test_to_trec_2025_equals_generate_run(tmp_path, shipped_passages, ptkb):
    """2025: references printed with 6 decimals; scores equal at 6 decimals are ties. A
    ptkb_provenance that is not a list (read by neither script) converts too."""
    script = reference_dir("ikat-official", "2025", "scripts") / "generate_run.py"
    lines = base_2025(shipped_passages)
    rng = random.Random(7)
    for line in lines:
        line["references"] = {pid: rng.choice([3.0, 3.0000001, 2.5, 1e-7]) for pid in line["references"]}
        line["metadata"]["run_id"] = 7  # not a string: printed as generate_run.py prints it
        line["responses"][0]["ptkb_provenance"] = ptkb
    submission = tmp_path / "run.jsonl"
    submission.write_text("".join(json.dumps(line) + "\n" for line in lines))
    theirs_path, ours_path = tmp_path / "official.run", tmp_path / "harness.run"
    subprocess.run([sys.executable, str(script), "--submission", str(submission), "--output", str(theirs_path)],
                   check=True, capture_output=True)
    to_trec(submission, ours_path, year=2025)
    theirs = [line.split() for line in theirs_path.read_text().splitlines()]
    ours = sorted((line.split() for line in ours_path.read_text().splitlines()), key=lambda f: f[0])
    assert [(f[0], f[2], f[4]) for f in ours] == trec_eval_order(theirs)
    assert {f[5] for f in ours} == {f[5] for f in theirs} == {"7"}


@pytest.mark.parametrize("year", [2024, 2025])
def test_generate_run_ranks_a_from_trec_submission_as_its_run(tmp_path, year):
    """The run's scores 1e-9 apart, which the format cannot tell apart, are written so that the
    official run ranks them as the run does (not tied, by passage id), in trec_eval's order."""
    run = saturated_ikat2024_run(tmp_path / "saturated.run")
    submission = tmp_path / f"submission.json{'l' if year == 2025 else ''}"
    assert main(["ikat", "from-trec", str(run), "--benchmark", "ikat2024", "--year", str(year), "--team-id", "t",
                 "--run-name", "x", "--output", str(submission)]) == 0
    if year == 2025:
        official = tmp_path / "official.run"
        subprocess.run([sys.executable, str(reference_dir("ikat-official", "2025", "scripts") / "generate_run.py"),
                        "--submission", str(submission), "--output", str(official)], check=True, capture_output=True)
    else:
        folder = official_copy(tmp_path, year)
        subprocess.run([sys.executable, "generate_run.py", str(submission)], cwd=folder, check=True,
                       capture_output=True)
        official = folder / f"{submission.name}.run"
    theirs = trec_eval_order([line.split() for line in official.read_text().splitlines()])
    ranked = read_run(run)
    assert [(turn, passage) for turn, passage, _ in theirs] == \
        [(qid, docid) for qid in sorted(ranked.scores) for docid, _ in ranked.ranked(qid)]
