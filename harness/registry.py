"""Name -> implementation registries (adapters, strategies, retrievers, presets, ...).

Modelled on ir-measures' measure registry: implementations register themselves by name at
import time, and callers look them up by the name a user typed in a config or on the CLI.
A registry bound to a package imports that package's modules on first look-up, so adding an
implementation is adding a module; those modules keep heavy imports inside functions. The
package's command-line modules (`cli`, `cli_*`) are not implementations and are skipped: a
registry never pulls in a CLI. `plugins` names modules of higher layers that register into
it (by name, so that the registry's package does not import them).

Plug-ins come three ways, each an object the registry's `adapter` turns into an item (a
plain search function into a retriever factory, say) and checks, so that a wrong signature is
an error when a config names it, not half-way through a run:

- an entry point of the registry's `group` (`harness.retrievers`, ...) in any installed
  distribution, listed on the first look-up and imported when its name is first looked up;
- `python:package.module:attr`, imported from sys.path (the current folder included), in a
  registry that has an entry-point group;
- objects handed to `using({name: object})` for the duration of a `with` block (the Python
  API's `harness.run(..., retrievers={"mine": my_search})`), seen by nothing outside it.

`origin(name)` says what a plug-in is (distribution and version, module, the sha256 of its
source), for the resume key: a changed plug-in is run again, not reused. Built-ins have none.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Generic, TypeVar

from harness.errors import HarnessError

T = TypeVar("T")
PYTHON = "python:"  # `python:package.module:attr`
Origin = dict[str, Any]  # what a plug-in is: recorded with its runs and hashed into their resume key


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str | None = None, plugins: tuple[str, ...] = (),
                 group: str | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._package = package  # imported (all its modules) on the first look-up
        self._plugins = plugins  # modules imported on the first look-up too
        self._group = group  # entry-point group, listed on the first look-up
        self._pluggable = group is not None  # takes `python:` specs and entry points
        self._adapt: Callable[[str, Any], T] | None = None  # set by `adapter`
        self._entry_points: dict[str, Any] = {}  # listed, not yet imported
        self._origins: dict[str, Origin] = {}
        self._python: dict[str, tuple[T, Origin]] = {}
        self._using: ContextVar[Mapping[str, tuple[T, Origin]]] = ContextVar(f"using {kind}", default={})

    def _load(self) -> None:
        if self._package is not None or self._plugins:
            self._load_modules()
        if self._group is not None:  # after the built-ins, so that a clash names the plug-in
            self._list_entry_points()

    def _load_modules(self) -> None:
        import pkgutil

        if self._package is not None:
            package, self._package = importlib.import_module(self._package), None
            for module in pkgutil.iter_modules(package.__path__):
                if module.name != "cli" and not module.name.startswith("cli_"):
                    importlib.import_module(f"{package.__name__}.{module.name}")
        plugins, self._plugins = self._plugins, ()
        for plugin in plugins:
            importlib.import_module(plugin)

    def _list_entry_points(self) -> None:
        from importlib.metadata import entry_points

        group, self._group = self._group, None
        for point in entry_points(group=group):
            if point.name in self._items:
                raise HarnessError(f"{self.kind} {point.name!r} is built in; the entry point of "
                                   f"{_distribution(point)} cannot take its name")
            if point.name in self._entry_points:
                raise HarnessError(f"{self.kind} {point.name!r} is registered twice, by the entry points of "
                                   f"{_distribution(self._entry_points[point.name])} and {_distribution(point)}")
            self._entry_points[point.name] = point

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(item: T) -> T:
            if name in self._items or name in self._entry_points:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = item
            return item

        return decorator

    def add(self, name: str, item: T) -> None:
        self.register(name)(item)

    def get(self, name: str) -> T:
        self._load()
        using = self._using.get()
        if name in using:
            return using[name][0]
        if name in self._items:
            return self._items[name]
        if name in self._entry_points:
            return self._from_entry_point(name)
        if name.startswith(PYTHON) and self._pluggable:
            if name not in self._python:
                self._python[name] = self._from_python(name)
            return self._python[name][0]
        known = ", ".join(self.names()) or "none"
        raise HarnessError(f"unknown {self.kind} {name!r}; known: {known}")

    def origin(self, name: str) -> Origin | None:
        """What the plug-in `name` is (None for a built-in): hashed into the resume key of its runs."""
        self.get(name)
        using = self._using.get()
        if name in using:
            return using[name][1]
        if name in self._python:
            return self._python[name][1]
        return self._origins.get(name)

    @contextmanager
    def using(self, objects: Mapping[str, Any]) -> Iterator[None]:
        """Within the block, these objects answer to their names (before any registered item),
        each adapted and checked as a plug-in; nothing outside the block sees them."""
        self._load()
        adopted = {name: (self._adopt(name, obj), object_origin(obj)) for name, obj in objects.items()}
        token = self._using.set({**self._using.get(), **adopted})
        try:
            yield
        finally:
            self._using.reset(token)

    def adapter(self, function: Callable[[str, Any], T]) -> Callable[[str, Any], T]:
        """Decorator: `function(name, obj)` makes a plug-in's object an item, or raises a one-line
        HarnessError saying what it should be. A module of the registry's package declares it,
        so that it is in place by the first look-up."""
        self._adapt = function
        return function

    def _adopt(self, name: str, obj: Any) -> T:
        return self._adapt(name, obj) if self._adapt is not None else obj

    def _from_entry_point(self, name: str) -> T:
        point = self._entry_points[name]
        try:
            obj = point.load()
        except Exception as error:  # a plug-in's own import error, in one line
            raise HarnessError(f"{self.kind} {name!r}: cannot load the entry point {point.value} of "
                               f"{_distribution(point)} ({type(error).__name__}: {error})") from None
        item = self._adopt(name, obj)
        del self._entry_points[name]
        self._items[name] = item
        dist = getattr(point, "dist", None)
        self._origins[name] = {"entry_point": f"{point.group}:{name}", "distribution": dist.name if dist else None,
                               "version": dist.version if dist else None, **object_origin(obj)}
        return item

    def _from_python(self, name: str) -> tuple[T, Origin]:
        module_name, _, attr = name[len(PYTHON):].partition(":")
        if not module_name or not attr:
            raise HarnessError(f"{self.kind} {name!r}: expected python:package.module:attr")
        here = os.getcwd()
        added = here not in sys.path and "" not in sys.path
        if added:  # the current folder, as `python -m` has it; not left on the path
            sys.path.insert(0, here)
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            raise HarnessError(f"{self.kind} {name!r}: cannot import {module_name} "
                               f"({type(error).__name__}: {error})") from None
        finally:
            if added:
                sys.path.remove(here)
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise HarnessError(f"{self.kind} {name!r}: {module_name} has no attribute {attr!r}")
            obj = getattr(obj, part)
        return self._adopt(name, obj), {"python": name[len(PYTHON):], **object_origin(obj)}

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.get(name)
        except HarnessError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        """Registered, entry-point and `using` names (not `python:` ones)."""
        self._load()
        return sorted({*self._items, *self._entry_points, *self._using.get()})


def _distribution(point: Any) -> str:
    dist = getattr(point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else f"the entry point {point.value}"


def object_origin(obj: Any) -> Origin:
    """The module an object comes from and the sha256 of its source: the module's file when
    there is one, else the object's own source text (a notebook cell), else its repr."""
    code = inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)
    target = obj if code else type(obj)
    # an object (a PyTerrier pipeline) is its class's code and its settings, as its repr shows
    # them, less any address (which changes every run)
    settings = {} if code else {"repr": _without_address(repr(obj))}
    module = inspect.getmodule(target)
    file = getattr(module, "__file__", None)
    if file and Path(file).is_file():
        from harness.paths import file_sha256

        return {"module": module.__name__, "sha256": file_sha256(file), **settings}
    try:
        text = inspect.getsource(target)
    except (OSError, TypeError):  # no source to read
        text = _without_address(repr(obj))
    return {"module": getattr(module, "__name__", None), "sha256": hashlib.sha256(text.encode()).hexdigest(),
            **settings}


def _without_address(text: str) -> str:
    """A repr less the `at 0x...` that differs from run to run."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)
