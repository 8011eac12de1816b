"""The judges `harness responses` names: `minilm[:SUPPORT,PARTIAL]` (the offline baseline),
`assignments:PATH` (recorded nuggetizer assignments; `file:PATH`, its alias), `llm` (an
OpenAI-compatible endpoint with the shipped support prompts, or your own) and plug-ins
(`python:module:attr[:ARG]`, entry points): each made by the judge layer's one factory
(harness.judge.make), this command's syntax for them read into their declared parameters."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from harness.errors import HarnessError
from harness.judge.base import Judge
from harness.judge.llm import default_prompt
from harness.judge import make
from harness.judge.make import LlmOptions, Syntax, llm_params, no_llm_argument
from harness.registry import split_spec

TEMPLATES = {"nuggets": default_prompt("nugget_support"), "citations": default_prompt("citation_support")}
JUDGE_NAMES = ("minilm[:SUPPORT,PARTIAL]", "assignments:PATH (or file:PATH)", "llm", "python:MODULE:ATTR[:ARG]")
# the recorded assignments' judge, and its alias: `harness responses` named it `file:PATH` before it was registered
# (`file` itself is `harness judge`'s judge of recorded qrels labels)
ALIASES = {"file": "assignments"}
RECORDED = ("assignments", *ALIASES)


def make_judge(spec: str, *, task: str = "nuggets", **settings: Any) -> Judge:
    """A judge from its name on the command line (JUDGE_NAMES), or a plug-in's: an entry point
    of `harness.judges` or `python:module:attr`, made with the arguments after its name
    (`python:mine:Strict:0.9`), read into its declared parameters. `settings`: the llm judge's
    options (LlmOptions': model, base_url, prompt, concurrency, retries, cache_dir, ...; the model
    and base URL from HARNESS_LLM_MODEL and HARNESS_LLM_BASE_URL where not given), another
    judge's declared parameters by name (minilm's model, cache_dir, ...); one None is not given."""
    typed = split_spec(spec)[0]
    syntaxes: dict[str, Syntax] = {
        "minilm": lambda argument, given: {**given, **_thresholds(spec, argument)},
        "assignments": lambda argument, given: {**given, "path": _recorded(typed, argument, task)},
        "llm": lambda argument, given: _llm(argument, given, task),
    }
    return make.make_judge(spec, syntaxes, aliases=ALIASES, names=JUDGE_NAMES,
                           settings={key: value for key, value in settings.items() if value is not None})


def _thresholds(spec: str, argument: str | None) -> dict[str, float]:
    """`minilm:SUPPORT,PARTIAL`'s thresholds, as minilm's `support` and `partial`."""
    if not argument:
        return {}
    try:
        support, partial = (float(x) for x in argument.split(","))
    except ValueError:
        raise HarnessError(f"--judge {spec}: expected minilm:SUPPORT,PARTIAL thresholds, e.g. minilm:0.7,0.5") from None
    return {"support": support, "partial": partial}


def _recorded(name: str, argument: str | None, task: str) -> str:
    """`assignments:PATH`'s (or `file:PATH`'s) path, `~` the home folder (the shell leaves it in
    `file:~/x`: it expands `~` only at a word's start)."""
    if not argument:
        raise HarnessError(f"--judge {name}:PATH names the recorded assignments (nuggetizer's assignment output)")
    if task != "nuggets":
        raise HarnessError(f"recorded assignments ({name}:PATH) judge nuggets, not citations")
    return os.path.expanduser(argument)


def _llm(argument: str | None, settings: Mapping[str, Any], task: str) -> dict[str, Any]:
    """The llm judge's parameters from its options, with the task's shipped prompt and the support scale."""
    from harness.judge.scales import SUPPORT_0_2
    from harness.responses.assign import sample_item

    no_llm_argument(argument)
    options = {option.name for option in fields(LlmOptions)}
    unknown = sorted(set(settings) - options)
    if unknown:
        raise HarnessError(f"{unknown[0]}= is not an option of the llm judge; its options: "
                           f"{', '.join(sorted(options))}")
    model = settings.get("model") or os.environ.get("HARNESS_LLM_MODEL")
    base_url = settings.get("base_url") or os.environ.get("HARNESS_LLM_BASE_URL")
    if not model or not base_url:
        raise HarnessError("the llm judge needs a model and a base URL (or HARNESS_LLM_MODEL and "
                           "HARNESS_LLM_BASE_URL)")
    return llm_params(LlmOptions(**{**settings, "model": model, "base_url": base_url}), TEMPLATES[task],
                      SUPPORT_0_2, sample_item(task))
