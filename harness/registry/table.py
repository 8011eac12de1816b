"""The name table: name -> implementation registries (adapters, strategies, retrievers, presets, ...).

Modelled on ir-measures' measure registry: implementations register themselves by name at
import time, and callers look them up by the name a user typed in a config or on the CLI.
A registry imports the modules it lists (`modules`: those of its package that register into it)
on its first look-up, so adding an implementation is adding a module and its name to the list
(tests/test_layers.py checks that none is left out); those modules keep heavy imports inside
functions. It imports only those: a helper of the package that registers nothing
(harness.retrieve.embeddings, bm25's numba kernels, which cost a second to import) is imported
by what needs it, and a registry never pulls in a command-line module (`cli`, `cli_*`). A few
built-ins live in a higher layer than their registry
(the `benchmark:` corpus format in harness.topics, say): the registry's package cannot import
them, so the front end does, through `extend` (harness/_assembly.py, run by `import harness`),
and they are imported on the registry's first look-up too.

Plug-ins come three ways, each an object the registry's `adapter` turns into an item (a
plain search function into a retriever factory, say) and checks, so that a wrong signature is
an error when a config names it, not half-way through a run:

- an entry point of the registry's `group` (`harness.retrievers`, ...) in any installed
  distribution, listed on the first look-up and imported when its name is first looked up (a
  name two entry points, or an entry point and a built-in, claim is an error for that name only,
  and so is one whose module's file another distribution installed: plugins.py's `_of_another_package`);
- `python:package.module:attr`, imported from sys.path (the current folder included), in a
  registry that has an entry-point group (a module of that name, or a helper of it, imported
  earlier in the process from another file is an error, identity.py's `_imported_elsewhere`:
  a name is imported once a process);
- objects handed to `using({name: object})` for the duration of a `with` block (the Python
  API's `harness.run(..., retrievers={"mine": my_search})`), seen by nothing outside it.

Each name answers with its `Declaration` (params.py) and, for a plug-in, its `origin`: what it
is, hashed into the resume key of its runs (identity.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any, Generic, TypeVar

from harness.errors import HarnessError, nearest
from harness.registry.identity import (NOT_RESUMED, Origin, _built_in, _imported_elsewhere, _never_resumed, _still_held,
                                       object_origin, which_object)
from harness.registry.params import (Declaration, Params, _check_takes, _defaults, _names_itself, _same, as_declared,
                                     declared, summary_of)
from harness.registry.plugins import _distribution, _failure, _note_plugin_package, _of_another_package, handed_over

T = TypeVar("T")
PYTHON = "python:"  # `python:package.module:attr`
# registry ("module:ATTR") -> modules of higher layers that register into it, set by `extend`
_EXTENSIONS: dict[str, tuple[str, ...]] = {}


def extend(extensions: Mapping[str, Sequence[str]]) -> None:
    """Modules to import on a registry's first look-up, by the registry's "module:ATTR": the
    front end's wiring of higher layers into lower layers' registries (harness/_assembly.py)."""
    _EXTENSIONS.update({registry: tuple(modules) for registry, modules in extensions.items()})


def split_spec(spec: str) -> tuple[str, str | None]:
    """(registered name, argument) of `NAME[:ARG]` or `python:module:attr[:ARG]`: the name a
    registry looks up, and what follows it (a strategy's arguments, a benchmark's split)."""
    if spec.startswith(PYTHON):
        module, _, rest = spec[len(PYTHON):].partition(":")
        attr, _, arg = rest.partition(":")
        return f"{PYTHON}{module}:{attr}", (arg or None)
    base, _, arg = spec.partition(":")
    return base, (arg or None)


class PluginNotFound(HarnessError):
    """A `python:` plug-in whose own module is on no path: a config's reader, which knows the
    config's folder, can say that the module is there."""

    def __init__(self, message: str, module: str) -> None:
        super().__init__(message)
        self.module = module  # the top-level name, as `import` looked for it


class UnknownName(HarnessError):
    """A name that names nothing of its kind (no registered item, no split of a benchmark):
    where the command line gave it, that is the mistake, and the front end says so (its --help)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name

    def __reduce__(self):
        """Survives pickling, as InputError does: one raised in a worker process reaches the user intact."""
        return (UnknownName, (str(self), self.name))


class Registry(Generic[T]):
    def __init__(self, kind: str, modules: Sequence[str] = (), group: str | None = None,
                 not_from_config: tuple[str, ...] = (), by_keyword: bool = True,
                 summary: Callable[[Any], str] | None = None) -> None:
        self.kind = kind
        # a kind a config gives no parameters (a preset, a file format): a plug-in declares its summary alone,
        # its own (`harness.declare`) else this function's, of its object; None: read from its signature
        self._summary = summary
        self._by_keyword = by_keyword  # items take their parameters by name (strategies: `NAME:ARG` in order)
        self._items: dict[str, T] = {}
        self._declarations: dict[str, Declaration | Callable[[], Declaration]] = {}
        self._not_from_config = not_from_config  # a plug-in's parameters the harness passes, not a config
        self._modules = tuple(modules)  # imported on the first look-up, with those `extend` names for it
        self._imported = False  # whether they were
        self._group = group  # entry-point group, listed on the first look-up
        self._pluggable = group is not None  # takes `python:` specs and entry points
        self._adapt: Callable[[str, Any], T] | None = None  # set by `adapter`
        self._entry_points: dict[str, Any] = {}  # listed, not yet imported
        # a name two entry points, or an entry point and a built-in, claim -> why it cannot be used:
        # an error for a config naming it, BROKEN in `harness components`, nothing to the other names
        self._clashes: dict[str, str] = {}
        self._origins: dict[str, Origin] = {}
        # a plug-in loaded by name -> what makes its origin, and the call (of the Python API: `using`) that last
        # made it (`origin`)
        self._loaded: dict[str, Callable[[], Origin]] = {}
        self._checked: dict[str, int] = {}
        self._call = 0
        self._python: dict[str, tuple[T, Origin, Declaration]] = {}
        self._placed: dict[str, int] = {}  # a `python:` name -> the call that last found its module where it is
        self._using: ContextVar[Mapping[str, tuple[T, Origin, Declaration]]] = ContextVar(f"using {kind}", default={})

    def _load(self) -> None:
        if not self._imported:
            self._imported = True  # first: a module looking a name up as it is imported does not import it again
            for module in (*self._modules, *self._extensions()):
                importlib.import_module(module)
        if self._group is not None:  # after the built-ins, so that a clash names the plug-in
            self._list_entry_points()

    def _extensions(self) -> tuple[str, ...]:
        """The modules `extend` names for this registry (found by its module and attribute)."""
        for registry, modules in _EXTENSIONS.items():
            module, _, attr = registry.partition(":")
            if getattr(sys.modules.get(module), attr, None) is self:
                return modules
        return ()

    def _list_entry_points(self) -> None:
        from importlib.metadata import entry_points

        group, self._group = self._group, None
        claims: dict[str, list[Any]] = {}
        for point in entry_points(group=group):
            claims.setdefault(point.name, []).append(point)
        for name, points in claims.items():
            owners = " and ".join(_distribution(point) for point in points)
            if name in self._items:
                self._clashes[name] = (f"{self.kind} {name!r} is built in; the entry point of {owners} cannot take "
                                       "its name: rename it there, or uninstall that package")
            elif len(points) > 1:
                times = "twice" if len(points) == 2 else f"{len(points)} times"
                self._clashes[name] = (f"{self.kind} {name!r} is registered {times}, by the entry points of {owners}: "
                                       "rename one there, or uninstall one of the packages")
            else:
                self._entry_points[name] = points[0]

    def register(self, name: str, summary: str = "", params: Params = (), **more: Any) -> Callable[[T], T]:
        """Decorator: `item` answers to `name`, declared by `summary`, `params` and `more`
        (Declaration's other fields: open, splits, fields, conversation_fields, preload,
        preload_if, needs, needs_with, reads_documents). `params` may be a function giving them, called on the first
        `declaration(name)`: for a component that takes another's parameters (a PTKB method,
        its retriever's), declared where that one lives. Without a summary, a function's or
        class's docstring gives it (its first sentence); an instance's type documents its kind,
        not the instance, so one (a Preset) is given a summary."""
        def decorator(item: T) -> T:
            if name in self._items or name in self._entry_points:
                first = (f"the entry point of {_distribution(self._entry_points[name])}" if name not in self._items
                         else _defined_at(self._items[name]))
                raise HarnessError(f"{self.kind} {name!r} is registered twice"
                                   + (f" (first: {first})" if first else ""))
            self._items[name] = item
            self._declarations[name] = lambda: Declaration(
                name, summary or (summary_of(item) if _names_itself(item) else ""),
                tuple(params() if callable(params) else params), **more)
            return item

        return decorator

    def add(self, name: str, item: T, summary: str = "", params: Params = (), **more: Any) -> None:
        self.register(name, summary, params, **more)(item)

    def declaration(self, name: str) -> Declaration:
        """What `name` declares: a built-in's from its registration, a plug-in's its own or
        read from its signature."""
        self.get(name)
        using = self._using.get()
        if name in using:
            return using[name][2]
        if name in self._declarations:
            found = self._declarations[name]
            if not isinstance(found, Declaration):  # made on first use (see `register`)
                found = self._declarations[name] = found()
            return found
        return self._python[name][2]  # `get` above put it there

    def acting(self, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """`params` (checked, as a config writes them) as they act, for the resume key: each
        Enum member, or member's name, written as its value, and each parameter given its
        default left out, where what is called has that default too (a declared default only
        might not be the one that acts). Writing a default out, or a member by its name, keys
        as leaving it out or writing its value; a config that writes neither keys as it did."""
        declaration, defaults = self.declaration(name), _defaults(self.get(name))
        acting = {}
        for key, value in as_declared(declaration, params).items():
            value = value.value if isinstance(value, Enum) else value
            param = declaration.param(key)
            if param is not None and key in defaults and _same(value, param.default) and _same(value, defaults[key]):
                continue
            acting[key] = value
        return acting

    def get(self, name: str) -> T:
        self._load()
        using = self._using.get()
        if name in using:
            return using[name][0]
        if name in self._clashes:
            raise HarnessError(self._clashes[name])
        if name in self._items:
            return self._items[name]
        if name in self._entry_points:
            return self._from_entry_point(name)
        if name.startswith(PYTHON) and self._pluggable:
            if name not in self._python:
                self._python[name] = self._from_python(name)
            elif self._placed[name] != self._call:  # another call of the Python API, maybe from another folder
                with _here_on_path():
                    module_name = name[len(PYTHON):].partition(":")[0]
                    _imported_elsewhere(module_name, f"{self.kind} {name!r}", sys.modules.get(module_name))
            self._placed[name] = self._call
            return self._python[name][0]
        known = ", ".join(self.names()) or "none"
        raise UnknownName(f"unknown {self.kind} {name!r}{nearest(name, self.names())}; known: {known}", name)

    def origin(self, name: str) -> Origin | None:
        """What the plug-in `name` is (None for a built-in): hashed into the resume key of its runs.
        One never resumed gets a new token each time it is asked: an object loaded once, then
        changed, is run again by the next `harness.run` of the same process too. One loaded by
        name by an earlier call of the Python API whose files changed since is an error, the
        first time this call asks (`_as_loaded`), not its old code run under the new files' key
        or its old run reused, unless they were reloaded into the code it runs (a helper whose names
        it reads when it runs; not its own module, `_still_held`): it is then keyed by them as they
        are now; a batch already going keeps the code and key it started with."""
        self.get(name)
        using = self._using.get()
        if name in using:
            found = using[name][1]
        else:
            if name in self._loaded and self._checked[name] != self._call:
                origin = self._loaded[name]()  # its files as they are now, an error where not loaded (`_as_loaded`)
                if name in self._python:
                    self._python[name] = (self._python[name][0], origin, self._python[name][2])
                else:
                    self._origins[name] = origin
                self._checked[name] = self._call
            found = self._python[name][1] if name in self._python else self._origins.get(name)
        return {**found, **_never_resumed(found[NOT_RESUMED])} if found and NOT_RESUMED in found else found

    @contextmanager
    def using(self, objects: Mapping[str, Any]) -> Iterator[None]:
        """Within the block, these objects answer to their names (before any registered item),
        each adapted and checked as a plug-in, and keyed by which object of its module it is too
        (`which_object`); nothing outside the block sees them. Each call of the Python API enters
        one (a new `_call`, see `origin`)."""
        self._load()
        self._call += 1
        adopted = {}
        for name, obj in objects.items():
            item = self._adopt(name, obj)
            adopted[name] = (item, {**object_origin(obj), **which_object(obj)}, self._declared(name, obj, item))
        token = self._using.set({**self._using.get(), **adopted})
        try:
            with handed_over(objects.values()):
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

    def _declared(self, name: str, obj: Any, item: T) -> Declaration:
        """A plug-in's own declaration, else read from what the harness calls: the item its
        object was adapted into (a search function's factory takes its keyword parameters)."""
        own = isinstance(getattr(obj, "declaration", None), Declaration)
        if self._summary is not None:  # its parameters are the harness's to pass (a file's path), not a config's
            return Declaration(name, obj.declaration.summary if own else self._summary(obj))
        if own and self._by_keyword:
            _check_takes(f"{self.kind} {name!r}", obj.declaration, declared(name, item, self._not_from_config))
        return declared(name, obj if own else item, self._not_from_config)

    def _from_entry_point(self, name: str) -> T:
        point = self._entry_points[name]
        try:
            obj = point.load()
        except Exception as error:  # a plug-in's own import error, in one line
            raise HarnessError(f"{self.kind} {name!r}: cannot load the entry point {point.value} of "
                               f"{_distribution(point)} ({_failure(error)})") from None
        if (other := _of_another_package(point)) is not None:
            raise HarnessError(f"{self.kind} {name!r}: {other}")
        where = f"entry point {point.value} of {_distribution(point)}"
        try:  # a wrong signature or declaration: said with the package it is in, for the user to find
            item = self._adopt(name, obj)
            declaration = self._declared(name, obj, item)
        except HarnessError as error:
            raise HarnessError(f"{error} ({where})") from None
        _note_plugin_package(obj, f"{self.kind} {name!r} ({where})")
        del self._entry_points[name]
        self._items[name] = item
        self._declarations[name] = declaration
        dist = getattr(point, "dist", None)

        def origin_of() -> Origin:
            _still_held(point.module, point.attr, obj, f"{self.kind} {name!r}")
            return {"entry_point": f"{point.group}:{name}", "distribution": dist.name if dist else None,
                    "version": dist.version if dist else None, **object_origin(obj, by_name=True)}

        self._origins[name] = origin_of()
        self._loaded[name], self._checked[name] = origin_of, self._call
        return item

    def _from_python(self, name: str) -> tuple[T, Origin, Declaration]:
        module_name, _, attr = name[len(PYTHON):].partition(":")
        if not module_name or not attr:
            raise HarnessError(f"{self.kind} {name!r}: expected python:package.module:attr")
        with _here_on_path():
            _imported_elsewhere(module_name, f"{self.kind} {name!r}")
            try:
                module = importlib.import_module(module_name)
            except Exception as error:
                message = f"{self.kind} {name!r}: cannot import {module_name} ({_failure(error)})"
                top = module_name.partition(".")[0]
                if isinstance(error, ModuleNotFoundError) and error.name == top:
                    raise PluginNotFound(message, top) from None
                raise HarnessError(message) from None
            _imported_elsewhere(module_name, f"{self.kind} {name!r}", module)
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise HarnessError(f"{self.kind} {name!r}: {module_name} has no attribute {attr!r}")
            obj = getattr(obj, part)
        item = self._adopt(name, obj)
        _note_plugin_package(obj, f"{self.kind} {name!r} (module {module_name})")

        def origin_of() -> Origin:
            _still_held(module_name, attr, obj, f"{self.kind} {name!r}")
            return {"python": name[len(PYTHON):], **object_origin(obj, by_name=True), **_built_in(module, obj)}

        origin = origin_of()
        self._loaded[name], self._checked[name] = origin_of, self._call
        return item, origin, self._declared(name, obj, item)

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
        return sorted({*self._items, *self._entry_points, *self._clashes, *self._using.get()})

    def built_ins(self) -> list[str]:
        """The harness's own names, sorted; no plug-in is listed, or imported to find out."""
        self._load()
        return sorted(name for name in self._items if name not in self._origins)


@contextmanager
def _here_on_path() -> Iterator[None]:
    """The current folder on sys.path, as `python -m` has it, for a `python:` spec's module to be
    imported, and looked for, from; not left on the path."""
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        yield
    finally:
        if added:
            sys.path.remove(here)


def _defined_at(obj: Any) -> str:
    """`module.qualname` of a function or class, which names where a name was registered first
    (a notebook cell run again registers it again: `__main__.search`); '' for an instance."""
    return f"{obj.__module__}.{obj.__qualname__}" if _names_itself(obj) else ""
