"""A researcher's machine is not the developers': folder names that are not UTF-8, a locale
whose stdout is not UTF-8, a closed stdout, another user's files, a full disk, no home folder,
`~` in a config, a symlink to nothing. One test per rule.

Runs use the example plug-in's word-overlap retriever (tests/plugin_example) on the iKAT 2023
test turns: no Java, seconds per run.
"""

from __future__ import annotations

import json
import os
import pty
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import paths, topics
from harness.atomic import OutputError
from harness.cli import main
from harness.retrieve.lucene import cached_index
from tests.conftest import child_env

PLUGIN = Path(__file__).parent / "plugin_example" / "harness_plugin_example.py"
TAG = "ikat2023-test.raw.python-mine-overlap"
LIMIT = 300  # seconds a child harness may take


def _project(folder: Path, **top: object) -> Path:
    """`folder` holding the plug-in (mine.py) and a config (mine.yaml) ranking the iKAT 2023 test
    turns with it into runs/, its top-level keys `top` replacing the config's."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PLUGIN, folder / "mine.py")
    experiment = {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["python:mine:overlap"],
                  "measures": ["nDCG@10"]}
    config = {"k": 20, "output": "runs", "experiments": [experiment], **top}
    (folder / "mine.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "mine.yaml"


def _harness(folder: Path, *args: str, env: dict[str, str] | None = None, **options) -> subprocess.CompletedProcess:
    """`harness ARGS` run as a program in `folder` (its standard streams set up as the script's)."""
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", *args],
                          cwd=folder, env=env or child_env(), stderr=subprocess.PIPE, timeout=LIMIT, **options)


@pytest.mark.slow
def test_a_config_in_a_folder_whose_name_is_not_utf8_finishes_its_run_and_resumes_it(tmp_path):
    """A Latin-1 folder name (an unzipped Windows archive) is a str Python holds with lone
    surrogates: the JSON and leaderboard record it escaped, so the run is finished, not ranked
    again at every try."""
    folder = tmp_path / os.fsdecode(b"lat\xe9")
    config = _project(folder)
    first = _harness(folder, "run", config.name)
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    record = json.loads((folder / "runs" / f"{TAG}.json").read_text(encoding="utf-8"))
    assert record["config_realpath"] == os.path.realpath(config)  # read back, it names the file
    assert "Leaderboard: mine.yaml" in (folder / "runs" / "leaderboard.md").read_text(encoding="utf-8")
    again = _harness(folder, "run", config.name)
    assert again.returncode == 0 and f"{TAG}: finished with the same inputs, skipped" in again.stderr.decode()


def test_stdout_that_is_not_utf8_is_written_utf8_to_a_file_as_output_writes(tmp_path):
    """An ASCII or Latin-1 locale's stdout, redirected: what `--output` writes, not a traceback
    at the first curly quote (the export is the file to edit and feed back, read as UTF-8)."""
    main(["topics", "export", "cast2021", "--format", "tsv", "--output", str(tmp_path / "given.tsv")])
    for encoding in ("ascii", "latin-1"):
        with open(tmp_path / "shown.tsv", "wb") as out:
            done = _harness(tmp_path, "topics", "export", "cast2021", "--format", "tsv", stdout=out,
                            env=child_env(PYTHONIOENCODING=encoding))
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert (tmp_path / "shown.tsv").read_bytes() == (tmp_path / "given.tsv").read_bytes()


def test_a_terminal_that_is_not_utf8_is_shown_escapes_not_a_traceback(tmp_path):
    main_side, terminal = pty.openpty()
    try:
        done = _harness(tmp_path, "topics", "export", "cast2021", "--format", "tsv", stdout=terminal,
                        env=child_env(PYTHONIOENCODING="ascii"))
        os.close(terminal)
        shown = b""
        while chunk := _read(main_side):
            shown += chunk
    finally:
        os.close(main_side)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"\\u2019" in shown and b"Traceback" not in done.stderr


def _read(descriptor: int) -> bytes:
    """What is left on a terminal's other side; b'' once it is all read (Linux says EIO then)."""
    try:
        return os.read(descriptor, 1 << 16)
    except OSError:
        return b""


@pytest.mark.slow
def test_a_closed_stdout_is_quiet(tmp_path):
    """`>&-`: the board goes nowhere, and the exit status is the run's."""
    _project(tmp_path)
    done = _harness(tmp_path, "run", "mine.yaml", preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()[-2000:]
    assert (tmp_path / "runs" / f"{TAG}.json").is_file()


@pytest.mark.slow
def test_a_file_this_user_cannot_read_is_one_line_naming_it(tmp_path):
    """A colleague's run JSON in a shared output folder, made under umask 077."""
    _project(tmp_path)
    assert _harness(tmp_path, "run", "mine.yaml").returncode == 0
    record = tmp_path / "runs" / f"{TAG}.json"
    record.chmod(0)
    as_user = []
    if os.geteuid() == 0:  # root reads any file: run without the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to run as root without reading every file")
        as_user = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    done = subprocess.run([*as_user, sys.executable, "-m", "harness.cli", "run", "mine.yaml"], cwd=tmp_path,
                          env=child_env(), capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == (f"harness run: error: runs/{TAG}.json: Permission denied: this user may "
                                            "not read or change it (another user's, or read-only)")


@pytest.mark.slow
def test_a_run_file_over_the_file_size_limit_is_one_line_naming_it(tmp_path):
    """`ulimit -f` (a full disk or quota alike): the file named, nothing half-written."""
    _project(tmp_path)
    assert _harness(tmp_path, "run", "mine.yaml").returncode == 0  # (its qrels copy, 1.3 MB, made)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # the run file is ~580 kB

    done = _harness(tmp_path, "run", "mine.yaml", "--force", preexec_fn=limited)
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    assert done.stderr.decode().splitlines()[-1] == (
        f"harness run: error: cannot write runs/{TAG}.run: File too large (the disk is full, or a quota or a "
        "file-size limit (`ulimit -f`) is reached)")
    assert not [path.name for path in (tmp_path / "runs").iterdir() if path.name.endswith(".tmp")]


def test_no_home_folder_is_one_line_naming_harness_cache(tmp_path, monkeypatch, capsys):
    """An installed wheel run with no HOME by a uid with no passwd entry (`docker run --user N`)."""
    import pwd

    def no_entry(uid: int):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(paths, "PACKAGED", tmp_path)  # as a wheel: caches under the home folder
    for name in ("HOME", "XDG_CACHE_HOME", "HARNESS_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert main(["run", str(_project(tmp_path / "p")), "--dry-run"]) == 2
    assert capsys.readouterr().err == ("harness run: error: no cache folder: HOME is not set and this user has no "
                                       "home folder; set HARNESS_CACHE to a writable folder to keep the caches "
                                       "(indexes, embeddings) there\n")


def test_a_cache_that_cannot_be_written_names_harness_cache_as_the_way_out(tmp_path, monkeypatch):
    """A read-only clone's .cache, say: said before any index is built."""
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "a file" / "cache"))
    with pytest.raises(OutputError, match=r"is a file, expected a folder; set HARNESS_CACHE to a writable folder"):
        cached_index(topics.load("ikat2023:test").corpus)


def test_a_tilde_in_a_config_path_is_the_home_folder(tmp_path, monkeypatch, capsys):
    """As a shell reads it, and as a retriever's index path already did: not a folder named `~`."""
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    main(["topics", "export", "ikat2023:test", "--format", "tsv", "--output", str(home / "data" / "rw.tsv")])
    shutil.copy(paths.qrels_root() / "ikat" / "2023-qrels.all-turns.txt", home / "data" / "q.txt")
    config = _project(tmp_path / "p", output="~/runs")
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["experiments"][0].update(strategies=["rewrites:~/data/rw.tsv"], qrels="~/data/q.txt")
    config.write_text(yaml.safe_dump(document), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path / "p")
    assert main(["run", str(config), "--dry-run"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[0] == f"runs go to {home / 'runs'}"


def test_an_output_through_a_symlink_to_nothing_names_the_link_and_its_target(tmp_path, capsys):
    """A runs disk not mounted, a scratch folder moved: not 'File exists', and nothing made there."""
    (tmp_path / "runs").symlink_to(tmp_path / "missing" / "runs")
    config = _project(tmp_path, output=str(tmp_path / "runs" / "quick"))
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {config}: output: cannot write {tmp_path}/runs/quick: "
                                       f"{tmp_path}/runs is a symlink to {tmp_path}/missing/runs, which does not "
                                       "exist\n")
    assert not (tmp_path / "missing").exists()


def _passages(folder: Path) -> Path:
    """A two-passage corpus (JSON lines) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "p.jsonl"
    path.write_text('{"id": "d1", "contents": "café au lait"}\n{"id": "d2", "contents": "tea with milk"}\n',
                    encoding="utf-8")
    return path


def _locale(**changes: str) -> dict[str, str]:
    """This environment with the locale variables `changes` alone (none of the caller's)."""
    env = child_env()
    for name in ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONUTF8", "PYTHONCOERCECLOCALE"):
        env.pop(name, None)
    return {**env, **changes}


def test_a_non_ascii_index_folder_under_an_ascii_locale_is_one_line_naming_the_locale(tmp_path):
    """`LC_ALL=C`, as job scripts export it: Python opens the name (UTF-8 mode), Java cannot;
    said before Java starts, with the way out."""
    corpus = _passages(tmp_path)
    done = _harness(tmp_path, "index", str(corpus), "--output", "idx é", env=_locale(LC_ALL="C"))
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"harness index: error: Java cannot open {tmp_path}/idx é: its name is not ASCII, and this locale's character "
        "set is ANSI_X3.4-1968 (LC_ALL, LC_CTYPE or LANG names no UTF-8 locale): run harness under a UTF-8 one, e.g. "
        "LC_ALL=C.UTF-8\n")


@pytest.mark.java
@pytest.mark.slow
def test_a_lang_naming_a_locale_the_machine_lacks_still_indexes_into_a_non_ascii_folder(tmp_path):
    """A laptop's LANG forwarded by ssh: Python falls back to C.UTF-8, and so does its Java child."""
    corpus = _passages(tmp_path)
    done = _harness(tmp_path, "index", str(corpus), "--output", "idx é", "--threads", "1",
                    env=_locale(LANG="xx_XX.UTF-8"))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "index of 2 documents written to idx é" in done.stderr.decode()


def test_a_name_an_ascii_locale_cannot_hold_is_one_line_saying_so(tmp_path):
    """A real ASCII Python (`LC_ALL=C PYTHONUTF8=0`) given `output: runs/out é`: no file of that
    name can be made there, said before any run."""
    config = _project(tmp_path, output="runs/out é")
    done = _harness(tmp_path, "run", config.name, env=_locale(LC_ALL="C", PYTHONUTF8="0"))
    assert done.returncode == 2
    assert done.stderr.decode("utf-8") == ("harness run: error: 'runs/out é': file names in this locale are ascii, "
                                           "which cannot hold 'é': run harness under a UTF-8 locale (e.g. "
                                           "LC_ALL=C.UTF-8)\n")


def test_a_non_ascii_index_folder_under_an_ascii_locale_is_said_by_the_config_check(tmp_path):
    """--dry-run says it at the retriever's key, as it says any index it cannot search."""
    index = tmp_path / "idx é"
    index.mkdir()
    (index / "segments_1").write_bytes(b"")  # what tells a Lucene index (is_index), never opened here
    config = _project(tmp_path)
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["experiments"][0]["retrievers"] = [{"name": "bm25", "params": {"index": str(index)}}]
    config.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    done = _harness(tmp_path, "run", config.name, "--dry-run", env=_locale(LC_ALL="C"))
    assert done.returncode == 2
    assert done.stderr.decode() == (f"harness run: error: mine.yaml: experiments[0].retrievers[0].params.index: Java "
                                    f"cannot open {index}: its name is not ASCII, and this locale's character set is "
                                    "ANSI_X3.4-1968 (LC_ALL, LC_CTYPE or LANG names no UTF-8 locale): run harness "
                                    "under a UTF-8 one, e.g. LC_ALL=C.UTF-8\n")
