"""One factory for the judges a command or the API names: each is made through the registry,
`JUDGES.get(name)` called with its declared parameters, checked. A command's own syntax for a
judge (`harness responses`' `minilm:SUPPORT,PARTIAL`, `harness judge --judge file --labels X`,
the llm options) is a thin translation into those parameters, so a judge is built one way
whatever door names it, and `harness components judge` lists what it takes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, nearest
from harness.judge.base import JUDGES, Judge, check_judge, made_of
from harness.judge.llm import CONCURRENCY, RETRIES, check_prompt
from harness.judge.model import Item
from harness.judge.scales import Scale
from harness.queries.llm import Endpoint
from harness.registry import UnknownName, arguments, check_params, split_spec

# a command's syntax for one judge: (the text after `NAME:`, the settings given beside it) -> its declared params
Syntax = Callable[[str | None, Mapping[str, Any]], dict[str, Any]]


def declared_syntax(name: str) -> Syntax:
    """The registry's own syntax: the text after `NAME:` read into the declared parameters in
    order (`python:mine:Strict:0.9`), the settings given by name (the API's `cache_dir=`) beside them."""
    return lambda argument, settings: {**arguments(JUDGES.declaration(name), argument), **settings}


def make_judge(spec: str, syntaxes: Mapping[str, Syntax], *, aliases: Mapping[str, str] | None = None,
               names: Sequence[str] = (), settings: Mapping[str, Any] | None = None) -> Judge:
    """The judge `spec` names: `JUDGES.get(name)` called with the parameters the command's syntax
    for it reads (`syntaxes`; else `declared_syntax`), checked against its declaration first.
    `aliases`: other names the command takes for a registered judge; `names`: how the command
    lists the judges it takes, for an unknown name (the installed plug-ins' listed after them)."""
    typed, argument = split_spec(spec)
    aliases = aliases or {}
    name = aliases.get(typed, typed)
    try:
        declaration = JUDGES.declaration(name)
    except UnknownName:
        if not names:
            raise
        plugins = [plugin for plugin in JUDGES.names() if plugin not in JUDGES.built_ins()]
        raise UnknownName(f"unknown judge {spec!r}{nearest(typed, [*aliases, *JUDGES.names()])}; known: "
                          f"{', '.join([*names, *plugins])}", typed) from None
    params = syntaxes.get(name, declared_syntax(name))(argument, settings or {})
    check_params(declaration, params, key=f"judge {typed}", kind="judge")
    judge = JUDGES.get(name)(**params)
    check_judge(judge, spec)
    origin = JUDGES.origin(name)
    if origin is not None:  # a plug-in: what it is goes with it, into each provenance of it (provenance_of),
        # as a run's JSON records a plug-in retriever: the spec as given, and the registry's origin of it (entry
        # point or `python:` spec, distribution, version, module, code sha256), so that two configurations of one
        # plug-in, or two versions of its code, are told apart where its own provenance() may say neither
        made_of(judge, {"spec": spec, **origin})
    return judge


@dataclass(frozen=True)
class LlmOptions:
    """The llm judge's options as a command line (add_llm_arguments) or the API gives them,
    before they become its declared parameters (llm_params)."""

    model: str
    base_url: str
    prompt: str | Path | None = None  # the template file; None: the task's shipped prompt
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    concurrency: int = CONCURRENCY
    retries: int = RETRIES
    cache_dir: Path | None = None


def no_llm_argument(argument: str | None) -> None:
    """The llm judge's options are given beside its name: a text after it (`llm:ARG`) is an error, not ignored."""
    if argument is not None:
        raise HarnessError(f"llm takes no argument, not {argument!r}: its model, base URL, prompt, ... are options")


def llm_params(options: LlmOptions, shipped: Path, scale: Scale, sample: Item) -> dict[str, Any]:
    """The llm judge's declared parameters for a task: its prompt (`shipped` without one of the
    options') filled with `sample`, an item of the kind it is to judge, now, not once other
    requests are paid for (check_prompt), and taken as so checked (not read again)."""
    prompt = Path(options.prompt) if options.prompt else shipped
    endpoint = Endpoint(options.model, options.base_url, prompt, api_key_env=options.api_key_env,
                        timeout_s=options.timeout)
    return {"endpoint": endpoint, "template": check_prompt(prompt, sample, scale), "scale": scale,
            "concurrency": options.concurrency, "retries": options.retries,
            "cache_dir": Path(options.cache_dir) if options.cache_dir else None}
