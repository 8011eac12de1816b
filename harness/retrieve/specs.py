"""Retriever specs, `{name, params, label}`, checked before anything is built.

One shape everywhere: a config's `retrievers:` entries, fusion's `retrievers:` and rerank's
`first_stage:`. The flat shape fusion used to take (`{name: bm25, k1: 0.9}`) is read as an
alias of `{name: bm25, params: {k1: 0.9}}`.

`check_spec` checks a name and its parameters against the retriever's signature: an unknown
parameter, or a value of the wrong kind for the parameter's default or annotation, is a
`SpecError` carrying the key path below the spec (`params.k1`), so that a config can say
`experiments[0].retrievers[1].params.k1: expected a number, got 'fast'` when it is read,
not half-way through a run. A factory taking `**params` names the callable whose signature
it passes them to in its `accepts` attribute (bm25: the BM25 class).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from harness.errors import HarnessError
from harness.retrieve import RETRIEVERS

SPEC_KEYS = ("name", "params", "label")
# parameters whose values are themselves retriever specs: a list of them, or one
NESTED = {"retrievers": "list", "first_stage": "one"}
_NOT_FROM_CONFIG = {"self", "corpus"}


class SpecError(HarnessError):
    """A problem at `key` (a path below the spec, e.g. `params.k1`)."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}" if key else problem)


def parts(spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, params) of a nested spec in either shape; the label is not a parameter."""
    if "params" in spec:
        return spec["name"], dict(spec["params"] or {})
    return spec["name"], {key: value for key, value in spec.items() if key not in ("name", "label")}


def check_spec(name: str, params: Mapping[str, Any], key: str = "params") -> None:
    """Raise SpecError at the first unknown parameter or value of the wrong kind of the
    registered retriever `name`; `key` is where `params` sits."""
    accepted = parameters(RETRIEVERS.get(name))
    for param, value in params.items():
        where = f"{key}.{param}"
        if accepted is not None and param not in accepted:
            known = ", ".join(sorted(accepted)) or "none"
            raise SpecError(where, f"unknown parameter of retriever {name!r}; known: {known}")
        if param in NESTED:
            _check_nested(where, value, many=NESTED[param] == "list")
        elif accepted is not None:
            _check_kind(where, value, accepted[param])


def _check_nested(key: str, value: Any, many: bool) -> None:
    specs = value if many else [value]
    if many and not isinstance(value, list):
        return  # the retriever's own check says what it needs
    for position, spec in enumerate(specs):
        where = f"{key}[{position}]" if many else key
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            continue  # as above
        try:
            RETRIEVERS.get(spec["name"])
        except HarnessError as error:  # unknown, or a plug-in that is no retriever
            raise SpecError(f"{where}.name", str(error)) from None
        if "params" in spec:
            unknown = sorted(set(spec) - set(SPEC_KEYS))
            if unknown:
                raise SpecError(f"{where}.{unknown[0]}", f"unknown key; known: {', '.join(SPEC_KEYS)}")
            if not isinstance(spec["params"], Mapping):
                raise SpecError(f"{where}.params", f"expected a mapping, got {spec['params']!r}")
            check_spec(spec["name"], spec["params"], f"{where}.params")
        else:
            check_spec(spec["name"], parts(spec)[1], where)


def retriever_names(name: str, params: Mapping[str, Any]) -> list[str]:
    """The retriever and every one nested in its parameters (fusion's, rerank's first stage)."""
    names = [name]
    for param in NESTED:
        value = params.get(param)
        for spec in (value if isinstance(value, list) else [value]) if value is not None else []:
            if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
                names += retriever_names(*parts(spec))
    return names


def parameters(factory: Callable) -> dict[str, inspect.Parameter] | None:
    """The keyword parameters a config may give, or None when they cannot be told."""
    target = getattr(factory, "accepts", factory)
    found: dict[str, inspect.Parameter] = {}
    for candidate in dict.fromkeys([factory, target]):
        for param in inspect.signature(candidate).parameters.values():
            if param.kind is param.VAR_POSITIONAL or param.name in _NOT_FROM_CONFIG:
                continue
            if param.kind is param.VAR_KEYWORD:
                if candidate is target:
                    return None
                continue
            found[param.name] = param
    return found


# annotation word -> (accepted types, how the error says it)
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "bool": ((bool,), "true or false"),
    "int": ((int,), "an integer"),
    "float": ((int, float), "a number"),
    "str": ((str,), "a string"),
    "None": ((type(None),), "null"),
}


def _check_kind(key: str, value: Any, param: inspect.Parameter) -> None:
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        if param.default is inspect.Parameter.empty or param.default is None:
            return
        annotation = type(param.default).__name__
    if isinstance(annotation, type):  # a plug-in's annotations are types unless postponed
        annotation = annotation.__name__
    words = [word.strip() for word in str(annotation).split("|")]
    if not all(word in _KINDS for word in words):
        return  # a structured value (a list, a mapping): the retriever checks it
    if "float" in words and "int" not in words:
        words.append("int")
    types = tuple(t for word in words for t in _KINDS[word][0])
    if isinstance(value, bool) and "bool" not in words:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        expected = " or ".join(dict.fromkeys(_KINDS[word][1] for word in words if word != "int" or "float" not in words))
        raise SpecError(key, f"expected {expected}, got {value!r}")
