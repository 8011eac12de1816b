"""Registers the harness benchmarks with ir_datasets when ir_datasets is imported.

ir_datasets has no plugin entry point; importing it (a second or more) on `import harness`
would make `harness eval` slow. So `install()` registers at once if ir_datasets is already
imported, and otherwise puts a finder on `sys.meta_path` that runs `harness.irds.register`
right after ir_datasets' own module has executed.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys

TARGET = "ir_datasets"


def _register() -> None:
    """Import harness.irds, which registers its ids as it finishes loading: where its own import
    of ir_datasets is what runs this, it is half loaded, and registers on its last line."""
    importlib.import_module("harness.irds")


# plain classes, not importlib.abc's: importing that costs more than all of `import harness`
class _Loader:
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        # the module keeps its own loader: ir_datasets reads its package data through it
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _register()


class _Finder:
    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)  # once; the real finders do the finding
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    if TARGET in sys.modules:
        _register()
    elif not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
