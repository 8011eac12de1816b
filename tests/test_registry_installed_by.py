"""Which distribution installed a plug-in's module (harness.registry.installed_by, a plug-in judge
object's provenance): importlib.metadata's packages_distributions() answer, without reading every
installed distribution's files at each call, and never an answer from before a package was installed
into a folder on sys.path."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile

from harness.registry import installed_by


def _as_packages_distributions_says(top: str, tops: dict[str, list[str]] | None = None) -> dict[str, str]:
    names = (importlib.metadata.packages_distributions() if tops is None else tops).get(top, [])
    return {"distribution": names[0], "version": importlib.metadata.version(names[0])} if len(names) == 1 else {}


def test_installed_by_answers_as_packages_distributions_for_every_installed_top_level_name():
    tops = importlib.metadata.packages_distributions()
    assert len(tops) > 10  # this environment's: pytest, pandas, ...
    assert {top: installed_by(f"{top}.sub") for top in tops} == \
        {top: _as_packages_distributions_says(top, tops) for top in tops}
    assert installed_by("no_such_module_h5") == {}


def test_a_package_pip_installs_into_a_target_folder_after_a_lookup_is_found_by_the_next(tmp_path, monkeypatch):
    """`pip install --target DIR` of a wheel (no top_level.txt: its RECORD names the module) into a folder on
    sys.path, after a first look-up that found nothing there."""
    target = tmp_path / "target"
    target.mkdir()
    monkeypatch.syspath_prepend(str(target))
    assert installed_by("lab_ranker_h5") == {}
    wheel = tmp_path / "lab_ranker_h5-0.1-py3-none-any.whl"
    info = "lab_ranker_h5-0.1.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("lab_ranker_h5.py", "def search(query, k):\n    return []\n")
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: lab-ranker-h5\nVersion: 0.1\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", f"lab_ranker_h5.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
                    "--target", str(target), str(wheel)], check=True, timeout=300, capture_output=True)
    assert installed_by("lab_ranker_h5") == {"distribution": "lab-ranker-h5", "version": "0.1"}
    assert installed_by("lab_ranker_h5") == _as_packages_distributions_says("lab_ranker_h5")


def test_a_second_lookup_reads_no_distribution_again_while_the_folders_on_sys_path_are_unchanged(monkeypatch):
    """packages_distributions() reads each installed distribution's metadata and top-level names at every
    call (0.1 to 1 s in an environment of 200 packages): it is asked once while sys.path's folders stay as
    they are."""
    installed_by("pandas")
    calls: list[int] = []
    real = importlib.metadata.packages_distributions
    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: calls.append(1) or real())
    assert installed_by("pandas") == {"distribution": "pandas", "version": importlib.metadata.version("pandas")}
    assert calls == []


def test_a_lookup_from_a_removed_folder_answers(tmp_path, monkeypatch):
    """A notebook's temporary folder removed under it: packages_distributions() still answers there."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert installed_by("pandas") == {"distribution": "pandas", "version": importlib.metadata.version("pandas")}
