"""PyTerrier both ways: a PyTerrier pipeline as a harness retriever, and the harness's query
strategies as PyTerrier transformers inside pt.Experiment.

The pipeline's first stage is BM25 from bm25s over the iKAT 2023 test provenance passages,
indexed here: Terrier's own BM25 needs jars PyTerrier fetches from Maven at first use, which
an offline machine cannot. Everything else is PyTerrier itself (`%` rank cutoff, `>>`,
pt.Experiment, the `irds:harness/...` topics and qrels).
"""

from __future__ import annotations

import pytest

import harness
from harness.queries import stream
from harness.topics import load
from harness.trec import read_run
from tests.conftest import extra

pt = extra("pyterrier", "test")
bm25s = extra("bm25s", "test")
pd = pytest.importorskip("pandas")

BENCHMARK = "ikat2023:test"


class BM25(pt.Transformer):
    """bm25s over a list of documents, as a PyTerrier retrieval transformer."""

    def __init__(self, documents, k: int = 100) -> None:
        self.ids = [document.id for document in documents]
        self.k = min(k, len(self.ids))
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize([d.contents for d in documents], stopwords="en", show_progress=False),
                         show_progress=False)

    def transform(self, topics):
        tokens = bm25s.tokenize(list(topics["query"]), stopwords="en", return_ids=False, show_progress=False)
        found, scores = self.model.retrieve(tokens, k=self.k, show_progress=False)
        rows = [(qid, query, self.ids[doc], float(score))
                for qid, query, docs, values in zip(topics["qid"], topics["query"], found, scores)
                for doc, score in zip(docs, values)]
        return pt.model.add_ranks(pd.DataFrame(rows, columns=["qid", "query", "docno", "score"]))


@pytest.fixture(scope="module")
def bm25():
    return BM25(list(load(BENCHMARK).corpus.documents()))


@pytest.fixture(scope="module")
def dataset():
    return pt.get_dataset(f"irds:harness/{BENCHMARK.replace(':', '/')}")


def test_a_pyterrier_pipeline_is_a_retriever(bm25, tmp_path):
    pipeline = bm25 % 20
    config = {"k": 20, "output": str(tmp_path), "experiments": [
        {"topics": BENCHMARK, "strategies": ["manual"], "retrievers": ["pt-bm25"], "preset": "ikat2023"}]}
    _, aggregate = harness.run(config, retrievers={"pt-bm25": pipeline}, quiet=True)
    assert aggregate.loc[0, "queries"] > 100
    run = read_run(tmp_path / "ikat2023-test.manual.pt-bm25.run")
    queries = {q.qid: q.text for q in stream(load(BENCHMARK).conversations, "manual")}
    qid = next(iter(queries))
    own = pipeline.transform(pd.DataFrame({"qid": [qid], "query": [queries[qid]]}))
    ranked = sorted(run.scores[qid].items(), key=lambda item: (-item[1], item[0]))
    assert [docid for docid, _ in ranked] == list(own["docno"]) and len(ranked) == 20


def test_a_strategy_as_a_transformer_gives_the_queries_harness_run_gives(dataset):
    topics = dataset.get_topics("text")
    rewritten = harness.strategy("all_history", BENCHMARK)(topics)
    expected = {q.qid: q.text for q in stream(load(BENCHMARK).conversations, "all_history")}
    assert dict(zip(rewritten["qid"], rewritten["query"])) == expected
    assert list(rewritten["query_0"]) == list(topics["query"])  # PyTerrier's convention: the query before


def test_harness_strategies_run_inside_pt_experiment(bm25, dataset):
    topics, qrels = dataset.get_topics("text"), dataset.get_qrels()
    from ir_measures import nDCG

    table = pt.Experiment([harness.strategy(name, BENCHMARK) >> bm25 for name in ("raw", "manual")],
                          topics, qrels, [nDCG @ 3], names=["raw", "manual"], validate="ignore")
    scores = dict(zip(table["name"], table["nDCG@3"]))
    assert scores["manual"] > scores["raw"] > 0  # the manual rewrites resolve what raw turns leave open


def test_a_qid_outside_the_benchmark_is_one_line(dataset):
    with pytest.raises(harness.errors.HarnessError, match="qid 'nope' is not a turn of ikat2023:test"):
        harness.strategy("raw", BENCHMARK)(pd.DataFrame({"qid": ["nope"], "query": ["x"]}))


def test_an_empty_official_rewrite_is_warned_of_once_a_transform(capsys):
    """As `harness run` says it: each pipeline run says it, each turn once."""
    manual = harness.strategy("manual", BENCHMARK)
    for _ in range(2):
        rewritten = manual(pd.DataFrame({"qid": ["12-1_12", "12-1_12"], "query": ["x", "x"]}))
        assert list(rewritten["query"]) == ["", ""]
        assert capsys.readouterr().err.count("warning: turn 12-1_12: the benchmark's manual rewrite is empty") == 1
