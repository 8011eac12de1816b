"""The package's imports follow the layer table in the README, and form no cycle.

Every `import` and `from ... import` in harness/ counts, wherever it is written: at module
level, inside a function (the lazy imports that keep `harness eval` fast) or under
`if TYPE_CHECKING:`. A module may import its own package's modules and modules of lower
layers only; `cli` modules (and harness/cli.py) sit on top and may import anything.

The same holds folder by folder: the table's rows name rooms (a folder under harness/, or a
top-level module), all of a folder's modules sit in its one row, and no folder imports a
folder of its own row or a higher one. Built-ins of a higher layer that register into a lower
layer's registry are named in harness/_assembly.py, checked here to point down.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import harness

ROOT = Path(harness.__file__).parent

# The README's layer table, lowest first: a module imports only from lower rows (and its own package).
LAYERS: list[tuple[str, ...]] = [
    ("harness.errors", "harness.extras"),
    ("harness.atomic",),
    ("harness.paths",),
    ("harness.registry", "harness.jsonl", "harness.progress", "harness.workers"),
    ("harness.trec",),
    ("harness.corpus",),
    ("harness.topics",),
    ("harness.queries",),
    ("harness.judge",),
    ("harness.compute",),
    ("harness.retrieve",),
    ("harness.evaluate",),
    ("harness.report", "harness.ikat"),
    ("harness.runner", "harness.scale", "harness.responses"),
    ("harness.irds",),
    ("harness", "harness._irds_hook", "harness._assembly", "harness.cli", "harness.api", "harness.serve"),
]
TOP = len(LAYERS) - 1
# The layout before harness.compute: harness.scale in two rows, its low modules named one by one.
SPLIT_SCALE = [*LAYERS[:9], ("harness.scale.engines", "harness.scale.exact", "harness.scale.approx"), *LAYERS[10:]]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The harness modules `name` imports anywhere in its body, as module names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module; `from mod import name`, the module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in known and target != name}
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def is_cli(name: str) -> bool:
    return name.rpartition(".")[2].startswith("cli")


def layer(name: str, layers: list[tuple[str, ...]] = LAYERS) -> int:
    """The row of the longest prefix naming the module (in a table that names modules inside
    a folder, as SPLIT_SCALE does, the module's own row wins over its folder's)."""
    if is_cli(name):
        return len(layers) - 1
    best = max(((len(prefix), row) for row, group in enumerate(layers) for prefix in group
                if name == prefix or (prefix != "harness" and name.startswith(prefix + "."))),
               default=None)
    assert best is not None, f"{name} is in no row of the layer table (tests/test_layers.py, README)"
    return best[1]


def owner(name: str) -> str:
    """The room a module belongs to, for the same-package rule and the folder checks: its
    folder under harness/ (harness.report.html -> harness.report), or a top-level module itself."""
    parts = name.split(".")
    return ".".join(parts[:2])


def split_rooms(names: Iterable[str], layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """Folders whose modules sit in more than one row (command-line modules, at the bottom
    wherever they are, aside)."""
    rows: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name in sorted(names):
        if not is_cli(name):
            rows[owner(name)][layer(name, layers)].append(name)
    return [f"{room} sits in rows " + " and ".join(f"{row} ({', '.join(found)})" for row, found in sorted(by_row.items()))
            for room, by_row in sorted(rows.items()) if len(by_row) > 1]


def folder_back_arrows(edges: dict[str, set[str]], layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """The imports taken folder by folder: a folder (its row: its own name's) imports only
    folders of lower rows."""
    top = len(layers) - 1
    problems = set()
    for source, targets in edges.items():
        here = owner(source)
        if is_cli(source) or layer(here, layers) == top:
            continue
        for there in {owner(target) for target in targets} - {here}:
            if layer(there, layers) >= layer(here, layers):
                problems.add(f"{here} imports {there} (layer {layer(here, layers)} -> {layer(there, layers)})")
    return sorted(problems)


def back_arrows(edges: dict[str, set[str]], layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    problems = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            if owner(source) == owner(target) and owner(source) != "harness":
                continue
            here, there = layer(source, layers), layer(target, layers)
            if there >= here and here != len(layers) - 1:
                problems.append(f"{source} imports {target} (layer {here} -> {there})")
    return problems


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    for name in modules():
        layer(name)


def test_the_walk_sees_function_level_and_type_checking_imports():
    edges = graph()
    assert "harness.topics.ikat" in edges["harness.ikat.ptkb"]  # imported inside a function
    assert "harness.runner.runner" in edges["harness.runner.cli"]  # imported inside a function
    assert "harness.runner.runner" in edges["harness.runner.leaderboard"]  # under `if TYPE_CHECKING:`


def test_the_checks_catch_what_they_are_for():
    """The arrows the old layout had: corpus readers importing topics, a strategy importing
    iKAT, and the runner's and the report's circles."""
    assert back_arrows({"harness.corpus.readers": {"harness.topics"}}) == [
        "harness.corpus.readers imports harness.topics (layer 5 -> 6)"]
    assert back_arrows({"harness.queries.ptkb_topk": {"harness.ikat.ptkb"}})
    assert back_arrows({"harness.topics.cli": {"harness.queries"}}) == []  # a CLI may import anything
    loop = {"harness.runner.config": {"harness.runner.tasks"}, "harness.runner.tasks": {"harness.runner.config"}}
    assert cycles(loop) == [["harness.runner.config", "harness.runner.tasks"]]


def test_vector_search_sits_below_the_retrievers_and_sharded_search_above():
    """The engines and search kernels (harness.compute) sit below the retrievers that use
    them; harness.scale sits above, so the dense retriever reaches sharded search through a
    registry."""
    assert layer("harness.compute.exact") < layer("harness.retrieve.dense") < layer("harness.scale.search")
    assert back_arrows({"harness.retrieve.dense": {"harness.compute.exact"}}) == []
    assert back_arrows({"harness.retrieve.dense": {"harness.scale.search"}})


def test_the_table_names_rooms_not_modules_inside_a_folder():
    for group in LAYERS:
        for name in group:
            assert owner(name) == name, f"{name}: a row names a folder or a top-level module, not a module in a folder"


def test_every_folder_sits_in_one_row():
    assert split_rooms(modules()) == []


def test_imports_follow_the_layer_table_folder_by_folder():
    assert folder_back_arrows(graph()) == []


def test_the_folder_checks_catch_what_they_are_for():
    """The layout before harness.compute passed module by module, with harness.scale in two
    rows; folder by folder the dense retriever imported a folder above its own."""
    old = {"harness.retrieve.dense": {"harness.scale.exact", "harness.scale.approx", "harness.scale.engines"}}
    assert back_arrows(old, SPLIT_SCALE) == []
    assert folder_back_arrows(old, SPLIT_SCALE) == ["harness.retrieve imports harness.scale (layer 10 -> 13)"]
    assert split_rooms(["harness.scale.exact", "harness.scale.search"], SPLIT_SCALE) == [
        "harness.scale sits in rows 9 (harness.scale.exact) and 13 (harness.scale.search)"]
    assert folder_back_arrows({"harness.scale.search": {"harness.retrieve.dense"}}) == []
    assert folder_back_arrows({"harness.scale.cli_encode": {"harness.cli"}}) == []  # a CLI may import anything


def test_built_ins_of_higher_layers_register_into_lower_registries_from_above():
    """harness/_assembly.py names them instead of the registry's package: each registry
    exists, and each module sits above it or in its own folder and imports its module (it
    registers there)."""
    from harness._assembly import EXTENSIONS
    from harness.ikat.submission import YEARS
    from harness.registry import Registry

    edges = graph()

    def reaches(source: str, target: str) -> bool:
        seen, todo = set(), [source]
        while todo:
            name = todo.pop()
            if name == target:
                return True
            if name not in seen:
                seen.add(name)
                todo += edges.get(name, ())
        return False

    for registry, names in EXTENSIONS.items():
        module, _, attr = registry.partition(":")
        assert isinstance(getattr(importlib.import_module(module), attr), Registry), registry
        for name in names:
            assert owner(name) == owner(module) or layer(name) > layer(module), f"{name} -> {registry}"
            assert reaches(name, module), f"{name} does not import {module}"
    assert EXTENSIONS["harness.ikat.checks:CHECKS"] == tuple(dict.fromkeys(year.checks for year in YEARS.values()))


def test_each_room_names_the_built_ins_that_register_into_it_from_another_room():
    """A newcomer opening harness/judge/ finds the minilm judge: the room's __init__ docstring
    names each module harness/_assembly.py registers into it from elsewhere."""
    from harness._assembly import EXTENSIONS

    for registry, names in EXTENSIONS.items():
        room = importlib.import_module(owner(registry.partition(":")[0]))
        for name in names:
            if owner(name) != room.__name__:
                assert name in " ".join(room.__doc__.split()), f"{room.__name__}'s docstring does not name {name}"


def test_a_registry_finds_the_built_ins_above_it_without_a_front_end():
    """Importing only the registry's own module (and so `harness`, which wires them) is enough."""
    import subprocess
    import sys

    code = ("from harness.queries import STRATEGIES\nfrom harness.corpus.readers import CORPUS_FORMATS\n"
            "print('ptkb_topk' in STRATEGIES.names(), 'benchmark' in CORPUS_FORMATS.names())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "True"]


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_imports_follow_the_layer_table():
    assert back_arrows(graph()) == []


def test_the_readme_states_the_same_layers():
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    for group in LAYERS:
        row = " ".join(f"`{name}`" for name in group)
        assert row in readme, f"README's layer table lacks the row {row}"


def test_registries_never_import_cli_modules():
    """Looking a name up loads the registry's package, never its command-line modules."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness import queries, retrieve, topics\n"
        "topics.names(); queries.STRATEGIES.names(); retrieve.RETRIEVERS.names()\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness') and "
        "(m.rpartition('.')[2].startswith('cli'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_registry_imports_the_modules_its_definition_lists_not_the_rest_of_its_package():
    """The judges' first look-up imports harness.judge's file and llm judges, not its agreement
    statistics (harness.judge.agree), which register nothing: a helper needs no underscore to stay out."""
    import subprocess
    import sys

    code = ("import sys\nfrom harness.judge.base import JUDGES\nJUDGES.names()\n"
            "print('harness.judge.llm' in sys.modules, 'harness.judge.agree' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "False"]


def test_no_module_left_off_a_registrys_list_registers_into_it():
    """Each registry's first look-up finds every built-in: importing every other module of the
    harness afterwards adds no name, and no adapter, to any registry."""
    import subprocess
    import sys

    code = """
import gc, importlib, sys
from harness.registry import Registry
defining = [name for name, path in NAMES.items() if "Registry(" in open(path, encoding="utf-8").read()]
for name in defining:
    importlib.import_module(name)
registries = [found for found in gc.get_objects() if isinstance(found, Registry)]
before = {id(registry): (registry.names(), registry._adapt) for registry in registries}
for name in NAMES:
    importlib.import_module(name)
print(len(registries), [registry.kind for registry in registries
                        if (registry.names(), registry._adapt) != before[id(registry)]])
"""
    names = {name: str(path) for name, path in modules().items() if not is_cli(name)}
    result = subprocess.run([sys.executable, "-c", f"NAMES = {names!r}\n{code}"], capture_output=True, text=True,
                            check=True)
    count, _, changed = result.stdout.strip().partition(" ")
    assert int(count) > 20 and changed == "[]"


def test_no_package_s_exported_name_is_taken_over_by_a_submodule_of_that_name():
    """harness.responses exported the function evaluate and held a module evaluate.py: the first
    call imported that module, which Python then set as the package's `evaluate`, so a second
    `harness.responses.evaluate(...)` (or a later `from harness.responses import evaluate`) was
    "'module' object is not callable". Every package's exports stay what they are once all of
    its modules are imported."""
    import importlib
    import pkgutil
    import types

    import harness

    packages = [harness] + [importlib.import_module(info.name) for info in
                            pkgutil.walk_packages(harness.__path__, "harness.") if info.ispkg]
    for package in packages:
        exported = {name: getattr(package, name) for name in getattr(package, "__all__", ())}
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional extra's module
                continue
        for name, value in exported.items():
            if not isinstance(value, types.ModuleType):
                assert getattr(package, name) is value, f"{package.__name__}.{name} is now {getattr(package, name)!r}"
