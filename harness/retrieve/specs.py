"""Retriever specs, `{name, params, label}`, checked against the retrievers' declarations
before anything is built.

One shape everywhere: a config's `retrievers:` entries, fusion's `retrievers:` and rerank's
`first_stage:`, where a plain name (`bm25`) stands for `{name: bm25}`. The flat shape fusion
used to take (`{name: bm25, k1: 0.9}`) is read as an alias of `{name: bm25, params: {k1: 0.9}}`.

`check_spec` checks a name and its parameters against the retriever's declaration (its
`Param`s, harness.registry): an unknown parameter, or a value of the wrong type, is a
`ParamError` carrying the key path below the spec (`params.k1`), so that a config can say
`experiments[0].retrievers[1].params.b: expected a number from 0 to 1, got 2` when it is read,
not half-way through a run. A parameter whose value is itself retriever specs is declared
with the type `RetrieverSpecs`, which checks them the same way, one level down.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError, nearest
from harness.registry import Declaration, LocalPath, Param, ParamError, ParamType, check_params, local_path
from harness.retrieve import RETRIEVERS

SPEC_KEYS = ("name", "params", "label")


def as_mapping(spec: Any) -> Any:
    """A nested spec given as a plain name (`retrievers: [bm25, dense]`, as a config's own
    `retrievers:` take it) read as `{name: NAME}`; anything else as it is."""
    return {"name": spec} if isinstance(spec, str) else spec


def parts(spec: Mapping[str, Any] | str) -> tuple[str, dict[str, Any]]:
    """(name, params) of a nested spec in any shape; the label is not a parameter."""
    spec = as_mapping(spec)
    if "params" in spec:
        return spec["name"], dict(spec["params"] or {})
    return spec["name"], {key: value for key, value in spec.items() if key not in ("name", "label")}


def check_spec(name: str, params: Mapping[str, Any], key: str = "params") -> None:
    """Raise ParamError at the first unknown parameter or value of the wrong type of the
    retriever `name` (built in or a plug-in); `key` is where `params` sits."""
    check_params(RETRIEVERS.declaration(name), params, key, "retriever")


@dataclass(frozen=True)
class RetrieverSpecs(ParamType):
    """The type of a parameter whose value is retriever specs: a list of `least` or more
    (fusion's `retrievers`), or with `least=0` one spec (rerank's `first_stage`). Each is
    checked as a config's own `retrievers:` entries are, an error naming its key path."""

    least: int = 0

    def describe(self) -> str:
        return f"a list of {self.least} or more retriever names or specs {{name, params}}" if self.least \
            else "a retriever name or spec {name, params}"

    def check(self, key: str, value: Any) -> None:
        if self.least and (not isinstance(value, (list, tuple)) or len(value) < self.least):
            raise ParamError(key, f"expected {self.describe()}, got {value!r}")
        entries = [(f"{key}[{i}]", spec) for i, spec in enumerate(value)] if self.least else [(key, value)]
        for where, given in entries:
            spec = as_mapping(given)
            if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
                raise ParamError(where, f"expected a retriever name or spec {{name, params}}, got {given!r}")
            try:
                RETRIEVERS.get(spec["name"])
            except HarnessError as error:  # unknown, or a plug-in that is no retriever
                raise ParamError(f"{where}.name", str(error)) from None
            if "params" not in spec:
                check_spec(spec["name"], parts(spec)[1], where)
                continue
            unknown = sorted(set(spec) - set(SPEC_KEYS))
            if unknown:
                raise ParamError(f"{where}.{unknown[0]}",
                                 f"unknown key{nearest(unknown[0], SPEC_KEYS)}; known: {', '.join(SPEC_KEYS)}")
            if not isinstance(spec["params"], Mapping):
                raise ParamError(f"{where}.params", f"expected a mapping, got {spec['params']!r}")
            check_spec(spec["name"], spec["params"], f"{where}.params")
        if self.least:
            self._once_each(key, value)

    @staticmethod
    def _once_each(key: str, value: Any) -> None:
        """One retriever listed twice (its name, params and label alike; `bm25` is `{name: bm25}`)
        would be fused twice and count twice, without a word; other params or a label make two."""
        seen: list[tuple] = []
        for i, given in enumerate(value):
            spec = as_mapping(given)
            same = (*parts(spec), spec.get("label", spec["name"]))
            if same in seen:
                raise ParamError(f"{key}[{i}]", f"retriever {spec['name']!r} is listed twice, as [{seen.index(same)}] "
                                 f"and [{i}], with the same params and label: fused twice, it would count twice; list "
                                 "it once, or tell the two apart by params or label")
            seen.append(same)

    def specs(self, value: Any) -> list[Mapping[str, Any]]:
        """The well-formed specs in a value of this type."""
        found = value if self.least and isinstance(value, (list, tuple)) else [value]
        return [spec for spec in map(as_mapping, found) if isinstance(spec, Mapping) and isinstance(spec.get("name"), str)]


def retriever_specs(name: str, params: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, params) of the retriever and of every one nested in its parameters (fusion's,
    rerank's first stage)."""
    found = [(name, params)]
    for param in RETRIEVERS.declaration(name).params:
        if isinstance(param.type, RetrieverSpecs) and params.get(param.name) is not None:
            for spec in param.type.specs(params[param.name]):
                found += retriever_specs(*parts(spec))
    return found


def retriever_names(name: str, params: Mapping[str, Any]) -> list[str]:
    """The retriever and every one nested in its parameters."""
    return [named for named, _ in retriever_specs(name, params)]


def named_paths(declaration: Declaration, params: Mapping[str, Any],
                key: str = "params") -> Iterator[tuple[str, Any, LocalPath]]:
    """(key path, value, its declared LocalPath) of every parameter a spec gives whose type
    names a local file or folder (a built-in's model or index, a plug-in's `pathlib.Path`
    parameter under any name), nested retriever specs included, so that a config check can
    look for them all before anything is built."""
    for param in declaration.params:
        value = params.get(param.name)
        if (kind := local_path(param.type)) is not None and value is not None:
            yield f"{key}.{param.name}", value, kind
        for _, name, own, inner in nested_in(param, value, key):
            yield from named_paths(RETRIEVERS.declaration(name), own, inner)


def nested_in(param: Param, value: Any, key: str = "params") -> Iterator[tuple[str, str, dict[str, Any], str]]:
    """(key path, name, params, key path of those params) of each well-formed retriever spec
    that `value`, given to `param` at `key`, holds: none unless its type is RetrieverSpecs."""
    if not isinstance(param.type, RetrieverSpecs) or value is None:
        return
    for i, spec in enumerate(map(as_mapping, value if param.type.least else [value])):
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            where = f"{key}.{param.name}[{i}]" if param.type.least else f"{key}.{param.name}"
            yield where, spec["name"], parts(spec)[1], f"{where}.params" if "params" in spec else where
