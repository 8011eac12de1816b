"""The package's imports follow the layer table in the README, and form no cycle.

Every `import` and `from ... import` in harness/ counts, wherever it is written: at module
level, inside a function (the lazy imports that keep `harness eval` fast) or under
`if TYPE_CHECKING:`. A module may import its own package's modules and modules of lower
layers only; `cli` modules (and harness/cli.py) sit on top and may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

ROOT = Path(harness.__file__).parent

# The README's layer table, lowest first: a module imports only from lower rows (and its own package).
LAYERS: list[tuple[str, ...]] = [
    ("harness.errors",),
    ("harness.atomic",),
    ("harness.paths",),
    ("harness.registry", "harness.jsonl", "harness.extras"),
    ("harness.trec",),
    ("harness.corpus",),
    ("harness.topics",),
    ("harness.queries",),
    ("harness.judge",),
    ("harness.scale.engines", "harness.scale.exact", "harness.scale.approx"),
    ("harness.retrieve",),
    ("harness.evaluate",),
    ("harness.report", "harness.ikat"),
    ("harness.runner", "harness.scale", "harness.responses"),
    ("harness.irds",),
    ("harness", "harness._irds_hook", "harness.cli", "harness.api", "harness.serve"),
]
TOP = len(LAYERS) - 1


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


def layer(name: str) -> int:
    """The row of the longest prefix naming the module (harness.scale.exact sits below harness.scale)."""
    if name.rpartition(".")[2].startswith("cli"):
        return TOP
    best = max(((len(prefix), row) for row, group in enumerate(LAYERS) for prefix in group
                if name == prefix or (prefix != "harness" and name.startswith(prefix + "."))),
               default=None)
    assert best is not None, f"{name} is in no row of the layer table (tests/test_layers.py, README)"
    return best[1]


def owner(name: str) -> str:
    """The package a module belongs to for the same-package rule (harness.report.html -> harness.report)."""
    parts = name.split(".")
    return ".".join(parts[:2])


def back_arrows(edges: dict[str, set[str]]) -> list[str]:
    problems = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            if owner(source) == owner(target) and owner(source) != "harness":
                continue
            if layer(target) >= layer(source) and layer(source) != TOP:
                problems.append(f"{source} imports {target} (layer {layer(source)} -> {layer(target)})")
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
    assert "harness.evaluate" in edges["harness.ikat.ptkb"]  # imported inside a function
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


def test_a_module_row_overrides_its_package_row():
    """The low-level scale modules sit below the retrievers that use them; the rest of
    harness.scale sits above, so the dense retriever reaches sharded search through a registry."""
    assert layer("harness.scale.exact") < layer("harness.retrieve.dense") < layer("harness.scale.search")
    assert back_arrows({"harness.retrieve.dense": {"harness.scale.exact"}}) == []
    assert back_arrows({"harness.retrieve.dense": {"harness.scale.search"}})


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
