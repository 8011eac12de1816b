"""`harness components [KIND [NAME]]`: every registered component (built-in or plug-in) by kind, as it
declares itself (`Registry.declaration`): its summary, the parameters a config may give (type,
default, description), a benchmark's splits and typed fields, and where a plug-in comes from.
NAME shows one, a `python:module:attr` spec too (such a plug-in is registered under no name), of
every kind but those named by registered name alone (a scale, a corpus format).

`--format md` writes the tables of the README's "Pieces you can name" section, and
`--update README.md` rewrites them there, between `<!-- components:KIND -->` and
`<!-- /components -->` (the prose around them is kept); tests/test_components.py fails when
the README's tables disagree with the declarations."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from enum import Enum
from pathlib import Path
from typing import Any

from harness.atomic import atomic_write
from harness.cli import add_format
from harness.errors import COMPRESSED, HarnessError, InputError, counted, read_input
from harness.registry import PYTHON, Declaration, Param, Registry, describe_type

# kind -> (module, registry): imported when listed
REGISTRIES = {
    "benchmark": ("harness.topics", "ADAPTERS"),
    "strategy": ("harness.queries", "STRATEGIES"),
    "retriever": ("harness.retrieve", "RETRIEVERS"),
    "task": ("harness.runner.tasks", "TASKS"),
    "ptkb-method": ("harness.ikat.ptkb", "METHODS"),
    "judge": ("harness.judge.base", "JUDGES"),
    "corpus-format": ("harness.corpus.readers", "CORPUS_FORMATS"),
    "splitter": ("harness.corpus.segment", "SPLITTERS"),
    "engine": ("harness.compute.engines", "ENGINES"),
    "dense-backend": ("harness.retrieve.dense", "SEARCH_BACKENDS"),
    "approx-index": ("harness.compute.approx", "APPROX"),
    "measure": ("harness.evaluate.measures", "FAMILIES"),
    "preset": ("harness.evaluate.presets", "PRESETS"),
    "test": ("harness.report.stats", "TESTS"),
    "correction": ("harness.report.stats", "CORRECTIONS"),
    "report-format": ("harness.report.formats", "FORMATS"),
    "scale": ("harness.judge.scales", "SCALES"),
    "response-format": ("harness.responses.readers", "FORMATS"),
    "nugget-bank": ("harness.responses.nuggets", "BANKS"),
}
# kind -> where it is named: a kind taking entry points whose places of use take a registered name
# alone, no `python:` spec (README, "Plug-ins")
BY_NAME_ONLY = {
    "scale": "--scale, a labels file's sidecar",
    "corpus-format": "a corpus spec's NAME:",
}
FORMATS = ("table", "json", "md")
TABLE = re.compile(r"(<!-- components:(?P<kind>[\w-]+) -->\n).*?(<!-- /components -->)", re.S)
MARKER = re.compile(r"<!-- (?:components:(?P<kind>[\w-]+)|/components) -->")


def registry(kind: str) -> Registry:
    module, name = REGISTRIES[kind]
    return getattr(importlib.import_module(module), name)


def singular(kind: str) -> str:
    """A kind named in the plural, as a config's keys name them (`retrievers`, `strategies`);
    anything else as typed, for argparse to refuse by that name."""
    one = kind[:-3] + "y" if kind.endswith("ies") else kind.removesuffix("s")
    return one if one in REGISTRIES else kind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", type=singular, choices=sorted(REGISTRIES),
                        help="list this kind only (plural too, as a config's keys: retrievers)")
    parser.add_argument("name", nargs="?",
                        help="show this one only: a registered name or a plug-in's python:module:attr spec, "
                             "its declaration as a config is checked against")
    add_format(parser, FORMATS, default="table",
               help="a text listing (default), JSON, or Markdown (the README's tables)")
    parser.add_argument("--update", metavar="FILE",
                        help="rewrite FILE's tables between `<!-- components:KIND -->` and `<!-- /components -->` "
                             "from the built-ins' declarations (e.g. README.md)")


def run(args: argparse.Namespace) -> int:
    if args.name is not None:  # one component, a `python:` spec's too (it has no name to be listed by)
        if args.format == "md" or args.update:
            raise HarnessError(f"{args.name}: --format md and --update write the README's tables of the "
                               "built-ins; one component is shown as text or json")
        shown = {args.kind: [describe(args.kind, args.name)]}
        sys.stdout.write(json.dumps(shown, indent=2) + "\n" if args.format == "json" else as_text(shown))
        return 0
    if args.update:
        path = Path(args.update)
        if path.suffix in COMPRESSED:  # read decompressed, it would be written back as plain text
            raise InputError(path, "is compressed: --update rewrites a plain text file in place")
        readme = read_input(path, encoding="utf-8")  # a byte-order mark kept, to be written back
        check_markers(path, readme)
        updated = update_tables(readme)
        if updated != readme:
            with atomic_write(path) as out:
                out.write(updated.replace("\n", "\r\n") if _crlf(path) else updated)
        tables = counted(len(TABLE.findall(readme)), "table")
        print(f"{path}: {tables} {'updated' if updated != readme else 'up to date'}", file=sys.stderr)
        return 0
    kinds = [args.kind] if args.kind else list(REGISTRIES)
    if args.format == "md":
        sys.stdout.write("\n".join(markdown(kind) for kind in kinds))
        return 0
    listing = {kind: [listed(kind, name) for name in registry(kind).names()] for kind in kinds}
    if args.format == "json":
        json.dump(listing, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(as_text(listing))
    broken = sum("error" in component for components in listing.values() for component in components)
    if broken:  # for scripts to notice: the listing itself went on
        print(f"harness components: {counted(broken, 'plug-in')} cannot be loaded (marked BROKEN)", file=sys.stderr)
    return 1 if broken else 0


def listed(kind: str, name: str) -> dict[str, Any]:
    """`describe`, or for a plug-in that cannot be loaded (an entry point whose target fails
    to import or has the wrong signature) its name and why, naming its package: `components`
    is where a user looks for it, so the others are listed still."""
    try:
        return describe(kind, name)
    except HarnessError as error:
        return {"name": name, "error": str(error).removeprefix(f"{registry(kind).kind} {name!r}: ")}


def describe(kind: str, name: str) -> dict[str, Any]:
    """One component as its declaration says: name, summary, parameters (and, for benchmarks,
    splits, turn fields and conversation fields; for presets, measures, depth, passage separator
    and source), and where a plug-in comes from. A `python:`
    spec of a kind named by registered name alone is refused, as no place would take it."""
    components = registry(kind)
    if name.startswith(PYTHON) and kind in BY_NAME_ONLY:
        raise HarnessError(f"{components.kind} {name!r}: a {components.kind} is named by its registered name alone "
                           f"({BY_NAME_ONLY[kind]}), not by a python: spec: give yours an entry point")
    declaration = components.declaration(name)
    origin = components.origin(name)
    plugin = None
    if origin is not None:
        plugin = origin.get("distribution") or origin.get("python") or origin.get("module")
    record: dict[str, Any] = {"name": name, "summary": declaration.summary,
                              "parameters": [_param(p) for p in declaration.params],
                              "open": declaration.open, "plugin": plugin}
    if kind == "benchmark":
        record.update(splits=list(declaration.splits), fields=[_field(f) for f in declaration.fields],
                      conversation_fields=[_field(f) for f in declaration.conversation_fields])
    if kind == "preset":  # what it computes: its summary is its source's first sentence alone
        preset = components.get(name)
        record.update(measures=list(preset.measures), depth=preset.depth,
                      passage_separator=preset.passage_separator, source=preset.source)
    return record


def _param(param: Param) -> dict[str, Any]:
    default = None if param.required else _written(param.default)
    if not _as_json(default):
        default = repr(default)
    return {"name": param.name, "type": describe_type(param.type), "required": param.required,
            "default": default, "desc": param.desc}


def _written(default: Any) -> Any:
    """A default as a config writes it: an Enum member as its value (`fast`, not `<Mode.FAST: 'fast'>`)."""
    return default.value if isinstance(default, Enum) else default


def _as_json(value: Any) -> bool:
    """Whether JSON writes `value` as it is: not a plug-in's default of [Path('a')] (no JSON),
    inf (no JSON number), (1, 2) or {1: 2} (read back as a list, a string key)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False)) == value
    except (TypeError, ValueError):
        return False


def _field(field: Param) -> dict[str, Any]:
    return {"name": field.name, "type": describe_type(field.type), "desc": field.desc}


def as_text(listing: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for kind, components in listing.items():
        lines.append(f"{kind}:")
        for component in components:
            if "error" in component:
                lines.append(f"  {component['name']:<20} BROKEN: {component['error']}")
                continue
            origin = f"  [{component['plugin']}]" if component["plugin"] else ""
            lines.append(f"  {component['name']:<20} {component['summary']}{origin}".rstrip())
            if component.get("splits"):
                lines.append(f"  {'':<22}splits: {_splits(component['splits'])}")
            if "measures" in component:  # a preset's
                from harness.evaluate.presets import settings_text

                computes = settings_text(component["measures"], component["depth"], component["passage_separator"])
                lines.append(f"  {'':<22}computes: {computes}")
                if component["source"].strip() != component["summary"]:
                    lines.append(f"  {'':<22}source: {' '.join(component['source'].split())}")
            for heading, key in (("", "parameters"), ("turn field ", "fields"),
                                 ("conversation field ", "conversation_fields")):
                for param in component.get(key, []):
                    lines.append(f"  {'':<22}{heading}{_param_text(param)}".rstrip())
            if component["open"]:
                lines.append(f"  {'':<22}(takes other parameters too, unchecked)")
    return "\n".join(lines) + "\n"


def _param_text(param: dict[str, Any]) -> str:
    default = "" if "required" not in param else " (required)" if param["required"] else f" = {param['default']!r}"
    return f"{param['name']}: {param['type']}{default}  {param['desc']}"


def _splits(splits: list[str]) -> str:
    return ", ".join(f"{split} (default)" if i == 0 else split for i, split in enumerate(splits))


# --- the README's tables ---------------------------------------------------------------------

def markdown(kind: str) -> str:
    """The table of the built-in components of `kind` (plug-ins are not the README's)."""
    components = registry(kind)
    benchmark = kind == "benchmark"
    head = ["name", "splits", "summary", "turn fields"] if benchmark else ["name", "summary", "parameters"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in components.built_ins():
        declaration = components.declaration(name)
        if benchmark:
            cells = [f"`{name}`", ", ".join(f"`{s}`" for s in declaration.splits), declaration.summary,
                     _fields_cell(declaration)]
        else:
            cells = [f"`{name}`", declaration.summary, "<br>".join(_param_cell(p) for p in declaration.params)]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _param_cell(param: Param) -> str:
    default = "required" if param.required else f"default `{_written(param.default)!r}`"
    return f"`{param.name}` ({describe_type(param.type)}, {default}): {param.desc}".rstrip(": ")


def _fields_cell(declaration: Declaration) -> str:
    turn = [f"`{f.name}` ({describe_type(f.type)}): {f.desc}" for f in declaration.fields]
    conversation = [f"conversation `{f.name}` ({describe_type(f.type)}): {f.desc}"
                    for f in declaration.conversation_fields]
    return "<br>".join(turn + conversation)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _crlf(path: Path) -> bool:
    """Whether the file's lines end in CRLF (its first line says): kept when it is rewritten."""
    with open(path, "rb") as handle:
        return handle.readline().endswith(b"\r\n")


def check_markers(path: Path, text: str) -> None:
    """Every `<!-- components:KIND -->` (on a line of its own) is closed by `<!-- /components -->`
    before the next one, and there is at least one: else an InputError naming the file and the
    marker's line, not '0 tables up to date'."""
    opened: tuple[int, str] | None = None  # the line and text of the marker not yet closed
    found = 0
    for marker in MARKER.finditer(text):
        line = text.count("\n", 0, marker.start()) + 1
        if marker["kind"] is None:  # a closing marker
            if opened is None:
                raise InputError(path, "<!-- /components --> closes no <!-- components:KIND --> marker", line=line)
            opened, found = None, found + 1
            continue
        if opened is not None:
            break  # reported below
        if marker["kind"] not in REGISTRIES:
            raise InputError(path, f"{marker[0]}: no such kind; known: {', '.join(REGISTRIES)}", line=line)
        if not text.startswith("\n", marker.end()):
            raise InputError(path, f"{marker[0]} must end its line (the table starts on the next)", line=line)
        opened = (line, marker[0])
    if opened is not None:
        raise InputError(path, f"{opened[1]} is not closed by <!-- /components -->", line=opened[0])
    if not found:
        raise InputError(path, "no <!-- components:KIND --> marker: nothing to update (a table goes between "
                               "<!-- components:KIND --> and <!-- /components -->)")


def update_tables(text: str) -> str:
    """`text` with every marked table regenerated from the declarations."""
    def table(match: re.Match) -> str:
        if match["kind"] not in REGISTRIES:
            raise HarnessError(f"<!-- components:{match['kind']} -->: no such kind; known: {', '.join(REGISTRIES)}")
        return match[1] + markdown(match["kind"]) + match[3]

    return TABLE.sub(table, text)
