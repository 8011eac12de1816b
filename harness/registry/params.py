"""What a component declares, and the checks and help that read it.

Every component declares itself when it registers (`Registry.register(name, summary=...,
params=...)`): a `Declaration` with a one-line summary, its `Param`s (type, default,
description, as ir-measures' `ParamInfo`) and, for benchmarks, its splits and typed turn
fields. A parameter's type is a Python type, or one of the `ParamType`s here for what a
Python type cannot say (`AtLeast`, `Between`, `OnePer`, `Named`, `LocalPath`). Config checks
(`check_params`), `--help` (`usage`, `describe_type`), `harness components` and the README's
tables all read declarations. A plug-in may carry one (`declaration` attribute, e.g. from
`harness.declare`); otherwise it is read from the plug-in's signature (real annotations, as a
researcher writes them) and docstring (`declared`).

A module of its own because it is what a component's author reads: the types and checks, apart
from how names are looked up (table.py) and plug-ins loaded and keyed (plugins.py,
identity.py). It imports nothing else of harness.registry.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from numbers import Integral, Real
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, Union

from harness.errors import HarnessError
from harness.paths import home_expanded

T = TypeVar("T")


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
        """The modules a component with these params, searching documents counted by `count`, imports when
        built: its own, those its params' values name (`ParamType.needs`: `approx: hnsw`'s faiss), and
        `needs_with`'s."""
        named = tuple(module for param in self.params if isinstance(param.type, ParamType)
                      and params.get(param.name) is not None for module in param.type.needs(params[param.name]))
        return self.needs + named + (self.needs_with(params, count) if self.needs_with is not None else ())


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
    given = tuple(param for param in params if param.name in values)
    check_params(Declaration(what, "", given), values, what)
    from harness.extras import first_missing, needs_extra

    for param in given:  # (a config's runs are checked for these where they will be made: Declaration.needs_for)
        if isinstance(param.type, ParamType) and values[param.name] is not None and (
                missing := first_missing(param.type.needs(values[param.name]))):
            raise ParamError(f"{what}.{param.name}", needs_extra(missing))


class ParamType:
    """A parameter type with its own check, for values the plain types cannot say (a nested
    retriever spec, an integer with a lower bound)."""

    def check(self, key: str, value: Any) -> None:
        """Raise ParamError at `key` unless `value` is of this type."""
        raise NotImplementedError

    def describe(self) -> str:
        """How an error or a listing says the type: `an integer of 1 or more`."""
        raise NotImplementedError

    def needs(self, value: Any) -> tuple[str, ...]:
        """The modules `value` (checked) makes its component import when built: said for the runs a
        config will make (Declaration.needs_for), not wherever the value is read."""
        return ()

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
    or null with `or_none`: a misspelt one is an error at its key when a config is read, and one
    whose declared `needs` are not installed (`approx: hnsw` without faiss) for the runs that
    will be made (`needs`), not when the component is built, after the runs before it. `registry`
    is called on first use, so that declaring the parameter imports nothing."""

    registry: Callable[[], Any]  # gives the Registry (table.py, which imports this module)
    or_none: bool = True

    def check(self, key: str, value: Any) -> None:
        if value is None and self.or_none:
            return
        if not isinstance(value, str) or value not in self.registry().names():
            raise ParamError(key, f"expected {self.describe()}, got {value!r}")

    def needs(self, value: Any) -> tuple[str, ...]:
        return self.registry().declaration(value).needs if isinstance(value, str) else ()

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
        path = home_expanded(value)
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
        if kind is not None and isinstance(value, str):  # `~`: the home folder, left by the shell in `NAME:~/x`
            value = values[param.name] = os.path.expanduser(value)
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


def answering(kind: str, call: str, answer: str, right: Callable[[Any], bool],
              problem: Callable[[Any], str | None] = lambda found: None,
              named: Callable[[str], str] | None = None) -> Callable[[str, Any], Callable]:
    """An adapter (`Registry.adapter`) for a kind whose items are functions the harness calls
    with the positional arguments `call` shows (`f(path)`): a plug-in's object that cannot be
    called so is a one-line error when it is looked up, and its answer, where not `right` or
    where `problem` finds a part of it off what the harness reads (a reader's record: a grade
    "3"), one naming the plug-in (`named(name)`; its kind and name by default) and the `answer`
    expected or that part, not a traceback from the harness's code that reads it."""
    arguments = call.count(",") + 1
    naming = named or (lambda name: f"{kind} {name!r}")

    def adapt(name: str, obj: Any) -> Callable:
        try:
            inspect.signature(obj).bind(*[None] * arguments)
        except (TypeError, ValueError):
            raise HarnessError(f"{kind} {name!r}: {getattr(obj, '__qualname__', type(obj).__name__)} cannot be "
                               f"called as {call}; expected a function {call} -> {answer}") from None

        @functools.wraps(obj)
        def checked(*args: Any) -> Any:
            found = obj(*args)
            wrong = problem(found) if right(found) else f"{type(found).__name__}; expected {answer}"
            if wrong is not None:
                raise HarnessError(f"{naming(name)} answered {wrong}")
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


def _names_itself(obj: Any) -> bool:
    """A function, class or method: its name, docstring and module are its own (an instance's
    are its type's, which say what kind of thing it is, not which)."""
    return inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)
