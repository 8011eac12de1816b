"""Which code is a plug-in's, and what its failures say.

A plug-in's import error, or an error its own code raises half-way through a run, is its
author's to fix, not a harness bug: each plug-in the registry loads (an entry point, a
`python:` spec) records where its top-level package lies (`_note_plugin_package`), so that the
front end (harness/cli.py) names the plug-in in one line and shows the plug-in's frames only
(`plugin_import_failure`, `plugin_failure`). The same notion of whose code is whose (`_code`,
`_installed`, `_pythons_own`) tells identity.py which modules are a plug-in's own helpers, and
`installed_by` which distribution installed a plug-in judge handed over as an object.

A module of its own because it is about a plug-in's code and where it lies, not its name
(table.py) or its resume key (identity.py): a record of what was loaded, as sys.modules is.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from harness.registry.params import _names_itself

# where the top-level package of a loaded plug-in (entry point or `python:`) lies, its folders
# or its module's file -> what it is, "retriever 'overlap' (entry point pkg:overlap of pkg
# 1.0)": an import failing in its code is its own (`plugin_import_failure`); a record of what
# was loaded, as sys.modules is. By place, not by name: a plug-in package may be named like a
# standard module (`code`, `types`), and a frame's module name is its code's global __name__;
# by name only where the module has no file (a notebook's __main__, its cells' code)
_PLUGIN_PACKAGES: dict[str, str] = {}
_FILELESS_PLUGINS: dict[str, str] = {}
# the same, for code handed to the Python API, within its call alone: (places, fileless modules) -> the modules
# handed over. A ContextVar, as Registry.using's objects are, not written into the records above: a call ending
# must not take back a `python:` plug-in loaded meanwhile, nor what another thread's call handed over
_HANDED_OVER: ContextVar[tuple[Mapping[str, tuple[str, ...]], Mapping[str, tuple[str, ...]]]] = ContextVar(
    "handed over", default=({}, {}))
_HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # harness/, above harness/registry/


def _failure(error: BaseException) -> str:
    """A plug-in's own import error in one line, with where in its code it was raised (the
    innermost frame outside Python's import machinery), so that the user can find it."""
    import traceback

    machinery = os.path.dirname(importlib.__file__)  # importlib and importlib.metadata (an entry point's load)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not frame.filename.startswith(("<frozen ", machinery))
              and os.path.dirname(frame.filename) != os.path.dirname(__file__)]  # the registry's own (its look-up)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}{where}: {error}"


def _note_plugin_package(obj: Any, what: str) -> None:
    """Remember where the top-level package of a loaded plug-in's code lies (a function's or
    class's, an object's class's, a `functools.partial`'s function's; for an object of a
    harness dataclass, the functions it holds: a CorpusFormat's `open` and `claims`): the
    objects it builds may live in its other modules. Python's own modules are never a
    plug-in's (an lru_cache'd function's class is functools')."""
    for by_name, key, _ in _plugin_places(obj):
        (_FILELESS_PLUGINS if by_name else _PLUGIN_PACKAGES)[key] = what


def _plugin_places(obj: Any) -> Iterator[tuple[bool, str, str]]:
    """Where `obj`'s code lies, as `_note_plugin_package` records it: whether by a fileless
    module's name, its key (a folder or file of its top-level package; that name) and its module."""
    for code in [obj, *_functions_of_harness_dataclass(obj)]:
        module = getattr(_code(code), "__module__", None) or ""
        name = module.split(".")[0]
        top = sys.modules.get(name)
        file = getattr(top, "__file__", None)
        # a package's folders (a namespace package has several, and no __file__), a module's file
        places = list(getattr(top, "__path__", None) or ([file] if file else []))
        if not places and name and name not in sys.stdlib_module_names:  # a notebook's; Python's are built in
            yield True, name, module
        for place in map(os.path.abspath, places):
            if not (_inside(place, _HARNESS) or _pythons_own(place)):
                yield False, place, module


@contextmanager
def handed_over(objects: Iterable[Any]) -> Iterator[None]:
    """Within the block, the code of objects handed to the Python API (harness.run's retrievers=)
    is a plug-in's, as a `python:` spec's is, so that `keep_going` says its error in one line, not
    as the harness's own fault. Named by its module (the modules handed over, where several share
    a package), not by the name it was handed under (a notebook's functions share one module). In
    this context alone, as Registry.using's objects: the process-wide records are left as they are."""
    places, fileless = (dict(handed) for handed in _HANDED_OVER.get())
    for obj in objects:
        for by_name, key, module in _plugin_places(obj):
            record = fileless if by_name else places
            if module not in (modules := record.get(key, ())):
                record[key] = (*modules, module)
    token = _HANDED_OVER.set((places, fileless))
    try:
        yield
    finally:
        _HANDED_OVER.reset(token)


def _functions_of_harness_dataclass(obj: Any) -> list[Any]:
    """The functions (partials too) in the fields of an instance of a harness dataclass: a
    plug-in's code, though the object's class is the harness's. Empty for any other object, and
    for one holding data alone (a Preset: it runs no code, and would take the name of its package
    from a plug-in of it that does)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type) or not _inside(
            os.path.abspath(getattr(sys.modules.get(type(obj).__module__), "__file__", None) or ""), _HARNESS):
        return []
    held = (getattr(obj, field.name) for field in dataclasses.fields(obj))
    return [value for value in held if inspect.isfunction(value) or isinstance(value, functools.partial)]


def _pythons_own(place: str) -> bool:
    """In the standard library's folder, and not in a site-packages folder inside it (where a
    Python installed without a virtual environment keeps installed packages)."""
    import sysconfig

    return (any(_inside(place, sysconfig.get_path(name)) for name in ("stdlib", "platstdlib"))
            and not _installed(place))


def _installed(place: str) -> bool:
    """In a folder where installed packages are kept (site-packages, a virtual environment's too)."""
    import site
    import sysconfig

    folders = [*site.getsitepackages(), site.getusersitepackages(),
               *(sysconfig.get_path(name) for name in ("purelib", "platlib"))]
    return any(_inside(place, folder) for folder in folders)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _code(obj: Any) -> Any:
    """Where a plug-in's code is: a function, class or method itself, the function a
    `functools.partial` (of a partial...) calls, any other object's class."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    return obj if _names_itself(obj) else type(obj)


def plugin_import_failure(error: ModuleNotFoundError) -> str | None:
    """One line naming the plug-in, its entry point or module, and the module it could not
    import, when the failed import ran in a plug-in's code; None when it ran in the harness's
    own (whose missing module an extra brings: harness.extras). Whose it is: the innermost of
    the traceback's frames in a plug-in's package or in the harness (a library between them, a
    plug-in's dependency, counts as the plug-in's)."""
    owner, _ = _plugin_owner(error)
    if owner is None:
        return None
    return f"{owner} cannot import {error.name or 'a module'}, which its own code needs ({_failure(error)})"


def plugin_failure(error: Exception) -> tuple[str, str] | None:
    """A plug-in's own code raising: the traceback from the plug-in's first frame on (the
    harness's frames before it are no help to the plug-in's author) and one line naming the
    plug-in and the error; None when the harness's code raised it (its whole traceback stays).
    Whose it is, as for plugin_import_failure."""
    import traceback

    owner, first = _plugin_owner(error)
    if owner is None:
        return None
    frames = traceback.StackSummary.extract(list(traceback.walk_tb(error.__traceback__))[first:])
    return ("Traceback of the plug-in's code (most recent call last):\n" + "".join(frames.format()),
            f"{owner} raised {type(error).__name__}: {error}"
            + "".join(f", {note}" for note in getattr(error, "__notes__", ())))  # (the query it was answering)


def _plugin_owner(error: BaseException) -> tuple[str | None, int]:
    """The plug-in whose package holds the innermost of the traceback's frames in a plug-in's
    package or in the harness (None: the harness's), and the index of the frame its run of
    frames starts at (a library between, a plug-in's dependency, counts as the plug-in's)."""
    import traceback

    owner, first = None, 0
    for number, (frame, _) in enumerate(traceback.walk_tb(error.__traceback__)):
        file = os.path.abspath(frame.f_code.co_filename)
        if _inside(file, _HARNESS):
            owner = None
            continue
        plugin = _whose(file, str(frame.f_globals.get("__name__", "")).split(".")[0])
        if plugin is not None:
            first = number if owner is None else first
            owner = plugin
    return owner, first


def _whose(file: str, top: str) -> str | None:
    """The plug-in whose code a frame's file (or, without one, its top-level module `top`) is:
    code handed to this call of the Python API first (it is what this call runs), then what was loaded."""
    places, fileless = _HANDED_OVER.get()
    modules = next((modules for place, modules in places.items() if _inside(file, place)), fileless.get(top))
    if modules is not None:
        return f"code handed to the Python API ({'module' if len(modules) == 1 else 'modules'} {', '.join(modules)})"
    return next((what for place, what in _PLUGIN_PACKAGES.items() if _inside(file, place)), _FILELESS_PLUGINS.get(top))


def _distribution(point: Any) -> str:
    dist = getattr(point, "dist", None)
    return _distribution_name(dist) if dist is not None else f"the entry point {point.value}"


def _of_another_package(point: Any) -> str | None:
    """Where the file of an entry point's module is not the one its distribution installed (its
    RECORD's sha256 is another) but is another distribution's of the same folder (its RECORD's matches):
    two packages with a module of one name installed into one folder (`pip install --target DIR`,
    which leaves the first's file, the second's not written): the entry point would run the other's
    code, recorded as its own package. What to say; None otherwise (an editable install, a package
    whose RECORD does not list the file, a file edited in place)."""
    from importlib.metadata import distributions

    dist = getattr(point, "dist", None)
    file = getattr(sys.modules.get(point.module), "__file__", None)
    if dist is None or not file or not os.path.isfile(file):
        return None
    own = _recorded_sha256(dist, file)
    if own is None:
        return None
    actual = _record_sha256(file)
    if own == actual:
        return None
    for other in distributions(path=[str(dist.locate_file(""))]):
        if other.name != dist.name and _recorded_sha256(other, file) == actual:
            return (f"the entry point {point.value} of {_distribution(point)} would run {file}, which is "
                    f"{_distribution_name(other)}'s, not the file {_distribution(point)} installed (their RECORDs "
                    "say so): two packages with a module of one name were installed into one folder (pip "
                    "install --target): install each into a folder of its own")
    return None


def _recorded_sha256(dist: Any, file: str) -> str | None:
    """The sha256 that distribution `dist`'s RECORD gives `file` (as RECORD writes it); None where it lists none."""
    for listed in dist.files or ():
        if listed.hash is not None and listed.hash.mode == "sha256" and listed.suffix == os.path.splitext(file)[1] \
                and os.path.realpath(dist.locate_file(listed)) == os.path.realpath(file):
            return listed.hash.value
    return None


def _record_sha256(file: str) -> str:
    """A file's sha256 as a RECORD writes it: urlsafe base64, no padding."""
    import base64
    import hashlib

    with open(file, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _distribution_name(dist: Any) -> str:
    return f"{dist.name} {dist.version}"


def installed_by(module: str) -> dict[str, str]:
    """The distribution (and its version) whose files hold the top-level package of `module`,
    where exactly one does, as importlib.metadata's packages_distributions() tells; {} for a
    module no distribution installed (a script's, a notebook's). packages_distributions() reads
    every installed distribution's files, 0.1 to 1 s at each plug-in judge's provenance: its answer
    is kept while the folders it reads are unchanged (`_path_state`), so a package installed since
    (`pip install --target` into a folder on sys.path, a folder added to sys.path) is found."""
    from importlib.metadata import version

    names = _packages_distributions(_path_state()).get(module.partition(".")[0], [])
    return {"distribution": names[0], "version": version(names[0])} if len(names) == 1 else {}


def _path_state() -> tuple[object, ...]:
    """What packages_distributions() answers from: the folder harness runs in (an entry '' is it) and
    each sys.path entry with its mtime, which installing or removing a package changes (its metadata
    folder is added to or removed from one of them)."""
    try:
        state: list[object] = [os.getcwd()]
    except OSError:  # the folder harness runs in was removed: '' names none
        state = [None]
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:  # not there (yet): its appearing changes the state
            state.append((entry, None))
    return tuple(state)


@functools.lru_cache(maxsize=1)
def _packages_distributions(state: tuple[object, ...]) -> dict[str, list[str]]:
    from importlib.metadata import packages_distributions

    return dict(packages_distributions())
