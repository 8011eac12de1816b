"""`harness components` and the README's tables of pieces come from the declarations."""

from __future__ import annotations

import gzip
import json
import re
import sys
from enum import Enum
from pathlib import Path

import pytest

from harness.cli import main
from harness.queries import STRATEGIES
from harness.registry import Param, declare
from harness.retrieve import RETRIEVERS
from harness.runner.cli_components import REGISTRIES, _param_cell, markdown, registry, update_tables
from harness.topics import names

README = Path(__file__).resolve().parents[1] / "README.md"
README_KINDS = {"benchmark", "strategy", "retriever", "task", "ptkb-method", "judge"}


def test_the_readme_tables_are_the_declarations():
    text = README.read_text(encoding="utf-8")
    assert set(re.findall(r"<!-- components:([\w-]+) -->", text)) == README_KINDS
    assert update_tables(text) == text, "README.md's tables disagree with the declarations: " \
                                        "run `harness components --update README.md`"


def test_a_readme_table_lists_every_built_in_with_its_summary():
    table = markdown("benchmark")
    for name in names():
        assert f"| `{name}` |" in table
    assert "| `pragmaticqa` | `val`, `train`, `test` | PragmatiCQA:" in table


@declare("Documents by id order.", [Param("boost", float, 1.0, "how much to boost"),
                                    Param("field", str, desc="the field to read")])
def _mine(query: str, k: int, boost: float = 1.0, field: str = "contents"):
    return []


def test_components_json_lists_params_with_type_default_and_description(capsys):
    with RETRIEVERS.using({"mine": _mine}):
        assert main(["components", "retriever", "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    mine = next(c for c in listing["retriever"] if c["name"] == "mine")
    assert mine["summary"] == "Documents by id order." and mine["plugin"] == __name__
    assert mine["parameters"] == [
        {"name": "boost", "type": "a number", "required": False, "default": 1.0, "desc": "how much to boost"},
        {"name": "field", "type": "a string", "required": True, "default": None, "desc": "the field to read"}]
    for component in listing["retriever"]:
        declaration = RETRIEVERS.declaration(component["name"]) if component["name"] != "mine" else None
        if declaration is not None:
            assert [p["name"] for p in component["parameters"]] == [p.name for p in declaration.params]


def _odd(query: str, k: int, paths: list = [Path("a")], span: tuple = ("a", 1), limit: float = float("inf"),
         table: dict = {1: 2}, words: list = ["a"]):
    return []


def test_components_json_gives_a_plugin_default_json_cannot_write_as_its_repr(capsys):
    """A list of paths stopped the listing with a traceback; inf was written as JSON's
    non-standard Infinity; a tuple or a dict with int keys would be read back as another value."""
    with RETRIEVERS.using({"odd": _odd}):
        assert main(["components", "retriever", "--format", "json"]) == 0
    odd = next(c for c in json.loads(capsys.readouterr().out)["retriever"] if c["name"] == "odd")
    assert [p["default"] for p in odd["parameters"]] == ["[PosixPath('a')]", "('a', 1)", "inf", "{1: 2}", ["a"]]


class _Mode(Enum):
    FAST = "fast"
    SLOW = "slow"


def _moded(query: str, k: int, mode: _Mode = _Mode.FAST):
    return []


def test_an_enum_default_is_listed_as_a_config_writes_it(capsys):
    """`fast`, not the member's repr `<_Mode.FAST: 'fast'>`, in the listing, JSON and Markdown alike."""
    with RETRIEVERS.using({"moded": _moded}):
        assert main(["components", "retriever", "moded"]) == 0
        assert "mode: one of 'fast', 'slow' (or a member's name) = 'fast'" in capsys.readouterr().out
        assert main(["components", "retriever", "moded", "--format", "json"]) == 0
        assert '"default": "fast"' in capsys.readouterr().out
    assert "default `'fast'`" in _param_cell(Param("mode", _Mode, _Mode.FAST))


def test_components_json_gives_a_benchmarks_splits_and_fields(capsys):
    assert main(["components", "benchmark", "--format", "json"]) == 0
    ikat = next(c for c in json.loads(capsys.readouterr().out)["benchmark"] if c["name"] == "ikat2023")
    assert ikat["splits"] == ["test", "train"]
    assert [(f["name"], f["type"]) for f in ikat["fields"]] == [("ptkb_provenance", "a list of strings")]
    assert ikat["fields"][0]["desc"]


def test_a_preset_is_shown_with_its_measures_depth_passage_separator_and_source(capsys):
    """Its summary, its source's first sentence, need not say what it computes."""
    assert main(["components", "preset", "cast2021"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == (
        f"  {'':<22}computes: nDCG@3 nDCG@5 nDCG@500 AP(rel=2)@500 RR(rel=2) R(rel=2)@500, depth 500, passages by "
        "document (separator '-')")
    assert main(["components", "preset", "recommendation", "--format", "json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["preset"]
    assert (shown["measures"], shown["depth"], shown["passage_separator"]) == (["R@1", "R@10", "R@50", "nDCG@10"],
                                                                              None, None)
    assert shown["source"].endswith("is HR@k, Success@k.") and not shown["summary"].endswith("Success@k.")


def test_components_text_lists_every_kind_from_its_registry(capsys):
    assert main(["components"]) == 0
    out = capsys.readouterr().out
    for kind in REGISTRIES:
        assert f"{kind}:\n" in out
        for name in registry(kind).names():
            assert f"\n  {name} " in out or f"\n  {name}\n" in out
    assert "splits: val (default), train, test" in out


def test_topics_export_help_lists_the_registered_benchmarks_and_strategies(capsys):
    try:
        main(["topics", "export", "--help"])
    except SystemExit:
        pass
    help_text = " ".join(capsys.readouterr().out.split())
    assert ", ".join(names()) in help_text and ", ".join(STRATEGIES.names()) in help_text


def test_update_of_a_file_without_a_table_marker_is_an_error_not_0_tables_up_to_date(tmp_path, capsys):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nNo tables here.\n", encoding="utf-8")
    assert main(["components", "--update", str(path)]) == 2
    assert f"harness components: error: {path}: no <!-- components:KIND --> marker" in capsys.readouterr().err


def test_update_of_a_table_marker_never_closed_is_an_error_naming_its_line_and_the_file_is_left_as_it_was(
        tmp_path, capsys):
    readme = README.read_text(encoding="utf-8")
    cut = readme[:readme.index("<!-- /components -->")]  # the README cut inside its first table
    path = tmp_path / "README.md"
    path.write_text(cut, encoding="utf-8")
    opening = re.search(r"<!-- components:[\w-]+ -->", cut)
    assert main(["components", "--update", str(path)]) == 2
    assert (f"harness components: error: {path}:{cut.count(chr(10), 0, opening.start()) + 1}: {opening[0]} is not "
            "closed by <!-- /components -->") in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == cut


def test_update_keeps_the_files_crlf_line_endings_and_byte_order_mark(tmp_path, capsys):
    """A Windows file is rewritten as a Windows file: only the tables change."""
    plain = "# T\n\n<!-- components:task -->\nold\n<!-- /components -->\nend\n"
    path = tmp_path / "notes.md"
    path.write_bytes(b"\xef\xbb\xbf" + plain.replace("\n", "\r\n").encode("utf-8"))
    assert main(["components", "--update", str(path)]) == 0
    assert capsys.readouterr().err == f"{path}: 1 table updated\n"
    expected = "\ufeff" + update_tables(plain).replace("\n", "\r\n")
    assert path.read_bytes() == expected.encode("utf-8")


def test_update_of_a_compressed_file_is_refused_and_the_file_left_as_it_was(tmp_path, capsys):
    """Read decompressed, it was written back as plain text under its .gz name."""
    path = tmp_path / "notes.md.gz"
    packed = gzip.compress(b"<!-- components:task -->\nold\n<!-- /components -->\n")
    path.write_bytes(packed)
    assert main(["components", "--update", str(path)]) == 2
    assert f"harness components: error: {path}: is compressed" in capsys.readouterr().err
    assert path.read_bytes() == packed


def test_update_of_a_marker_naming_no_kind_is_an_error_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "notes.md"
    path.write_text("# T\n<!-- components:retreiver -->\nold\n<!-- /components -->\n", encoding="utf-8")
    assert main(["components", "--update", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"harness components: error: {path}:2: <!-- components:retreiver -->: "
                                              "no such kind; known: benchmark, strategy, retriever")


def test_a_kind_may_be_named_in_the_plural_as_a_configs_keys_name_it(capsys):
    for plural, kind in (("retrievers", "retriever"), ("strategies", "strategy"), ("corpus-formats", "corpus-format")):
        assert main(["components", plural, "--format", "json"]) == 0
        assert list(json.loads(capsys.readouterr().out)) == [kind]


def test_a_python_spec_is_shown_with_the_declaration_its_signature_gives(tmp_path, monkeypatch, capsys):
    """`python:` plug-ins have no name to be listed by: the spec itself shows how the harness
    reads its signature, as a config naming it is checked ('unrecognized arguments' before)."""
    (tmp_path / "components_shown.py").write_text(
        'def search(query: str, k: int, boost: float = 1.0):\n    """toy search"""\n    return []\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "components_shown", raising=False)
    assert main(["components", "retriever", "python:components_shown:search"]) == 0
    assert capsys.readouterr().out == ("retriever:\n  python:components_shown:search toy search  [components_shown:search]\n"
                                       f"  {'':<22}boost: a number = 1.0\n")
    assert main(["components", "retriever", "python:components_shown:search", "--format", "json"]) == 0
    [shown] = json.loads(capsys.readouterr().out)["retriever"]
    assert shown["parameters"] == [{"name": "boost", "type": "a number", "required": False, "default": 1.0, "desc": ""}]


@pytest.mark.parametrize("kind, named, where", [
    ("scale", "scale", "--scale, a labels file's sidecar"),
    ("corpus-format", "corpus format", "a corpus spec's NAME:"),
])
def test_a_python_spec_of_a_kind_named_by_registered_name_alone_is_refused(capsys, kind, named, where):
    """No place takes one (it listed the object, as though `--scale python:...` would work)."""
    spec = "python:harness.judge.scales:SUPPORT_0_2"
    assert main(["components", kind, spec]) == 2
    assert capsys.readouterr().err == (f"harness components: error: {named} {spec!r}: a {named} is named by its "
                                       f"registered name alone ({where}), not by a python: spec: give yours an "
                                       "entry point\n")


def test_one_named_component_is_shown_alone_and_an_unknown_one_is_an_error(capsys):
    assert main(["components", "retriever", "bm25", "--format", "json"]) == 0
    assert [c["name"] for c in json.loads(capsys.readouterr().out)["retriever"]] == ["bm25"]
    assert main(["components", "retriever", "bm2"]) == 2
    assert "unknown retriever 'bm2'; nearest: bm25" in capsys.readouterr().err
    assert main(["components", "retriever", "bm25", "--format", "md"]) == 2
    assert "one component is shown as text or json" in capsys.readouterr().err
