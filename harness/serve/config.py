"""The leaderboard server's config: tasks, teams (token hashes), quota, database, storage.

    database: sqlite:///leaderboard/leaderboard.db   # or postgresql://user@host/db
    storage: leaderboard/files        # uploaded files, named by their SHA-256
    quota: 5                          # accepted uploads per team per UTC day, all tasks together (refusals count)
    max_upload_mb: 64                 # larger uploads get 413
    rejects_per_hour: 20              # refused uploads (422, 413) per team; twice that per address
    client_timeout_s: 20              # a request head, or a gap in a body, longer than this: closed
    tasks:
      - name: ikat2023                # the URL name: /tasks/ikat2023
        title: "TREC iKAT 2023 passage ranking"
        topics: ikat2023              # a benchmark name or an iKAT topics file
        qrels: "{qrels}/ikat/2023-qrels.all-turns.txt"   # hidden: never served; or irds:ID, or
                                      # benchmark:NAME[:SPLIT], the benchmark's own (OpenDialKG's derived ones)
        preset: ikat2023              # or measures: [nDCG@5, ...] (+ depth: 1000)
        # passage_separator: '-'      # judge passage runs '<docid>-<n>' by document (MaxP), as
                                      # the cast2021 preset does; given, it wins over the preset's
        main_measure: nDCG@5          # ranks the board; one of the measures
        formats: [ikat-2023-json, trec]   # ikat-2023-json ikat-2024-json ikat-2025-jsonl trec
        partial: false                # true: runs may answer only some turns
        per_query_scores: true        # false: a team sees only its means (per-query scores
                                      # reveal the grade class of judged documents)
    teams:
      - name: alpha
        token_sha256: 6f1c...         # `harness serve --new-token` prints a token and this line

Checked as strictly as run configs (harness/runner/config.py, whose key-path nodes this
reuses): an unknown key, a missing file, an unknown measure or preset is an error naming
the file and the key path. Relative paths are relative to the folder the server starts in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.atomic import output_problem
from harness.ikat.submission import YEARS, file_format
from harness.paths import home_expanded
from harness.runner.config import (SERVE_KEYS, Node, config_file, lookup, measures_of, names_qrels, read_yaml,
                                   refuse_other_kind)

# upload formats: each iKAT year's file (harness.ikat.submission.YEARS), and TREC runs
FORMAT_YEARS = {file_format(year): year for year in YEARS}
FORMATS = (*FORMAT_YEARS, "trec")
# a response task's upload formats -> harness.responses readers
RESPONSE_FORMATS = {"ikat-2024-json": "ikat-json", "ikat-2025-jsonl": "ikat-2025-jsonl",
                    "trec-rag-jsonl": "trec-rag-jsonl"}
JUDGE_KEYS = ("model", "base_url", "prompt")  # a response task's `llm:` endpoint
DEFAULT_DATABASE = "sqlite:///leaderboard/leaderboard.db"
DEFAULT_STORAGE = "leaderboard/files"
DEFAULT_QUOTA = 5
DEFAULT_MAX_UPLOAD_MB = 64
DEFAULT_REJECTS_PER_HOUR = 20
DEFAULT_CLIENT_TIMEOUT_S = 20
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class TaskConfig:
    name: str
    title: str
    topics: str  # benchmark name or topics file
    qrels: Path | str  # a file, or irds:ID / benchmark:NAME[:SPLIT] (harness.topics.read_qrels_spec)
    measures: tuple[str, ...]  # the main measure first
    depth: int | None
    passage_separator: str | None
    main_measure: str
    formats: tuple[str, ...]
    partial: bool
    per_query_scores: bool = True
    # a response task (harness.serve.responses): the hidden nugget bank and the judge
    nuggets: Path | None = None
    nuggets_format: str | None = None  # a nugget bank format's name; None: told from the file's content
    judge: str = ""
    judge_settings: tuple[tuple[str, str], ...] = ()
    vital_grade: int = 3


@dataclass(frozen=True)
class TeamConfig:
    name: str
    token_sha256: str


@dataclass(frozen=True)
class ServeConfig:
    path: Path
    database: str
    storage: Path
    quota: int
    max_upload_bytes: int
    tasks: dict[str, TaskConfig]
    teams: dict[str, TeamConfig]
    rejects_per_hour: int = DEFAULT_REJECTS_PER_HOUR
    client_timeout_s: float = DEFAULT_CLIENT_TIMEOUT_S

    def team_by_hash(self, token_hash: str) -> TeamConfig | None:
        return next((t for t in self.teams.values() if t.token_sha256 == token_hash), None)


def load_serve_config(path: str | Path) -> ServeConfig:
    path = config_file(path)
    return parse_serve_config(path, read_yaml(path))


def parse_serve_config(path: Path, document: Any) -> ServeConfig:
    from harness.evaluate.names import said_once

    root = Node(path, "", document)
    refuse_other_kind(root, "tasks", ("experiments",), "run")
    top = root.mapping(SERVE_KEYS, required=("tasks", "teams"))
    database = _database(top["database"]) if "database" in top else DEFAULT_DATABASE
    storage = top["storage"].path() if "storage" in top else Path(DEFAULT_STORAGE)
    # where the server writes: a place it cannot write is a config error, found before it listens
    places = [("storage", storage, True)]
    if database.startswith("sqlite:///"):
        places.insert(0, ("database", Path(database.removeprefix("sqlite:///")), False))
    for key, place, folder in places:
        if problem := output_problem(place, folder):
            raise (top[key] if key in top else root.child(key, None)).error(f"cannot write {place}: {problem}")
    with said_once():  # a measure the tasks translate is said once
        tasks = [_task(node) for node in top["tasks"].items()]
    teams = [_team(node) for node in top["teams"].items()]
    for kind, items, node in (("task", tasks, top["tasks"]), ("team", teams, top["teams"])):
        names = [item.name for item in items]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise node.error(f"two {kind}s are named {repeated[0]!r}")
    hashes = [team.token_sha256 for team in teams]
    if len(set(hashes)) != len(hashes):
        raise top["teams"].error("two teams share a token hash; give each team its own token")
    return ServeConfig(
        path=path,
        database=database,
        storage=storage,
        quota=top["quota"].positive_int() if "quota" in top else DEFAULT_QUOTA,
        max_upload_bytes=(top["max_upload_mb"].positive_int() if "max_upload_mb" in top else DEFAULT_MAX_UPLOAD_MB) << 20,
        tasks={task.name: task for task in tasks},
        teams={team.name: team for team in teams},
        rejects_per_hour=top["rejects_per_hour"].positive_int() if "rejects_per_hour" in top else DEFAULT_REJECTS_PER_HOUR,
        client_timeout_s=top["client_timeout_s"].positive_int() if "client_timeout_s" in top else DEFAULT_CLIENT_TIMEOUT_S,
    )


def _database(node: Node) -> str:
    """A URL of a supported backend whose driver is installed (else the server failed on its
    first connection, in a traceback); the error shows the URL's scheme, never its password."""
    from sqlalchemy.exc import ArgumentError

    from harness.serve.store import DATABASES, database_url

    database = node.text()
    supported = "supported: sqlite:///FILE and postgresql://USER:PASSWORD@HOST/DB"
    try:
        url = database_url(database) if "://" in database else None
    except ArgumentError:
        url = None
    if url is None:
        raise node.error(f"expected a database URL ({supported}), found {database.split('://')[0]!r}"
                         f"{'://...' if '://' in database else ''}")
    if url.get_backend_name() not in DATABASES:
        raise node.error(f"{url.drivername} is not supported (no driver for it is installed with the harness); "
                         f"{supported}")
    try:
        url.get_dialect().import_dbapi()
    except ImportError as error:
        raise node.error(f"the {url.drivername} driver ({error.name}) is not installed; {supported} (through "
                         "psycopg, installed with the harness's serve extra)") from None
    except Exception:  # an unknown driver name (postgresql+nosuch): SQLAlchemy's NoSuchModuleError
        raise node.error(f"no driver {url.drivername!r} is installed; {supported}") from None
    return database


def _name(node: Node) -> str:
    name = node.text()
    if not _NAME.match(name):
        raise node.error(f"expected a name of letters, digits, '_', '.', '-' (at most 64), found {name!r}")
    return name


def _task(node: Node) -> TaskConfig:
    from harness.evaluate import parse_measures

    if isinstance(node.value, dict) and "nuggets" in node.value:
        return _response_task(node)

    keys = node.mapping(
        ("name", "title", "topics", "qrels", "measures", "preset", "depth", "passage_separator", "main_measure",
         "formats", "partial", "per_query_scores"),
        required=("name", "topics", "qrels", "main_measure", "formats"),
    )
    name = _name(keys["name"])
    measures, preset_depth, passage_separator = measures_of(keys, node)
    main = str(lookup(keys["main_measure"], lambda: parse_measures([keys["main_measure"].text()])[0]))
    if main not in measures:
        raise keys["main_measure"].error(f"{main} is not among the task's measures ({', '.join(measures)})")
    formats = tuple(item.text() for item in keys["formats"].items())
    for index, fmt in enumerate(formats):
        if fmt not in FORMATS:
            raise keys["formats"].child(index, fmt).error(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    topics = keys["topics"].text()
    lookup(keys["topics"], lambda: _check_topics(topics))
    return TaskConfig(
        name=name,
        title=keys["title"].text() if "title" in keys else name,
        topics=topics,
        qrels=_qrels(keys["qrels"]),
        measures=(main, *[m for m in measures if m != main]),
        depth=keys["depth"].positive_int() if "depth" in keys else preset_depth,
        passage_separator=passage_separator,
        main_measure=main,
        formats=formats,
        partial=keys["partial"].flag() if "partial" in keys else False,
        per_query_scores=keys["per_query_scores"].flag() if "per_query_scores" in keys else True,
    )


def _qrels(node: Node) -> Path | str:
    """A qrels file, or `irds:ID` or `benchmark:NAME[:SPLIT]` as a run config's `qrels:` names
    them (read at start, with the topics); a benchmark that has none is an error here."""
    from harness.topics import benchmark_hint, benchmark_qrels_name, own_qrels

    if not names_qrels(node.value):
        return node.existing_path(benchmark_hint(node.value))
    if (name := benchmark_qrels_name(node.value)) is not None:
        lookup(node, lambda: own_qrels(name))
    return node.value


def _check_topics(spec: str) -> None:
    """Read the topics now, as the task will (topic files are small), so that an unknown
    benchmark, split or a bad topics file fails here with its key path, not at start-up."""
    from harness.topics.ikat import load_topics

    load_topics(spec)


def _team(node: Node) -> TeamConfig:
    keys = node.mapping(("name", "token_sha256"), required=("name", "token_sha256"))
    digest = keys["token_sha256"].text()
    if not _SHA256.match(digest):
        raise keys["token_sha256"].error("expected the 64 hex digits of the token's SHA-256 (harness serve --new-token)")
    return TeamConfig(_name(keys["name"]), digest)


def _response_task(node: Node) -> TaskConfig:
    """A task scoring generated responses against hidden nuggets (harness.serve.responses)."""
    from harness.responses.evaluation import MEASURES

    keys = node.mapping(("name", "title", "topics", "nuggets", "nuggets_format", "vital_grade", "judge", "llm",
                         "main_measure", "formats", "per_query_scores"),
                        required=("name", "topics", "nuggets", "judge", "formats"))
    main = keys["main_measure"].text() if "main_measure" in keys else MEASURES[0]
    if main not in MEASURES:
        raise keys["main_measure"].error(f"expected one of {', '.join(MEASURES)}, found {main!r}")
    formats = tuple(item.text() for item in keys["formats"].items())
    for index, fmt in enumerate(formats):
        if fmt not in RESPONSE_FORMATS:
            raise keys["formats"].child(index, fmt).error(f"unknown response format {fmt!r}; known: "
                                                          f"{', '.join(RESPONSE_FORMATS)}")
    judge = keys["judge"].text()
    llm = keys["llm"].mapping(JUDGE_KEYS, required=("model", "base_url")) if "llm" in keys else {}
    if judge == "llm" and not llm:
        raise keys["judge"].error("judge: llm needs llm: {model, base_url[, prompt]}")
    if llm and judge != "llm":  # left from an llm judge, it would read as if it took part in the scoring
        raise keys["llm"].error(f"read by judge: llm alone; this task's judge is {judge!r}")
    if "prompt" in llm:  # filled once now: a prompt its items cannot fill failed at the first upload's scoring
        from harness.judge.llm import check_prompt
        from harness.judge.scales import SUPPORT_0_2
        from harness.responses.assign import sample_item

        prompt = llm["prompt"].existing_path()
        lookup(llm["prompt"], lambda: check_prompt(prompt, sample_item("nuggets"), SUPPORT_0_2))
    if judge.startswith(("file:", "assignments:")) and not home_expanded(judge.partition(":")[2]).is_file():
        raise keys["judge"].error(f"no file {judge.partition(':')[2]}")
    topics = keys["topics"].text()
    lookup(keys["topics"], lambda: _check_topics(topics))
    nuggets = keys["nuggets"].existing_path()
    nuggets_format = keys["nuggets_format"].text() if "nuggets_format" in keys else None
    if nuggets_format is not None:  # a registered or plug-in format, as `harness responses eval --nuggets-format`
        from harness.responses.nuggets import BANKS

        lookup(keys["nuggets_format"], lambda: BANKS.get(nuggets_format))
    return TaskConfig(
        name=_name(keys["name"]), title=keys["title"].text() if "title" in keys else keys["name"].text(),
        topics=topics, qrels=nuggets, measures=(main, *[m for m in MEASURES if m != main]), depth=None,
        passage_separator=None, main_measure=main, formats=formats, partial=True, nuggets=nuggets,
        nuggets_format=nuggets_format, judge=judge,
        judge_settings=tuple((key, str(llm[key].existing_path()) if key == "prompt" else llm[key].text())
                             for key in JUDGE_KEYS if key in llm),
        vital_grade=keys["vital_grade"].positive_int() if "vital_grade" in keys else 3,
        per_query_scores=keys["per_query_scores"].flag() if "per_query_scores" in keys else True)
