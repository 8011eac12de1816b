"""TREC CAsT 2019-2022 topics, read from the files of daltonj/treccastweb.

- 2019 (`cast2019`, splits `test` = evaluation topics, judged by 2019qrels.txt, and `train`):
  raw utterances from the JSON topics, manual resolutions from the annotated TSV (all
  evaluation turns; only the first 23 training turns have one).
- 2020 (`cast2020`): the manual topic file (raw, manual and automatic rewrites, the manual
  canonical result) merged with the automatic one (its canonical result id).
- 2021 (`cast2021`): as 2020; the canonical response passage is `Turn.response` and its id
  `<canonical_result_id>-<passage_id>` is `Turn.provenance` (the qrels are document-level).
- 2022 (`cast2022`): topics are trees of User and System nodes linked by `parent`. Every
  root-to-leaf path becomes one Conversation (id `<topic>/<leaf node>`, `topic` `<topic>`); a user turn's
  response is the System node after it on that path. A turn shared by several paths appears in each of them with the same history, so
  every strategy builds the same query for it; consumers dedupe by qid. The user turns must
  be exactly those listed in 2022_evaluation_topics_turn_ids.json.

qids are `<topic>_<turn>` as the qrels spell them (`31_1`, `132_1-3`).

`from_ir_datasets("trec-cast/v1/2019" | "trec-cast/v1/2020")` reads the same years through
ir_datasets' own CAsT classes, fully offline, from the shipped files (ir_datasets' home
folder is neither read nor changed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness import jsonl
from harness.atomic import atomic_write
from harness.errors import HarnessError, InputError, open_input, read_input
from harness.paths import cache_root, data_root, qrels_root
from harness.topics import ADAPTERS, Benchmark
from harness.topics._common import QidSet, choose_split, shipped_qrels
from harness.topics._json import Record, records
from harness.topics.model import ANSWER, Conversation, Turn, declared_fields
from harness.trec import Qrels, read_qrels


@dataclass(frozen=True)
class Cast2019Conversation(Conversation):
    description: str | None = None


@dataclass(frozen=True)
class Cast2020Turn(Turn):
    manual_canonical_result_id: str | None = field(default=None, metadata=ANSWER)
    automatic_canonical_result_id: str | None = field(default=None, metadata=ANSWER)


@dataclass(frozen=True)
class Cast2021Turn(Turn):
    canonical_result_id: str | None = field(default=None, metadata=ANSWER)


DESCRIPTION = "the topic's description, where the file gives one"
CANONICAL_2020 = {
    "manual_canonical_result_id": "the canonical response passage chosen with the manual rewrite (its id)",
    "automatic_canonical_result_id": "the canonical response passage chosen with the automatic rewrite (its id)",
}

TopicTurns = list[tuple[Record, list[tuple[str, Record]]]]


def cast_dir() -> Path:
    return data_root() / "cast"


def _topic_turns(path: Path) -> TopicTurns:
    """(topic, [(qid, turn)]) for a linear CAsT topic file (2019-2021)."""
    qids = QidSet(path)
    topics: TopicTurns = []
    for topic in records(jsonl.read_document(path), path, "topic"):
        number = topic.get("number", int)
        topic = topic.relabel(f"topic {number}")
        turns = []
        for turn in topic.records("turn", "turn"):
            turn_number = turn.get("number", int)
            label = f"topic {number}, turn {turn_number}"
            turns.append((qids.add(f"{number}_{turn_number}", label), turn.relabel(label)))
        topics.append((topic, turns))
    return topics


def _by_qid(path: Path, expected: TopicTurns, primary: Path) -> dict[str, Record]:
    """The turns of a companion file, which must hold exactly the primary file's turns."""
    found = {qid: turn for _, turns in _topic_turns(path) for qid, turn in turns}
    wanted = [qid for _, turns in expected for qid, _ in turns]
    missing = [qid for qid in wanted if qid not in found]
    extra = sorted(set(found) - set(wanted))
    if missing or extra:
        problem = f"turn {missing[0]} of {primary.name} is missing" if missing else f"turn {extra[0]} is not in {primary.name}"
        raise InputError(path, problem)
    return found


def read_resolved_tsv(path: Path) -> dict[str, str]:
    """`qid<TAB>resolved utterance` lines (the 2019 manual rewrites)."""
    resolved: dict[str, str] = {}
    with open_input(path, newline="") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not fields[0] or not fields[1].strip():
                raise InputError(path, f"expected 'qid<TAB>utterance', found {len(fields)} field(s)", line=number)
            if fields[0] in resolved:
                raise InputError(path, f"turn id {fields[0]!r} appears twice", line=number)
            resolved[fields[0]] = fields[1].strip()
    return resolved


def read_2019(split: str) -> tuple[Conversation, ...]:
    folder = cast_dir() / "2019" / "data" / ("evaluation" if split == "test" else "training")
    stem = "evaluation" if split == "test" else "train"
    topics_path = folder / f"{stem}_topics_v1.0.json"
    tsv = folder / ("evaluation_topics_annotated_resolved_v1.0.tsv" if split == "test"
                    else "train_topic_sample_annotated_resolved_v1.0.tsv")
    topics = _topic_turns(topics_path)
    resolved = read_resolved_tsv(tsv)
    known = {qid for _, turns in topics for qid, _ in turns}
    unknown = sorted(set(resolved) - known)
    if unknown:
        raise InputError(tsv, f"turn {unknown[0]} is not in {topics_path.name}")
    return tuple(
        Cast2019Conversation(
            str(topic.get("number", int)),
            tuple(Turn(qid, turn.text("raw_utterance"), manual_rewrite=resolved.get(qid)) for qid, turn in turns),
            title=topic.text("title"),
            description=topic.text("description", optional=True),
        )
        for topic, turns in topics
    )


def _read_manual_and_automatic(year: str, turn_type: type[Turn],
                               turn_fields: Callable[[Record, Record], dict]) -> tuple[Conversation, ...]:
    """2020 and 2021: manual topics (with rewrites) joined turn by turn to the automatic ones;
    `turn_fields(manual turn, automatic turn)` gives the year's own fields of `turn_type`."""
    manual_path = cast_dir() / year / f"{year}_manual_evaluation_topics_v1.0.json"
    automatic_path = cast_dir() / year / f"{year}_automatic_evaluation_topics_v1.0.json"
    topics = _topic_turns(manual_path)
    automatic = _by_qid(automatic_path, topics, manual_path)
    return tuple(
        Conversation(
            str(topic.get("number", int)),
            tuple(
                turn_type(
                    qid,
                    turn.text("raw_utterance"),
                    manual_rewrite=turn.text("manual_rewritten_utterance"),
                    automatic_rewrite=automatic[qid].text("automatic_rewritten_utterance"),
                    **turn_fields(turn, automatic[qid]),
                )
                for qid, turn in turns
            ),
        )
        for topic, turns in topics
    )


def read_2020() -> tuple[Conversation, ...]:
    return _read_manual_and_automatic("2020", Cast2020Turn, lambda turn, automatic: {
        "manual_canonical_result_id": turn.text("manual_canonical_result_id"),
        "automatic_canonical_result_id": automatic.text("automatic_canonical_result_id"),
    })


def read_2021() -> tuple[Conversation, ...]:
    """2021 carries the canonical response passage of each turn."""
    return _read_manual_and_automatic("2021", Cast2021Turn, lambda turn, _automatic: {
        "response": turn.text("passage"),
        "provenance": (f"{turn.text('canonical_result_id')}-{turn.get('passage_id', int)}",),
        "canonical_result_id": turn.text("canonical_result_id"),
    })


def _tree_nodes(path: Path) -> dict[str, dict[str, Record]]:
    """topic number -> node number -> node, for a CAsT 2022 tree file."""
    trees: dict[str, dict[str, Record]] = {}
    for topic in records(jsonl.read_document(path), path, "topic"):
        number = str(topic.get("number", int))
        topic = topic.relabel(f"topic {number}")
        nodes: dict[str, Record] = {}
        for node in topic.records("turn", "turn"):
            node_number = node.text("number")
            node = node.relabel(f"topic {number}, turn {node_number}")
            if node_number in nodes:
                raise node.error(f"turn {node_number!r} appears twice")
            if node.text("participant") not in {"User", "System"}:
                raise node.error(f"participant should be 'User' or 'System', found {node.data['participant']!r}")
            nodes[node_number] = node
        for node in nodes.values():
            parent = node.text("parent", optional=True)
            if parent is not None and parent not in nodes:
                raise node.error(f"parent {parent!r} is not a turn of this topic")
        if number in trees:
            raise topic.error(f"topic {number} appears twice")
        trees[number] = nodes
    return trees


def _paths(nodes: dict[str, Record]) -> Iterator[list[Record]]:
    """Every root-to-leaf path of a topic tree, children in file order."""
    children: dict[str | None, list[Record]] = {}
    for node in nodes.values():
        children.setdefault(node.text("parent", optional=True), []).append(node)

    def walk(path: list[Record]) -> Iterator[list[Record]]:
        below = children.get(path[-1].text("number"), [])
        if not below:
            yield path
        for child in below:
            yield from walk(path + [child])

    for root in children.get(None, []):
        yield from walk([root])


def read_2022() -> tuple[Conversation, ...]:
    folder = cast_dir() / "2022"
    manual_path = folder / "2022_evaluation_topics_tree_v1.0.json"
    automatic_path = folder / "2022_automatic_evaluation_topics_tree_v1.0.json"
    ids_path = folder / "2022_evaluation_topics_turn_ids.json"
    manual, automatic = _tree_nodes(manual_path), _tree_nodes(automatic_path)
    turn_ids = jsonl.read_document(ids_path)
    if not isinstance(turn_ids, dict):
        raise InputError(ids_path, "expected an object: topic number -> [turn ids]")
    conversations = []
    for number, nodes in manual.items():
        if number not in turn_ids:
            raise InputError(ids_path, f"topic {number} of {manual_path.name} is missing")
        users = {n for n, node in nodes.items() if node.text("participant") == "User"}
        listed = Record({"ids": turn_ids[number]}, ids_path, f"topic {number}").strings("ids")
        if set(listed) != users:
            odd = sorted(set(listed) ^ users)[0]
            raise InputError(ids_path, f"turn {odd} is listed but is no user turn of the tree, or the reverse",
                             record=f"topic {number}")
        other = automatic.get(number, {})
        for path in _paths(nodes):
            turns: list[Turn] = []
            for position, node in enumerate(path):
                if node.text("participant") != "User":
                    continue
                node_number = node.text("number")
                if node_number not in other:
                    raise InputError(automatic_path, f"turn {node_number} of {manual_path.name} is missing",
                                     record=f"topic {number}")
                after = path[position + 1] if position + 1 < len(path) else None
                reply = after if after is not None and after.text("participant") == "System" else None
                turns.append(
                    Turn(
                        f"{number}_{node_number}",
                        node.text("utterance"),
                        manual_rewrite=node.text("manual_rewritten_utterance"),
                        automatic_rewrite=other[node_number].text("automatic_rewritten_utterance"),
                        response=reply.text("response") if reply else None,
                        provenance=reply.strings("provenance", optional=True) if reply else (),
                    )
                )
            conversations.append(Conversation(f"{number}/{path[-1].text('number')}", tuple(turns), topic=number))
    return tuple(conversations)


def _train_qrels_2019() -> Qrels:
    """2019_train_topics_mod.qrel repeats two judgments verbatim (lines 527-528, same grade).

    The strict reader refuses any repeat, so the exact repeats are dropped into a cached copy
    first; a repeat with a different grade still fails there.
    """
    source = qrels_root() / "cast" / "2019_train_topics_mod.qrel"
    copy = cache_root() / "qrels" / "cast2019-train.dedup.qrel"
    lines = read_input(source).splitlines()
    with atomic_write(copy) as out:
        seen: set[tuple[str, ...]] = set()
        for line in lines:
            key = tuple(line.split())
            if key not in seen:
                seen.add(key)
                out.write(line + "\n")
    return read_qrels(copy, name=source.stem)


@ADAPTERS.register("cast2019", "TREC CAsT 2019: raw utterances and manual resolutions; `test` = the evaluation "
                   "topics, `train` = the training topics (only their first 23 turns resolved)",
                   splits=("test", "train"), conversation_fields=declared_fields(
                       Cast2019Conversation, description=DESCRIPTION))
def cast2019(split: str | None) -> Benchmark:
    split = choose_split("cast2019", split)
    qrels = shipped_qrels("cast", "2019qrels.txt") if split == "test" else _train_qrels_2019
    return Benchmark(f"cast2019:{split}", read_2019(split), qrels=qrels)


@ADAPTERS.register("cast2020", "TREC CAsT 2020: raw utterances, manual and automatic rewrites",
                   splits=("test",), fields=declared_fields(Cast2020Turn, **CANONICAL_2020))
def cast2020(split: str | None) -> Benchmark:
    choose_split("cast2020", split)
    return Benchmark("cast2020:test", read_2020(), qrels=shipped_qrels("cast", "2020qrels.txt"))


@ADAPTERS.register("cast2021", "TREC CAsT 2021: raw utterances, both rewrites and the canonical response passage; "
                   "document-level qrels", splits=("test",),
                   fields=declared_fields(Cast2021Turn, canonical_result_id="the document of the canonical response "
                                                                            "passage (Turn.provenance: the passage)"))
def cast2021(split: str | None) -> Benchmark:
    choose_split("cast2021", split)
    return Benchmark("cast2021:test", read_2021(), qrels=shipped_qrels("cast", "trec-cast-qrels-docs.2021.qrel"))


@ADAPTERS.register("cast2022", "TREC CAsT 2022: topic trees flattened into root-to-leaf paths (each turn once per "
                   "stream); the organisers' qrels (unofficial)", splits=("test",))
def cast2022(split: str | None) -> Benchmark:
    """The organisers' cast2022.qrel (unofficial: not the final NIST file, see its SOURCE.md)."""
    choose_split("cast2022", split)
    return Benchmark("cast2022:test", read_2022(), qrels=shipped_qrels("cast", "cast2022.qrel"))


# --- the same topics through ir_datasets ---------------------------------------------------

# ir_datasets' dataset -> (its query record type, the shipped topics file, the shipped qrels):
# the same files ir_datasets downloads (md5s equal its pins), read by its own CAsT classes.
def _ir_datasets_files() -> dict[str, tuple[str, Path, Path]]:
    return {
        "trec-cast/v1/2019": ("Cast2019Query", cast_dir() / "2019/data/evaluation/evaluation_topics_v1.0.json",
                              qrels_root() / "cast/2019qrels.txt"),
        "trec-cast/v1/2020": ("Cast2020Query", cast_dir() / "2020/2020_manual_evaluation_topics_v1.0.json",
                              qrels_root() / "cast/2020qrels.txt"),
    }


def from_ir_datasets(dataset_id: str) -> Benchmark:
    """CAsT 2019 / 2020 read by ir_datasets' own CAsT query and qrels classes (raw utterances;
    2020 also both rewrites), from the shipped files: offline, and without touching
    ir_datasets' home folder or settings (a researcher's own ir_datasets set-up stays as it is)."""
    files = _ir_datasets_files()
    if dataset_id not in files:
        raise HarnessError(f"from_ir_datasets reads {' or '.join(files)}, not {dataset_id!r}")
    from ir_datasets.datasets import trec_cast
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels
    from ir_datasets.util import LocalDownload

    query_type, topics_file, qrels_file = files[dataset_id]
    dataset = Dataset(trec_cast.CastQueries(LocalDownload(topics_file, mkdir=False), getattr(trec_cast, query_type)),
                      TrecQrels(LocalDownload(qrels_file, mkdir=False), trec_cast.QRELS_DEFS))
    topics: dict[str, list[Turn]] = {}
    for query in dataset.queries_iter():
        turn = Turn(
            query.query_id,
            query.raw_utterance,
            manual_rewrite=getattr(query, "manual_rewritten_utterance", None),
            automatic_rewrite=getattr(query, "automatic_rewritten_utterance", None),
        )
        topics.setdefault(str(query.topic_number), []).append(turn)

    def qrels() -> Qrels:
        judgments: dict[str, dict[str, int]] = {}
        for qrel in dataset.qrels_iter():
            judgments.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
        return Qrels(dataset_id, judgments)

    return Benchmark(dataset_id, tuple(Conversation(t, tuple(turns)) for t, turns in topics.items()), qrels=qrels)
