"""Harness benchmarks as ir_datasets ids (`harness/<benchmark>[/<split>]`), and so in PyTerrier."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import harness  # noqa: F401  (installs the ir_datasets hook)
from harness.cli import main
from harness.paths import qrels_root
from harness.queries import stream
from harness.topics import load
from harness.trec import read_qrels


def _export(tmp_path, name: str, strategy: str) -> list[tuple[str, str]]:
    out = tmp_path / f"{strategy}.jsonl"
    assert main(["topics", "export", name, "--strategy", strategy, "--output", str(out)]) == 0
    return [(r["qid"], r["query"]) for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())]


def _shipped_qrels() -> set[tuple[str, str, int]]:
    judgments = read_qrels(qrels_root() / "ikat" / "2023-qrels.all-turns.txt").judgments
    return {(qid, docid, grade) for qid, docs in judgments.items() for docid, grade in docs.items()}


def test_ir_datasets_gives_the_exported_queries_and_the_qrels(tmp_path):
    import ir_datasets

    dataset = ir_datasets.load("harness/ikat2023/test")
    queries = list(dataset.queries_iter())
    assert [(q.query_id, q.text) for q in queries] == _export(tmp_path, "ikat2023:test", "raw")
    assert [(q.query_id, q.manual_rewrite) for q in queries] == _export(tmp_path, "ikat2023:test", "manual")
    assert {(q.query_id, q.doc_id, q.relevance) for q in dataset.qrels_iter()} == _shipped_qrels()


@pytest.mark.parametrize("first", ["harness.irds", "harness"])
def test_the_ids_are_registered_whichever_module_a_fresh_process_imports_first(first):
    """`import harness.irds` alone registered nothing: it failed half loaded, its own import of
    ir_datasets running the hook that asked it to register."""
    code = f"import {first}, ir_datasets; print(len(list(ir_datasets.load('harness/ikat2023/test').queries_iter())))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert int(done.stdout) > 0


def test_pyterrier_irds_gives_the_same_without_java(tmp_path):
    import pyterrier as pt

    dataset = pt.get_dataset("irds:harness/ikat2023/test")
    topics = dataset.get_topics("text")
    assert list(zip(topics.qid, topics["query"])) == _export(tmp_path, "ikat2023:test", "raw")
    qrels = dataset.get_qrels()
    assert set(zip(qrels.qid, qrels.docno, qrels.label)) == _shipped_qrels()
    assert not pt.java.started()


def test_queries_carry_context_rewrites_and_ptkb():
    import ir_datasets

    queries = list(ir_datasets.load("harness/ikat2023/test").queries_iter())
    third = queries[2]
    assert third.turn_index == 2 and [u for u, _ in third.context] == [q.text for q in queries[:2]]
    assert third.context[0][1] == queries[0].response  # (utterance, response) pairs
    assert third.ptkb and all(statement_id and text for statement_id, text in third.ptkb)
    assert third.manual_rewrite and third.provenance


def test_cosrec_query_context_is_the_history_the_strategies_read_without_the_turns_own_reply():
    """An utterance's intents and personalised copies are separate turns sharing its utterance and
    reply: a copy's context held the current request with its reply once per earlier copy."""
    import ir_datasets

    queries = {q.query_id: q for q in ir_datasets.load("harness/cosrec-curated").queries_iter()}
    read = {q.qid: q.context for q in stream(load("cosrec-curated").conversations, "all_history")}
    assert {qid: (*(u for u, _ in q.context), q.text) for qid, q in queries.items()} == read
    assert queries["CoSRec-Curated_1_0_0#3"].context == ()
    (first,) = queries["CoSRec-Curated_1_1_0#1"].context
    assert first == (queries["CoSRec-Curated_1_0_0"].text, queries["CoSRec-Curated_1_0_0"].response)


def test_cosrec_query_names_the_user_of_a_personalised_copy():
    import ir_datasets

    queries = {q.query_id: q for q in ir_datasets.load("harness/cosrec-curated").queries_iter()}
    users = sorted(load("cosrec-curated").conversations[0].keywords_by_user)
    assert [queries[f"CoSRec-Curated_1_0_0#{k}"].user for k in range(4)] == [*users, ""]
    assert queries["CoSRec-Curated_1_0_0"].user == "" and [i for i, _ in queries["CoSRec-Curated_1_0_0"].ptkb] == users


def test_opendialkg_query_context_is_the_dialogue_before_the_request():
    """Its conversations hold the recommendation turns only: the context was empty for most turns."""
    import ir_datasets

    turns = {t.qid: t for t in load("opendialkg:test").turns}
    queries = list(ir_datasets.load("harness/opendialkg/test").queries_iter())
    assert len(queries) == len(turns) and all(q.context == tuple((u, "") for u in turns[q.query_id].context)
                                               for q in queries)
    assert [u for u, _ in {q.query_id: q for q in queries}["11_3"].context] == [
        "Could you recommend anything by the actor Don Cheadle?",
        "Sure, Don Cheadle starred in The Guard, Talk to Me, and Crash. Do you like his movies?"]


def test_every_benchmark_and_split_has_an_id():
    import ir_datasets

    ids = set(ir_datasets.registry)
    assert {"harness/ikat2023/test", "harness/ikat2023", "harness/cast2022", "harness/pragmaticqa/val",
            "harness/cosrec-curated", "harness/opendialkg/valid", "harness/crsarena/open"} <= ids
    cast = ir_datasets.load("harness/cast2022")
    assert cast.has_qrels() and not cast.has_docs()
    assert sum(1 for _ in cast.queries_iter()) == 205  # each qid of the flattened trees once
    assert not ir_datasets.load("harness/ikat2025").has_qrels()


@pytest.mark.parametrize("name", ["harness/pragmaticqa/val", "harness/opendialkg"])
def test_docs_where_the_benchmark_brings_a_corpus(name):
    import ir_datasets

    dataset = ir_datasets.load(name)
    documents = list(dataset.docs_iter())
    assert dataset.has_docs() and len(documents) == dataset.docs_count() > 0
    assert len({d.doc_id for d in documents}) == len(documents) and all(d.text for d in documents)


@pytest.mark.slow
def test_import_harness_stays_light_and_registers_on_ir_datasets_import():
    code = ("import sys, harness; assert 'ir_datasets' not in sys.modules and 'harness.topics' not in sys.modules;"
            "import ir_datasets; assert 'harness/ikat2023/test' in set(ir_datasets.registry)")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = "import ir_datasets, harness; assert 'harness/cast2019/train' in set(ir_datasets.registry)"
    subprocess.run([sys.executable, "-c", code], check=True)
