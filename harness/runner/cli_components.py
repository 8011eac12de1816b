"""`harness components [KIND]`: every registered component (built-in or plug-in) by kind, with
the first line of its docstring, where a plug-in comes from and, for retrievers, the
parameters a config's `params:` may give (type and default, from the signature the config
check uses). Components do not declare summaries or parameter descriptions yet (issue 29)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

from harness.registry import Registry


# kind -> (module, registry): imported when listed
REGISTRIES = {
    "benchmark": ("harness.topics", "ADAPTERS"),
    "strategy": ("harness.queries", "STRATEGIES"),
    "retriever": ("harness.retrieve", "RETRIEVERS"),
    "task": ("harness.runner.tasks", "TASKS"),
    "ptkb-method": ("harness.ikat.ptkb", "METHODS"),
    "judge": ("harness.judge.base", "JUDGES"),
}


def registry(kind: str) -> Registry:
    module, name = REGISTRIES[kind]
    return getattr(importlib.import_module(module), name)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", choices=sorted(REGISTRIES), help="list this kind only")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    kinds = [args.kind] if args.kind else list(REGISTRIES)
    listing = {kind: [describe(kind, name, registry(kind)) for name in registry(kind).names()] for kind in kinds}
    if args.format == "json":
        json.dump(listing, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for kind, components in listing.items():
        print(f"{kind}:")
        for component in components:
            origin = f"  [{component['plugin']}]" if component["plugin"] else ""
            print(f"  {component['name']:<20} {component['summary']}{origin}")
            for param in component["parameters"]:
                default = "" if param["default"] is None else f" = {param['default']}"
                print(f"  {'':<22}{param['name']}: {param['type']}{default}")
    return 0


def describe(kind: str, name: str, registry: Registry) -> dict[str, Any]:
    """One component: name, summary (its docstring's first line), parameters, and where a
    plug-in comes from."""
    item = registry.get(name)
    origin = registry.origin(name)
    plugin = None
    if origin is not None:
        plugin = origin.get("distribution") or origin.get("python") or origin.get("module")
    return {"name": name, "summary": _summary(item), "parameters": _parameters(item) if kind == "retriever" else [],
            "plugin": plugin}


def _summary(item: Any) -> str:
    """The first line of the component's own docstring (a function's, else its class's), or ""."""
    target = getattr(item, "function", item)  # a plug-in strategy: the researcher's function
    doc = target.__doc__ if inspect.isfunction(target) or inspect.isclass(target) else type(target).__doc__
    return inspect.cleandoc(doc).splitlines()[0] if doc and doc.strip() else ""


def _parameters(factory: Callable) -> list[dict[str, Any]]:
    from harness.retrieve.specs import parameters

    accepted = parameters(factory) or {}
    found = []
    for param in accepted.values():
        annotation = param.annotation
        kind = "" if annotation is inspect.Parameter.empty else \
            annotation.__name__ if isinstance(annotation, type) else str(annotation)
        default = None if param.default is inspect.Parameter.empty else repr(param.default)
        found.append({"name": param.name, "type": kind or "any", "default": default})
    return found
