"""TREC CAsT 2019-2022 topics on the shipped files, and the ir_datasets route for 2019/2020."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from harness.paths import data_root
from harness.topics import load
from harness.topics.cast import from_ir_datasets


@pytest.mark.parametrize(
    "name, conversations, turns",
    [("cast2019", 50, 479), ("cast2019:train", 30, 269), ("cast2020", 25, 216), ("cast2021", 26, 239),
     ("cast2022", 50, 284)],
)
def test_counts(name, conversations, turns):
    benchmark = load(name)
    assert (len(benchmark.conversations), len(benchmark.turns)) == (conversations, turns)


@pytest.mark.parametrize(
    "name, judged", [("cast2019", 173), ("cast2019:train", 120), ("cast2020", 208), ("cast2021", 158), ("cast2022", 165)]
)
def test_every_judged_turn_comes_from_the_topics(name, judged):
    benchmark = load(name)
    qrels = benchmark.qrels()
    assert len(qrels.judgments) == judged
    assert set(qrels.judgments) <= {turn.qid for turn in benchmark.turns}


def test_2019_manual_rewrites_come_from_the_annotated_tsv():
    turns = {turn.qid: turn for turn in load("cast2019").turns}
    assert turns["31_2"].utterance == "Is it treatable?"
    assert turns["31_2"].manual_rewrite == "Is throat cancer treatable?"
    train = load("cast2019:train").turns
    assert sum(turn.manual_rewrite is not None for turn in train) == 23  # the TSV covers topics 1-2


def test_2020_merges_manual_and_automatic_files():
    turn = load("cast2020").turns[1]
    assert turn.qid == "81_2"
    assert turn.manual_rewrite == "Now my garage door opener stopped working. Why?"
    assert turn.automatic_rewrite == "Why did garage door opener stop working?"
    assert turn.automatic_canonical_result_id == "MARCO_5498474"


def test_2021_canonical_response_and_its_passage_id():
    turn = load("cast2021").turns[0]
    assert turn.qid == "106_1"
    assert turn.response.startswith("More research is needed. Types Breast cancer can be")
    assert turn.provenance == ("MARCO_D59865-7",)


def test_2022_paths_are_the_organisers_flattened_paths():
    """Flattening the trees gives the same root-to-leaf user-turn paths as the organisers' file."""
    flattened = json.loads(
        (data_root() / "cast/2022/2022_evaluation_topics_flattened_duplicated_v1.0.json").read_text()
    )
    expected = Counter(tuple(f"{topic['number']}_{turn['number']}" for turn in topic["turn"]) for topic in flattened)
    ours = Counter(tuple(turn.qid for turn in conversation.turns) for conversation in load("cast2022").conversations)
    assert ours == expected


def test_2022_turn_ids_and_parent_links():
    benchmark = load("cast2022")
    listed = json.loads((data_root() / "cast/2022/2022_evaluation_topics_turn_ids.json").read_text())
    assert {turn.qid for turn in benchmark.turns} == {f"{t}_{n}" for t, ids in listed.items() for n in ids}
    # a path's user turns are linked as in the organisers' tree: each turn's nearest user
    # ancestor is the turn before it on the path, and the first turn has none
    tree = json.loads((data_root() / "cast/2022/2022_evaluation_topics_tree_v1.0.json").read_text())
    nodes = {f"{t['number']}_{n['number']}": n for t in tree for n in t["turn"]}

    def user_ancestor(qid: str) -> str | None:
        topic, parent = qid.split("_")[0], nodes[qid].get("parent")
        while parent is not None and nodes[f"{topic}_{parent}"]["participant"] != "User":
            parent = nodes[f"{topic}_{parent}"].get("parent")
        return None if parent is None else f"{topic}_{parent}"

    for conversation in benchmark.conversations:
        parents = [user_ancestor(turn.qid) for turn in conversation.turns]
        assert parents == [None, *(turn.qid for turn in conversation.turns[:-1])]


def test_2022_a_shared_turn_has_the_same_history_in_every_path():
    histories: dict[str, tuple[str, ...]] = {}
    for conversation in load("cast2022").conversations:
        for index, turn in enumerate(conversation.turns):
            history = tuple(t.qid for t in conversation.history(index))
            assert histories.setdefault(turn.qid, history) == history


@pytest.mark.parametrize("year", [2019, 2020])
def test_ir_datasets_route_gives_the_same_queries_and_qrels(year):
    route = from_ir_datasets(f"trec-cast/v1/{year}")
    native = load(f"cast{year}")
    manual = year == 2020  # ir_datasets' 2019 queries carry no rewrites
    assert [[t.qid, t.utterance, t.manual_rewrite, t.automatic_rewrite] for t in route.turns] == [
        [t.qid, t.utterance, t.manual_rewrite if manual else None, t.automatic_rewrite if manual else None]
        for t in native.turns
    ]
    assert route.qrels().judgments == native.qrels().judgments


_HOME_AFTER_IMPORT = """
import os, sys
first, second = sys.argv[1:]
__import__(first)
import ir_datasets
before = ir_datasets.util.home_path()
__import__(second)
from harness.topics.cast import from_ir_datasets
from_ir_datasets("trec-cast/v1/2020").qrels()
print(before == ir_datasets.util.home_path(), os.environ.get("IR_DATASETS_HOME"), os.path.exists(before / "trec-cast"))
"""


@pytest.mark.parametrize("home, order", [("set", ("ir_datasets", "harness")), ("default", ("harness", "ir_datasets"))])
def test_import_harness_leaves_ir_datasets_home_as_it_was(tmp_path, home, order):
    """A researcher's ir_datasets home (IR_DATASETS_HOME, or ~/.ir_datasets) is neither changed
    nor used for the harness's CAsT files, whichever is imported first."""
    env = {k: v for k, v in os.environ.items() if k != "IR_DATASETS_HOME"} | {"HOME": str(tmp_path)}
    mine = tmp_path / "my-ir-datasets"
    if home == "set":
        env["IR_DATASETS_HOME"] = str(mine)
    done = subprocess.run([sys.executable, "-c", _HOME_AFTER_IMPORT, *order], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = str(mine) if home == "set" else None
    assert done.stdout.split() == ["True", str(expected), "False"]
