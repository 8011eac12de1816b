"""Benchmark configs: one YAML file names topics, query strategies, retrievers, corpus, qrels
and measures; parsing turns it into dataclasses and refuses anything it cannot run.

    output: runs                      # where <tag>.run, <tag>.json, leaderboard.md go
    llm: {default: {model: M, base_url: URL, prompt: FILE}}   # endpoints of the llm[:NAME] strategy
    tag: "{benchmark}.{strategy}.{retriever}"   # fields: name benchmark task strategy retriever
    k: 1000                           # run depth, per experiment overridable
    experiments:
      - name: pragmaticqa             # for --only; default: the topics (+ task)
        task: retrieval               # or ptkb (iKAT PTKB statement ranking)
        topics: pragmaticqa:val       # adapter[:split]
        strategies: [raw, hqe]        # query strategies (retrieval only)
        retrievers: [bm25, {name: dense, label: minilm, params: {max_length: 128}}]
        corpus: FILE or FORMAT:SPEC, a list of them, or {index: NAME}   # default: the topics' own
        qrels: FILE or irds:ID        # or benchmark:NAME[:SPLIT], a benchmark's own; default: the topics'
                                      # own qrels (without any: measures: [] or none, and the runs
                                      # are written, not scored)
        qrels_restrict_to_corpus: false   # judge only documents of the corpus (small pools)
        measures: [nDCG@3, R@100]     # ir-measures names, or `preset: NAME`
        passage_separator: "-"        # judge passage runs <docid>-<n> by document (MaxP); default: the preset's
        k: 100
        tag: "{name}.{strategy}.{retriever}"
        note: "shown in the leaderboard"

The runs of an experiment are its retrievers x strategies. Every error names the file and
the key path (`configs/x.yaml: experiments[2].retrievers[0]: unknown retriever 'bm26';
known: bm25, dense`), and an unknown key is an error, so a typo never silently falls back to
a default. Names (adapters and splits, strategies, retrievers, measures, presets, tasks) are
checked here, before anything slow runs; topic files are small and are loaded to do so.
Retriever parameters are checked here too, against each retriever's declaration, nested fusion
and rerank specs included (`experiments[0].retrievers[1].params.b: expected a number from 0
to 1, got 2`; see harness.retrieve.specs); a retriever spec is `{name, params, label}` at every
level. Strategy arguments (`with_responses:2`) are checked against the strategy's declaration.
The files and folders a config names are checked here as well: corpus files opened (their first
record read), qrels files read (and refused when they judge none of the topics' turns), and every
file or folder a retriever parameter names by its declared type (LocalPath, harness.registry)
looked for; their errors are all reported at once (`Problems`).

Relative paths are relative to the folder `harness run` is started from, as on the command
line; `{data}`, `{qrels}` and `{cache}` expand to the shipped data, qrels and cache folders.
"""

from __future__ import annotations

import functools
import os
import re
import string
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness.atomic import in_the_way
from harness.errors import CONFIG, HarnessError, InputError, command, nearest, other_form, read_input, shown
from harness.paths import cache_root, data_root, file_sha256, home_expanded, name_problem, qrels_root, shipped_configs
from harness.registry import (INT_LIMIT, PYTHON, Declaration, LocalPath, ParamError, PluginNotFound, Registry,
                              check_params, split_spec)
from harness.runner.tasks import TASKS
from harness.trec import Qrels

DEFAULT_OUTPUT = "runs"
DEFAULT_TAG = "{benchmark}.{strategy}.{retriever}"
DEFAULT_K = 1000
TAG_FIELDS = ("name", "benchmark", "task", "strategy", "retriever")
_UNSAFE_IN_TAG = re.compile(r"[^A-Za-z0-9_.+=-]")
T = TypeVar("T")


class ConfigError(InputError):
    """A config problem at one key path of one file."""

    def __init__(self, path: str | Path, key: str, problem: str) -> None:
        self.key = key
        super().__init__(path, f"{key}: {problem}" if key else problem)


# each optional extra a strategy or retriever needs that is not installed: the error naming it at
# the strategy's or retriever's key, and the missing module
Missing = tuple[tuple[ConfigError, str], ...]


@dataclass(frozen=True)
class RetrieverSpec:
    name: str  # registered retriever (task `retrieval`) or method (task `ptkb`)
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""  # how runs and tags call it; defaults to the name

    def acting(self, registry: Registry) -> dict[str, Any]:
        """Its name and params as they act (`Registry.acting`: a default written out, or an
        Enum member by name, keys as leaving it out or writing its value): the resume key's."""
        return {"name": self.name, "params": registry.acting(self.name, self.params)}


@dataclass(frozen=True)
class CorpusSpec:
    """Where documents come from: the benchmark's own corpus, a corpus spec, or an index name."""

    # for harness.corpus.readers.open_corpus (a file, `irds:ID`, `benchmark:NAME`...); several
    # are searched as one corpus, in order
    specs: tuple[str, ...] = ()
    index: str | None = None  # a prebuilt or local index, handed to the retriever as `index=`

    @property
    def own(self) -> bool:
        """The benchmark's own corpus (`Benchmark.corpus`)."""
        return not self.specs and self.index is None

    def as_dict(self) -> dict[str, Any]:
        if self.index is not None:
            return {"index": self.index}
        if self.specs:
            return {"specs": list(self.specs)}
        return {"benchmark": True}


@dataclass(frozen=True)
class Experiment:
    """One block of `experiments:`: a task on one topic set, over strategies x retrievers."""

    name: str
    key: str  # "experiments[2]": where it sits in the file, for later errors
    file: Path  # the config file it sits in, for the same
    task: str
    topics: str
    strategies: tuple[str, ...]
    retrievers: tuple[RetrieverSpec, ...]
    corpus: CorpusSpec
    qrels: Path | str | None  # a file or irds:ID; None: the task's qrels for the topics (the adapter's own)
    qrels_restrict_to_corpus: bool
    measures: tuple[str, ...]
    depth: int | None  # evaluation depth (trec_eval -M): the preset's, else none (the run's k)
    passage_separator: str | None  # judge passage runs at document level (MaxP): the key's, else the preset's
    k: int
    tag: str
    note: str | None
    # the `qrels:` file as read when the config was checked (None: no such key), so that a
    # malformed line is a config error and the run does not read it again
    given_qrels: Qrels | None = field(default=None, compare=False, repr=False)
    # why its runs are written and not scored (topics without qrels, and no measures named);
    # None: they are scored
    unscored: str | None = None
    # per strategy and per retriever (in their orders), each optional extra it needs that is not
    # installed: (the error at its key, the missing module), said for the runs selected
    # (`Config.selected`), not for a run --only leaves out
    strategies_missing: tuple[Missing, ...] = field(default=(), compare=False, repr=False)
    retrievers_missing: tuple[Missing, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class RunSpec:
    """One run file to produce: an experiment with one strategy and one retriever."""

    experiment: Experiment
    strategy: str | None  # None for tasks without query strategies
    retriever: RetrieverSpec
    tag: str

    def identity(self) -> dict[str, Any]:
        """What determines the run file's content (hashed, and recorded next to it)."""
        e = self.experiment
        return {
            "task": e.task,
            "topics": e.topics,
            "strategy": self.strategy,
            "retriever": self.retriever.acting(TASKS.get(e.task).retrievers()),
            "corpus": e.corpus.as_dict(),
            "k": e.k,
            "tag": self.tag,
        }

    def description(self) -> dict[str, Any]:
        """The experiment's config as recorded in the run's JSON."""
        e = self.experiment
        return {
            **self.identity(),
            "experiment": e.name,
            "qrels": str(e.qrels) if e.qrels else "benchmark",
            "qrels_restrict_to_corpus": e.qrels_restrict_to_corpus,
            "measures": list(e.measures),
            "note": e.note,
        }


@dataclass(frozen=True)
class Config:
    path: Path
    output: Path
    experiments: tuple[Experiment, ...]
    llm: Mapping[str, Any] = field(default_factory=dict)  # `llm:` endpoints (harness.queries.llm.Endpoint)
    # a dict's (the Python API's config), whose path, <config>, tells it from no other dict
    content_sha256: str | None = None

    def runs(self, only: Iterable[str] = ()) -> list[RunSpec]:
        """Every run of the config in file order, or those whose experiment name or tag is in `only`."""
        runs = [run for experiment in self.experiments for run in expand(experiment)]
        wanted = set(only)
        if not wanted:
            return runs
        known = {run.experiment.name for run in runs} | {run.tag for run in runs}
        unknown = sorted(wanted - known)
        if unknown:
            raise HarnessError(self._unknown_only(unknown[0], runs, known))
        return [run for run in runs if run.experiment.name in wanted or run.tag in wanted]

    def selected(self, only: Iterable[str] = ()) -> list[RunSpec]:
        """`runs(only)`, refused where one needs an optional extra that is not installed: every
        missing one said at once, a line each (at the first key needing it), with the one pip
        command installing them all, where the first alone was said, one per try, for runs
        --only left out too (dense's [dense] refusing a [lucene]-only `--only ...bm25`)."""
        from harness.extras import EXTRA_OF, install

        runs = self.runs(only)
        found: dict[str, tuple[ConfigError, str]] = {}  # by what is said, at the first key saying it
        for run in runs:
            experiment = run.experiment
            strategy = (experiment.strategies_missing[experiment.strategies.index(run.strategy)]
                        if run.strategy is not None and experiment.strategies_missing else ())
            retriever = (experiment.retrievers_missing[experiment.retrievers.index(run.retriever)]
                         if experiment.retrievers_missing else ())
            for error, module in (*strategy, *retriever):
                found.setdefault(error.problem.removeprefix(f"{error.key}: "), (error, module))
        if not found:
            return runs
        problems = Problems(self.path)
        problems.found = [error for error, _ in found.values()]
        if len(extras := sorted({EXTRA_OF[module] for _, module in found.values()})) > 1:
            problems.found.append(ConfigError(self.path, "", f"to install them all: {install(extras)}"))
        raise problems.error()

    def _unknown_only(self, name: str, runs: list[RunSpec], known: set[str]) -> str:
        """What --only NAME missed: the nearest tag or experiment, and where the tags are listed."""
        names = ", ".join(dict.fromkeys(run.experiment.name for run in runs))
        if "," in name and set(name.split(",")) <= known:
            hint = "; --only takes one name: repeat it (--only A --only B)"
        else:
            hint = nearest(name, sorted(known))
        return (f"{self.path}: --only {name!r} is neither an experiment nor a run tag{hint} (experiments: {names}; "
                f"`{command('harness', 'run', self.path, '--dry-run')}` lists the run tags)")


def expand(experiment: Experiment) -> list[RunSpec]:
    """The cartesian product retrievers x strategies, retriever-major (one index build each)."""
    strategies: tuple[str | None, ...] = experiment.strategies or (None,)
    runs = []
    for retriever in experiment.retrievers:
        for strategy in strategies:
            fields = _tag_fields(experiment, strategy, retriever)
            safe = {key: _UNSAFE_IN_TAG.sub("-", value) for key, value in fields.items()}
            runs.append(RunSpec(experiment, strategy, retriever, experiment.tag.format(**safe)))
    return runs


def _tag_fields(experiment: Experiment, strategy: str | None, retriever: RetrieverSpec) -> dict[str, str]:
    """The values of a run's tag fields (TAG_FIELDS), as written in the config."""
    return {"name": experiment.name, "benchmark": experiment.topics, "task": experiment.task,
            "strategy": strategy or experiment.task, "retriever": retriever.label}


# --- parsing -----------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (YAML keeps the last silently)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value YAML reads but Python cannot hold (an integer of more digits than Python
        converts, a 13th month) is an error at its line, as bad YAML is, not a ValueError. A hex,
        octal or binary one converts at any length but does not print: a ValueError later, in
        the message that shows it."""
        try:
            value = super().construct_object(node, deep)
            if isinstance(value, int):
                str(value)  # the ValueError it would raise in a message
            return value
        except ValueError as error:  # without Python's advice to call sys.set_int_max_str_digits()
            problem = str(error).partition("; use sys.set_int_max_str_digits")[0]
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    """The mapping, each of its own keys given once and a plain value. A merge key (`<<: *base`) is
    left to SafeLoader, which merges it: the keys it brings may be given again here, which is what it is for."""
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            again = key in seen
        except TypeError:  # a `? [a, b]` or `{[a]: 1}` key: a list or mapping
            kind = "mapping" if isinstance(key, dict) else type(key).__name__
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a plain value, found a {kind}", key_node.start_mark) from None
        if again:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {shown(key)} is given twice", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# YAML 1.1 (PyYAML) reads 1e-3 and 2E5 as text (its floats need a dot and a signed exponent): a
# config's `lr: 1e-3` means the number, as YAML 1.2 and Python read it, not the string '1e-3'
# (refused as "expected a number", or handed as a string to a plug-in that takes any value)
_UniqueKeyLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                       re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
                                       list("-+0123456789."))


class Node:
    """A value of the YAML document with its key path, so that every error can say where
    (public: harness.serve reads its own config file with it)."""

    def __init__(self, file: Path, key: str, value: Any) -> None:
        self.file, self.key, self.value = file, key, value

    def error(self, problem: str) -> ConfigError:
        return ConfigError(self.file, self.key, problem)

    def child(self, key: str | int, value: Any) -> "Node":
        if isinstance(key, int):
            return Node(self.file, f"{self.key}[{key}]", value)
        return Node(self.file, f"{self.key}.{key}" if self.key else key, value)

    def mapping(self, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, "Node"]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected a mapping, found {_kind(self.value)}")
        allowed = tuple(allowed)
        for key in self.value:
            if key not in allowed:
                raise self.child(str(key), None).error(
                    f"unknown key{nearest(str(key), allowed)}; known: {', '.join(allowed)}")
        for key in required:
            if key not in self.value:
                raise self.error(f"missing required key {key!r}")
        return {key: self.child(key, value) for key, value in self.value.items()}

    def free_mapping(self) -> dict[str, Any]:
        """A mapping whose keys the callee checks (retriever parameters)."""
        if not isinstance(self.value, dict) or not all(isinstance(key, str) for key in self.value):
            raise self.error(f"expected a mapping of names to values, found {_kind(self.value)}")
        return dict(self.value)

    def items(self) -> list["Node"]:
        values = self.value if isinstance(self.value, list) else [self.value]
        if not values:
            raise self.error("expected at least one entry, found an empty list")
        return [self.child(i, v) for i, v in enumerate(values)] if isinstance(self.value, list) else [self]

    def text(self) -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.error(f"expected a non-empty string, found {_kind(self.value)}")
        return self.value

    def positive_int(self) -> int:
        """A count or depth: 1 to INT_LIMIT (a 32-bit int, as Java and trec_eval's C take
        them; a depth beyond a corpus's size is harmless, one beyond that failed mid-run)."""
        if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 1:
            raise self.error(f"expected a positive integer, found {shown(self.value)}")
        if self.value > INT_LIMIT:
            raise self.error(f"expected a positive integer of at most {INT_LIMIT}, found {shown(self.value)}")
        return self.value

    def flag(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.error(f"expected true or false, found {shown(self.value)}")
        return self.value

    def path(self) -> Path:
        roots = {"data": data_root(), "qrels": qrels_root(), "cache": cache_root()}
        try:
            text = self.text().format(**roots)
        except (KeyError, ValueError, IndexError) as error:
            raise self.error(f"bad placeholder in path ({error}); known: {{data}}, {{qrels}}, {{cache}}") from None
        path = home_expanded(text)  # `~/x`: in the home folder, as a shell reads it
        if text.startswith("~") and path == Path(text):  # `~nouser/x`: a folder of that name made would hide the typo
            raise self.error(f"{text.split('/')[0]} names no home folder known here (no such user, or HOME unset): "
                             "give the path in full")
        return path

    def existing_path(self, hint: str = "") -> Path:
        """A file that exists: a folder, or a path found only beside the config, is an error here
        (`hint`: what else the value may have meant, said after 'no such file')."""
        path = self.path()
        try:
            folder = path.is_dir()
        except OSError as error:  # a name too long for the file system
            raise self.error(f"cannot look for {str(path)[:80]!r}: {error.strerror}") from None
        if folder:
            raise self.error(f"{path} is a folder, expected a file")
        if not path.exists():
            raise self.error(f"no such file: {path}{hint or other_form(path) or self.beside_config(path)}")
        return path

    def beside_config(self, path: Path) -> str:
        """Where a relative path missing from the current folder is found beside the config, or
        else in a folder above it, nearest first (the project root that a config in `configs/`
        names `data/...` from): a hint that paths are read from the folder harness runs in (as
        `output:` is written there), not from the config's; '' otherwise. A few stats, on an error."""
        if path.is_absolute():
            return ""
        beside = self.file.parent
        above = Path(os.path.abspath(beside)).parents[:-1]  # (not the file system's root)
        try:
            found = next((folder for folder in (beside, *above) if (folder / path).exists()), None)
        except OSError:  # a name too long for the file system: said by the error this hint follows
            return ""
        if found is None:
            return ""
        where = "the config's folder" if found == beside else "the config's folder or one above it"
        return (f" (relative paths are read from the folder harness runs in, {Path.cwd()}, not from {where}: "
                f"did you mean {found / path}?)")


class Problems:
    """Errors in the files and folders a config names (its topics, corpus and qrels files, its
    strategies and what they read, the folders its retrievers name), collected so that one check
    reports them all, each at its key (`x.yaml: experiments[0].qrels: q.txt:12: ...`), for the
    user to fix in one go. A check that needs what failed is skipped, not reported as well; any
    other error ends the check, reported with them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: list[ConfigError] = []

    def keep(self, check: Callable[..., T], *args: Any) -> T | None:
        """What `check(*args)` returns, or None with its error kept."""
        try:
            return check(*args)
        except ConfigError as error:
            self.found.append(error)
            return None

    def error(self, last: ConfigError | None = None) -> InputError | None:
        """The errors kept, and `last` (the one that ended the check), as one error to raise:
        one as it is, several a line each; None when there is none."""
        found = self.found + ([last] if last is not None else [])
        if len(found) > 1:
            return InputError(self.path, f"\n{self.path}: ".join(error.problem for error in found))
        return found[0] if found else None


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {shown(value)}"


def lookup(node: Node, check: Callable[[], Any]) -> Any:
    """Run a registry lookup; its 'unknown X; known: ...' becomes an error at this key."""
    try:
        return check()
    except HarnessError as error:
        raise node.error(str(error) + _beside_config(node, error)) from None


def _beside_config(node: Node, error: HarnessError) -> str:
    """Where a file a strategy reads (`rewrites:my/rw.tsv`) is missing but sits beside the config,
    the hint a missing corpus or qrels file gets (Node.beside_config); where a `python:` plug-in's
    module is not found but sits there, that it is imported from the folder harness runs in and
    PYTHONPATH, not the config's, and where it is not there either, that its file is missing and
    where it was looked for (a config handed in without its module); '' otherwise."""
    if isinstance(error, InputError) and error.problem.startswith("no such"):
        return node.beside_config(Path(error.path))
    if not isinstance(error, PluginNotFound):
        return ""
    folder = node.file.resolve().parent
    for entry in (f"{error.module}.py", error.module):
        if (folder / entry).exists():
            return f"; {entry} is beside the config ({folder}): run harness from there or add it to PYTHONPATH"
    here = Path.cwd()
    where = (f"in the config's folder, where harness runs ({folder})" if here == folder
             else f"beside the config ({folder}) or in the folder harness runs in ({here})")
    return (f"; the module's file is missing: no {error.module}.py or {error.module}/ {where}, and no module "
            f"{error.module} importable from the environment (PYTHONPATH, installed packages)")


def _python_beside_config(node: Node, spec: str) -> None:
    """A `python:` plug-in's module is imported from the folder harness runs in and PYTHONPATH: where
    the config's folder, another, holds a module of that name with other bytes (a student's config run
    from the TA's folder, which has a module of its own of that name), which one was meant is not known,
    so it is an error naming both."""
    if not spec.startswith(PYTHON):
        return
    top = spec[len(PYTHON):].partition(":")[0].partition(".")[0]
    imported = getattr(sys.modules.get(top), "__file__", None)
    folder = node.file.resolve().parent
    beside = next((path for path in (folder / f"{top}.py", folder / top / "__init__.py") if path.is_file()), None)
    if not imported or beside is None or not os.path.isfile(imported) or os.path.samefile(imported, beside) \
            or file_sha256(imported) == file_sha256(beside):
        return
    raise node.error(f"{split_spec(spec)[0]}: module {top} is {os.path.abspath(imported)} (found from the folder "
                     f"harness runs in, {Path.cwd()}, or PYTHONPATH), and another {top} is beside the config, "
                     f"{beside}: run harness in the config's folder to use that one, or rename one of them")


def load_config(path: str | Path) -> Config:
    path = config_file(path)
    return parse_config(path, read_yaml(path))


def config_file(spec: str | Path) -> Path:
    """The config file `spec` names: a file as given where it exists or names a folder; else a
    bare name (`default`, `quick.yaml`) names a shipped config, which an installed harness has
    no clone's configs/ to name by path."""
    path = Path(spec)
    if path.is_file() or path.parent != Path("."):
        return path
    name = path.stem if path.suffix in (".yaml", ".yml") else path.name
    shipped = shipped_configs().get(name)
    if shipped is None:
        return path
    if path.exists():  # a folder (`harness serve leaderboard` makes ./leaderboard/ for its database) is no config
        return shipped
    here = [f"{name}{suffix}" for suffix in (".yaml", ".yml") if Path(f"{name}{suffix}").is_file()]
    if here:  # the user's own file, named without its suffix, is not silently passed over for a shipped one
        raise InputError(path, f"no such config file; {here[0]} is here: give {here[0]} for it (a bare name "
                               f"gives the config harness ships as {name} where no {name}.yaml is beside it)")
    return shipped


def _shipped_hint(path: Path) -> str:
    """For a missing config: the shipped configs' names where a bare name was given, or the name
    of the shipped config a missing path's file name is (configs/default.yaml outside a clone)."""
    shipped = shipped_configs()
    if path.parent == Path("."):
        return f"; shipped configs: {', '.join(shipped)}" if shipped else ""
    name = path.stem if path.suffix in (".yaml", ".yml") else path.name
    return f"; harness ships a config named {name}: give that name alone" if name in shipped else ""


def read_yaml(path: Path) -> Any:
    """A config file's YAML document; a missing file (with the nearest config beside it), bad
    YAML or a repeated key is an InputError."""
    if not path.exists():
        try:
            beside = [entry.name for entry in path.parent.iterdir() if entry.suffix in (".yaml", ".yml")]
        except OSError:  # no such folder either
            beside = []
        if close := other_form(path):  # not 'nearest: café.yaml', which reads as the name given
            raise InputError(path, f"no such config file{close}")
        raise InputError(path, f"no such config file{nearest(path.name, beside)}{_shipped_hint(path)}")
    text = read_input(path)
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        raise InputError(path, f"not valid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise InputError(path, f"not valid YAML: nested deeper than Python's recursion limit "
                               f"({sys.getrecursionlimit()}) allows") from None
    return document


# The top-level keys of a `harness serve` config, here where both read them: serve.config its
# own with them, and `harness run` a file of them without experiments: as one for `harness serve`,
# naming the first it has (the required ones first: 'it has tasks:').
SERVE_KEYS = ("tasks", "teams", "database", "storage", "quota", "max_upload_mb", "rejects_per_hour", "client_timeout_s")


def refuse_other_kind(root: Node, own: str, others: Iterable[str], command: str) -> None:
    """A config for another command (a run config given to `harness serve`), one without the
    key `own` but with one of `others`, is said to be one, with the command to give it to:
    its keys would otherwise read as unknown ones."""
    if isinstance(root.value, dict) and own not in root.value:
        if key := next((key for key in others if key in root.value), None):
            raise root.error(f"this is a harness {command} config (it has {key}:): give it to `harness {command}`")


def parse_config(path: Path, document: Any) -> Config:
    root = Node(path, "", document)
    from harness.evaluate.names import said_once
    from harness.queries.llm import endpoints

    refuse_other_kind(root, "experiments", SERVE_KEYS, "serve")
    top = root.mapping(("output", "tag", "k", "llm", "experiments"), required=("experiments",))
    llm = _llm_endpoints(top.get("llm"))
    output = top["output"].path() if "output" in top else Path(DEFAULT_OUTPUT)
    # a file in the way, seen without writing (reading a config writes nothing; `harness run`
    # tries the folder it will write, --output's if given, before --dry-run says all is well)
    if problem := in_the_way(output, folder=True):
        raise (top["output"] if "output" in top else root).error(f"cannot write {output}: {problem}")
    defaults = {
        "tag": _tag_pattern(top["tag"]) if "tag" in top else DEFAULT_TAG,
        "k": top["k"].positive_int() if "k" in top else DEFAULT_K,
    }
    problems = Problems(path)
    qrels_read: dict[Path | str, Qrels | None] = {}  # a qrels file several experiments name is read once
    # the `llm` strategy's check sees this config's endpoints, and only here; a measure the
    # experiments translate is said once
    with endpoints(llm), said_once():
        try:
            experiments = tuple(_experiment(node, defaults, problems, qrels_read)
                                for node in top["experiments"].items())
        except ConfigError as error:
            raise problems.error(error) from None
    if (error := problems.error()) is not None:
        raise error
    _check_unique(path, experiments)
    return Config(path, output, experiments, llm)


def _llm_endpoints(node: Node | None) -> dict[str, Any]:
    """`llm: {NAME: {model, base_url, prompt[, api_key_env]}}`: the endpoints of `llm:NAME`."""
    from harness.queries.llm import Endpoint

    endpoints = {}
    if node is not None:
        if not isinstance(node.value, dict) or not node.value:
            raise node.error("expected a mapping of endpoint names to {model, base_url, prompt}, "
                             f"found {_kind(node.value)}")
        for name, value in node.value.items():
            keys = node.child(str(name), value).mapping(("model", "base_url", "prompt", "api_key_env"),
                                                        required=("model", "base_url", "prompt"))
            extra = {"api_key_env": keys["api_key_env"].text()} if "api_key_env" in keys else {}
            try:
                endpoints[str(name)] = Endpoint(keys["model"].text(), keys["base_url"].text(),
                                                keys["prompt"].existing_path(), **extra)
            except HarnessError as error:  # a base URL that is no http(s) URL, said at its key
                raise keys["base_url"].error(str(error)) from None
    return endpoints


_EXPERIMENT_KEYS = (
    "name", "task", "topics", "strategies", "retrievers", "corpus", "qrels",
    "qrels_restrict_to_corpus", "measures", "preset", "passage_separator", "k", "tag", "note",
)


def _experiment(node: Node, defaults: dict[str, Any], problems: Problems,
                qrels_read: dict[Path | str, Qrels | None]) -> Experiment | None:
    """The experiment, or None when a file or folder it names is missing or malformed (the
    errors kept in `problems`, the checks that need those files skipped)."""
    kept = len(problems.found)
    keys = node.mapping(_EXPERIMENT_KEYS, required=("topics", "retrievers"))
    task_name = keys["task"].text() if "task" in keys else "retrieval"
    task = lookup(keys.get("task", node), lambda: TASKS.get(task_name))
    benchmark = problems.keep(_topics, keys["topics"])
    topics = keys["topics"].value
    if benchmark is not None:
        lookup(keys.get("task", node), lambda: task.check_benchmark(benchmark))
    strategies = _strategies(keys.get("strategies"), task, node, benchmark, problems)
    items = keys["retrievers"].items()
    retrievers = tuple(_retriever(item, task, problems) for item in items)
    for key in ("corpus", "qrels_restrict_to_corpus"):
        if key in keys and not task.searches_corpus:  # (it would be opened, hashed, and ignored)
            raise keys[key].error(f"task {task_name} searches no corpus ({TASKS.declaration(task_name).summary})")
    corpus = _corpus(keys["corpus"], problems) if "corpus" in keys else CorpusSpec()
    if benchmark is not None and corpus is not None and task.searches_corpus and corpus.own \
            and benchmark.corpus is None and not all("index" in retriever.params for retriever in retrievers):
        raise keys["topics"].error(f"{benchmark.name} brings no corpus; give 'corpus:' (a file or spec, "
                                   "or {index: NAME})")
    count = _counting(corpus, benchmark)  # one count for every retriever of the experiment
    retrievers_missing = tuple(_missing(item, retriever, task.retrievers(), count)
                               for item, retriever in zip(items, retrievers))
    for item, retriever in zip(items, retrievers):
        if corpus is not None and corpus.index is not None:
            _takes_index(item, retriever, task.retrievers(), corpus.index)
        else:  # (corpus: {index} replaces the retriever's own)
            problems.keep(_own_index_taken, item, retriever, task.retrievers())
    unscored, scoring = None, "give 'qrels: FILE'"  # (why the runs are not scored, and what would score them)
    if benchmark is not None and "qrels" not in keys and not task.has_default_qrels(benchmark):
        unscored = f"{benchmark.name} ships no qrels"
        _measures_or_preset(keys)  # (that mistake first: the advice below would name what is given)
        if "measures" in keys and keys["measures"].value is None:
            raise keys["measures"].error(f"found nothing (null), which is not a list of measures; {unscored}: "
                                         "write 'measures: []' to write the runs unscored, or give 'qrels: FILE'")
        if "preset" in keys or ("measures" in keys and keys["measures"].value != []):
            raise keys["topics"].error(f"{unscored}; give 'qrels: FILE' (or 'measures: []' to write the runs unscored)")
    elif "measures" in keys and keys["measures"].value == []:  # runs for a submission: qrels or not
        unscored, scoring = "'measures: []' names none", "name measures"
        _measures_or_preset(keys)
    # a key read by no scoring, refused before its qrels is opened (an irds: one fetched); an
    # experiment inherits none of these (the top level has no such keys), so each is written in it
    for key, what in (("qrels", "the qrels"), ("qrels_restrict_to_corpus", "qrels_restrict_to_corpus"),
                      ("passage_separator", "the passage separator")):
        if unscored is not None and key in keys:
            raise keys[key].error(f"{unscored}, so its runs are not scored; {scoring}, or leave {what} out")
    qrels = problems.keep(_qrels, keys["qrels"], qrels_read) if "qrels" in keys else None
    if qrels is not None and benchmark is not None:
        problems.keep(_judging, keys["qrels"], qrels, benchmark)
    measures, depth, separator = ((), None, None) if unscored else measures_of(keys, node, task, as_given=True)
    restrict = keys["qrels_restrict_to_corpus"].flag() if "qrels_restrict_to_corpus" in keys else False
    if restrict and corpus is not None and corpus.index is not None:
        raise keys["qrels_restrict_to_corpus"].error("needs the corpus documents, not an index name")
    name = keys["name"].text() if "name" in keys else topics if task_name == "retrieval" else f"{topics}-{task_name}"
    k = keys["k"].positive_int() if "k" in keys else defaults["k"]
    tag = _tag_pattern(keys["tag"]) if "tag" in keys else defaults["tag"]
    note = keys["note"].text() if "note" in keys else None
    if len(problems.found) > kept or ("qrels" in keys and qrels is None):  # (its error said once, where first named)
        return None
    return Experiment(
        name=name,
        key=node.key,
        file=node.file,
        task=task_name,
        topics=topics,
        strategies=strategies,
        retrievers=retrievers,
        corpus=corpus,
        qrels=(qrels.path or keys["qrels"].text()) if qrels is not None else None,
        qrels_restrict_to_corpus=restrict,
        measures=measures,
        depth=depth,
        passage_separator=separator,
        k=k,
        tag=tag,
        note=note,
        given_qrels=qrels,
        unscored=unscored,
        strategies_missing=_strategies_missing(keys.get("strategies"), strategies),
        retrievers_missing=retrievers_missing,
    )


def _topics(node: Node):
    """The benchmark, loaded now (topic files are small) so that a bad split fails here."""
    from harness import topics

    name = node.text()
    return lookup(node, lambda: topics.load(name))


def _strategies(node: Node | None, task, parent: Node, benchmark, problems: Problems) -> tuple[str, ...]:
    """The strategies, each checked against the benchmark's conversations unless its topics
    failed to load (benchmark None: that error is reported instead); a strategy's error (a
    missing rewrites file) is kept in `problems`, reported with a missing corpus or qrels."""
    if not task.uses_strategies:
        if node is not None:
            raise node.error("this task ranks with the turn itself; it takes no query strategies")
        return ()
    if node is None:
        raise parent.error("missing required key 'strategies'")
    names = [item.text() for item in node.items()]
    for item, name in zip(node.items(), names):
        problems.keep(_strategy, item, name, benchmark)
    if len(set(names)) != len(names):
        raise node.error(f"a strategy is listed twice in {names}")
    return tuple(names)


def _strategy(node: Node, name: str, benchmark) -> None:
    """Strategy `name` exists, its arguments fit, what it reads is there and fits the topics."""
    from harness import queries

    lookup(node, lambda: queries.check(name))
    _python_beside_config(node, name)
    if benchmark is not None:
        lookup(node, lambda: queries.check_topics(name, benchmark.conversations))


def _strategies_missing(node: Node | None, names: tuple[str, ...]) -> tuple[Missing, ...]:
    """For each strategy, the first module of an optional extra it imports (hqe's spaCy) that is
    not installed, with the error naming its extra at its key (none: checked as a retriever's is)."""
    from harness import queries
    from harness.extras import first_missing, needs_extra

    found = []
    for item, name in zip(node.items() if node is not None else (), names):
        strategy, _ = queries.get(name)
        module = first_missing(strategy.declaration.needs)
        found.append(((item.error(f"query strategy {name!r}: {needs_extra(module)}"), module),) if module else ())
    return tuple(found)


def _retriever(node: Node, task, problems: Problems) -> RetrieverSpec:
    """The spec, its params checked against the declaration and every local file or folder
    they name looked for (a missing one kept in `problems`)."""
    from harness.retrieve import RETRIEVERS
    from harness.retrieve.specs import named_paths, retriever_names

    if isinstance(node.value, str):
        name, params, label = node.text(), {}, node.value
    else:
        keys = node.mapping(("name", "params", "label"), required=("name",))
        name = keys["name"].text()
        params = keys["params"].free_mapping() if "params" in keys else {}
        label = keys["label"].text() if "label" in keys else name
    registry = task.retrievers()
    try:
        declaration = registry.declaration(name)
        check_params(declaration, params, "params", registry.kind)
    except ParamError as error:
        raise node.child(error.key, None).error(error.problem) from None
    except HarnessError as error:  # unknown, or a `python:` plug-in that cannot be imported or is no retriever
        raise node.error(str(error) + _beside_config(node, error)) from None
    for named in retriever_names(name, params) if registry is RETRIEVERS else [name]:
        _python_beside_config(node, named)
    for key, value, kind in named_paths(declaration, params):
        problems.keep(_look_for, node.child(key, value), kind)
    return RetrieverSpec(name, params, label)


def _missing(node: Node, retriever: RetrieverSpec, registry: Registry,
             count: Callable[[int], int | None]) -> Missing:
    """The modules the retriever (and each nested in its params) imports when built, with its
    params over the documents `count` counts, that are not installed (found, not imported: torch
    takes seconds), the first of each: the error naming its extra, at this key, with the module.
    Said before its run starts (`Config.selected`), not once it has (dense's default model, its
    faiss search of a big corpus), after the runs before it."""
    from harness.extras import first_missing, needs_extra
    from harness.retrieve import RETRIEVERS
    from harness.retrieve.specs import retriever_specs

    name, params = retriever.name, retriever.params
    found = []
    for named, own in retriever_specs(name, params) if registry is RETRIEVERS else [(name, params)]:
        if missing := first_missing(registry.declaration(named).needs_for(own, count)):
            found.append((node.error(f"{registry.kind} {named!r}: {needs_extra(missing)}"), missing))
    return tuple(found)


def _takes_index(node: Node, retriever: RetrieverSpec, registry: Registry, index: str) -> None:
    """`corpus: {index: NAME}` is handed to the retriever as its `index` (and by a fusion or
    rerank to each one nested in it that names none): one that takes no index, cannot use this
    one (dense: a Lucene index holds no vectors, nor text to encode; bm25: a folder without
    segments_N), or reads the documents' text (rerank), is an error at the retriever's key, not
    once its run starts, after the runs before it."""
    from harness.registry import local_path
    from harness.retrieve import RETRIEVERS
    from harness.retrieve.specs import retriever_specs

    specs = retriever_specs(retriever.name, retriever.params) if registry is RETRIEVERS \
        else [(retriever.name, retriever.params)]
    for nested, (named, own) in enumerate(specs):
        declaration = registry.declaration(named)
        if declaration.reads_documents:
            raise node.error(f"{registry.kind} {named!r} reads the documents' text, and corpus: {{index: {index}}} "
                             "gives no documents: give the corpus itself (a file or spec)")
        if nested and own.get("index") is not None:
            continue  # its own index wins
        param = declaration.param("index")
        if param is None and not declaration.open:
            raise node.error(f"{registry.kind} {named!r} takes no index, and corpus: {{index: {index}}} gives "
                             "no documents: give the corpus itself (a file or spec)")
        kind = local_path(param.type) if param is not None else None
        if kind is not None and (problem := kind.problem(index)):
            raise node.error(f"{registry.kind} {named!r} cannot search corpus: {{index: {index}}}: {problem}; give "
                             "the corpus itself (a file or spec)")


def _own_index_taken(node: Node, retriever: RetrieverSpec, registry: Registry) -> None:
    """A fusion's or rerank's own `params.index` is handed to each retriever nested in it that
    names none (fusion.build_from_spec), and so on down: one that cannot search it (bm25: a
    folder without segments_N) or takes no index is an error at `params.index` when the config
    is read, as the index of `corpus: {index: NAME}` is (`_takes_index`), not once its run
    starts, after the runs before it. An index missing altogether is said at its key already."""
    from harness.registry import local_path

    index, declaration = retriever.params.get("index"), registry.declaration(retriever.name)
    param = declaration.param("index")
    if index is None or param is None or ((kind := local_path(param.type)) is not None and kind.problem(index)):
        return
    if (found := next(_nested_problems(declaration, retriever.params, index), None)) is not None:
        where, named, problem = found
        raise node.child("params.index", index).error(f"handed to retriever {named!r} ({where}), which {problem}")


def _nested_problems(declaration: Declaration, params: Mapping[str, Any], index: Any,
                     key: str = "params") -> Iterator[tuple[str, str, str]]:
    """(key path, name, why it cannot) of each retriever nested in the params of what `declaration`
    declares that names no index and cannot search `index`, handed to it; one naming its own
    hands that on instead."""
    from harness.registry import local_path
    from harness.retrieve import RETRIEVERS
    from harness.retrieve.specs import nested_in

    for param in declaration.params:
        for where, named, own, inner in nested_in(param, params.get(param.name), key):
            nested = RETRIEVERS.declaration(named)
            if own.get("index") is not None:
                yield from _nested_problems(nested, own, own["index"], inner)
                continue
            takes = nested.param("index")
            kind = local_path(takes.type) if takes is not None else None
            if takes is None and not nested.open:
                yield where, named, "takes no index"
            elif kind is not None and (problem := kind.problem(index)):
                yield where, named, f"cannot search it: {problem}"
            yield from _nested_problems(nested, own, index, inner)


def _counting(corpus: CorpusSpec | None, benchmark) -> Callable[[int], int | None]:
    """How many documents an experiment's retrievers search, counted up to a limit only where
    what a retriever needs depends on it (dense's faiss), and once: local files and a benchmark's
    shipped corpus alone. None (not known) for an index, an `irds:` collection (reading it would
    download it) or another format's corpus, and for one that fails to read: its error is the
    run's, said where it reads the corpus, not the config check's."""
    @functools.cache
    def count(limit: int) -> int | None:
        from harness.corpus.readers import FileCorpus, open_corpus

        if corpus is None or corpus.index is not None:
            return None
        try:
            if corpus.own:
                opened = [benchmark.corpus] if benchmark is not None and benchmark.corpus is not None else []
            else:
                opened = [open_corpus(spec) for spec in corpus.specs]
                if not all(isinstance(each, FileCorpus) or spec.startswith("benchmark:")
                           for spec, each in zip(corpus.specs, opened)):
                    return None
            return sum(1 for _ in islice(chain.from_iterable(each.documents() for each in opened), limit))
        except (HarnessError, OSError):
            return None

    return count


def _look_for(node: Node, kind: LocalPath) -> Any:
    """The value, naming a file or folder that is here (a missing one found beside the config
    says so, as a missing file does)."""
    if problem := kind.problem(node.value):
        missing = problem.startswith("no such")
        raise node.error(problem + (node.beside_config(home_expanded(node.value)) if missing else ""))
    return node.value


def _corpus(node: Node, problems: Problems) -> CorpusSpec | None:
    """`corpus: SPEC`, a list of specs (each opened now, to check it) or `corpus: {index: NAME}`;
    None when a spec cannot be opened (each such error kept in `problems`)."""
    if isinstance(node.value, dict):  # the index every retriever is given as its `index`
        keys = node.mapping(("index",), required=("index",))
        index = keys["index"].text()
        looked = problems.keep(_look_for, keys["index"], LocalPath(folder=True, or_name=True))  # a name: prebuilt
        return None if looked is None else CorpusSpec(index=index)
    specs = [problems.keep(_corpus_spec, item) for item in node.items()]
    return None if None in specs else CorpusSpec(specs=tuple(specs))


def _corpus_spec(node: Node) -> str:
    """One corpus spec, opened to check it; a file's or an ir_datasets dataset's first document
    is read too, so that a file of other field names, or a dataset not downloaded that cannot be
    fetched, is an error here, not when its run starts."""
    from harness.corpus.readers import DatasetCorpus, FileCorpus, first_document, open_corpus

    spec = str(node.path())
    if not Path(spec).exists() and (hint := node.beside_config(Path(spec))):
        raise node.error(f"no such file: {spec}{hint}")
    corpus = lookup(node, lambda: open_corpus(spec))
    if isinstance(corpus, (FileCorpus, DatasetCorpus)):
        lookup(node, lambda: first_document(corpus))
    return spec


def _qrels(node: Node, read: dict[Path | str, Qrels | None]) -> Qrels | None:
    """The `qrels:` file (or `irds:ID`, an ir_datasets dataset's qrels, or `benchmark:NAME[:SPLIT]`,
    a benchmark's own), read now (once for all experiments naming it): a malformed line is an error
    at this key naming its line (`experiments[0].qrels: q.txt:12: expected 4 fields ...`), said at
    the first key naming the file only; None at the others."""
    from harness.evaluate import check_scorable
    from harness.topics import benchmark_hint, read_qrels_spec

    source = node.value if names_qrels(node.value) else node.existing_path(benchmark_hint(node.value))
    if source not in read:
        read[source] = None  # until read and found scorable
        qrels = lookup(node, lambda: read_qrels_spec(source))
        lookup(node, lambda: check_scorable(qrels))  # a query with only negative grades
        read[source] = qrels
    return read[source]


def names_qrels(value: Any) -> bool:
    """`qrels:` names an ir_datasets dataset's qrels or a benchmark's own, not a file."""
    from harness.corpus.readers import irds_id
    from harness.topics import benchmark_qrels_name

    return irds_id(value) is not None or benchmark_qrels_name(value) is not None


def _judging(node: Node, qrels: Qrels, benchmark) -> None:
    """The `qrels:` file judges a turn of the topics: against another benchmark's every run
    would be ranked, then score 0 on every measure."""
    from harness.evaluate import judges_none

    if problem := judges_none(qrels, [turn.qid for turn in benchmark.turns], benchmark.name):
        raise node.error(problem)


def measures_of(
    keys: dict[str, Node], parent: Node, task=None, *, as_given: bool = False
) -> tuple[tuple[str, ...], int | None, str | None]:
    """(measures, evaluation depth, passage separator) from `measures:`, `preset:` or the task's
    defaults (a serve task has none), the separator from `passage_separator:`, which wins over
    the preset's, as --passage-separator does over --preset's in `harness eval`. The measures are
    checked, and named as the config names them with `as_given` (results keep the user's names),
    else canonically (ir-measures)."""
    from harness.evaluate import parse_measures
    from harness.evaluate.presets import PRESETS, separator_problem

    depth = separator = None
    _measures_or_preset(keys)
    if "measures" in keys:
        node = keys["measures"]
        names = [item.text() for item in node.items()]
    elif "preset" in keys:
        node = keys["preset"]
        preset = lookup(node, lambda: PRESETS.get(node.text()))
        _python_beside_config(node, node.text())
        names, depth, separator = list(preset.measures), preset.depth, preset.passage_separator
    elif task is not None and task.default_measures() is not None:
        node, names = parent, task.default_measures()
    else:
        raise parent.error("missing 'measures' (ir-measures names) or 'preset'")
    if "passage_separator" in keys:
        given = keys["passage_separator"]
        if (problem := separator_problem(given.value)) is not None:
            raise given.error(problem)
        separator = given.value
    try:
        parsed = parse_measures(names)
    except HarnessError as error:  # canonical() refuses a comma-separated name, in the command line's words
        raise node.error(_yaml_list(names) or str(error)) from None
    return tuple(names) if as_given else tuple(str(m) for m in parsed), depth, separator


def _yaml_list(names: list[str]) -> str | None:
    """YAML reads `measures: nDCG@3, RR` as one string: where a name lists measures, the advice is a
    YAML list of them all, not the command line's words."""
    from harness.evaluate.names import listed_measures

    listed = [listed_measures(name) for name in names]
    if not any(listed):
        return None
    entries = [each for name, given in zip(names, listed) for each in given or [name]]
    return f"one measure per entry, not a comma-separated string: write a YAML list, measures: [{', '.join(entries)}]"


def _measures_or_preset(keys: dict[str, Node]) -> None:
    """One way of naming the measures: both is an error, whether or not there are qrels."""
    if "measures" in keys and "preset" in keys:
        raise keys["preset"].error("give 'measures' or 'preset', not both")


def shallow_measures(experiment: Experiment) -> str | None:
    """What the experiment's measures read deeper than its runs go, in one line; None when
    nothing does (a preset's depth 1000 over k: 100 scores the top 100 too)."""
    from harness.evaluate.measures import reads_deeper

    preset = {"the preset's depth": experiment.depth} if experiment.depth is not None else None
    problem = reads_deeper(experiment.measures, experiment.k, "k", CONFIG, preset, ranks=True)
    if problem is None:
        return None
    return f"{experiment.file}: {experiment.key}: its runs hold {experiment.k} hits per turn (k), {problem}"


def _tag_pattern(node: Node) -> str:
    pattern = node.text()
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
    except ValueError as error:
        raise node.error(f"bad tag pattern ({error})") from None
    for name in fields:
        if name not in TAG_FIELDS:
            raise node.error(f"unknown field {{{name}}} in tag pattern; known: {', '.join(TAG_FIELDS)}")
    return pattern


def _check_unique(path: Path, experiments: tuple[Experiment, ...]) -> None:
    names: dict[str, str] = {}
    # a tag (case folded: a case-insensitive file system's file, macOS's and Windows') -> the
    # retriever whose run made it first, and the run
    tags: dict[str, tuple[str, RunSpec]] = {}
    for experiment in experiments:
        if experiment.name in names:
            raise ConfigError(path, f"{experiment.key}.name", f"experiment name {experiment.name!r} is also "
                              f"used by {names[experiment.name]}; give each experiment its own name")
        names[experiment.name] = experiment.key
        per_retriever = max(len(experiment.strategies), 1)
        for position, run in enumerate(expand(experiment)):
            where = f"{experiment.key}.retrievers[{position // per_retriever}]"
            problem = name_problem(run.tag)
            if problem:  # tags name the run files: never a path out of `output`
                raise ConfigError(path, f"{experiment.key}.tag", f"run tag {run.tag!r} {problem}")
            if run.tag.casefold() in tags:
                first_where, first = tags[run.tag.casefold()]
                raise _same_tag(path, run, where, first, first_where)
            tags[run.tag.casefold()] = (where, run)


def _same_tag(path: Path, run: RunSpec, where: str, first: RunSpec, first_where: str) -> ConfigError:
    """Two runs writing one run file, with what tells them apart: the tag fields in which they
    differ and that the pattern leaves out, else their retrievers' labels (bm25 twice, with
    other params), else the characters a tag replaces; or, tags that differ in case alone (one file
    on macOS and Windows, each run overwriting the other's), both."""
    experiment = run.experiment
    if run.tag != first.tag:
        return ConfigError(path, where, f"run tag {run.tag!r} and run tag {first.tag!r} of {first_where} differ only "
                           "in case: on a case-insensitive file system (macOS, Windows) their run files are one "
                           "file; make them differ in more than case")
    ours, theirs = (_tag_fields(r.experiment, r.strategy, r.retriever) for r in (run, first))
    missing = [f"{{{name}}}" for name in TAG_FIELDS
               if ours[name] != theirs[name] and f"{{{name}}}" not in experiment.tag]
    if missing:
        return ConfigError(path, f"{experiment.key}.tag", f"run tag {run.tag!r} is also produced by {first_where}; "
                           f"add {' or '.join(missing)} to the tag pattern")
    if ours == theirs:
        return ConfigError(path, where, f"run tag {run.tag!r} is also produced by {first_where}: both retrievers are "
                           f"labelled {run.retriever.label!r}; give each its own 'label:' (it names their runs)")
    return ConfigError(path, f"{experiment.key}.tag", f"run tag {run.tag!r} is also produced by {first_where}: their "
                       "tags are the same once each character other than letters, digits and _.+=- is made '-'")
