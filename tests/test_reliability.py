"""No silent wrong answer, no write outside the output folder, no crash under concurrency or
kill: one test per rule. The malformed-input corpus is in test_malformed_inputs.py.

The process tests run `harness run` on one small config (iKAT 2023 test turns, raw
utterances, BM25 over the 894 shipped provenance passages) as a user would, in child
processes, each bounded in time.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.atomic import atomic_write, build_once, temp_folder
from harness.cli import main
from harness.errors import HarnessError
from harness.paths import file_in
from harness.trec import read_run
from tests.conftest import CAST2021_DOC_RUNS, child_env, CAST2021_QRELS, interruptible
from tests.test_ikat_validate import SAMPLES_2023, _edit_line, failing_checks, run_2025, validate  # noqa: F401

TAG = "ikat2023-test.raw.bm25"
LIMIT = 600  # seconds any one child `harness run` may take


# --- silent wrong answers ----------------------------------------------------------------


@pytest.mark.parametrize("where", ["references", "citations"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["NaN", "Infinity", "-Infinity"])
def test_ikat2025_nan_or_infinite_scores_fail_validate(run_2025, tmp_path, where, value):  # noqa: F811
    def edit(entry: dict) -> None:
        passage = next(iter(entry["references"]))
        target = entry["references"] if where == "references" else entry["responses"][0]["citations"]
        target[passage] = value

    broken = _edit_line(run_2025, tmp_path / "run.jsonl", edit)
    assert "NaN" in broken.read_text() or "Infinity" in broken.read_text()
    report = validate(broken, 2025)
    assert ("references" if where == "references" else "responses") in failing_checks(report)
    assert any("finite number" in finding.message for finding in report.errors)


def _top(run, depth: int) -> dict[str, dict[str, float]]:
    return {qid: dict(run.ranked(qid, depth)) for qid in run.scores}


def test_streaming_the_top_depth_equals_reading_all_then_cutting(tmp_path):
    shuffled = tmp_path / "shuffled.run"  # lines in no order: late lines must still enter the top
    lines = CAST2021_DOC_RUNS[0].read_text().splitlines(keepends=True)
    random.Random(14).shuffle(lines)
    shuffled.write_text("".join(lines))
    for path in [*CAST2021_DOC_RUNS, shuffled]:
        for depth in (1, 10, 1000):
            assert read_run(path, depth=depth).scores == _top(read_run(path), depth)


def test_a_run_repeating_a_document_keeps_its_highest_score_when_streamed(tmp_path):
    path = tmp_path / "dup.run"
    path.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.4 t\nq1 Q0 d3 4 9.0 t\n")
    streamed, whole = read_run(path, depth=2), read_run(path)
    assert streamed.scores == _top(whole, 2) == {"q1": {"d3": 9.0, "d1": 1.0}}
    assert streamed.duplicates == whole.duplicates == 1


# --- writes outside the output folder ----------------------------------------------------


@pytest.mark.parametrize("name", ["a/../../../x", "/tmp/x", "..", ".", ".hidden", "a\\b", "with space", ""])
def test_file_in_refuses_names_that_leave_their_folder(tmp_path, name):
    with pytest.raises(HarnessError, match="cannot name a file"):
        file_in(tmp_path, name)
    assert file_in(tmp_path, "pqa.raw.bm25.run") == tmp_path / "pqa.raw.bm25.run"


def _config(folder: Path, **top) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump({**top, "k": 20, "experiments": [
        {"name": "ikat", "topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["bm25"],
         "measures": ["nDCG@10"]}]}), encoding="utf-8")
    return path


def test_output_naming_a_file_is_a_one_line_error(tmp_path, capsys):
    existing = tmp_path / "runs"
    existing.write_text("not a folder\n")
    for argv in (["run", str(_config(tmp_path / "a", output=str(existing))), "--dry-run"],
                 ["run", str(_config(tmp_path / "b")), "--output", str(existing)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is a file, expected a folder" in err, err


def test_an_output_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    target, link = tmp_path / "real" / "board.md", tmp_path / "board.md"
    target.parent.mkdir()
    target.write_text("old\n")
    link.symlink_to(target)
    with atomic_write(link) as handle:
        handle.write("new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_an_output_to_a_device_writes_to_it_and_leaves_it_a_device(tmp_path):
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("creating a device needs CAP_MKNOD")
    link = tmp_path / "stdout"  # as /dev/stdout links to a terminal or a pipe
    link.symlink_to(device)
    for output in (device, link):
        with atomic_write(output) as handle:
            handle.write("discarded\n")
    assert stat.S_ISCHR(device.stat().st_mode) and link.is_symlink()


@pytest.mark.parametrize("where", ["a folder", "below a file"])
def test_an_output_that_cannot_be_written_is_a_one_line_error(tmp_path, capsys, where):
    runs = [tmp_path / "a.run", tmp_path / "b.run"]
    for run in runs:
        run.write_text("31_1 Q0 CAR_1 1 1.0 r\n")
    output = tmp_path if where == "a folder" else runs[0] / "board.md"
    qrels = tmp_path / "q.txt"
    qrels.write_text("31_1 0 CAR_1 1\n")
    assert main(["compare", "--qrels", str(qrels), *map(str, runs), "--measures", "P@1", "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {output}" in err, err


def _overwriting_commands(tmp_path: Path) -> dict[str, tuple[list[str], Path]]:
    """(argv, the file it must leave as it was) per command that reads and writes files."""
    from harness.paths import data_root

    sample = tmp_path / "sample.json"
    sample.write_bytes((data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" /
                        "sample_run.json").read_bytes())
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "contents": "One sentence. Another one."}\n')
    runs = [tmp_path / f"{i}.run" for i in range(2)]
    for run, source in zip(runs, CAST2021_DOC_RUNS):
        run.write_bytes(source.read_bytes())
    return {
        "to-trec over its input": (["ikat", "to-trec", str(sample), "--output", str(sample)], sample),
        "to-trec's two outputs": (["ikat", "to-trec", str(sample), "--output", str(tmp_path / "x.run"),
                                   "--ptkb-out", str(tmp_path / "x.run")], sample),
        "segment over its corpus": (["segment", str(corpus), "--output", str(corpus), "--splitter", "fast"], corpus),
        "compare over a run": (["compare", "--qrels", str(CAST2021_QRELS), *map(str, runs), "--measures", "P@5",
                                "--output", str(runs[1])], runs[1]),
    }


@pytest.mark.parametrize("case", ["to-trec over its input", "to-trec's two outputs", "segment over its corpus",
                                  "compare over a run"])
def test_an_output_naming_an_input_or_another_output_is_refused(tmp_path, capsys, case):
    argv, kept = _overwriting_commands(tmp_path)[case]
    before = kept.read_bytes()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "would overwrite" in err, err
    assert kept.read_bytes() == before and not (tmp_path / "x.run").exists()


# --- outputs whose place cannot be made -------------------------------------------------------

NOWHERE = Path("/proc/harness-output")  # a folder no one can make, root included


def _blocker(tmp_path: Path) -> Path:
    """A regular file standing where an output's folder would be made."""
    blocker = tmp_path / "f"
    blocker.write_text("a file\n")
    return blocker


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("where", ["the config's output", "--output"])
def test_a_run_output_folder_below_a_file_is_a_one_line_error_already_at_dry_run(tmp_path, capsys, where):
    output = _blocker(tmp_path) / "runs"
    if where == "--output":
        argv = ["run", str(_config(tmp_path / "c", output=str(tmp_path / "runs"))), "--output", str(output)]
    else:
        argv = ["run", str(_config(tmp_path / "c", output=str(output)))]
    for dry_run in (["--dry-run"], []):
        assert main([*argv, *dry_run]) == 2
        assert f"cannot write {output}: {tmp_path / 'f'} is a file, expected a folder" in _one_line(capsys)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_reading_a_config_writes_nothing_so_output_overrides_an_unwritable_config_output(tmp_path, monkeypatch):
    """From a folder no entry can be made in (here /proc), the config's relative `output` is
    out of reach, and --output elsewhere is what counts: reading the config tries nothing."""
    config = _config(tmp_path / "c", output="runs")
    monkeypatch.chdir("/proc")
    assert main(["run", str(config), "--output", str(tmp_path / "runs"), "--dry-run"]) == 0


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", ["run", "encode", "index"])
def test_an_output_folder_that_cannot_be_made_is_a_one_line_error_naming_it(tmp_path, capsys, command):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "contents": "hi"}\n')
    source = str(_config(tmp_path / "c", output=str(tmp_path / "runs"))) if command == "run" else str(corpus)
    assert main([command, source, "--output", str(NOWHERE)]) == 2
    assert f"cannot write {NOWHERE}: /proc takes no new files or folders" in _one_line(capsys)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_config_output_folder_that_cannot_be_made_names_the_config_and_its_output_key(tmp_path, capsys):
    """A read-only place as a file in the way is: the config's `output:` is what to fix (before any
    work; a dry run only reads, and says it: test_runner's read-only runs folder)."""
    config = _config(tmp_path / "c", output=str(NOWHERE))
    assert main(["run", str(config)]) == 2
    assert (f"harness run: error: {config}: output: cannot write {NOWHERE}: /proc takes no new files or folders"
            in _one_line(capsys))


@pytest.mark.parametrize("command", ["encode", "index"])
def test_an_encode_or_index_folder_below_or_on_a_file_is_a_one_line_error_before_any_model_or_jvm(
        tmp_path, capsys, command):
    blocker = _blocker(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "contents": "hi"}\n')
    for output, problem in ((blocker / "out", f"{blocker} is a file, expected a folder"),
                            (blocker, "it is a file, expected a folder")):
        for force in ([], ["--force"]) if command == "index" else ([],):
            assert main([command, str(corpus), "--output", str(output), *force]) == 2
            assert f"cannot write {output}: {problem}" in _one_line(capsys)
    assert blocker.read_text() == "a file\n"


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "--force"])
def test_index_replaces_only_an_index_never_a_folder_of_notes_the_corpus_or_the_current_one(
        tmp_path, capsys, monkeypatch, force):
    """--force replaces an index; a folder of other files, the corpus's own folder or `.` is
    refused in one line before any work, its files kept (rmtree took them, then a traceback)."""
    notes = tmp_path / "myfolder"
    notes.mkdir()
    (notes / "notes.txt").write_text("precious\n")
    corpus = tmp_path / "corp" / "docs.jsonl"
    corpus.parent.mkdir()
    corpus.write_text('{"id": "d1", "contents": "hi"}\n')
    assert main(["index", str(corpus), "--output", str(notes), *force]) == 2
    assert (f"{notes} already exists and is not an index (no harness-index.json or segments_N file in it), "
            "so --force does not replace it: give another folder") in _one_line(capsys)
    assert main(["index", str(corpus), "--output", str(corpus.parent), *force]) == 2
    assert f"{corpus.parent} already exists and holds the corpus being indexed ({corpus})" in _one_line(capsys)
    monkeypatch.chdir(notes)
    assert main(["index", str(corpus), "--output", ".", *force]) == 2
    assert ". already exists and holds the current folder: give another folder" in _one_line(capsys)
    assert (notes / "notes.txt").read_text() == "precious\n" and corpus.is_file()


def _file_writing_commands(tmp_path: Path, output: Path) -> dict[str, list[str]]:
    from harness.paths import data_root

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "contents": "One sentence. Another one."}\n')
    sample = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
    return {
        "topics export": ["topics", "export", "cast2019", "--output", str(output)],
        "segment": ["segment", str(corpus), "--output", str(output), "--splitter", "fast"],
        "compare": ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "P@5",
                    "--output", str(output)],
        "ikat to-trec": ["ikat", "to-trec", str(sample), "--output", str(output)],
    }


@pytest.mark.parametrize("command", ["topics export", "segment", "compare", "ikat to-trec"])
def test_a_file_output_below_a_file_says_that_file_is_in_the_way(tmp_path, capsys, command):
    blocker = _blocker(tmp_path)
    output = blocker / "sub" / "out.txt"
    assert main(_file_writing_commands(tmp_path, output)[command]) == 2
    assert f"cannot write {output}: {blocker} is a file, expected a folder" in _one_line(capsys)


def _several_outputs(tmp_path: Path, blocked: Path) -> dict[str, list[str]]:
    """(argv) per command writing several files, its later output below a file."""
    from harness.paths import data_root

    sample = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
    responses, nuggets = tmp_path / "r1.jsonl", tmp_path / "nuggets.jsonl"
    responses.write_text(json.dumps({"run_id": "r1", "topic_id": "q1", "topic": "?", "references": [],
                                     "response_length": 1, "answer": [{"text": "Water boils.", "citations": []}]}) + "\n")
    nuggets.write_text(json.dumps({"qid": "q1", "query": "?", "nuggets": [{"text": "boils", "importance": "vital"}]})
                       + "\n")
    return {
        "ikat to-trec": ["ikat", "to-trec", str(sample), "--output", str(tmp_path / "t.run"), "--ptkb-out", str(blocked)],
        "responses eval": ["responses", "eval", str(responses), "--nuggets", str(nuggets), "--judge", "minilm",
                           "--assignments-out", str(tmp_path / "a.jsonl"), "--output", str(blocked)],
    }


@pytest.mark.parametrize("command", ["ikat to-trec", "responses eval"])
def test_a_command_with_several_outputs_writes_none_when_one_cannot_be_written(tmp_path, capsys, command):
    blocked = _blocker(tmp_path) / "out"
    argv = _several_outputs(tmp_path, blocked)[command]
    before = sorted(tmp_path.rglob("*"))
    assert main(argv) == 2
    assert f"cannot write {blocked}: {tmp_path / 'f'} is a file, expected a folder" in _one_line(capsys)
    assert sorted(tmp_path.rglob("*")) == before


# --- temp files and children of dead processes -------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_writer_removes_temp_files_of_dead_processes_only(tmp_path):
    target = tmp_path / "x.run"
    dead = tmp_path / f".x.run.{_dead_pid()}.abcdefgh.tmp"
    live = tmp_path / f".x.run.{os.getppid()}.abcdefgh.tmp"  # pytest's parent: alive
    other = tmp_path / f".y.run.{_dead_pid()}.abcdefgh.tmp"  # another target's: not ours to judge now
    for path in (dead, live, other):
        path.write_text("half\n")
    with atomic_write(target) as handle:
        assert [p.name for p in tmp_path.glob(f".x.run.{os.getpid()}.*.tmp")]
        handle.write("whole\n")
    assert not dead.exists() and live.exists() and other.exists()
    assert target.read_text() == "whole\n"


def test_a_temp_file_older_than_the_live_process_of_its_pid_is_a_copied_leftover_and_removed(tmp_path):
    """A folder copied mid-run elsewhere: its leftover's pid is now an unrelated process's, which
    started after the leftover last changed (cp -a keeps its time), so cannot be writing it."""
    alive = os.getppid()  # pytest's parent: a live process, started before the files below are made
    copied = tmp_path / f".x.run.{alive}.abcdefgh.tmp"
    writing = tmp_path / f".x.run.{alive}.01234567.tmp"
    for path in (copied, writing):
        path.write_text("half\n")
    os.utime(copied, (0, 0))  # last changed in 1970
    with atomic_write(tmp_path / "x.run") as handle:
        handle.write("whole\n")
    assert not copied.exists() and writing.exists()


def test_a_build_removes_the_build_folders_beside_it_that_no_lock_holds_and_no_live_process_made(tmp_path):
    """Left by a kill, of its own target or another's; one a live process holds is kept even
    without a lock: a harness from before build locks, sharing the cache, builds without one;
    unless it last changed before that process started (copied, its pid now another's)."""
    alive = os.getppid()  # pytest's parent: a live process
    own = tmp_path / f".idx.building.{_dead_pid()}.0123abcd"
    other = tmp_path / f".other.building.{_dead_pid()}.89abcdef"  # another target's (fingerprint's)
    older = tmp_path / f".older.building.{alive}.4567ef01"  # a live build of a harness without locks
    copied = tmp_path / f".copied.building.{alive}.23456789"  # changed before its pid's process started
    for folder in (own, other, older, copied):
        (folder / "jsonl").mkdir(parents=True)
    os.utime(copied, (0, 0))
    with temp_folder(tmp_path / "idx", "building idx") as new:
        assert new.name.startswith(f".idx.building.{os.getpid()}.") and new.is_dir()
        assert {p.name for p in tmp_path.iterdir()} == {".idx.lock", new.name, older.name}
    assert [p.name for p in tmp_path.iterdir()] == [older.name]  # the build folder and the lock file go


def test_build_once_builds_nothing_found_before_or_once_its_lock_is_held(tmp_path):
    """A run's index, BM25 export and passage vectors: found, or built by the process this one
    waited for (found once the lock is held), they are not built again; no build folder is left."""
    for answers in (["found"], [None, "found"]):
        found = iter(answers)
        assert build_once(tmp_path / "idx", "building idx", lambda: next(found),
                          lambda folder: pytest.fail("built again")) == ("found", None)
    assert list(tmp_path.iterdir()) == []


def test_build_once_replaces_the_old_target_with_what_the_build_names_and_keeps_it_where_it_names_none(tmp_path):
    target = tmp_path / "idx"
    target.mkdir()
    (target / "old").touch()

    def build(folder):
        (folder / "index").mkdir()
        (folder / "index" / "new").touch()
        (folder / "dump").touch()
        return folder / "index", "built"

    made, started = build_once(target, "building idx", lambda: None, lambda folder: (None, "cannot"))
    assert made == "cannot" and isinstance(started, float) and [p.name for p in target.iterdir()] == ["old"]
    assert build_once(target, "building idx", lambda: None, build)[0] == "built"
    assert [p.name for p in target.iterdir()] == ["new"] and list(tmp_path.iterdir()) == [target]


_HOLD_BUILD = """
import sys
from pathlib import Path
from harness.atomic import temp_folder
with temp_folder(Path(sys.argv[1]), "building other") as folder:
    print(folder.name, flush=True)
    sys.stdin.read()
"""


def test_a_build_folder_whose_lock_a_live_build_holds_is_kept(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_BUILD, str(tmp_path / "other")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=_env())
    try:
        live = tmp_path / holder.stdout.readline().strip()
        assert live.is_dir()
        with temp_folder(tmp_path / "idx", "building idx"):
            assert live.is_dir()
        assert live.is_dir()
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0 and list(tmp_path.iterdir()) == []


_CACHED_INDEX = """
import sys, time
from pathlib import Path
from harness.corpus.readers import open_corpus
from harness.retrieve.lucene import cached_index
corpus = open_corpus(sys.argv[1])
corpus.fingerprint
Path(sys.argv[3]).touch()  # imported: now polling
while not Path(sys.argv[2]).exists():  # both start building at once
    time.sleep(0.01)
print(cached_index(corpus))
"""


@pytest.mark.slow
@pytest.mark.java
def test_two_processes_sharing_a_cache_build_its_index_once_the_second_waits_then_reuses_it(tmp_path):
    corpus, go = tmp_path / "corpus.jsonl", tmp_path / "go"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "contents": f"passage {i} about topic {i % 7}"}) + "\n"
                              for i in range(300)), encoding="utf-8")
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    env = _env(tmp_path / "cache")
    builders = [subprocess.Popen([sys.executable, "-c", _CACHED_INDEX, str(corpus), str(go), str(flag)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for flag in ready]
    deadline = time.monotonic() + 120  # both imported and polling, however loaded the machine
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()
    results = [_finish(builder) for builder in builders]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    index = Path(results[0][1].strip())
    assert results[1][1].strip() == str(index) and (index / "harness-index.json").is_file()
    waiting = [err for _, _, err in results if "waiting for it to finish" in err]
    assert len(waiting) == 1, [err for _, _, err in results]  # one waits; had it built too, it would have failed
    assert f"another harness process is building the index of corpus.jsonl in {index}; waiting" in waiting[0]
    assert "written to" not in waiting[0]
    assert not _leftovers(tmp_path / "cache")


def test_an_interrupt_just_after_the_temp_file_is_made_still_removes_it(tmp_path, monkeypatch):
    """Ctrl-C lands between the kernel making the temp file and Python holding its descriptor
    (likely when another thread holds the GIL): the name was chosen first, so it goes."""
    real_open = os.open

    def open_then_interrupted(*args, **kwargs):
        real_open(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "open", open_then_interrupted)
    with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "x.run") as handle:
        handle.write("never\n")
    monkeypatch.undo()
    assert not list(tmp_path.iterdir())


def test_java_children_die_with_their_parent(tmp_path):
    """The IndexCollection child is started with die_with_parent: SIGKILL the parent, the child goes."""
    script = ("import subprocess, sys, time\n"
              "from harness.retrieve.java import die_with_parent\n"
              "child = subprocess.Popen(['sleep', '120'], preexec_fn=die_with_parent)\n"
              "print(child.pid, flush=True)\n"
              "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=_env())
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    assert _gone(child, within=10)


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(")")[-1].split()[0] == "Z":
                    return True  # a zombie: dead, waiting for its (gone) parent's reaper
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


# --- concurrency and kills: real `harness run` processes ----------------------------------


def _env(cache: Path | None = None) -> dict[str, str]:
    env = child_env()
    env.setdefault("HARNESS_JAVA_HEAP", "1g")
    if cache is not None:
        env["HARNESS_CACHE"] = str(cache)
    return env


def _start(config: Path, out: Path, cache: Path, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(config), "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(cache), cwd=cwd,
                            preexec_fn=interruptible)


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, out, err


def _wait_for(process: subprocess.Popen, found, what: str, within: float = LIMIT):
    deadline = time.monotonic() + within
    while True:
        value = found()
        if value:
            return value
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> tuple[Path, Path]:
    """(output folder, cache) of one uninterrupted run of the tiny config."""
    root = tmp_path_factory.mktemp("single")
    code, _, err = _finish(_start(_config(root), root / "runs", root / "cache", root))
    assert code == 0, err
    return root / "runs", root / "cache"


def _leftovers(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob(".*") if "hs_err" not in p.name]


@pytest.mark.slow
@pytest.mark.java
def test_two_simultaneous_runs_of_one_config_end_cleanly_with_single_run_bytes(single, tmp_path):
    out, cache = single
    config, shared = _config(tmp_path), tmp_path / "runs"
    first, second = (_start(config, shared, cache, tmp_path) for _ in range(2))
    results = [_finish(first), _finish(second)]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    errs = "".join(err for _, _, err in results)
    assert "Traceback" not in errs
    assert errs.count("another harness run is writing to") == 1  # the waiter says so, once
    assert errs.count("finished with the same inputs, skipped") == 1  # ... then skips the finished run
    assert (shared / f"{TAG}.run").read_bytes() == (out / f"{TAG}.run").read_bytes()
    assert not _leftovers(shared)


@pytest.mark.slow
@pytest.mark.java
def test_ctrl_c_once_the_jvm_is_up_exits_130_keeping_finished_outputs(single, tmp_path):
    _, cache = single
    out = tmp_path / "runs"
    process = _start(_config(tmp_path), out, cache, tmp_path)
    # the run file is opened once the retriever (and so the in-process JVM) is up
    _wait_for(process, lambda: list(out.glob(f".{TAG}.run.*.tmp")), "run file being written")
    process.send_signal(signal.SIGINT)
    code, stdout, err = _finish(process)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "harness run: interrupted; finished outputs are kept"
    assert "SIGSEGV" not in stdout + err and not list(tmp_path.glob("hs_err_pid*.log"))
    assert not (out / f"{TAG}.run").exists() and not _leftovers(out)


def _java_child(pid: int) -> int | None:
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if "java" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                return int(child)
    return None


@pytest.mark.slow
@pytest.mark.java
def test_sigkill_while_indexing_kills_the_java_child_and_the_rerun_removes_every_leftover(tmp_path):
    """`harness index` builds in a child JVM whatever the corpus size (a run indexes small
    corpora inside its own JVM), so that is where a Java child can be orphaned."""
    out = tmp_path / "index"
    command = [sys.executable, "-m", "harness.cli", "index", "benchmark:pragmaticqa:train", "--output", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=_env(), cwd=tmp_path)
    java = _wait_for(process, lambda: _java_child(process.pid), "IndexCollection child")
    assert list(tmp_path.glob(".index.building.*"))
    process.kill()
    process.wait()
    assert _gone(java, within=10), "the IndexCollection child outlived the harness"
    rerun = subprocess.run(command, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=LIMIT)
    assert rerun.returncode == 0, rerun.stderr
    assert not _leftovers(tmp_path)
    assert (out / "harness-index.json").is_file()


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.parametrize("point", ["run file opened", "run file half written"])
def test_sigkill_while_writing_then_rerun_leaves_nothing_and_the_same_bytes(single, tmp_path, point):
    finished, cache = single
    out = tmp_path / "runs"
    process = _start(_config(tmp_path), out, cache, tmp_path)

    def reached():
        temps = list(out.glob(f".{TAG}.run.*.tmp"))
        return temps if temps and (point == "run file opened" or temps[0].stat().st_size > 20_000) else None

    _wait_for(process, reached, point)
    process.kill()
    process.wait()
    assert _leftovers(out)  # the killed writer's temp file, under a hidden name
    code, _, err = _finish(_start(_config(tmp_path), out, cache, tmp_path))
    assert code == 0, err
    assert not _leftovers(out)
    assert (out / f"{TAG}.run").read_bytes() == (finished / f"{TAG}.run").read_bytes()


@pytest.mark.parametrize("command, option, value", [
    ("compare", "--alpha", "5"), ("compare", "--alpha", "nan"), ("compare", "--alpha", "0"),
    ("compare", "--seed", "-1"), ("compare", "--resamples", "0"), ("compare", "--arena-bootstrap", "0"),
    ("arena", "--k", "nan"), ("arena", "--k", "-1"), ("arena", "--initial", "inf"), ("arena", "--seed", "-1"),
    ("encode", "--batch-size", "0"), ("encode", "--batch-size", "-4"), ("encode", "--batch-size", str(10**20)),
    ("encode", "--max-length", "0"), ("segment", "--processes", "-2"), ("segment", "--processes", "0"),
    ("ikat validate", "--max-warnings", "-1"),
])
def test_a_number_option_out_of_its_range_is_a_usage_error(capsys, tmp_path, command, option, value):
    from harness.paths import data_root

    corpus = str(data_root() / "ikat" / "2023" / "data" / "2023_train_topics_psg_text.jsonl")  # iKAT's passages
    argv = {
        "compare": ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "P@5"],
        "arena": ["arena", "--votes", str(data_root() / "crsarena" / "votes_open.csv")],
        "encode": ["encode", corpus, "--output", str(tmp_path / "vectors")],
        "segment": ["segment", corpus, "--output", str(tmp_path / "passages.jsonl")],
        "ikat validate": ["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "ikat2023",
                          "--year", "2023"],
    }[command]
    with pytest.raises(SystemExit) as stop:
        main([*argv, f"{option}={value}"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument {option}: must be a" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written, not even an empty --output folder


def test_an_output_to_dev_stdout_redirected_to_a_file_keeps_what_the_shell_wrote(tmp_path):
    out = tmp_path / "out.txt"
    write = "from harness.atomic import atomic_write\nwith atomic_write('/dev/stdout') as h: h.write('report\\n')"
    subprocess.run(["sh", "-c", f'{{ echo header; "{sys.executable}" -c "{write}"; echo footer; }} > "{out}"'],
                   check=True, timeout=60)
    assert out.read_text() == "header\nreport\nfooter\n"


def test_a_cache_entry_that_cannot_be_written_costs_only_a_rehash(tmp_path, monkeypatch):
    """An unwritable output is an OSError too, which a cache writer may ignore."""
    import hashlib

    from harness import paths

    monkeypatch.setattr("harness.paths.MEMO_BYTES", 0)
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "d1", "contents": "x"}\n')
    memo = tmp_path / "cache" / "digests" / f"{hashlib.sha256(os.fsencode(corpus.resolve())).hexdigest()[:32]}.json"
    memo.mkdir(parents=True)  # a folder where the memo file should go
    assert paths.file_sha256(corpus) == hashlib.sha256(corpus.read_bytes()).hexdigest()


def test_a_build_folder_whose_leftovers_cannot_be_listed_is_an_error_naming_the_folder(tmp_path, monkeypatch):
    """The sweep of a killed build's leftovers beside the target fails as the rest of temp_folder does:
    an OutputError naming the folder, not the system's bare OSError."""
    import harness.atomic
    from harness.atomic import OutputError

    def unreadable(parent, held):
        raise PermissionError(13, "Permission denied", str(parent))

    monkeypatch.setattr(harness.atomic, "_remove_dead_builds", unreadable)
    with pytest.raises(OutputError, match=f"^cannot write {tmp_path}: "):
        with temp_folder(tmp_path / "index", "building the index"):
            pass
