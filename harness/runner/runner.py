"""`harness run`: each run of a config, from topics to a scored TREC run file, resumably.

Per run: load the topics -> build the query stream -> hash queries, corpus and config ->
skip if `<tag>.run` and a `<tag>.json` with that hash exist -> rank (a batch of queries at a
time, with progress) -> stream into `<tag>.run` (atomic; the old `<tag>.json` removed once the new
run is complete, before it replaces the old one) -> write `<tag>.json` (atomic, after the run file, so a JSON always
describes the complete run beside it) -> evaluate -> write it again with the scores.
A skipped run reuses the scores its JSON records, unless the measures, depth or qrels changed.
A run killed half-way leaves only a dot-named temp file, removed when the run is redone.
Qrels no file holds (derived from the data, or restricted to the corpus) are written to
OUTPUT/qrels/, a qrels file is copied there, and each run's JSON names the qrels file it was
scored on, for `harness compare` on the output folder alone.
One `harness run` at a time writes to an output folder (a lock on the folder); another
waits for it, says so in one line, and then skips the runs it finished.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from harness.atomic import atomic_write, folder_lock
from harness.corpus import Corpus, Document
from harness.errors import CONFIG, HarnessError
from harness.evaluate import (JUDGED, Evaluation, Evaluator, RunFileOptions, evaluate_file, keep_measures,
                              qrels_name, reading_lines, reading_warnings, with_judged)
from harness.queries import inputs as strategy_inputs
from harness.queries.llm import endpoints as llm_endpoints
from harness.retrieve import RETRIEVERS, Retriever, SearchQuery, build, shared_retrievers
from harness.retrieve.specs import retriever_specs
from harness.paths import file_in, file_sha256, folder_version, home_expanded
from harness.progress import progress_bar
from harness.runner import provenance
from harness.runner.config import Config, ConfigError, Experiment, RunSpec, shallow_measures
from harness.runner.tasks import TASKS, Ranker
from harness.topics import Benchmark, load
from harness.trec import Qrels, Run, file_stem, qrels_text, write_run

BATCH = 64  # queries per retriever call; the progress display moves once per batch
_UNSAFE_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9_.+=@-]+")  # a written qrels file's name has '-' for each stretch


Say = Callable[[str], None]  # takes a note of `harness run`: a line, "warning: " before a warning


def saying(log: TextIO) -> Say:
    """Notes said as the command says them: each a line on `log`."""
    return lambda line: print(line, file=log)


@dataclass
class Workspace:
    """Loads each benchmark, corpus and qrels once per invocation, on first use, forms each
    strategy's queries once (every retriever of an experiment searches the same ones), and
    fingerprints each index folder and each retriever's named files once (three strategies over
    one index walked its folder three times; a corpus, loaded once, keeps its own fingerprint);
    retrievers are shared the same way (`shared_retrievers`, entered by `run_config`): three
    strategies over one BM25 index build the index once, and skipped runs build nothing.
    With an `output` folder (not in a dry run), qrels no file holds are written there (qrels_file)."""

    output: Path | None = None
    _benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    _queries: dict[tuple[str, str, str | None], list[SearchQuery]] = field(default_factory=dict)
    _corpora: dict[Any, Corpus | None] = field(default_factory=dict)
    _qrels: dict[Any, Qrels] = field(default_factory=dict)  # (task, topics): their own; longer keys: as scored
    _fingerprints: dict[Any, Any] = field(default_factory=dict)  # index-folder and named-file fingerprints
    _qrels_files: dict[str, Path] = field(default_factory=dict)  # qrels hash -> the file written for them

    def benchmark(self, topics: str) -> Benchmark:
        if topics not in self._benchmarks:
            self._benchmarks[topics] = load(topics)
        return self._benchmarks[topics]

    def queries(self, experiment: Experiment, strategy: str | None) -> list[SearchQuery]:
        """The strategy's queries on the experiment's topics (hqe on PragmatiQA's 1,526 turns
        takes 0.3 s: three retrievers took it three times)."""
        key = (experiment.task, experiment.topics, strategy)
        if key not in self._queries:
            self._queries[key] = TASKS.get(experiment.task).queries(strategy, self.benchmark(experiment.topics))
        return self._queries[key]

    def corpus(self, experiment: Experiment) -> Corpus | None:
        """The documents the experiment searches: a corpus spec's, else the benchmark's own."""
        spec = experiment.corpus
        key = (spec.specs, spec.index, experiment.topics if spec.own else None)
        if key not in self._corpora:
            if spec.index is not None:
                self._corpora[key] = None
            elif spec.specs:
                from harness.corpus.readers import open_corpus

                self._corpora[key] = concatenate([open_corpus(part) for part in spec.specs])
            else:
                self._corpora[key] = self.benchmark(experiment.topics).corpus
        return self._corpora[key]

    def corpus_fingerprint(self, experiment: Experiment) -> str:
        """The documents' identity in the resume key: a corpus's fingerprint; an index folder's
        files' names, sizes and mtimes (a rebuilt index is searched again); a prebuilt
        index's name."""
        spec = experiment.corpus
        if spec.index is None:
            corpus = self.corpus(experiment)
            return corpus.fingerprint if corpus is not None else "none"
        key = ("index", spec.index)
        if key not in self._fingerprints:
            folder = home_expanded(spec.index)
            self._fingerprints[key] = (f"index:{spec.index}:{folder_version(folder)}" if folder.is_dir()
                                       else f"index:{spec.index}")
        return self._fingerprints[key]

    def named_files(self, run: RunSpec) -> dict[str, str]:
        """provenance.named_files of the run's retriever, once per retriever and params."""
        task = run.experiment.task
        key = ("files", task, run.retriever.name, provenance.canonical_json(dict(run.retriever.params)))
        if key not in self._fingerprints:
            declaration = TASKS.get(task).retrievers().declaration(run.retriever.name)
            self._fingerprints[key] = provenance.named_files(declaration, run.retriever.params)
        return self._fingerprints[key]

    def qrels(self, experiment: Experiment) -> Qrels:
        """The experiment's qrels, restricted to its corpus where it asks: each file read once,
        a `qrels:` file when the config was checked, the topics' own on first use (by every
        experiment on those topics, whatever its corpus)."""
        key = (experiment.task, experiment.topics, experiment.qrels, experiment.qrels_restrict_to_corpus,
               experiment.corpus)
        if key not in self._qrels:
            qrels = experiment.given_qrels  # read when the config was checked
            if qrels is None:
                own = (experiment.task, experiment.topics)
                if own not in self._qrels:
                    self._qrels[own] = TASKS.get(experiment.task).default_qrels(self.benchmark(experiment.topics))
                qrels = self._qrels[own]
            if experiment.qrels_restrict_to_corpus:
                qrels = restrict_to_corpus(qrels, self.corpus(experiment))
                if not qrels.judgments:  # nothing to score on (the evaluator would divide by no query)
                    raise ConfigError(experiment.file, f"{experiment.key}.qrels_restrict_to_corpus",
                                      f"no judged turn of {experiment.topics} has a relevant document in the corpus "
                                      f"{self.corpus(experiment).name}: is it the collection these topics are "
                                      "judged on?")
            self._qrels[key] = qrels
        return self._qrels[key]

    def qrels_file(self, qrels: Qrels, digest: str) -> Path | None:
        """Where `harness compare --qrels` finds the judgments the leaderboard scored with, inside
        OUTPUT, so that runs/ handed on alone carries them. When no file holds them (derived from
        the data, or restricted to the corpus: `qrels.path` None): OUTPUT/qrels/<their name>.qrels,
        written once per invocation, and only when its bytes change (a rerun touches nothing),
        named by the qrels' own name, as the leaderboard names them (another set of the same name
        in this invocation adds its hash's first 8 digits). Qrels read from a file: its copy
        (`qrels_copy`). None in a dry run."""
        if self.output is None:
            return None
        if qrels.path is not None:
            return qrels_copy(qrels.path, self.output / "qrels")
        if digest not in self._qrels_files:
            name = _UNSAFE_IN_FILE_NAME.sub("-", qrels.name).strip("-.") or "qrels"
            if any(path.name == f"{name}.qrels" for path in self._qrels_files.values()):
                name = f"{name}-{digest[:8]}"
            path = file_in(self.output / "qrels", f"{name}.qrels")
            text = qrels_text(qrels).encode("utf-8")
            if not (path.is_file() and path.read_bytes() == text):
                with atomic_write(path, "wb") as handle:
                    handle.write(text)
            self._qrels_files[digest] = path
        return self._qrels_files[digest]

    def retriever(self, run: RunSpec) -> Retriever:
        experiment = run.experiment
        params = dict(run.retriever.params)
        if experiment.corpus.index is not None:
            params["index"] = experiment.corpus.index
        return build(run.retriever.name, corpus=self.corpus(experiment), **params)


def qrels_copy(path: Path, folder: Path) -> Path:
    """The qrels file `path` copied into `folder` (a `qrels:` file of one's own, or a shipped one:
    the path a run's JSON would name is the first clone's, and a colleague's clone may ship other
    bytes), named by its content: `pq.qrels` as `pq-<its sha256's first 12 digits>.qrels`, so that
    two files of one name never replace each other's copy, nor does an edited file replace the copy
    older runs were scored on. Written once (atomically); a file already in `folder` is its own copy."""
    if path.resolve().parent == folder.resolve():
        return path
    stem = file_stem(path)
    rest = path.name[len(stem):]  # its suffixes, a compressed file's both (.qrels.gz), as the readers take them
    safe = _UNSAFE_IN_FILE_NAME.sub("-", stem).strip("-.") or "qrels"
    name = f"{safe}-{file_sha256(path)[:12]}{_UNSAFE_IN_FILE_NAME.sub('-', rest)}"
    copy = file_in(folder, name)
    if not copy.is_file():
        with open(path, "rb") as source, atomic_write(copy, "wb") as handle:
            shutil.copyfileobj(source, handle)
    return copy


def concatenate(corpora: list[Corpus]) -> Corpus:
    """Several corpora searched as one (e.g. the provenance passages of two topic splits)."""
    if len(corpora) == 1:
        return corpora[0]

    def documents() -> Iterator[Document]:
        seen: dict[str, int] = {}  # id -> the corpus it came from first
        for number, corpus in enumerate(corpora):
            for document in corpus.documents():
                first = seen.setdefault(document.id, number)
                if first != number:
                    raise HarnessError(f"document {document.id!r} is in both corpora {corpora[first].name} "
                                       f"and {corpus.name}")
                yield document

    def located() -> Iterator[tuple[Document, tuple[Path, int] | None]]:
        for corpus in corpora:
            yield from corpus.located()

    fingerprint = hashlib.sha256(" ".join(c.fingerprint for c in corpora).encode()).hexdigest()
    return Corpus("+".join(c.name for c in corpora), documents, fingerprint, located)


def restrict_to_corpus(qrels: Qrels, corpus: Corpus | None) -> Qrels:
    """Judgments of documents in the corpus only; a query left without a relevant one is dropped
    (no run could score on it). For small pools standing in for the official collection. No
    file holds them (path None): `harness run` writes them (Workspace.qrels_file)."""
    if corpus is None:
        raise ValueError("restricting qrels needs a corpus")
    docids = {document.id for document in corpus.documents()}
    kept = {}
    for qid, judged in qrels.judgments.items():
        inside = {docid: grade for docid, grade in judged.items() if docid in docids}
        if any(grade > 0 for grade in inside.values()):
            kept[qid] = inside
    return Qrels(f"{qrels.name}@{corpus.name}", kept)


@dataclass
class Prepared:
    """A run with its inputs loaded and hashed: enough to decide whether to skip it."""

    run: RunSpec
    benchmark: Benchmark
    queries: list[SearchQuery]
    qrels: Qrels | None  # None: the run is not scored (Experiment.unscored)
    hashes: dict[str, str]
    digest: str  # the resume key: of what determines the run file (not the qrels)
    key_parts: dict[str, str]  # a hash per part of it, recorded to say which changed
    qrels_hash: str | None  # what the scores depend on besides the run file (`_scoring`)
    seconds: float
    qrels_file: Path | None = None  # the qrels written for `harness compare` (Workspace.qrels_file)

    def judged(self) -> int:
        """How many of the run's queries the qrels judge (a judged query it lacks scores 0: the
        qrels' own count says nothing of the run)."""
        return len(self.qrels.judgments.keys() & {query.qid for query in self.queries}) if self.qrels is not None else 0


def prepare(run: RunSpec, workspace: Workspace) -> Prepared:
    started = time.perf_counter()
    experiment = run.experiment
    task = TASKS.get(experiment.task)
    benchmark = workspace.benchmark(experiment.topics)
    queries = workspace.queries(experiment, run.strategy)
    qrels = workspace.qrels(experiment) if experiment.unscored is None else None
    hashes = {
        "queries": provenance.queries_hash(queries, task.context(benchmark)),
        "corpus": workspace.corpus_fingerprint(experiment),
    }
    plugins = provenance.plugins(experiment.task, run.strategy, run.retriever.name, dict(run.retriever.params))
    if plugins:  # a changed plug-in, or rule for plug-ins, changes the resume key; built-ins alone leave it
        hashes["plugins"] = provenance.canonical_json({**plugins, "rules": provenance.PLUGIN_RULES})
    files = workspace.named_files(run)
    if files:  # likewise a changed file a parameter names (a plug-in's Path parameter)
        hashes["files"] = provenance.canonical_json(files)
    identity = run.identity()
    digest = provenance.run_hash(hashes, identity)
    qrels_hash = qrels_file = None
    if qrels is not None:
        qrels_hash = provenance.qrels_hash(qrels)
        qrels_file = workspace.qrels_file(qrels, qrels_hash)
    return Prepared(run, benchmark, queries, qrels, hashes, digest, provenance.key_parts(hashes, identity), qrels_hash,
                    time.perf_counter() - started, qrels_file)


def run_path(output: Path, run: RunSpec) -> Path:
    return file_in(output, f"{run.tag}.run")


def json_path(output: Path, run: RunSpec) -> Path:
    return file_in(output, f"{run.tag}.json")


def _has_files(run: RunSpec, output: Path) -> bool:
    return run_path(output, run).is_file() and json_path(output, run).is_file()


def _record(run: RunSpec, output: Path) -> dict[str, Any] | None:
    """The run's JSON, when both files are present and it reads as one."""
    if not _has_files(run, output):
        return None
    try:
        record = json.loads(json_path(output, run).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def finished(prepared: Prepared, output: Path) -> tuple[bool, str | None]:
    """Whether the run is finished: both files present, the JSON records the same inputs hash,
    and the run file is still the one it records writing; and why not, when it can say: the
    parts of the resume key that changed (as its JSON records them), or, when the inputs are the
    same, that the run file was edited or replaced since (its JSON's scores are another file's)."""
    return _finished(prepared, output, _record(prepared.run, output))


def _finished(prepared: Prepared, output: Path, record: dict[str, Any] | None) -> tuple[bool, str | None]:
    """`finished`, given the run's JSON as read (`_record`), which a skipped run hands on read once."""
    if record is None:
        return False, None
    if record.get("hash") != prepared.digest:
        names = {"queries": _queries(prepared, record)}
        changed = provenance.changed_parts(record.get("key_parts"), prepared.key_parts, names)
        return False, f"{' and '.join(changed)} changed since it was made" if changed else None
    why = _edited(run_path(output, prepared.run), record)
    return why is None, why


def _queries(prepared: Prepared, record: dict[str, Any]) -> str:
    """What changed where a run's queries did: the inputs of its strategy (a rewrites file, an
    LLM endpoint) where its JSON records others, else the queries made of the topics (their
    turns, what a strategy makes of them, what else the ranking reads: PTKB statements)."""
    run = prepared.run
    if run.strategy and record.get("strategy_inputs") not in (None, strategy_inputs(run.strategy)):
        return f"the inputs of strategy {run.strategy}"
    by = f" by strategy {run.strategy}" if run.strategy else ""
    context = TASKS.get(run.experiment.task).context(prepared.benchmark)
    also = " (or what else their ranking reads: PTKB statements)" if next(iter(context), None) is not None else ""
    return f"the queries of {run.experiment.topics}{by}{also}"


def _edited(path: Path, record: dict[str, Any]) -> str | None:
    """How the run file differs from the one its JSON records: its sha256 (recorded since this
    version: read once per version, paths.file_sha256), else its line count (older JSONs' alone)."""
    sha256, written = record.get("run_sha256"), record.get("lines")
    if isinstance(sha256, str) and file_sha256(path) == sha256:
        return None
    with open(path, "rb") as handle:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    changed = f"{path} was edited or replaced since it was written"
    if isinstance(written, int) and lines != written:
        return f"{changed}: it has {lines} lines, {written} were written"
    return f"{changed}: its sha256 is not the one its JSON records" if isinstance(sha256, str) else None


def execute(prepared: Prepared, workspace: Workspace, output: Path, config: Config, log: TextIO,
            say: Say) -> Scored | None:
    """Rank every query and write the run file, score it (None: not scored), then write its JSON."""
    run, config_path = prepared.run, config.path
    task = TASKS.get(run.experiment.task)
    started = time.perf_counter()
    rank = task.ranker(prepared.benchmark, run.retriever.name, run.retriever.params, run.experiment.k,
                       lambda: workspace.retriever(run))
    set_up = time.perf_counter() - started
    started = time.perf_counter()
    def replacing() -> None:
        """The JSON of the file about to be replaced goes first, once the new run is complete (a ranking that
        fails or is interrupted leaves the finished run and its JSON as they were): a kill between the new run
        file and its JSON would otherwise leave the old inputs' hash beside the new file, and a rerun of the
        old config would take the new file (and the old scores) as its finished run."""
        if json_path(output, run).is_file():  # (a folder in its way is said when the JSON is written)
            if (maker := _made_by_another(json_path(output, run), run_path(output, run), config)) is not None:
                say(maker)
            json_path(output, run).unlink()

    # a bar on a terminal; on a log or a pipe one line when the run is written
    with progress_bar(run.tag, "turn", total=len(prepared.queries), file=log, mininterval=0.5) as progress:
        bar = not progress.disable  # (closing a bar disables it)
        repeats = Repeats()
        rankings = _rankings(prepared, rank, progress.update, repeats)
        written = hashlib.sha256()  # of the bytes as they are written: the file is not read back to hash it
        lines = write_run(run_path(output, run), rankings, run.tag, digest=written, before_replace=replacing)
    seconds = time.perf_counter() - started
    if not bar:  # the ranking's time alone: an index built on first use (31.9 s where ranking took 0.3 s) said apart
        after = f" after {set_up:.1f} s of set-up" if round(set_up, 1) else ""
        print(f"{run.tag}: {len(prepared.queries)} turns ranked in {seconds:.1f} s{after} ({run_path(output, run)})",
              file=log)
    if repeats.count:
        say(f"warning: {repeats.said(prepared)}")
    metadata = {
        "tag": run.tag,
        "run": run_path(output, run).name,
        "config_file": str(config_path),
        # the file itself, to tell it from another config (`_made_by_another`) whatever folder it was run from
        **({"config_realpath": os.path.realpath(config_path), "config_from_output": _from_output(config_path, output)}
           if config_path.is_file() else {}),
        **({"config_sha256": config.content_sha256} if config.content_sha256 is not None else {}),  # a dict's
        "config": run.description(),
        "strategy_inputs": strategy_inputs(run.strategy) if run.strategy else {},  # rewrites file sha256, LLM
        "hash": prepared.digest,
        "hashes": prepared.hashes,
        "key_parts": prepared.key_parts,
        "queries": len(prepared.queries),
        "lines": lines,
        "run_sha256": written.hexdigest(),  # an edited or replaced run file is not finished
        "duplicates": repeats.count,  # documents the retriever answered twice for a query, dropped
        "versions": provenance.versions(),
        "code": provenance.code(),  # the harness's own (its version is every commit's)
        "timings": {
            "prepare_s": round(prepared.seconds, 3),
            "set_up_s": round(set_up, 3),  # index / model / PTKB ranking; 0 when reused
            "rank_and_write_s": round(seconds, 3),
            "queries_per_s": round(len(prepared.queries) / seconds, 2) if seconds > 0 else None,
        },
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if prepared.qrels is None:  # its JSON says why it has no scores
        _write_metadata(json_path(output, run), {**metadata, "not_scored": run.experiment.unscored})
        return None
    # the run is finished: an interrupt or an error while it is scored leaves it to be scored, not ranked, again
    _write_metadata(json_path(output, run), metadata)
    scored = score(prepared, output)
    _write_metadata(json_path(output, run), {**metadata, "scores": _scores_record(prepared, scored)})
    return scored


def _made_by_another(path: Path, run: Path, config: Config) -> str | None:
    """What to say as `config` replaces `run`, whose JSON is `path`, where another config made it:
    two configs writing one output folder under one run tag replace each other's runs in turn;
    None when it is the same config or the JSON names none. The same file is told by the real path
    the JSON records: a path as typed (`configs/x.yaml`) names another file from another folder,
    and one config run by two paths (from two folders, by a symlink) is one config; so is one
    copied or moved with its output folder, seen from that folder as before. Dicts (the
    Python API's configs, all named <config>) are told by their content's hash, which does not
    tell another dict from the same one edited, as a notebook does: a note, not a warning."""
    config_path = config.path
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        recorded, real, content = record.get("config_file"), record.get("config_realpath"), record.get("config_sha256")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return None
    if not isinstance(recorded, str):
        return None
    if isinstance(content, str) and config.content_sha256 is not None:
        return None if content == config.content_sha256 else (
            f"{run} was made from other content of a config dict (this one before an edit, or another dict): "
            "replaced; if by another dict, give the two dicts other outputs or tags")
    if isinstance(real, str) and config_path.is_file():
        try:
            same = os.path.samefile(real, config_path)
        except OSError:  # the other config's file is gone
            same = real == os.path.realpath(config_path)
        # a folder copied or moved with its config and runs: the config is where it was, seen from its runs
        same = same or record.get("config_from_output") == _from_output(config_path, path.parent)
        maker = None if same else recorded
    else:  # a JSON written before the real path or a dict's hash was recorded, or a file and a dict
        maker = None if recorded == str(config_path) or Path(recorded).resolve() == config_path.resolve() else recorded
    return None if maker is None else (
        f"warning: {run} was made by {maker}; {config_path} now replaces it (its scores on that config's "
        "leaderboard are stale): give the two configs other outputs or tags")


def _from_output(config_path: Path, output: Path) -> str:
    """Where the config file is seen from the output folder (`../configs/x.yaml`): the same after
    the folder holding both is copied or moved, where the real path names the old place."""
    return os.path.relpath(os.path.realpath(config_path), os.path.realpath(output))


_SCORED_WITH = {"passage_separator": "passage separator", "judged": "Judged@10 measure"}  # `_scoring`'s keys, said


def _skipped(prepared: Prepared, output: Path, record: dict[str, Any]) -> str:
    """What a skipped run's line says: rescored, and on what change (`_scoring`: the qrels, say),
    where its recorded scores were taken another way (scored, where it was not); made by other
    harness code than this, which the resume key leaves out (provenance.code), where its JSON
    records the code that made it (`record`: its JSON)."""
    recorded, done = record.get("scores"), "skipped"
    if prepared.qrels is not None and isinstance(recorded, dict) and isinstance(recorded.get("for"), dict):
        now = _scoring(prepared)
        changed = [_SCORED_WITH.get(key, key) for key in now if recorded["for"].get(key) != now[key]]
        done = f"rescored: the {' and the '.join(changed)} changed" if changed else done
    if prepared.qrels is not None and isinstance(record.get("not_scored"), str):  # given qrels since
        done = f"scored (not scored before: {record['not_scored']})"
    made = record.get("code")
    other = (f"; made by other harness code: {provenance.code_name(made)}; --force remakes it"
             if isinstance(made, dict) and made.get("sha256") != provenance.code()["sha256"] else "")
    return f"finished with the same inputs, {done} ({run_path(output, prepared.run)}{other})"


def _write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    """A value JSON has no type for (a parameter YAML read as a date, `since: 2024-01-01`, or
    as bytes) is recorded as its text, as the resume key's hash takes it (canonical_json)."""
    with atomic_write(path) as handle:
        json.dump(metadata, handle, indent=2, ensure_ascii=False, default=str)
        handle.write("\n")


def _scoring(prepared: Prepared) -> dict[str, Any]:
    """What a run's scores depend on besides its run file: changed qrels (judgments filled in
    by `harness judge`, say) rescore a finished run, they do not rank its turns again."""
    experiment = prepared.run.experiment
    return {"measures": list(experiment.measures), "depth": experiment.depth or experiment.k,
            "passage_separator": experiment.passage_separator, "judged": JUDGED, "qrels": prepared.qrels_hash}


def _scores_record(prepared: Prepared, scored: Scored) -> dict[str, Any]:
    return {"for": _scoring(prepared), **_qrels_file(prepared), "evaluation": asdict(scored.evaluation),
            "judged": scored.judged,  # the warnings `harness run` says and the leaderboard shows (why a run scores 0)
            "warnings": reading_warnings(scored.evaluation, qrels_name(prepared.qrels))}


def _qrels_file(prepared: Prepared) -> dict[str, str | None]:
    """The file in the output folder holding the qrels the run is scored with, for `harness
    compare --qrels`: the one written for them, or the copy of the file they were read from (named
    too, `qrels_copied_from`); and its sha256, to check a copy sent with the runs against
    (`scores.for.qrels` hashes the judgments, not the file's bytes)."""
    path, source = prepared.qrels_file, prepared.qrels.path if prepared.qrels is not None else None
    return {"qrels_file": str(path) if path is not None else None,
            "qrels_file_sha256": file_sha256(path) if path is not None else None,
            **({"qrels_copied_from": str(source)} if source is not None and source != path else {})}


def finished_scores(prepared: Prepared, output: Path, metadata: dict[str, Any]) -> Scored | None:
    """A skipped run's scores: those its JSON records when they were taken the same way,
    else scored again and recorded; None for a run that is not scored. Qrels and measures are
    not in the resume key, so the run may have been scored, or not, by another config: its
    JSON (`metadata`, as read) is rewritten to say what this one makes of it, `scores` or
    `not_scored`, never both."""
    path = json_path(output, prepared.run)
    unscored = prepared.run.experiment.unscored
    # the config as taken now: its qrels, measures and note may differ from those that ranked the run
    now = {key: value for key, value in metadata.items() if key not in ("scores", "not_scored")}
    now["config"] = prepared.run.description()
    if prepared.qrels is None:
        if "scores" in metadata or metadata.get("not_scored") != unscored:
            _write_metadata(path, {**now, "not_scored": unscored})
        return None
    recorded = metadata.get("scores")
    if isinstance(recorded, dict) and recorded.get("for") == _scoring(prepared) and "not_scored" not in metadata:
        try:
            missing = {each.name for each in fields(Evaluation)} - set(recorded["evaluation"])
            if missing:  # recorded before this version wrote it (usual_depth): not taken as its default
                raise KeyError(missing.pop())
            scored = Scored(Evaluation(**recorded["evaluation"]).whole_counts(), float(recorded["judged"]))
        except (TypeError, KeyError, ValueError, AttributeError):  # not the layout this version writes: score again
            pass
        else:
            # (recorded before qrels files were named, or their sha256; or the same judgments in other bytes)
            if any(recorded.get(key) != value for key, value in _qrels_file(prepared).items()):
                _write_metadata(path, {**now, "scores": _scores_record(prepared, scored)})
            return scored
    scored = score(prepared, output)
    _write_metadata(path, {**now, "scores": _scores_record(prepared, scored)})
    return scored


@dataclass
class Repeats:
    """Documents a retriever answered more than once for a query: each is kept once, at its
    best score (Run.of), and counted here, so that a plug-in's bug is said, not hidden (the
    run file holds no repeat, so scoring it finds none)."""

    count: int = 0  # the repeats dropped: a document answered three times for a query counts two
    first: tuple[str, str] | None = None  # (qid, docid)

    def add(self, run: Run) -> None:
        self.count += run.duplicates
        self.first = self.first or run.repeated

    def said(self, prepared: Prepared) -> str:
        run = prepared.run
        kind = TASKS.get(run.experiment.task).retrievers().kind
        first = f" (the first: document {self.first[1]} for query {self.first[0]})" if self.first else ""
        return (f"run {run.tag}: {kind} {run.retriever.label or run.retriever.name} answered a document again for "
                f"the same query {self.count} time{'s' * (self.count != 1)}{first}; each document is kept once, at "
                "its best score")


def _rankings(prepared: Prepared, rank: Ranker, progress: Callable[[int], object],
              repeats: Repeats) -> Iterator[tuple[str, Iterable[tuple[str, float]]]]:
    """Each query's top k (docid, score) pairs, in query order, ranked a batch at a time, so
    that progress shows and only a few batches of rankings are held; the documents answered
    twice are counted in `repeats`. A score that is not finite, or no query retrieving
    anything, is an error raised instead of the rest of the stream, so that `write_run`
    leaves no run file: not one whose inf or nan scores fail when it is scored, nor an empty
    run, which trec_eval would score all 0."""
    queries, k = prepared.queries, prepared.run.experiment.k
    answered = 0
    batches = [queries[start:start + BATCH] for start in range(0, len(queries), BATCH)]
    counted = None
    with closing(rank(batches)) as runs:
        for batch, run in zip(batches, runs):
            if run is not counted:  # (the ptkb task hands every batch its one run of all turns)
                repeats.add(run)
                counted = run
            for query in batch:
                pairs = list(run.pairs(query.qid, k))  # looked over once for a score no run file holds
                answered += bool(pairs)
                if bad := next(((docid, score) for docid, score in pairs if not math.isfinite(score)), None):
                    raise _not_finite(prepared, query.qid, *bad)
                yield query.qid, pairs
            progress(len(batch))
    if not answered:
        raise _nothing_retrieved(prepared)


def _not_finite(prepared: Prepared, qid: str, docid: str, score: float) -> HarnessError:
    """A built-in retriever's (or ranking method's) inf or nan score, which no run file holds
    (a plug-in's answers are checked where it answers: harness.retrieve.plugins)."""
    run = prepared.run
    kind = TASKS.get(run.experiment.task).retrievers().kind
    return HarnessError(f"run {run.tag}: {kind} {run.retriever.label or run.retriever.name} gave query {qid}, "
                        f"document {docid}, the score {score}, which is not finite; no run file is written")


def _nothing_retrieved(prepared: Prepared) -> HarnessError:
    """A run in which no query retrieved a document: almost surely the wrong corpus or index."""
    run, experiment = prepared.run, prepared.run.experiment
    if not TASKS.get(experiment.task).searches_corpus:
        return HarnessError(f"run {run.tag}: none of its {len(prepared.queries)} turns ranked any statement; "
                            f"check that the conversations of {experiment.topics} have PTKB statements")
    corpus = experiment.corpus
    searched = (f"the index {corpus.index}" if corpus.index is not None else
                ", ".join(corpus.specs) if corpus.specs else f"the corpus of {experiment.topics}")
    return HarnessError(f"run {run.tag}: none of its {len(prepared.queries)} queries retrieved a document from "
                        f"{searched} (retriever {run.retriever.label or run.retriever.name}); no run file is written, "
                        "as it would score 0 everywhere: is this the corpus these topics are judged on? (or is it "
                        f"empty, or are the queries of strategy {run.strategy} empty?)")


@dataclass(frozen=True)
class Scored:
    evaluation: Evaluation  # the experiment's measures, counts whole (as recorded, fresh or resumed alike)
    judged: float  # mean Judged@10, for the report


@dataclass
class Outcome:
    run: RunSpec
    path: Path
    skipped: bool
    qrels: Qrels | None  # None, and no evaluation or judged: the run is not scored (Experiment.unscored)
    evaluation: Evaluation | None
    judged: float | None
    benchmark: Benchmark  # the topics the run answered (the report's turn depths)
    qrels_file: Path | None = None  # the qrels written, or copied, into OUTPUT for `harness compare` (None: none)
    code: str = "code not recorded"  # the harness code that made the run (provenance.code_name), for the leaderboard
    code_sha256: str | None = None  # that code's hash: runs of one code, under two commits, are one code

    @classmethod
    def of(cls, prepared: Prepared, output: Path, skipped: bool, scored: Scored | None, code: Any) -> "Outcome":
        """`code`: what the run's JSON records as the code that made it (None: nothing)."""
        return cls(prepared.run, run_path(output, prepared.run), skipped, prepared.qrels,
                   scored.evaluation if scored else None, scored.judged if scored else None, prepared.benchmark,
                   prepared.qrels_file, provenance.code_name(code), _code_sha256(code))


def _code_sha256(recorded: Any) -> str | None:
    return str(recorded.get("sha256")) if isinstance(recorded, dict) else None


def score(prepared: Prepared, output: Path) -> Scored:
    """The run file read once for the experiment's measures and Judged@10."""
    experiment = prepared.run.experiment
    kept = list(experiment.measures)  # as the config names them, checked when it was read
    scored, judged = with_judged(kept)  # the experiment's own Judged@10, however spelled, or an added one
    evaluator = Evaluator(prepared.qrels, scored, announce=False, spelling=CONFIG)  # warnings name config keys
    both = evaluate_file(evaluator, run_path(output, prepared.run), run_file_options(experiment))
    return Scored(keep_measures(both, kept).whole_counts(), both.means[judged])


def run_file_options(experiment: Experiment) -> RunFileOptions:
    """How an experiment's run files are read for scoring: its depth, MaxP if it has passages."""
    return RunFileOptions(passage_separator=experiment.passage_separator, depth=experiment.depth or experiment.k)


def run_config(
    config: Config, *, only: Iterable[str] = (), force: bool = False, log: TextIO | None = None,
    with_finished: bool = False, say: Say | None = None, failed: Callable[[RunSpec, Exception], None] | None = None,
) -> list[Outcome]:
    """Produce (or reuse) every selected run of the config and score it; progress goes to `log`
    (stderr by default), and so do the notes (warnings, a run ranked again or left out, what
    scoring found), each one line, unless `say` takes them (the Python API warns them). With
    `with_finished`, the outcomes also hold every other run of the config already finished
    with the current inputs (a leaderboard after `--only X` shows all runs, not X alone), in
    config order. A run that raises ends the config, unless `failed` takes its error (`harness
    run --keep-going`): then it has no outcome, leaves no file, and the other runs go on."""
    log = log or sys.stderr
    say = say or saying(log)
    output = config.output  # folder_lock makes it, or says in one line why it cannot
    workspace = Workspace(output)
    outcomes = []
    selected_runs = config.selected(only)
    warn_shallow(selected_runs, say)
    warn_never_resumed(selected_runs, say)
    selected = {run.tag for run in selected_runs}
    # one writer per output folder: a second run waits, then skips what the first finished
    with folder_lock(output, log), shared_retrievers(), llm_endpoints(config.llm), \
            preloading(preloads(run for run in selected_runs if force or not _has_files(run, output))):
        for run in config.runs():
            if run.tag not in selected:
                if with_finished and (outcome := _finished_outcome(run, workspace, output, say)) is not None:
                    outcomes.append(outcome)
                continue
            try:
                outcomes.append(_produce(run, workspace, config, force, log, say))
            except Exception as error:
                if failed is None:
                    raise
                failed(run, error)
    for experiment in {id(run.experiment): run.experiment for run in selected_runs}.values():
        if experiment.unscored:
            say(f"{experiment.file}: {experiment.key}: {experiment.unscored}: its runs are written to {output}, "
                "not scored")
    for outcome in outcomes:  # what the leaderboard's numbers do not show, as `harness eval` says it
        if outcome.evaluation is None:
            continue
        for line in reading_lines(outcome.evaluation, qrels_name(outcome.qrels)):
            say(line)
        if outcome.evaluation.missing_queries:  # (listed in the run's JSON)
            say(f"{outcome.run.tag}: {outcome.evaluation.judged_note()}")
    return outcomes


def _produce(run: RunSpec, workspace: Workspace, config: Config, force: bool, log: TextIO, say: Say) -> Outcome:
    """The outcome of one selected run: reused where finished with the same inputs, else made."""
    output = config.output
    prepared = prepare(run, workspace)
    record = None if force else _record(run, output)  # read once: whether finished, and what it records
    skipped, why = _finished(prepared, output, record)
    if skipped:  # (record is the JSON read)
        print(f"{run.tag}: {_skipped(prepared, output, record)}", file=log)
        scored, code = finished_scores(prepared, output, record), record.get("code")
    else:
        if why:
            say(f"{run.tag}: {why}, so its recorded scores are not its: ranked again")
        scored, code = execute(prepared, workspace, output, config, log, say), provenance.code()
    return Outcome.of(prepared, output, skipped, scored, code)


def warn_shallow(runs: Iterable[RunSpec], say: Say) -> None:
    """A warning per experiment whose measures read deeper than its runs go (shallow_measures)."""
    for experiment in {id(run.experiment): run.experiment for run in runs}.values():
        if (problem := shallow_measures(experiment)) is not None:
            say(f"warning: {problem}")


def warn_never_resumed(runs: Iterable[RunSpec], say: Say) -> None:
    """A warning per plug-in whose runs are never resumed (provenance.never_resumed)."""
    for what, why in provenance.never_resumed(runs).items():
        say(f"warning: {what}: its runs are made again every time, never resumed: {why}")


def preloads(runs: Iterable[RunSpec]) -> list[Callable[[], object]]:
    """What the runs' retrievers, and those nested in them, declare they can load before they
    are built with their params (`Declaration.preload_for`: torch and sentence-transformers,
    say; bm25's kernels for its numpy backend alone), each once. The
    runner asks it for the runs whose files are not there yet: those it is sure to make."""
    loads: dict[Callable[[], object], None] = {}
    for run in runs:
        registry = TASKS.get(run.experiment.task).retrievers()
        name, params = run.retriever.name, run.retriever.params
        for named, own in retriever_specs(name, params) if registry is RETRIEVERS else [(name, params)]:
            if (preload := registry.declaration(named).preload_for(own)) is not None:
                loads.setdefault(preload)
    return list(loads)


@contextmanager
def preloading(loads: list[Callable[[], object]]) -> Iterator[None]:
    """The block runs while one background thread runs `loads` in turn: the demo's first run
    imports torch and sentence-transformers (14 s on one core, most of it compiling) while its
    BM25 runs go. A load that fails is left to the build, which says what is wrong. What the
    loads made then lives as long as the process (torch, transformers, numba: about 470,000
    objects): it is frozen, out of the garbage collector's full passes, which walked it 0.2 s
    each, 4 s in the demo."""
    def run() -> None:
        for preload in loads:
            try:
                preload()
            except Exception:  # noqa: BLE001 - reported by the build that needs it
                pass
        gc.freeze()

    if not loads:
        yield
        return
    thread = threading.Thread(target=run, name="preload", daemon=True)
    thread.start()
    yield
    thread.join()  # not on an error: an interrupted run does not wait for an import


def _finished_outcome(run: RunSpec, workspace: Workspace, output: Path, say: Say) -> Outcome | None:
    """A run not selected this time, if its files record the current inputs; else None (said
    in one line when files are there: of other inputs, or of a plug-in never resumed, whose
    files are never known to be of the current inputs)."""
    if not _has_files(run, output):
        return None
    if never := provenance.never_resumed([run]):
        say(f"{run.tag}: left out of the leaderboard: {' and '.join(never)} {'is' if len(never) == 1 else 'are'} "
            f"never resumed, so its files are not known to be of the current inputs (select it with --only "
            f"{run.tag} to make it again): {_whose(never)}")
        return None
    prepared = prepare(run, workspace)
    record = _record(run, output)
    done, why = _finished(prepared, output, record)
    if not done:  # (else record is the JSON read)
        why = why or "its files were made from other inputs"
        say(f"{run.tag}: left out of the leaderboard: {why} (run it with --only {run.tag})")
        return None
    return Outcome.of(prepared, output, True, finished_scores(prepared, output, record), record.get("code"))


def _whose(reasons: Mapping[str, str]) -> str:
    """Why plug-ins are never resumed: one's reason, or each one's after its name, so that
    two reasons are not left for a user to match to their plug-ins."""
    if len(reasons) == 1:
        return next(iter(reasons.values()))
    return "; ".join(f"{what}: {why}" for what, why in reasons.items())


def plan(config: Config, runs: list[RunSpec], *,
         log: TextIO | None = None) -> list[tuple[Prepared, tuple[bool, str | None]]]:
    """Dry run: each of `runs` (Config.selected's, taken by the caller: its errors are said before
    the rest) with its inputs loaded and hashed, and whether it is finished (`finished`: and why
    not, when only its run file was edited)."""
    workspace, say = Workspace(), saying(log or sys.stderr)
    warn_shallow(runs, say)
    warn_never_resumed(runs, say)
    with shared_retrievers(), llm_endpoints(config.llm):
        prepared = [prepare(run, workspace) for run in runs]
    return [(p, finished(p, config.output)) for p in prepared]
