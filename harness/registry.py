"""Name -> implementation registries (adapters, strategies, retrievers, presets, ...).

Modelled on ir-measures' measure registry: implementations register themselves by name at
import time, and callers look them up by the name a user typed in a config or on the CLI.
A registry bound to a package imports that package's modules on first look-up, so adding an
implementation is adding a module; those modules keep heavy imports inside functions. The
package's command-line modules (`cli`, `cli_*`) are not implementations and are skipped: a
registry never pulls in a CLI. `plugins` names modules of higher layers that register into
it (by name, so that the registry's package does not import them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from harness.errors import HarnessError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str | None = None, plugins: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._package = package  # imported (all its modules) on the first look-up
        self._plugins = plugins  # modules imported on the first look-up too

    def _load(self) -> None:
        if self._package is None and not self._plugins:
            return
        import importlib
        import pkgutil

        if self._package is not None:
            package, self._package = importlib.import_module(self._package), None
            for module in pkgutil.iter_modules(package.__path__):
                if module.name != "cli" and not module.name.startswith("cli_"):
                    importlib.import_module(f"{package.__name__}.{module.name}")
        plugins, self._plugins = self._plugins, ()
        for plugin in plugins:
            importlib.import_module(plugin)

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = item
            return item

        return decorator

    def add(self, name: str, item: T) -> None:
        self.register(name)(item)

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise HarnessError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)
