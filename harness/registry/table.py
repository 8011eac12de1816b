"""Name -> implementation registries (adapters, strategies, retrievers, presets, ...).

Modelled on ir-measures' measure registry: implementations register themselves by name at
import time, and callers look them up by the name a user typed in a config or on the CLI.
A registry bound to a package imports that package's modules on first look-up, so adding an
implementation is adding a module; those modules keep heavy imports inside functions. The
package's command-line modules (`cli`, `cli_*`) are not implementations and are skipped: a
registry never pulls in a CLI. So are its private modules (`_name`): helpers the
implementations import when they need them (bm25's numba kernels, which cost a second to
import). A few built-ins live in a higher layer than their registry
(the `benchmark:` corpus format in harness.topics, say): the registry's package cannot import
them, so the front end does, through `extend` (harness/_assembly.py, run by `import harness`),
and they are imported on the registry's first look-up too.

Plug-ins come three ways, each an object the registry's `adapter` turns into an item (a
plain search function into a retriever factory, say) and checks, so that a wrong signature is
an error when a config names it, not half-way through a run:

- an entry point of the registry's `group` (`harness.retrievers`, ...) in any installed
  distribution, listed on the first look-up and imported when its name is first looked up (a
  name two entry points, or an entry point and a built-in, claim is an error for that name only);
- `python:package.module:attr`, imported from sys.path (the current folder included), in a
  registry that has an entry-point group;
- objects handed to `using({name: object})` for the duration of a `with` block (the Python
  API's `harness.run(..., retrievers={"mine": my_search})`), seen by nothing outside it.

Every component declares itself when it registers (`register(name, summary=..., params=...)`):
a `Declaration` with a one-line summary, its `Param`s (type, default, description, as
ir-measures' `ParamInfo`) and, for benchmarks, its splits and typed turn fields. Config checks
(`check_params`), `--help`, `harness components` and the README's tables all read declarations.
A plug-in may carry one (`declaration` attribute, e.g. from `harness.declare`); otherwise it is
read from the plug-in's signature (real annotations, as a researcher writes them) and docstring.

`origin(name)` says what a plug-in is (distribution and version, module, the sha256 of its
source and of its helper modules, the plain globals read by its functions or methods where
they are a notebook's or a script's, the functions an object holds), for the resume key: a
changed plug-in is run again, not reused; one whose files changed on disk since it was loaded,
and were not reloaded into the code it runs (importlib.reload), is an error
for the Python API's next call, which would run its old code (`_as_loaded`). Built-ins have none.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import os
import re
import sys
import types
import typing
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from enum import Enum
from numbers import Integral, Real
from pathlib import Path, PurePath
from typing import Any, Generic, Literal, TypeVar, Union

from harness.errors import HarnessError, nearest

T = TypeVar("T")
PYTHON = "python:"  # `python:package.module:attr`
Origin = dict[str, Any]  # what a plug-in is: recorded with its runs and hashed into their resume key
# registry ("module:ATTR") -> modules of higher layers that register into it, set by `extend`
_EXTENSIONS: dict[str, tuple[str, ...]] = {}
# where the top-level package of a loaded plug-in (entry point or `python:`) lies, its folders
# or its module's file -> what it is, "retriever 'overlap' (entry point pkg:overlap of pkg
# 1.0)": an import failing in its code is its own (`plugin_import_failure`); a record of what
# was loaded, as sys.modules is. By place, not by name: a plug-in package may be named like a
# standard module (`code`, `types`), and a frame's module name is its code's global __name__;
# by name only where the module has no file (a notebook's __main__, its cells' code)
_PLUGIN_PACKAGES: dict[str, str] = {}
_FILELESS_PLUGINS: dict[str, str] = {}
_HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # harness/, above harness/registry/


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


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # the default of a parameter a config must give
# The largest count or depth (AtLeast, a config's k) taken: what a 32-bit int holds, as Java
# (Anserini's hits and RM3 settings) and trec_eval's C (cutoffs, `harness eval`) take them. No
# count is meant beyond it (a depth beyond a corpus's size is harmless); a larger one failed
# deep in a run (numba's "Int value is too large", a MemoryError, a Java overflow). Other
# integers (a plug-in's seed, a timestamp) are not counts and are not bounded.
INT_LIMIT = 2**31 - 1


def number_problem(value: object, low: float, high: float, *, whole: bool = False,
                   open_low: bool = False) -> str | None:
    """'must be ...' when `value` is not a finite number (a whole one with `whole`) from low to
    high (above low with `open_low`); None when it is. The one check behind `number_in` on the
    command line (harness.cli), the Python API's arguments (harness.api) and an engine's
    workers (harness.compute.engines), so all say the same."""
    kind = Integral if whole else Real
    if isinstance(value, kind) and not isinstance(value, bool) \
            and (whole or _float_holds(value) and math.isfinite(value)) \
            and (low < value if open_low else low <= value) and value <= high:
        return None
    kind_name = "a whole number" if whole else "a number"
    if high == math.inf:
        bounds = f" above {low}" if open_low else f" of {low} or more" if low != -math.inf else ""
    else:
        bounds = f" above {low} and at most {high}" if open_low else f" from {low} to {high}"
    return f"must be {'a finite ' + kind_name[2:] if not bounds else kind_name}{bounds}"


def _float_holds(value: object) -> bool:
    """Whether float(value) is a float, not an OverflowError: an integer of 309 digits or more,
    as YAML reads one, is not, and is no value of a parameter a component takes as a float."""
    try:
        float(value)  # type: ignore[arg-type]
    except OverflowError:
        return False
    return True


class _TooLarge:
    """Where an error shows an integer no float holds: saying why, not its 400 digits."""

    def __repr__(self) -> str:
        return "an integer too large for a floating-point number"


def _quoted(value: Any) -> str:
    """`value` as an error shows it: its repr, each integer no float holds in it (in a list,
    tuple or dict, as a config gives them) said to be one."""
    def readable(item: Any) -> Any:
        if isinstance(item, int) and not isinstance(item, bool) and not _float_holds(item):
            return _TooLarge()
        if type(item) in (list, tuple):
            return type(item)(map(readable, item))
        if type(item) is dict:
            return {key: readable(each) for key, each in item.items()}
        return item
    return repr(readable(value))


@dataclass(frozen=True)
class Param:
    """One parameter a component takes from a config: its type, default and what it does.

    `type` is a real type: `int`, `float` (an int is accepted), `str`, `bool`, a union
    (`int | None`), `Literal["a", "b"]` or an Enum (a member's value or name) for a choice,
    `list[str]`, `dict`, `Any`, `Path` (a
    file or folder, given as a string, looked for when a config is read), or a `ParamType`
    for values that need their own check (`AtLeast(1)`, a nested retriever spec, `LocalPath`)."""

    name: str
    type: Any
    default: Any = REQUIRED
    desc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


Params = Union[Sequence[Param], Callable[[], Sequence[Param]]]  # as `Registry.register` takes them


@dataclass(frozen=True)
class Declaration:
    """What a registered component says about itself."""

    name: str
    summary: str  # one line
    params: tuple[Param, ...] = ()
    open: bool = False  # takes parameters beyond those declared (a plug-in's **kwargs): not checked
    splits: tuple[str, ...] = ()  # benchmarks: the splits it knows, the default first
    fields: tuple[Param, ...] = ()  # benchmarks: the typed turn fields it fills beyond the basics
    conversation_fields: tuple[Param, ...] = ()  # benchmarks: the same for its conversations
    # work that can start before the component is built, e.g. importing its libraries: `harness
    # run` starts it in the background for the runs it is about to make (runner.preloading)
    preload: Callable[[], object] | None = None
    # whether a component with these params (as a config gives them) needs its preload; None:
    # whatever they are (bm25's kernels serve its numpy backend, not pyserini's)
    preload_if: Callable[[Mapping[str, Any]], bool] | None = None
    # top-level modules it imports when built, an optional extra's (harness.extras): a config
    # naming it is checked for them (found, not imported), so a dry-run vouches for no run that cannot start
    needs: tuple[str, ...] = ()
    # those it imports beyond `needs` with these params, told how to count the documents it would
    # search up to a limit (None: not known; counted only where the answer depends on it): dense's
    # shipped model without a `model:`, its faiss search of a big corpus
    needs_with: Callable[[Mapping[str, Any], Callable[[int], int | None]], tuple[str, ...]] | None = None
    # retrievers: reads the documents' text itself (rerank's cross-encoder), so that an index alone
    # (a config's `corpus: {index: DIR}`) is no corpus to it, said when the config is read
    reads_documents: bool = False

    def param(self, name: str) -> Param | None:
        return next((param for param in self.params if param.name == name), None)

    def preload_for(self, params: Mapping[str, Any]) -> Callable[[], object] | None:
        """The preload a component with these params needs, if any."""
        if self.preload is None or (self.preload_if is not None and not self.preload_if(params)):
            return None
        return self.preload

    def needs_for(self, params: Mapping[str, Any], count: Callable[[int], int | None]) -> tuple[str, ...]:
        """The modules a component with these params, searching documents counted by `count`, imports when built."""
        return self.needs + (self.needs_with(params, count) if self.needs_with is not None else ())


class ParamError(HarnessError):
    """A problem at `key` (a path below the component's params, e.g. `params.k1`)."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}" if key else problem)


def check_params(declaration: Declaration, params: Mapping[str, Any], key: str = "params",
                 kind: str = "component") -> None:
    """Raise ParamError at the first unknown parameter, value of the wrong type or missing
    required parameter of `declaration`; `key` is where `params` sits in the config."""
    for name, value in params.items():
        param = declaration.param(name)
        if param is None:
            if declaration.open:
                continue
            if not declaration.params:
                raise ParamError(f"{key}.{name}", f"{kind} {declaration.name!r} takes no parameters")
            known = ", ".join(sorted(p.name for p in declaration.params))
            raise ParamError(f"{key}.{name}", f"unknown parameter of {kind} {declaration.name!r}; known: {known}")
        check_value(f"{key}.{name}", value, param.type)
    for name, value in params.items():
        param = declaration.param(name)
        if param is not None and isinstance(param.type, ParamType):
            param.type.check_beside(f"{key}.{name}", value, params)
    missing = [param.name for param in declaration.params if param.required and param.name not in params]
    if missing:
        raise ParamError(key, f"{kind} {declaration.name!r} needs {', '.join(missing)}")


def check_given(what: str, params: Sequence[Param], **values: Any) -> None:
    """Raise ParamError at `what.NAME` for the first of `values` not of the type its Param in
    `params` declares: a component's constructor checks what Python code hands it directly
    by the declaration a config is checked against, so that one rule says each range and how
    its error reads (`bm25.b: expected a number from 0 to 1, got 7`). A numpy array or scalar
    is checked as the list or number it holds, as Python code hands them (`weights=np.array(...)`)."""
    values = {name: value.tolist() if hasattr(value, "tolist") and not isinstance(value, type) else value
              for name, value in values.items()}  # a numpy type itself (dtype=np.float16) is no value to list
    check_params(Declaration(what, "", tuple(param for param in params if param.name in values)), values, what)


class ParamType:
    """A parameter type with its own check, for values the plain types cannot say (a nested
    retriever spec, an integer with a lower bound)."""

    def check(self, key: str, value: Any) -> None:
        """Raise ParamError at `key` unless `value` is of this type."""
        raise NotImplementedError

    def describe(self) -> str:
        """How an error or a listing says the type: `an integer of 1 or more`."""
        raise NotImplementedError

    def check_beside(self, key: str, value: Any, params: Mapping[str, Any]) -> None:
        """Raise ParamError at `key` unless `value` fits the other parameters given beside it
        (run once each value has its type); most types do not depend on them."""


def check_value(key: str, value: Any, expected: Any) -> None:
    """Raise ParamError unless `value` (as read from YAML or JSON) is of type `expected`."""
    if isinstance(expected, ParamType):
        expected.check(key, value)
    elif not _fits(value, expected):
        raise ParamError(key, f"expected {describe_type(expected)}, got {_quoted(value)}")


def _fits(value: Any, expected: Any) -> bool:
    if expected is Any:
        return True
    if isinstance(expected, ParamType):  # inside a list or a union: `list[Between()]`
        try:
            expected.check("", value)
        except ParamError:
            return False
        return True
    if expected is None or expected is type(None):
        return value is None
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin in (list, tuple, Sequence):
        if not isinstance(value, (list, tuple)):
            return False
        if _fixed_length(expected):  # tuple[str, int]: a value of its type at each place
            return len(value) == len(args) and all(_fits(v, arg) for v, arg in zip(value, args))
        return not args or all(_fits(v, args[0]) for v in value)
    if origin in (dict, Mapping):
        return isinstance(value, Mapping) and (len(args) != 2 or all(
            _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()))
    if expected is float:  # a finite one: .nan, .inf or 1e400 would fail (or filter nothing) deep in a run
        return isinstance(value, (int, float)) and not isinstance(value, bool) and _float_holds(value) \
            and math.isfinite(value)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is tuple:  # YAML and JSON have lists only (a plug-in's default `(1, 2)` says tuple)
        return isinstance(value, (list, tuple))
    if isinstance(expected, type) and issubclass(expected, PurePath):  # a config writes a path as a string
        return isinstance(value, (str, PurePath))
    if isinstance(expected, type) and issubclass(expected, Enum):  # a config writes a member's name or value
        return _member(expected, value) is not None
    if isinstance(expected, type):
        return isinstance(value, expected)
    return True  # a type the checker cannot read: the component checks it


def _member(enum: type[Enum], value: Any) -> Enum | None:
    """The member of `enum` that `value` is, or names, or whose value it is; None if none."""
    if isinstance(value, enum):
        return value
    found = next((member for member in enum if member.value == value and type(member.value) is type(value)), None)
    return found if found is not None or not isinstance(value, str) else enum.__members__.get(value)


def as_declared(declaration: Declaration, params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` (checked, as a config writes them) with each value of a parameter typed with an
    Enum made its member, as the component expects it (`mode: fast` -> Mode.FAST)."""
    converted = dict(params)
    for name, value in params.items():
        param = declaration.param(name)
        enums = [] if param is None else [arg for arg in (param.type, *typing.get_args(param.type))
                                          if isinstance(arg, type) and issubclass(arg, Enum)]
        member = next((found for enum in enums if (found := _member(enum, value)) is not None), None)
        if member is not None:
            converted[name] = member
    return converted


def _defaults(item: Any) -> dict[str, Any]:
    """The defaults of the keyword parameters `item` is called with; none where its signature
    cannot be read."""
    try:
        signature = inspect.signature(item)
    except (TypeError, ValueError):
        return {}
    return {name: param.default for name, param in signature.parameters.items()
            if param.default is not inspect.Parameter.empty}


def _same(value: Any, default: Any) -> bool:
    """Whether a parameter's value is its default, an Enum member as its value: of one type
    and equal (`k1: 1` is not the default 1.0, which a component might tell apart)."""
    default = default.value if isinstance(default, Enum) else default
    return type(value) is type(default) and value == default


def _fixed_length(expected: Any) -> bool:
    """Whether `expected` is a tuple of so many values, each of its own type (`tuple[str, int]`),
    not `tuple[int, ...]`."""
    args = typing.get_args(expected)
    return typing.get_origin(expected) is tuple and bool(args) and args[-1] is not Ellipsis


@dataclass(frozen=True)
class AtLeast(ParamType):
    """The type of an integer of `low` or more (a count, a depth), at most INT_LIMIT; with
    `or_none`, null too (for `int | None`: null means the component's default)."""

    low: int
    or_none: bool = False

    def check(self, key: str, value: Any) -> None:
        if value is None and self.or_none:
            return
        if not _fits(value, int) or not self.low <= value <= INT_LIMIT:
            beyond = f" (at most {INT_LIMIT})" if _fits(value, int) and value > INT_LIMIT else ""
            raise ParamError(key, f"expected {self.describe()}, got {value!r}{beyond}")

    def describe(self) -> str:
        return f"an integer of {self.low} or more{' or null' if self.or_none else ''}"


@dataclass(frozen=True)
class Between(ParamType):
    """The type of a finite number from `low` to `high` (an int is accepted): a setting that the
    component would refuse out of its range (bm25's b), in a config's check rather than when the
    component is built, after the runs before it. Unbounded, any finite number: a weight."""

    low: float = -math.inf
    high: float = math.inf

    def check(self, key: str, value: Any) -> None:
        if number_problem(value, self.low, self.high) is not None:
            raise ParamError(key, f"expected {self.describe()}, got {_quoted(value)}")

    def describe(self) -> str:
        if self.low == -math.inf and self.high == math.inf:
            return "a number"  # (nan and inf are not numbers to a config's author)
        return number_problem(None, self.low, self.high).removeprefix("must be ")


@dataclass(frozen=True)
class OnePer(ParamType):
    """The type of a list of values of type `each`, one per entry of the list parameter `other`
    (linear's weights, one per retriever), or null: a list of another length is an error at
    its key when a config is read, not when the component is built."""

    other: str
    each: Any

    def check(self, key: str, value: Any) -> None:
        check_value(key, value, list[self.each] | None)

    def check_beside(self, key: str, value: Any, params: Mapping[str, Any]) -> None:
        others = params.get(self.other)
        if value is not None and isinstance(others, (list, tuple)) and len(value) != len(others):
            raise ParamError(key, f"expected one value per entry of {self.other} ({len(others)}), got {value!r}")

    def describe(self) -> str:
        return f"{describe_type(list[self.each] | None)}, one per entry of {self.other}"


@dataclass(frozen=True)
class Named(ParamType):
    """The type of a name one of a registry's entries goes by (dense's `backend`, `approx`),
    or null with `or_none`: a misspelt one, or one whose declared `needs` are not installed
    (`approx: hnsw` without faiss), is an error at its key when a config is read, not when the
    component is built, after the runs before it. `registry` is called on first use, so that
    declaring the parameter imports nothing."""

    registry: Callable[[], Registry[Any]]
    or_none: bool = True

    def check(self, key: str, value: Any) -> None:
        if value is None and self.or_none:
            return
        if not isinstance(value, str) or value not in self.registry().names():
            raise ParamError(key, f"expected {self.describe()}, got {value!r}")
        from harness.extras import first_missing, needs_extra

        if missing := first_missing(self.registry().declaration(value).needs):
            raise ParamError(key, needs_extra(missing))

    def describe(self) -> str:
        return f"one of {', '.join(map(repr, self.registry().names()))}{' or null' if self.or_none else ''}"


@dataclass(frozen=True)
class LocalPath(ParamType):
    """The type of a parameter naming a file or folder on this machine (a folder, with
    `folder`), which a config check looks for before anything runs, so that a missing one is
    an error at its key, not a failure minutes into a batch. A plug-in says so with a
    `pathlib.Path` annotation (`local_path`). With `or_name`, a value not written as a path
    (`msmarco-v1-passage`, a prebuilt index) is a name the component resolves: not looked for."""

    folder: bool = False
    or_name: bool = False
    or_none: bool = False

    def check(self, key: str, value: Any) -> None:
        if value is None and self.or_none:
            return
        if not isinstance(value, (str, PurePath)) or not str(value).strip():
            raise ParamError(key, f"expected {self.describe()}, got {value!r}")

    def describe(self) -> str:
        return (("a folder" if self.folder else "a path") + (" or a name" if self.or_name else "")
                + (" or null" if self.or_none else ""))

    def problem(self, value: Any) -> str | None:
        """What is wrong with what `value` names here (`no such folder './x'`); None when it is
        there, or when `value` names no path (null, a name)."""
        if not isinstance(value, (str, PurePath)):
            return None
        if self.or_name and isinstance(value, str) and not looks_like_path(value):
            return None
        path = Path(value).expanduser()
        try:
            there = path.exists()
        except OSError as error:  # a name too long for the file system
            return f"cannot look for {str(value)[:80]!r}: {error.strerror}"
        if not there:
            return f"no such {'folder' if self.folder else 'file or folder'} {str(value)!r}"
        if self.folder and not path.is_dir():
            return f"a file, expected a folder {str(value)!r}"
        return None


def local_path(expected: Any) -> LocalPath | None:
    """The LocalPath a declared type says, if it says one: a LocalPath, or a `pathlib.Path`
    annotation alone or in a union (`Path | str`: a path or a name)."""
    if isinstance(expected, LocalPath):
        return expected
    args = typing.get_args(expected) if typing.get_origin(expected) in (Union, types.UnionType) else (expected,)
    if any(isinstance(arg, type) and issubclass(arg, PurePath) for arg in args):
        return LocalPath(or_name=str in args)
    return None


def looks_like_path(value: str) -> bool:
    """A value written as a path (`indexes/foo`, `./m`, `~/m`, `/abs`), not a bare name."""
    return value.startswith((".", "~")) or os.sep in value or "/" in value


def from_text(text: str, expected: Any) -> Any:
    """`text` (a command-line or `NAME:ARG` argument) as a value of type `expected` where it
    reads as one ("2" as 2 for an int), else the text itself, for `check_value` to judge."""
    origin = typing.get_origin(expected)
    for candidate in typing.get_args(expected) if origin in (Union, types.UnionType) else (expected,):
        if candidate in (int, float) or isinstance(candidate, AtLeast):
            try:
                return float(text) if candidate is float else int(text)
            except ValueError:
                continue
        if candidate is bool and text in ("true", "false"):
            return text == "true"
    return text


def usage(declaration: Declaration) -> str:
    """`NAME[:K[:METHOD]]`: how a component is named with its arguments after ':'."""
    text = ""
    for param in reversed(declaration.params):
        text = f":{param.name}{text}" if param.required else f"[:{param.name}{text}]"
    return declaration.name + text


def arguments(declaration: Declaration, arg: str | None) -> dict[str, Any]:
    """The text after `NAME:` (a strategy's `with_responses:2`, a judge's `python:m:f:0.7`)
    read into the declared parameters, one per ':'-separated part in order (the last takes
    the rest), defaults for those not given, as the component takes them (`as_declared`: an
    Enum's member); a one-line HarnessError when it does not fit."""
    params, name = declaration.params, declaration.name
    texts = [] if arg is None else arg.split(":", max(len(params) - 1, 0))
    if len(texts) > len(params):
        raise HarnessError(f"{name} takes no argument, not {arg!r}")
    values = {}
    for position, param in enumerate(params):
        if position >= len(texts):
            if param.required:
                raise HarnessError(f"{name} needs {param.desc or param.name} ({usage(declaration)})")
            values[param.name] = param.default
            continue
        value = values[param.name] = from_text(texts[position], param.type)
        try:
            check_value(param.name, value, param.type)
        except ParamError:
            least = max(1, sum(p.required for p in params))
            forms = " or ".join(repr(":".join(p.name for p in params[:end])) for end in range(least, len(params) + 1))
            raise HarnessError(f"{name} takes {forms} ({usage(declaration)}), not {arg!r}: {param.name} must be "
                               f"{describe_type(param.type)}") from None
        kind = local_path(param.type)  # a `pathlib.Path` argument is looked for, as a retriever's parameter is
        if kind is not None and (problem := kind.problem(value)) is not None:
            raise HarnessError(f"{name}'s {param.name}: {problem} ({usage(declaration)})")
    return as_declared(declaration, values)


def describe_type(expected: Any) -> str:
    """How an error or a listing says a type: `a number`, `true or false`, `one of 'a', 'b'`."""
    if isinstance(expected, ParamType):
        return expected.describe()
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(describe_type(arg) for arg in args))
    if origin is Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if isinstance(expected, type) and issubclass(expected, Enum):
        return "one of " + ", ".join(repr(member.value) for member in expected) + " (or a member's name)"
    if _fixed_length(expected):
        return f"a list of {len(args)} ({', '.join(describe_type(arg) for arg in args)})"
    if origin in (list, tuple, Sequence):
        return f"a list of {_plural(describe_type(args[0]))}" if args else "a list"
    if origin in (dict, Mapping) and len(args) == 2:
        return f"a mapping of {_plural(describe_type(args[0]))} to {_plural(describe_type(args[1]))}"
    if origin in (dict, Mapping) or expected is dict:
        return "a mapping"
    return _WORDS.get(expected, getattr(expected, "__name__", str(expected)))


_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", None: "null",
          type(None): "null", list: "a list", tuple: "a list", Any: "any value", Path: "a path"}


def _plural(text: str) -> str:
    """`a list of integers` -> `lists of integers`: the first noun, not the last word, made plural
    (a class's name, `Intent`, too)."""
    if not text.startswith(("a ", "an ")):
        return f"{text}s" if text.isidentifier() and text[0].isupper() else text
    noun, _, rest = text.partition(" ")[2].partition(" ")
    return f"{noun}s {rest}" if rest else f"{noun}s"


def declare(summary: str, params: Sequence[Param] = (), **more: Any) -> Callable[[T], T]:
    """Decorator for a plug-in that declares itself (its name comes from the registry):
    `@harness.declare("my BM25 variant", [Param("alpha", float, 0.5, "interpolation weight")])`."""
    def decorator(obj: T) -> T:
        obj.declaration = Declaration("", summary, tuple(params), **more)  # type: ignore[attr-defined]
        return obj

    return decorator


def instances_of(kind: str, cls: type) -> Callable[[str, Any], Any]:
    """An adapter (`Registry.adapter`) for a kind whose items are `cls`'s instances (a preset, a
    scale): a plug-in's object is one, else a one-line error naming the class it should be."""
    def adapt(name: str, obj: Any) -> Any:
        if not isinstance(obj, cls):
            raise HarnessError(f"{kind} {name!r}: got {type(obj).__name__}; expected a "
                               f"{cls.__module__}.{cls.__qualname__}")
        return obj

    return adapt


def answering(kind: str, call: str, answer: str, right: Callable[[Any], bool]) -> Callable[[str, Any], Callable]:
    """An adapter (`Registry.adapter`) for a kind whose items are functions the harness calls
    with the positional arguments `call` shows (`f(path)`): a plug-in's object that cannot be
    called so is a one-line error when it is looked up, and its answer, where not `right`, one
    naming it and the `answer` expected, not a traceback from the harness's code that reads it."""
    arguments = call.count(",") + 1

    def adapt(name: str, obj: Any) -> Callable:
        try:
            inspect.signature(obj).bind(*[None] * arguments)
        except (TypeError, ValueError):
            raise HarnessError(f"{kind} {name!r}: {getattr(obj, '__qualname__', type(obj).__name__)} cannot be "
                               f"called as {call}; expected a function {call} -> {answer}") from None

        @functools.wraps(obj)
        def checked(*args: Any) -> Any:
            found = obj(*args)
            if not right(found):
                raise HarnessError(f"{kind} {name!r} answered {type(found).__name__}; expected {answer}")
            return found

        return checked

    return adapt


def declared(name: str, obj: Any, skip: Sequence[str] = ()) -> Declaration:
    """A plug-in's declaration: its own (`declaration` attribute), else read from its
    signature (keyword parameters less `skip`; `**kwargs` makes it open) and docstring."""
    own = getattr(obj, "declaration", None)
    if isinstance(own, Declaration):
        return replace(own, name=name)
    target = obj if _names_itself(obj) else getattr(type(obj), "__call__", obj)
    params: list[Param] = []
    open_ = False
    # an object's parameters are described in its type's docstring or its __call__'s
    described = param_descriptions(obj if target is obj else type(obj), target)
    try:
        signature = inspect.signature(target, eval_str=True)
    except (TypeError, ValueError, NameError):
        return Declaration(name, summary_of(obj), (), open=True)
    for param in signature.parameters.values():
        if param.name in skip or param.name == "self" or param.kind is param.VAR_POSITIONAL:
            continue
        if param.kind is param.VAR_KEYWORD:
            open_ = True
            continue
        default = REQUIRED if param.default is param.empty else param.default
        annotation = param.annotation
        if annotation is param.empty:
            annotation = Any if default is REQUIRED or default is None else type(default)
        params.append(Param(param.name, annotation, default, described.get(param.name, "")))
    return Declaration(name, summary_of(obj), tuple(params), open=open_)


_DESCRIBED = re.compile(r"(?P<indent> *)(?P<name>\w+)(?: *\([^)]*\))?: +(?P<desc>\S.*)")


def param_descriptions(*objects: Any) -> dict[str, str]:
    """Parameter descriptions in the objects' docstrings as Google style writes them, a line
    `name: what it is` or `name (type): what it is` (under `Args:` or not), a line indented
    deeper continuing it; the first object describing a name wins. `declared` takes those of
    the signature's parameters alone, so that no other `word: text` line is read as one."""
    found: dict[str, str] = {}
    for obj in objects:
        doc = getattr(obj, "__doc__", None)
        if not isinstance(doc, str):
            continue
        name, indent = None, 0
        for line in inspect.cleandoc(doc).splitlines()[1:]:
            if name is not None and line.strip() and len(line) - len(line.lstrip(" ")) > indent:
                found[name] += " " + line.strip()
                continue
            match = _DESCRIBED.fullmatch(line.rstrip())
            name, indent = (match["name"], len(match["indent"])) if match and match["name"] not in found else (None, 0)
            if name is not None:
                found[name] = match["desc"]
    return found


def _check_takes(what: str, declaration: Declaration, takes: Declaration) -> None:
    """A plug-in's own declaration names only parameters that what the harness calls takes
    (`takes`, read from its signature): otherwise a config would pass the check when it is
    read and fail when the item is built."""
    extra = [p.name for p in declaration.params if not takes.open and takes.param(p.name) is None]
    if extra:
        raise HarnessError(f"{what} declares {', '.join(map(repr, extra))} but takes no such parameter "
                           f"(it takes: {', '.join(p.name for p in takes.params) or 'none'})")


def summary_of(obj: Any) -> str:
    """The first sentence of an object's own docstring (a function's or class's, else its
    type's), on one line; none from the docstring a dataclass is given when it has none
    (`Name(field: type, ...)`), which says nothing of what it is."""
    documented = obj if _names_itself(obj) else type(obj)
    doc = documented.__doc__
    if not doc or not doc.strip() or doc.startswith(f"{getattr(documented, '__name__', '')}("):
        return ""
    return first_sentence(inspect.cleandoc(doc))


# a full stop that ends a sentence: followed by a space or the end, not that of `e.g.`, `i.e.`, `et al.` or `etc.`
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bal)(?<!\betc)[.!?](?=\s|$)")


def first_sentence(text: str) -> str:
    """The first sentence of `text`'s first paragraph, its lines joined: a summary of one line
    (a docstring's first line may stop halfway through its sentence)."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[:end.end()] if end else paragraph


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
    def __init__(self, kind: str, package: str | None = None, group: str | None = None,
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
        self._package = package  # imported (all its modules) on the first look-up
        self._extended = False  # whether the modules `extend` names for it were imported
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
        self._using: ContextVar[Mapping[str, tuple[T, Origin, Declaration]]] = ContextVar(f"using {kind}", default={})

    def _load(self) -> None:
        if self._package is not None or not self._extended:
            self._load_modules()
        if self._group is not None:  # after the built-ins, so that a clash names the plug-in
            self._list_entry_points()

    def _load_modules(self) -> None:
        import pkgutil

        if self._package is not None:
            package, self._package = importlib.import_module(self._package), None
            for module in pkgutil.iter_modules(package.__path__):
                if module.name != "cli" and not module.name.startswith(("cli_", "_")):
                    importlib.import_module(f"{package.__name__}.{module.name}")
        if not self._extended:
            self._extended = True
            for module in self._extensions():
                importlib.import_module(module)

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
        each adapted and checked as a plug-in; nothing outside the block sees them. Each call of
        the Python API enters one (a new `_call`, see `origin`)."""
        self._load()
        self._call += 1
        adopted = {}
        for name, obj in objects.items():
            item = self._adopt(name, obj)
            adopted[name] = (item, object_origin(obj), self._declared(name, obj, item))
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
        here = os.getcwd()
        added = here not in sys.path and "" not in sys.path
        if added:  # the current folder, as `python -m` has it; not left on the path
            sys.path.insert(0, here)
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            message = f"{self.kind} {name!r}: cannot import {module_name} ({_failure(error)})"
            top = module_name.partition(".")[0]
            if isinstance(error, ModuleNotFoundError) and error.name == top:
                raise PluginNotFound(message, top) from None
            raise HarnessError(message) from None
        finally:
            if added:
                sys.path.remove(here)
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


def _failure(error: BaseException) -> str:
    """A plug-in's own import error in one line, with where in its code it was raised (the
    innermost frame outside Python's import machinery), so that the user can find it."""
    import traceback

    machinery = os.path.dirname(importlib.__file__)  # importlib and importlib.metadata (an entry point's load)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not frame.filename.startswith(("<frozen ", machinery)) and frame.filename != __file__]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}{where}: {error}"


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


def _note_plugin_package(obj: Any, what: str) -> None:
    """Remember where the top-level package of a loaded plug-in's code lies (a function's or
    class's, an object's class's, a `functools.partial`'s function's): the objects it builds
    may live in its other modules. Python's own modules are never a plug-in's (an
    lru_cache'd function's class is functools')."""
    name = (getattr(_code(obj), "__module__", None) or "").split(".")[0]
    top = sys.modules.get(name)
    file = getattr(top, "__file__", None)
    # a package's folders (a namespace package has several, and no __file__), a module's file
    places = list(getattr(top, "__path__", None) or ([file] if file else []))
    if not places and name and name not in sys.stdlib_module_names:  # a notebook's; Python's are built in
        _FILELESS_PLUGINS[name] = what
    for place in map(os.path.abspath, places):
        if not (_inside(place, _HARNESS) or _pythons_own(place)):
            _PLUGIN_PACKAGES[place] = what


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
        plugin = next((what for place, what in _PLUGIN_PACKAGES.items() if _inside(file, place)),
                      _FILELESS_PLUGINS.get(str(frame.f_globals.get("__name__", "")).split(".")[0]))
        if plugin is not None:
            first = number if owner is None else first
            owner = plugin
    return owner, first


def _names_itself(obj: Any) -> bool:
    """A function, class or method: its name, docstring and module are its own (an instance's
    are its type's, which say what kind of thing it is, not which)."""
    return inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)


def _defined_at(obj: Any) -> str:
    """`module.qualname` of a function or class, which names where a name was registered first
    (a notebook cell run again registers it again: `__main__.search`); '' for an instance."""
    return f"{obj.__module__}.{obj.__qualname__}" if _names_itself(obj) else ""


def _distribution(point: Any) -> str:
    dist = getattr(point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else f"the entry point {point.value}"


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
