"""The judges `harness responses` names: `minilm[:SUPPORT,PARTIAL]` (the offline baseline),
`assignments:PATH` (recorded nuggetizer assignments; `file:PATH`, its alias), `llm` (an
OpenAI-compatible endpoint with the shipped support prompts, or your own) and plug-ins
(`python:module:attr[:ARG]`, entry points)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import HarnessError
from harness.judge.base import JUDGES, Judge, plugin
from harness.judge.llm import CONCURRENCY, RETRIES, default_prompt
from harness.registry import PYTHON, split_spec

TEMPLATES = {"nuggets": default_prompt("nugget_support"), "citations": default_prompt("citation_support")}
JUDGE_NAMES = ("minilm[:SUPPORT,PARTIAL]", "assignments:PATH (or file:PATH)", "llm", "python:MODULE:ATTR[:ARG]")
# the recorded assignments' judge, and its alias: `harness responses` named it `file:PATH` before it was registered
# (`file` itself is `harness judge`'s judge of recorded qrels labels)
RECORDED = ("assignments", "file")


def make_judge(spec: str, *, task: str = "nuggets", model: str | None = None, base_url: str | None = None,
               prompt: str | Path | None = None, concurrency: int = CONCURRENCY, retries: int = RETRIES,
               cache_dir: Path | None = None) -> Judge:
    """A judge from its name on the command line (JUDGE_NAMES), or a plug-in's: an entry point
    of `harness.judges` or `python:module:attr`, made with the arguments after its name
    (`python:mine:Strict:0.9`), read into its declared parameters."""
    name, argument = split_spec(spec)
    if name == "minilm":
        from harness.responses.baseline import MiniLMJudge

        if not argument:
            return MiniLMJudge(cache_dir=cache_dir)
        try:
            support, partial = (float(x) for x in argument.split(","))
        except ValueError:
            raise HarnessError(f"--judge {spec}: expected minilm:SUPPORT,PARTIAL thresholds, e.g. minilm:0.7,0.5") from None
        return MiniLMJudge(support, partial, cache_dir=cache_dir)
    if name in RECORDED:
        if not argument:
            raise HarnessError(f"--judge {name}:PATH names the recorded assignments (nuggetizer's assignment "
                               "output)")
        if task != "nuggets":
            raise HarnessError(f"recorded assignments ({name}:PATH) judge nuggets, not citations")
        from harness.responses.assign import RecordedAssignments

        return RecordedAssignments(argument)
    if name == "llm":
        from harness.judge.llm import LLMJudge, check_prompt
        from harness.judge.scales import SUPPORT_0_2
        from harness.queries.llm import Endpoint
        from harness.responses.assign import sample_item

        model = model or os.environ.get("HARNESS_LLM_MODEL")
        base_url = base_url or os.environ.get("HARNESS_LLM_BASE_URL")
        if not model or not base_url:
            raise HarnessError("the llm judge needs a model and a base URL (or HARNESS_LLM_MODEL and "
                               "HARNESS_LLM_BASE_URL)")
        path = Path(prompt) if prompt else TEMPLATES[task]
        template = check_prompt(path, sample_item(task), SUPPORT_0_2)
        return LLMJudge(Endpoint(model, base_url, path), template, SUPPORT_0_2, concurrency=concurrency,
                        retries=retries, cache_dir=cache_dir)
    if name in JUDGES.names() or name.startswith(PYTHON):
        return plugin(spec)
    raise HarnessError(f"unknown judge {spec!r}; known: {', '.join(JUDGE_NAMES)}")

