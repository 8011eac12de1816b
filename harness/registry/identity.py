"""What a plug-in is, for the resume key of its runs, and whether the code that would run is
still the code that key says.

`object_origin` says what a plug-in is (distribution and version, module, the sha256 of its
source and of its helper modules, the plain globals read by its functions or methods where
they are a notebook's or a script's, the functions an object holds: `_settings`), for the
resume key (`Registry.origin`): a changed plug-in is run again, not reused; one whose files
changed on disk since it was loaded, and were not reloaded into the code it runs
(importlib.reload), is an error for the Python API's next call, which would run its old code
(`_as_loaded`, `_reloaded`, `_stale`), and so is one loaded by name whose module was reloaded
since (`_still_held`). One with nothing that tells its versions apart (no source to read, a
captured value with no stable text) is never resumed (`NOT_RESUMED`). Built-ins have none.

A module of its own because it is a concern of its own, and most of the registry's code:
reading a plug-in's files, syntax trees, code objects and values, which a reader of the name
table (table.py) or of the parameter types (params.py) need not open.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import types
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path, PurePath
from typing import Any

from harness.errors import HarnessError
from harness.registry.params import _same
from harness.registry.plugins import _HARNESS, _code, _inside, _installed, _pythons_own

Origin = dict[str, Any]  # what a plug-in is: recorded with its runs and hashed into their resume key


def _still_held(module_name: str, attr: str | None, obj: Any, what: str) -> None:
    """Raise a HarnessError where module `module_name` no longer holds `obj`, the plug-in `what` loaded from
    it by name, as `attr`: it was run again since (importlib.reload, an import anew), and `obj`, made by the
    module as it was, would run, where the module's file as it is now keys it."""
    module = sys.modules.get(module_name)
    found = functools.reduce(lambda held, part: getattr(held, part, None), attr.split(".") if attr else (), module)
    if module is not None and found is not obj and not (  # a bound method is made anew at each look-up
            inspect.ismethod(obj) and inspect.ismethod(found) and found.__self__ is obj.__self__
            and found.__func__ is obj.__func__):
        raise HarnessError(f"{what} was loaded by name from module {module_name}, which was reloaded since: the "
                           "object that would run is the one made before the reload, not the one the module holds "
                           "now: restart the process (in a notebook, the kernel), or hand harness.run the object "
                           "the module now holds (retrievers={'mine': module.attr})")


def _imported_elsewhere(module_name: str, what: str, module: types.ModuleType | None = None) -> None:
    """Raise a HarnessError where the top-level module of `module_name` (before `module` is imported), or a
    top-level helper of `module` (a module it, or a helper of it, imports, found now in the folder that
    `module` was found in), was imported earlier in this process from another file than the one the import
    system finds on sys.path now, with other bytes: a process imports a name once, so the earlier file's code
    would run, keyed as the plug-in found now (a grading loop calling harness.run in each student's folder,
    each with its `mine.py`, or each `mine_NAME.py` with its own `utils.py`). The same bytes elsewhere (a
    copy) run the same code, so no error."""
    found = _elsewhere(module_name.partition(".")[0])
    if found is not None:
        raise HarnessError(f"{what}: module {module_name.partition('.')[0]} {found}")
    if module is None:
        return
    file = getattr(sys.modules.get(module.__name__.partition(".")[0]), "__file__", None)
    if not file:
        return
    top = os.path.abspath(file)
    folder = os.path.dirname(os.path.dirname(top) if os.path.basename(top) == "__init__.py" else top)
    importers, seen = [module], {module.__name__}
    while importers:
        importer = importers.pop()
        for name in sorted(_imports(importer.__name__, getattr(importer, "__file__", None),
                                    importer.__package__ or "", vars(importer))):
            if "." in name or name in seen or name not in sys.modules:
                continue
            seen.add(name)
            found = _elsewhere(name, folder)
            if found is not None:
                raise HarnessError(f"{what}: module {importer.__name__} imports {name}, which {found}")
            helper = getattr(sys.modules[name], "__file__", None)
            if helper and _inside(os.path.abspath(helper), folder):
                importers.append(sys.modules[name])


def _elsewhere(name: str, folder: str | None = None) -> str | None:
    """What to say where top-level module `name` is loaded from another file than the one the import system
    finds on sys.path now (in `folder`, where given), with other bytes; None where it is not, or either has
    no file."""
    import importlib.machinery

    from harness.paths import file_sha256

    loaded = getattr(sys.modules.get(name), "__file__", None)
    try:
        spec = importlib.machinery.PathFinder.find_spec(name) if loaded else None
    except (ImportError, ValueError):
        return None
    now = spec.origin if spec is not None and spec.has_location else None
    if not (now and os.path.isfile(now) and os.path.isfile(loaded)) or os.path.samefile(now, loaded) \
            or folder is not None and not _inside(os.path.abspath(now), folder) \
            or file_sha256(now) == file_sha256(loaded):
        return None
    return (f"is {os.path.abspath(loaded)}, imported earlier in this process, but from here (the folder harness runs "
            f"in, {os.getcwd()}, and sys.path) it is {os.path.abspath(now)}, another file: a process imports a "
            "module name once, so the earlier file's code would run: run each in a process of its own (`harness "
            "run` in each folder), or give the modules names of their own")


def object_origin(obj: Any, by_name: bool = False, own: bool | None = None) -> Origin:
    """The module an object's code comes from (`_code`) and the sha256 of its source: the
    module's file when there is one, else the code's own source text (a notebook cell). Code
    with no source to read (typed into the interactive interpreter, read from stdin) has no
    identity that tells its versions apart: it is never resumed (`NOT_RESUMED`). An object
    loaded `by_name` (a config's `python:` spec, an entry point) is built when its module
    loads, so its module's file keys it, with its repr (none for a method), not its attributes
    (_settings): one holding a model resumes. `own`: whether its package is the plug-in's own
    (`_helpers`); by default where it is loaded by name, or is a function or class itself."""
    target = _code(obj)
    if by_name:
        settings = {} if target is obj else {"repr": _without_address(_stable_repr(obj))}
    else:  # a bound method's object is its settings, as any other object's (a method's code is its class's)
        settings = _settings(obj.__self__) if inspect.ismethod(obj) else {} if target is obj else _settings(obj)
    settings = {**settings, **_code_settings(target)}  # a function's (a partial's) captured values, globals read
    module = inspect.getmodule(target)
    file = getattr(module, "__file__", None)
    if file and Path(file).is_file():
        from harness.paths import file_sha256

        helpers = _helpers(module, own=(by_name or target is obj) if own is None else own)
        sha = file_sha256(file)
        _as_loaded(obj, {module.__name__: (os.path.abspath(file), sha), **helpers})
        helpers_sha = {name: digest for name, (_, digest) in helpers.items()}
        return {"module": module.__name__, "sha256": sha, **({"helpers": helpers_sha} if helpers else {}),
                **settings}
    import hashlib  # here: loading OpenSSL was a sixth of `import harness` (2.7 of 15.5 ms)

    try:
        text = inspect.getsource(target)
    except (OSError, TypeError):  # no source to read
        return {"module": getattr(module, "__name__", None), **settings,
                **_never_resumed("its source cannot be read (it was defined in the interactive interpreter or "
                                 "read from stdin), so a changed version is not told apart")}
    return {"module": getattr(module, "__name__", None), "sha256": hashlib.sha256(text.encode()).hexdigest(),
            **settings}


def which_object(obj: Any) -> Origin:
    """Which object of its module a plug-in handed to the Python API is, which its module's file
    (`object_origin`) does not say: the qualified name of its code (a function, a class, a bound
    method's `Searcher.search`, a partial's function, an object's class) and, for a function of
    a module with a file, its first line (two lambdas of one file are both `<lambda>`; the line
    moves only with an edit of the file, which keys it already). Without them, two functions of
    one script handed over in turn under one name keyed alike, and the second reused the first's
    runs. One loaded by name needs none: its spec or entry point names it."""
    target = _code(obj)
    function = target.__func__ if inspect.ismethod(target) else target
    found: Origin = {"qualname": getattr(function, "__qualname__", None)}
    file = getattr(inspect.getmodule(function), "__file__", None)
    if inspect.isfunction(function) and file and Path(file).is_file():
        found["line"] = function.__code__.co_firstlineno
    return found


def _built_in(module: types.ModuleType, obj: Any) -> Origin:
    """The module a `python:` spec names, where it built the object (an instance, a partial, a
    bound method's instance) from code another module holds: `engine = Engine(model="x")` in
    pd.py, Engine in mylib.py. Its file keys the object too, as the arguments it was built
    with are written there; editing them reused the run, and editing them after it was loaded ran
    the object built before under the new file's key (`_as_loaded`). A function the module only
    hands on (a package re-exporting one) is its own module's."""
    built = obj.__self__ if inspect.ismethod(obj) else obj
    file = getattr(module, "__file__", None)
    if _code(built) is built or inspect.getmodule(_code(built)) is module or not file or not Path(file).is_file():
        return {}
    from harness.paths import file_sha256

    sha = file_sha256(file)
    _as_loaded(obj, {module.__name__: (os.path.abspath(file), sha)})
    return {"built_in": {"module": module.__name__, "sha256": sha}}


def _helpers(module: types.ModuleType, own: bool = False) -> dict[str, tuple[str, str]]:
    """The file and sha256 of each module the plug-in's module imports, and those import in turn
    (`_imports`), whose file lies in its folder tree: its top-level package's folders, or a
    single-file module's folder. A plug-in's own helpers are modules beside it; editing one
    changes its ranking as editing the plug-in does. A module a function imports when it runs
    is one too, found where the import system would find it, not yet loaded (`_spec`). Only
    what it imports: another plug-in beside it, loaded before it by the same config, is not its
    helper (the key would depend on which others a config lists). Python's own and installed
    modules (their versions are not the plug-in's), the harness's and the running script's
    (`__main__`, which calls the plug-in) are not its helpers; with `own` (the plug-in's own
    code: an entry point's, a `python:` spec's, a function or class handed to the Python API), its
    top-level package's folder counts where it is installed too (`pip install .`, not `-e`: a
    helper edited and installed again is keyed, as an editable install's is); a single-file
    module installed has none (its folder, site-packages, is every library's)."""
    from harness.paths import file_sha256

    top = sys.modules.get(module.__name__.partition(".")[0], module)
    file = getattr(top, "__file__", None)
    places = list(getattr(top, "__path__", None) or ([os.path.dirname(file)] if file else []))
    places = [os.path.abspath(place) for place in places
              if not (_pythons_own(place) or _inside(os.path.abspath(place), _HARNESS))]
    # an installed package's own folder (a regular package: a namespace package's spans distributions)
    own_installed = [place for place in places if own and file and hasattr(top, "__path__") and _installed(place)]
    places = [place for place in places if not _installed(place) or place in own_installed]
    if not places:
        return {}
    found: dict[str, tuple[str, str]] = {}
    importers = [(module.__name__, getattr(module, "__file__", None), module.__package__ or "", vars(module))]
    while importers:
        for name in sorted(_imports(*importers.pop())):
            if name in found or name in ("__main__", module.__name__):
                continue
            loaded = sys.modules.get(name)
            spec = None if loaded is not None else _spec(name)
            path = getattr(loaded, "__file__", None) if spec is None else spec.origin if spec.has_location else None
            if not isinstance(path, str) or not path.endswith(".py"):
                continue
            path = os.path.abspath(path)
            if any(_inside(path, place) for place in places) and not (
                    _installed(path) and not any(_inside(path, place) for place in own_installed)
                    or _pythons_own(path) or _inside(path, _HARNESS)) and os.path.isfile(path):
                found[name] = (path, file_sha256(path))
                importers.append((name, path, loaded.__package__ or "", vars(loaded)) if spec is None else
                                 (name, path, name if spec.submodule_search_locations is not None
                                  else name.rpartition(".")[0], {}))
    return dict(sorted(found.items()))


@dataclass
class _Keyed:
    """A module keying a plug-in's code, as it was when keyed: its file, the file's sha256 and that of its
    syntax (`_syntax`: an edit of its comments or layout alone changes no code), and its spec, which
    importlib.reload and an import anew replace: the module was run again since (`_reloaded`; None: not
    imported yet)."""
    path: str
    sha: str
    syntax: str | None
    spec: Any


# each plug-in's code (a function, a class) -> the modules it was keyed by, when it was first keyed in this
# process or last found reloaded: a file changed since then holds code this process does not run (`_as_loaded`).
# A record of what was loaded, as sys.modules is; weak, so that code given up is forgotten.
_KEYED: weakref.WeakKeyDictionary[Any, dict[str, _Keyed]] = weakref.WeakKeyDictionary()


def _as_loaded(obj: Any, files: Mapping[str, tuple[str, str]]) -> None:
    """Raise a HarnessError where a module keying plug-in `obj`'s code (its own, a helper) changed on disk
    since the code was first keyed in this process, unless it was reloaded since into what `obj` runs
    (`_reloaded`), or its comments or layout alone changed: the code that would run is the one loaded,
    which the key no longer says (an edit in a notebook; `importlib.reload` leaves the objects made before
    it as they were). `files`: as keyed now, each recorded the first time; a helper not imported yet (one a
    function imports when it runs) runs as it is on disk when it is: its record follows the file until it
    is imported, and is then what was loaded; a module recorded that no longer keys it, read again."""
    from harness.paths import file_sha256

    target = _code(obj)
    try:  # a bound method's function: the method itself is made anew at each look-up
        before = _KEYED.setdefault(target.__func__ if inspect.ismethod(target) else target, {})
    except TypeError:  # no weak reference to it
        return
    own = next(iter(before or files), None)  # target's own module: loaded with it
    modules = [*before, *(name for name in files if name not in before)]
    for name, keyed in list(before.items()):
        try:
            now = files[name][1] if name in files else file_sha256(keyed.path)
        except OSError:  # gone (a temporary folder): nothing left to run either
            continue
        if now == keyed.sha:
            continue
        if name != own and name not in sys.modules:  # not imported yet: runs as it is on disk
            before[name] = _keyed(name, keyed.path, now)
            continue
        tree = _parsed(keyed.path)
        if tree is not None and _syntax(tree) == keyed.syntax:  # its comments or layout alone
            before[name] = replace(keyed, sha=now)
        elif tree is not None and _reloaded(name, keyed, obj, modules, tree):
            before[name] = _keyed(name, keyed.path, now, tree)
        else:
            raise HarnessError(f"module {name} ({keyed.path}) changed on disk since it was loaded in this process, "
                               "so the code that would run is not the code its resume key would say: restart the "
                               "process (in a notebook, the kernel), or reload the module (importlib.reload) and "
                               "hand over its objects as it now holds them (not one made before the reload, nor a "
                               "value another module took from it, nor a plug-in loaded by name)")
    for name, (path, sha) in files.items():
        if name not in before:
            before[name] = _keyed(name, path, sha)


def _keyed(name: str, path: str, sha: str, tree: Any = None) -> _Keyed:
    """Module `name` as it is loaded now, keyed by the file `path` whose sha256 is `sha` (and
    whose syntax tree is `tree`, where the caller has parsed it: else it is parsed here)."""
    tree = tree if tree is not None else _parsed(path)
    return _Keyed(path, sha, None if tree is None else _syntax(tree), getattr(sys.modules.get(name), "__spec__", None))


def _reloaded(name: str, keyed: _Keyed, obj: Any, modules: Sequence[str], tree: Any) -> bool:
    """Whether module `name`, whose file changed since it was `keyed` and whose syntax tree is now `tree`,
    was run again since (its spec is a new one: importlib.reload, an import anew), what plug-in `obj` runs
    of it is what the module holds now (`_stale`), each value a module keying `obj` took from it (`from name
    import K`, `_imported_from`) is the one it holds, and what it holds is what the file says now: each of
    its functions has the code the file compiles to (but for its lines), each global the file gives a literal
    holds it (no edit made after the reload to a function or a literal)."""
    module = sys.modules.get(name)
    if keyed.spec is None or module is None or module.__spec__ is keyed.spec:  # not run again, or not known when
        return False
    namespace, bound = vars(module), _bound(tree)
    if bound is not None and any(key not in bound and not key.startswith("__") and not inspect.ismodule(value)
                                 for key, value in namespace.items()):  # left by the code before: not the file's
        return False
    holds = _holds(module)
    if _stale(name, holds, obj, modules):
        return False
    try:
        compiled = _compiled(tree, keyed.path)
    except (SyntaxError, ValueError):
        return False
    return (all(_lineless(function.__code__) in compiled.get(function.__qualname__, ())
                for function in holds.values() if inspect.isfunction(function)
                and os.path.abspath(function.__code__.co_filename) == keyed.path)
            and all(key in namespace and _same(namespace[key], value) for key, value in _literals(tree).items())
            and all(vars(sys.modules[holder]).get(local, namespace.get(imported)) is namespace.get(imported)
                    for holder in modules if holder != name and holder in sys.modules
                    for local, imported in _imported_from(sys.modules[holder], name)))


def _holds(module: types.ModuleType) -> dict[int, Any]:
    """What `module` holds, by id: its globals' values, its classes' members (a method, a nested class, a
    class attribute; a static or class method's function, a property's), and the function a decorator's
    wrapper wraps (`__wrapped__`)."""
    found: dict[int, Any] = {}
    objects = list(vars(module).values())
    while objects:
        obj = objects.pop()
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            objects.extend(part for part in (obj.fget, obj.fset, obj.fdel) if part is not None)
        elif id(obj) not in found:
            found[id(obj)] = obj
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                objects.extend(vars(obj).values())
            elif callable(obj) and "__wrapped__" in getattr(obj, "__dict__", {}):
                objects.append(obj.__wrapped__)
    return found


def _bound(tree: Any) -> set[str] | None:
    """The globals a module's syntax tree binds (by an assignment, a def, a class, an import outside its
    functions and classes; a function's `global` statement); None where it imports * (which binds names the
    file does not say)."""
    import ast

    names = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif not isinstance(node, ast.Lambda):
            nodes.extend(ast.iter_child_nodes(node))
    return names


def _stale(name: str, holds: Mapping[int, Any], obj: Any, modules: Sequence[str]) -> bool:
    """Whether plug-in `obj` reaches a function, class or object of module `name`, run again, that it no
    longer `holds`, made by its code as it was: an object handed over made before the reload, or its class
    (an instance handed over must be of the module's class now; its attributes are keyed), a value
    another module keying `obj` took from it (`from name import f`), a default, a closure's value, a
    class's attribute. It looks through `obj` and the globals of the other modules keying it, into the
    functions (defaults, closure, `__wrapped__`), classes and objects of those modules, not into others'."""
    first = obj.__self__ if inspect.ismethod(obj) else obj
    code = inspect.isfunction(first) or inspect.isclass(first) or isinstance(first, functools.partial)
    objects = [obj] if code else [obj, type(first), *getattr(first, "__dict__", {}).values()]
    objects += [value for holder in modules if holder != name and holder in sys.modules
                for value in list(vars(sys.modules[holder]).values())]
    seen = {id(first)} if not code else set()  # an instance handed over: its class is what must be the module's
    while objects:
        obj = objects.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, functools.partial):
            objects += [obj.func, *obj.args, *obj.keywords.values()]
        elif inspect.ismethod(obj):
            objects += [obj.__func__, obj.__self__]
        elif isinstance(obj, (staticmethod, classmethod, property)):
            objects += [getattr(obj, part, None) for part in ("__func__", "fget", "fset", "fdel")]
        else:
            owner = getattr(obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj), "__module__", None)
            if owner == name and id(obj) not in holds:
                return True
            if owner != name and owner in modules:
                objects += _within(obj)
    return False


def _within(obj: Any) -> list[Any]:
    """What a function (its defaults, closure, the function it wraps), class or object (its attributes) holds."""
    if not inspect.isfunction(obj):
        return [*getattr(obj, "__dict__", {}).values(), *([] if inspect.isclass(obj) else [type(obj)])]
    cells = []
    for cell in obj.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # an empty cell: not bound (yet)
            continue
    return [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values(), *cells, *obj.__dict__.values()]


def _imported_from(holder: types.ModuleType, name: str) -> list[tuple[str, str]]:
    """The names module `holder` binds by `from name import K as L` (anywhere in its file: a global where
    it holds one, a function's own otherwise, imported again each call), each as (L, K): its globals'
    values are those of when it ran, which a reload of `name` leaves as they were."""
    import ast
    import importlib.util

    file = getattr(holder, "__file__", None)
    tree = _parsed(file) if file else None
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom):
            try:
                source = importlib.util.resolve_name("." * node.level + (node.module or ""), holder.__package__ or "")
            except (ImportError, ValueError):
                continue
            if source == name:
                found += [(alias.asname or alias.name, alias.name) for alias in node.names if alias.name != "*"]
    return found


def _parsed(path: str) -> Any:
    """A Python file's syntax tree (ast.Module); None where it cannot be read or parsed."""
    import ast

    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _syntax(tree: Any) -> str:
    """The sha256 of a syntax tree: what a file's code says, not its comments, blank lines or layout."""
    import ast
    import hashlib

    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def _literals(tree: Any) -> dict[str, Any]:
    """The module's globals its syntax tree gives a literal (`MODEL = "x"`, `K: int = 5`), with it."""
    import ast

    found = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if isinstance(target, ast.Name):
            try:
                found[target.id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # not a literal
                found.pop(target.id, None)
    return found


def _compiled(tree: Any, path: str) -> dict[str, list[types.CodeType]]:
    """The code of each function a module's syntax tree defines, by its qualified name, without its lines."""
    found: dict[str, list[types.CodeType]] = {}
    codes = [compile(tree, path, "exec", dont_inherit=True)]  # not the harness's __future__ flags
    while codes:
        for const in codes.pop().co_consts:
            if isinstance(const, types.CodeType):
                found.setdefault(const.co_qualname, []).append(_lineless(const))
                codes.append(const)
    return found


def _lineless(code: types.CodeType) -> types.CodeType:
    """`code` with no line numbers, its nested code's neither: a comment or a blank line added after the
    reload moves the functions below it, and changes no code."""
    return code.replace(co_firstlineno=1, co_linetable=b"", co_consts=tuple(
        _lineless(const) if isinstance(const, types.CodeType) else const for const in code.co_consts))


def _spec(name: str) -> Any:
    """The spec (importlib's ModuleSpec) of module `name`, not loaded, as the import system
    would find it, without importing it or the packages above it (a function's `import
    numpy.linalg` must not load numpy to key a plug-in); None when it is not found."""
    import importlib.machinery
    import importlib.util

    loaded = sys.modules.get(name)
    if loaded is not None:
        return getattr(loaded, "__spec__", None)
    parent = name.rpartition(".")[0]
    try:
        if not parent:
            return importlib.util.find_spec(name)
        above = _spec(parent)
        places = above.submodule_search_locations if above is not None else None
        return importlib.machinery.PathFinder.find_spec(name, list(places)) if places else None
    except (ImportError, ValueError, AttributeError):
        return None


def _imports(name: str, file: str | None, package: str, namespace: Mapping[str, Any]) -> set[str]:
    """The names of the modules module `name` (its file, its package, its globals) imports:
    those its import statements name, anywhere in it (a function's, run when it is called,
    too), with their packages, and those its globals hold, or whose functions and classes they
    hold; not a package's submodules in its globals, which the import system puts there
    whenever anything imports them (its own import statements name its own)."""
    import ast
    import importlib.util

    names: set[str] = set()
    try:
        nodes = list(ast.walk(ast.parse(Path(file).read_bytes()))) if file else []
    except (OSError, SyntaxError, ValueError, TypeError):  # no source to read: its globals alone
        nodes = []
    for node in nodes:
        if isinstance(node, ast.Import):
            written = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            except (ImportError, ValueError):
                continue
            written = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for each in written:  # `import a.b.c` loads a and a.b too
            parts = each.split(".")
            names.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    inside = name + "." if "__path__" in namespace else None
    for value in list(namespace.values()):
        if isinstance(value, types.ModuleType):
            if not (inside and value.__name__.startswith(inside)):
                names.add(value.__name__)
        elif inspect.isfunction(value) or inspect.isclass(value):
            names.add(getattr(value, "__module__", None) or "")
    return names - {"", name}


# the origin key of a plug-in with no identity that tells its versions apart: why, beside a
# random token, so that the resume key of its runs matches no finished run (they are made again)
NOT_RESUMED = "not_resumed"
_DEFAULT_REPR = re.compile(r" object at 0x[0-9a-fA-F]+>")  # object.__repr__'s ending: no argument in it


def _settings(obj: Any) -> Origin:
    """An object's settings (a PyTerrier pipeline's, a partial's arguments) as its repr shows
    them, less any address (which changes every run), its sets' members in a fixed order
    (_stable_repr). An object whose class keeps object's repr, which shows no argument, is
    its attributes (`vars`) where they are plain values, by the sha256 of their text (a retriever
    holding its documents would write them all into every run's JSON); one with an argument so
    written, or attributes not plain, is never resumed: instances with other arguments would key
    alike. (An object handed to the Python API; one loaded by name is keyed by its module.)"""
    import hashlib

    text = _stable_repr(obj)
    settings: Origin = {"repr": _without_address(text)}
    if type(obj).__repr__ is object.__repr__:
        state = getattr(obj, "__dict__", None)
        if state is None or not _plain(state):
            return {**settings, **_never_resumed(
                "its class keeps object's repr, which shows none of its arguments, and its attributes are not "
                "plain values (numbers, strings, lists, dicts of them...): give the class a __repr__ that shows them")}
        return {**settings, "state": hashlib.sha256(_stable_repr(state).encode()).hexdigest()} if state else settings
    if _DEFAULT_REPR.search(text):
        return {**settings, **_never_resumed(
            "its repr shows an object whose class keeps object's repr, which shows none of its arguments")}
    return {**settings, **_functions_held(obj)}


_MOST_HELD = 100_000  # objects looked through for the functions an object holds (`_functions_held`)
_MOST_ITEMS = 10_000  # a list, tuple, set or dict holding more is data (documents, an index), not looked through
_SCALARS = (type(None), bool, int, float, complex, str, bytes, Enum, PurePath)  # hold no function
_BARE = frozenset(_SCALARS[:7])  # the same, told by their type alone (quicker)


def _functions_held(obj: Any) -> Origin:
    """The functions an object holds, keyed as a function handed over is (its source, its
    captured values, the globals it reads), by where they are (`fn`, `_transformers[1].fn`):
    in its attributes, and in the lists, tuples, sets, dicts and objects among them, a
    partial's function and arguments, a bound method's function and object. A repr does not
    show them (PyTerrier's `pt.apply.generic(fn)` is `pt.apply.generic()`): editing `fn` reused
    the run. A list, tuple, set or dict of more than _MOST_ITEMS is taken as data and not looked
    through (an index of a million postings would take seconds). One function that cannot be
    keyed makes the object never resumed, as does holding more than _MOST_HELD objects."""
    found: dict[str, Any] = {}
    seen, todo, looked = {id(obj)}, [("", obj)], 0
    while todo:
        where, value = todo.pop()
        looked += 1
        if looked > _MOST_HELD:
            return _never_resumed(f"it holds more than {_MOST_HELD:,} objects, too many to look through for the "
                                  "functions it holds")
        if inspect.isfunction(value) and where:
            found[where] = value
            continue
        if isinstance(value, functools.partial):  # (the object's own is its code, keyed already)
            children = [*([("func", value.func)] if where else []),
                        *((f"args[{i}]", arg) for i, arg in enumerate(value.args)),
                        *((f"keywords[{key!r}]", arg) for key, arg in value.keywords.items())]
        elif inspect.ismethod(value):
            children = [("__func__", value.__func__), ("__self__", value.__self__)]
        elif type(value) in (list, tuple, set, frozenset, dict):
            if len(value) > _MOST_ITEMS:
                continue
            items = value.items() if type(value) is dict else enumerate(value)
            children = [(f"[{key!r}]", item) for key, item in items]
        elif inspect.ismodule(value) or inspect.isclass(value) or inspect.isroutine(value):
            continue
        else:
            try:  # not through a class's __getattr__ (a proxy's, a lazy loader's)
                state = object.__getattribute__(value, "__dict__")
            except Exception:
                continue
            children = [(f".{key}", item) for key, item in list(state.items()) if isinstance(key, str)]
        for step, child in children:
            if id(child) in seen or type(child) in _BARE or isinstance(child, _SCALARS) \
                    or type(child) in (list, tuple, set, frozenset) and len(child) <= _MOST_ITEMS \
                    and all(type(item) in _BARE for item in child):
                continue  # (a posting, a list of words: holds no function, and need not count as an object)
            seen.add(id(child))
            todo.append((f"{where}{step}" if step.startswith(("[", ".")) else f"{where}.{step}", child))
    keyed = {}
    for where, function in sorted(found.items()):
        where = where.removeprefix(".")
        keyed[where] = origin = object_origin(function, own=False)
        if NOT_RESUMED in origin:
            return _never_resumed(f"its function {where} cannot be keyed: {origin[NOT_RESUMED]}")
    return {"functions": keyed} if keyed else {}


def _function_settings(function: Any, within: frozenset[int] = frozenset()) -> Origin:
    """What a function's source does not say: the values its closure captured (the inner
    function of `make_search(0.3)`, a lambda made in a loop) and its defaults where they may
    not be its source's (a nested function's or lambda's, evaluated each time it is made; a
    module-level one's, changed at run time), and the globals it reads where no module's file
    keys them (`_globals_read`: a notebook's, a script's run directly). Empty for a function of
    an importable module without a closure whose defaults are as written: its file keys it. A captured
    function, class or module is its name (a function with its own such values); a value not
    plain (`_plain`) has no text that tells two apart: the plug-in is never resumed."""
    if not inspect.isfunction(function):
        return {}
    within = within | {id(function)}
    found: Origin = {}
    captured = {}
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            captured[name] = _named(cell.cell_contents, within)
        except ValueError:  # an empty cell: a name of the enclosing function not bound (yet)
            continue
    if captured:
        found["closure"] = captured
    defaults = _defaults_not_written(function)
    if defaults:
        found["defaults"] = {name: _named(value, within) for name, value in defaults.items()}
    if not _plain(found):
        return _never_resumed("it captured a value that is not plain (numbers, strings, lists, dicts of them...) "
                              "in its closure or defaults, so another such value is not told apart: capture plain "
                              "values, or give the plug-in as an object whose __repr__ shows them")
    read = _globals_read(function)
    if NOT_RESUMED in read:
        return read
    return {**{key: _stable_repr(value) for key, value in found.items()}, **read}


def _code_settings(target: Any) -> Origin:
    """What a plug-in's code does not say (`_function_settings`): for a class, an object or a
    bound method, the globals its class's methods read, and its bases' (`_globals_read`): a
    notebook's `Searcher` whose `search` reads `MIN` is run again when `MIN` is set anew."""
    if inspect.isfunction(target):
        return _function_settings(target)
    if inspect.ismethod(target):
        target = target.__self__ if inspect.isclass(target.__self__) else type(target.__self__)
    if not inspect.isclass(target):
        return {}
    keyed: dict[str, str] = {}
    for cls in target.__mro__:
        for value in list(vars(cls).values()):
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            for function in ([value.fget, value.fset, value.fdel] if isinstance(value, property) else [value]):
                if inspect.isfunction(function):
                    read = _globals_read(function)
                    if NOT_RESUMED in read:
                        return read
                    keyed.update(read.get("globals", {}))
    return {"globals": dict(sorted(keyed.items()))} if keyed else {}


def _globals_read(function: Any) -> Origin:
    """The values of the module globals a function of `__main__` (a notebook, a script run
    directly) or of a module with no file reads (`MIN = 3` set in a notebook cell, or by a
    script at run time), and those the functions of its module it calls read, where they are
    plain values: `{"globals": {name: repr, or its sha256 when long}}`. An importable module's
    globals are taken as its file writes them, keyed by the file: a memo cache it fills when it
    runs, or a path made from its `__file__`, would change its key from call to call and from
    checkout to checkout. A module, class or function read is keyed as it always is (its file,
    its source), but a function of a module with no file (a notebook's cell) by its source too:
    editing its cell changes the plug-in. A global that is not plain, read by code with no file
    (a notebook's model), has no text that tells two apart: never resumed. One read by a script's
    code is taken as the file writes it (a model it loads when it starts)."""
    import dis
    import hashlib

    namespace = function.__globals__
    file = getattr(sys.modules.get(function.__module__ or ""), "__file__", None)
    fileless = not (file and os.path.isfile(file))
    if not fileless and function.__module__ != "__main__":
        return {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}  # a notebook's function, by its source
    followed, codes = {id(function)}, [function.__code__]
    while codes:
        code = codes.pop()
        codes += [const for const in code.co_consts if isinstance(const, types.CodeType)]  # nested functions
        for instruction in dis.get_instructions(code):
            name = instruction.argval
            if instruction.opname not in ("LOAD_GLOBAL", "LOAD_NAME") or name in values or name in sources \
                    or name not in namespace:
                continue
            value = namespace[name]
            if inspect.isfunction(value) and value.__globals__ is namespace:  # its module's: what it reads too
                if id(value) not in followed:
                    followed.add(id(value))
                    codes.append(value.__code__)
                if fileless:
                    try:
                        sources[name] = f"<function {value.__qualname__} sha256:" \
                                        f"{hashlib.sha256(inspect.getsource(value).encode()).hexdigest()}>"
                    except (OSError, TypeError):
                        return _never_resumed(f"it calls {name}, whose source cannot be read (defined in the "
                                              "interactive interpreter or read from stdin)")
            elif not (inspect.ismodule(value) or inspect.isclass(value) or inspect.isroutine(value)):
                values[name] = value
    plain = {name: value for name, value in values.items() if _small(value) and _plain(value)}  # (small: quick)
    if fileless and plain.keys() != values.keys():
        name = next(name for name in values if name not in plain)
        why = (f"of more than {_MOST_WRITTEN:,} values and characters, too large to write out"
               if not _small(values[name]) else f"(of type {type(values[name]).__name__}), not a plain value "
               "(numbers, strings, lists, dicts of them...)")
        return _never_resumed(f"it reads the global {name} {why}, so another such value is not told apart: pass it "
                              "as a parameter (a file, as a Path parameter), or give the plug-in as an object whose "
                              "__repr__ shows it")
    keyed = dict(sources)
    for name, value in plain.items():
        text = _stable_repr(value)
        keyed[name] = text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return {"globals": dict(sorted(keyed.items()))} if keyed else {}


def _named(value: Any, within: frozenset[int]) -> Any:
    """A captured function, class or module as text naming it (a function with its own
    captured values, `_function_settings`), any other value as it is, for `_plain` to judge."""
    if inspect.ismodule(value):
        return f"<module {value.__name__}>"
    if not (inspect.isfunction(value) or inspect.isclass(value)):
        return value
    kind = "class" if inspect.isclass(value) else "function"
    own = _function_settings(value, within) if id(value) not in within else {}
    if NOT_RESUMED in own:
        return value  # not plain: never resumed
    return f"<{kind} {value.__module__}.{value.__qualname__}{' ' + _stable_repr(own) if own else ''}>"


def _defaults_not_written(function: Any) -> dict[str, Any]:
    """A function's defaults by parameter, unless its source writes each as it is now: a
    module-level function's, made once when its module is imported. A nested function's or
    lambda's are made each time it is, from the values of the moment."""
    positional = function.__defaults__ or ()
    names = function.__code__.co_varnames[:function.__code__.co_argcount]  # the last ones have the defaults
    defaults = {**dict(zip(names[len(names) - len(positional):], positional)), **(function.__kwdefaults__ or {})}
    if not defaults or ("<" not in function.__qualname__ and _as_written(function, defaults)):
        return {}
    return defaults


def _as_written(function: Any, defaults: Mapping[str, Any]) -> bool:
    """Whether the function's source writes these defaults: a literal equal to its value (of
    its type), or a name (`Mode.FAST`, `MODEL`) for the same object. A default written
    otherwise (a call) is taken as written: the file's hash keys its source."""
    import ast
    import textwrap

    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = node.args
    ordered = [*arguments.posonlyargs, *arguments.args]
    written = {**{arg.arg: expr for arg, expr in zip(ordered[len(ordered) - len(arguments.defaults):],
                                                      arguments.defaults)},
               **{arg.arg: expr for arg, expr in zip(arguments.kwonlyargs, arguments.kw_defaults) if expr is not None}}
    if written.keys() != defaults.keys():
        return False
    for name, expr in written.items():
        try:
            expected = ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError):  # not a literal
            expected = _written_name(expr, function.__globals__)
            if expected is _UNKNOWN:
                continue
        value = defaults[name]
        if value is not expected and not (_plain(value) and type(value) is type(expected) and value == expected):
            return False
    return True


_UNKNOWN = object()  # a default's source that is neither a literal nor a name (`_written_name`)


def _written_name(expr: Any, namespace: Mapping[str, Any]) -> Any:
    """The object a dotted name (`MODEL`, `Mode.FAST`) in a function's source names in its
    module (or Python's builtins), `_UNKNOWN` for any other expression or a name not found."""
    import ast
    import builtins

    if isinstance(expr, ast.Attribute):
        found = _written_name(expr.value, namespace)
        return _UNKNOWN if found is _UNKNOWN else getattr(found, expr.attr, _UNKNOWN)
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id, getattr(builtins, expr.id, _UNKNOWN))
    return _UNKNOWN


_MOST_WRITTEN = 1_000_000  # values and characters of a global written out to key it (`_small`): 0.1 s at most


def _small(value: Any) -> bool:
    """Whether a plain value holds at most _MOST_WRITTEN values and characters: a global holding a
    corpus (a million documents: 5 s and half a GB of text to write out, each time a plug-in is
    keyed) is not written out."""
    size, todo, seen = 0, [value], set()
    while todo:
        item = todo.pop()
        size += 1 + (len(item) if isinstance(item, (str, bytes)) else 0)
        if size > _MOST_WRITTEN:
            return False
        if type(item) in (list, tuple, set, frozenset, dict) and id(item) not in seen:
            seen.add(id(item))
            todo += [*item.keys(), *item.values()] if type(item) is dict else list(item)
    return True


def _plain(value: Any, within: frozenset[int] = frozenset()) -> bool:
    """Whether `value`'s repr is all there is to it, the same in every process: a number,
    string, bytes, None, an Enum member or a path, or a list, tuple, set or dict of them."""
    if value is None or type(value) in (bool, int, float, complex, str, bytes) or isinstance(value, (Enum, PurePath)):
        return True
    if id(value) in within:  # a container holding itself: repr writes it as `[...]`, the same every time
        return True
    within = within | {id(value)}
    if type(value) in (list, tuple, set, frozenset):
        return all(_plain(item, within) for item in value)
    if type(value) is dict:
        return all(_plain(key, within) and _plain(item, within) for key, item in value.items())
    return False


def _never_resumed(why: str) -> Origin:
    import secrets

    return {NOT_RESUMED: why, "token": secrets.token_hex(8)}


def _stable_repr(value: Any, within: frozenset[int] = frozenset()) -> str:
    """repr(value), but a set's or frozenset's members sorted by their own such text, in a
    `functools.partial`'s arguments and in the lists, tuples and dicts among them: a set of
    strings is listed in the order of their hashes, which Python draws anew in every process
    (PYTHONHASHSEED), and a plug-in's resume key would change every run. The same text as repr
    where no set is met. A dict keeps its order (two dicts in different orders may not act
    alike). Any other object is its repr as its class writes it, sets inside included: no
    order can be fixed in a text without knowing what it is made of; such an object's key
    changes from run to run, so its runs are not resumed, nothing wrong is reused."""
    kind = type(value)
    if id(value) in within:  # a container holding itself, written as repr writes it
        return {list: "[...]", dict: "{...}"}.get(kind, "...")
    within = within | {id(value)}
    if isinstance(value, functools.partial):
        parts = [_stable_repr(value.func, within), *(_stable_repr(arg, within) for arg in value.args),
                 *(f"{key}={_stable_repr(arg, within)}" for key, arg in value.keywords.items())]
        prefix = "functools." if kind.__module__ == "functools" else ""
        return f"{prefix}{kind.__qualname__}({', '.join(parts)})"
    if kind in (set, frozenset) and value:
        members = "{" + ", ".join(sorted(_stable_repr(member, within) for member in value)) + "}"
        return members if kind is set else f"frozenset({members})"
    if kind is list:
        return "[" + ", ".join(_stable_repr(item, within) for item in value) + "]"
    if kind is tuple:
        items = [_stable_repr(item, within) for item in value]
        return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if kind is dict:
        return "{" + ", ".join(f"{_stable_repr(key, within)}: {_stable_repr(item, within)}"
                               for key, item in value.items()) + "}"
    return repr(value)


def _without_address(text: str) -> str:
    """A repr less the `at 0x...` that differs from run to run."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)
