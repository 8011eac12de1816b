"""What a built distribution says about itself (its licences) and how an installed user names what it carries."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.paths import REPO_ROOT, shipped_configs
from harness.runner.config import config_file

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SPDX = {"MIT": "MIT", "CC BY-SA 4.0": "CC-BY-SA-4.0", "CC BY-NC 4.0": "CC-BY-NC-4.0"}


def _licence_column() -> dict[str, str]:
    """data/SOURCES.md's table: folder -> the licence its source states."""
    rows = re.findall(r"^\| (\w+)/ \| [^|]+ \| ([^|]+) \|", (REPO_ROOT / "data" / "SOURCES.md").read_text(), re.M)
    return {folder: licence.strip() for folder, licence in rows}


def test_the_licence_expression_names_every_shipped_data_licence():
    """The wheel bundles data/ and qrels/: its metadata names their licences as well as harness's own
    MIT, and a folder whose source states none as a LicenseRef of its own, not as MIT."""
    terms = set(PROJECT["license"].split(" AND "))
    column = _licence_column()
    assert {"cosrec", "crsarena", "opendialkg", "pragmaticqa"} <= column.keys()
    for folder, licence in column.items():
        stated = {spdx for words, spdx in SPDX.items() if words in licence}
        if stated:
            assert stated <= terms, folder
        else:
            assert any(t.startswith("LicenseRef-") and folder in t.lower() for t in terms), folder


def test_the_distribution_carries_harness_licence_and_every_data_licence_file():
    assert "the harness authors" in (REPO_ROOT / "LICENSE").read_text() and "MIT License" in (
        REPO_ROOT / "LICENSE").read_text()
    carried = {p for pattern in PROJECT["license-files"] for p in REPO_ROOT.glob(pattern)}
    wanted = {REPO_ROOT / "LICENSE", REPO_ROOT / "data" / "SOURCES.md", REPO_ROOT / "qrels" / "README.md",
              *REPO_ROOT.glob("data/**/LICENSE"), *REPO_ROOT.glob("qrels/**/LICENSE")}
    assert wanted <= carried and len(wanted) > 5


def test_a_bare_name_that_is_no_file_here_names_a_shipped_config(tmp_path, monkeypatch):
    """An installed harness has no clone's configs/ to name by path: `harness run default` runs its copy."""
    monkeypatch.chdir(tmp_path)
    shipped = shipped_configs()
    assert {"default", "quick", "leaderboard"} <= shipped.keys()
    assert config_file("default") == config_file("default.yaml") == shipped["default"]
    assert shipped["default"].read_bytes() == (REPO_ROOT / "configs" / "default.yaml").read_bytes()


def test_a_file_of_that_name_in_the_folder_wins_over_a_shipped_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick.yaml").write_text("experiments: []\n")
    assert config_file("quick.yaml") == Path("quick.yaml")
    assert config_file("configs/quick.yaml") == Path("configs/quick.yaml")  # a path is never a shipped name


def test_a_folder_of_that_name_does_not_hide_the_shipped_config(tmp_path, monkeypatch):
    """`harness serve leaderboard` makes ./leaderboard/ for its database: it started once, then
    said 'leaderboard: is a folder'."""
    monkeypatch.chdir(tmp_path)
    Path("leaderboard").mkdir()
    assert config_file("leaderboard") == shipped_configs()["leaderboard"]


def test_a_bare_name_beside_the_users_own_file_of_that_name_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("quick.yaml").write_text("experiments: []\n")
    with pytest.raises(InputError, match="quick.yaml is here: give quick.yaml for it"):
        config_file("quick")


def test_an_unknown_bare_name_lists_the_shipped_configs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "nosuch"]) == 2
    assert capsys.readouterr().err == ("harness run: error: nosuch: no such config file; "
                                       f"shipped configs: {', '.join(shipped_configs())}\n")


def test_a_missing_path_to_a_shipped_config_is_told_its_name(tmp_path, monkeypatch, capsys):
    """The README's `harness run configs/default.yaml`, typed outside a clone."""
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "configs/leaderboard.yaml"]) == 2
    assert capsys.readouterr().err == ("harness serve: error: configs/leaderboard.yaml: no such config file; "
                                       "harness ships a config named leaderboard: give that name alone\n")


@pytest.mark.slow
def test_the_sdist_holds_every_file_of_the_repo_so_its_tests_run(tmp_path):
    """Its tests import tests.conftest and read configs/, and a wheel built from it copies configs/ in:
    an sdist of test files alone could run none of them (about 4 s)."""
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of the repo's files to hold the sdist to")
    wanted = [path for path in tracked.stdout.splitlines() if not path.startswith(".")]
    source = tmp_path / "source"  # a copy: setuptools adds a checkout's earlier egg-info's files to the sdist
    for path in wanted:
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / path, source / path)
    build = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    name = subprocess.run([sys.executable, "-c", build, str(tmp_path)], cwd=source, capture_output=True,
                          text=True, check=True).stdout.split()[-1]
    with tarfile.open(tmp_path / name) as sdist:
        held = {member.split("/", 1)[1] for member in sdist.getnames() if "/" in member}
    assert {"tests/conftest.py", "configs/default.yaml", "Makefile", "LICENSE"} <= set(wanted)
    assert sorted(set(wanted) - held) == []
