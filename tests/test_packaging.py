"""What a built distribution says about itself: its licences, and what it carries."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness.paths import REPO_ROOT

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
