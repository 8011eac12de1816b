"""The cross-encoder re-ranking stage.

No trained cross-encoder is available offline, so the real code path runs on a
sentence-transformers CrossEncoder built from the shipped MiniLM weights with an untrained
(seeded) scoring head: its scores are meaningless, but they are the library's own, and the
stage must order hits exactly by them.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from harness.errors import HarnessError
from harness.retrieve import build
from harness.retrieve.embeddings import default_model_path, passage_text
from harness.retrieve.rerank import rerank
from tests.conftest import SMALL, SMALL_QUERIES as QUERIES, ikat_corpus, ikat_passages, shared_cache

pytestmark = [pytest.mark.model, pytest.mark.slow]



@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    import torch
    from sentence_transformers import CrossEncoder

    bert = tmp_path_factory.mktemp("minilm-bert")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(default_model_path() / name, bert / name)
    torch.manual_seed(0)
    model = CrossEncoder(str(bert), num_labels=1, local_files_only=True)
    folder = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def first_stage(tmp_path_factory):
    return {"name": "dense", "cache_dir": shared_cache(tmp_path_factory)}


def test_rerank_orders_the_first_stage_hits_by_cross_encoder_score(cross_encoder_dir, first_stage):
    import torch

    corpus = ikat_corpus(SMALL)
    reranker = build("rerank", corpus=corpus, first_stage=first_stage, model=str(cross_encoder_dir), depth=6)
    results = reranker.search(QUERIES, 4)
    first = reranker.first_stage.search(QUERIES, 6)
    texts = {document.id: passage_text(document) for document in ikat_passages(limit=SMALL)}
    for query in QUERIES:
        candidates = [hit.docid for hit in first[query.qid]]
        scores = reranker.model.predict([(query.text, texts[docid]) for docid in candidates], activation_fn=torch.nn.Identity())
        expected = sorted(zip(scores.tolist(), candidates), key=lambda pair: -pair[0])[:4]
        assert [hit.docid for hit in results[query.qid]] == [docid for _, docid in expected]
        assert [hit.score for hit in results[query.qid]] == pytest.approx([score for score, _ in expected], abs=1e-5)


def test_a_stages_threads_apply_to_its_own_scoring_and_leave_torch_as_it_was(cross_encoder_dir, first_stage):
    """Building a stage with `threads:` does not set torch's thread count: a stage built after it without
    `threads:` used to reset the count for both (the last built decided). Each scores on its own count."""
    import torch

    cores, before = len(os.sched_getaffinity(0)), torch.get_num_threads()
    torch.set_num_threads(cores + 1)  # neither stage's count
    try:
        stage = {"corpus": ikat_corpus(SMALL), "first_stage": first_stage, "model": str(cross_encoder_dir), "depth": 3}
        one, every = build("rerank", **stage, threads=1), build("rerank", **stage)
        assert torch.get_num_threads() == cores + 1
        seen: list[int] = []
        words = next(module for module in one.model.modules() if isinstance(module, torch.nn.Embedding))  # once a batch
        hook = words.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
        try:
            one.search(QUERIES[:1], 3)
            every.search(QUERIES[:1], 3)
        finally:
            hook.remove()
        assert seen == [1, cores] and torch.get_num_threads() == cores + 1
    finally:
        torch.set_num_threads(before)


def test_without_a_model_rerank_refuses_to_start_rather_than_pass_the_first_stage_through(first_stage):
    with pytest.raises(HarnessError, match=re.escape("retriever 'rerank' needs model")):
        build("rerank", corpus=ikat_corpus(SMALL), first_stage=first_stage)


def test_a_missing_cross_encoder_folder_is_a_clear_error(first_stage, tmp_path):
    with pytest.raises(HarnessError, match="not found .* local folders only"):
        build("rerank", corpus=ikat_corpus(SMALL), first_stage=first_stage, model=str(tmp_path / "absent"))


def test_a_bi_encoder_is_not_accepted_as_a_cross_encoder(first_stage):
    # sentence-transformers would load the shipped bi-encoder as a cross-encoder with a random head.
    with pytest.raises(HarnessError, match="is not a cross-encoder"):
        build("rerank", corpus=ikat_corpus(SMALL), first_stage=first_stage, model=str(default_model_path()))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"model": "x"}, re.escape("build('rerank'): retriever 'rerank' needs first_stage")),
        ({"model": "x", "first_stage": {"name": "dense"}, "depth": 0}, re.escape("build('rerank').depth: expected an integer of 1 or more or null, got 0")),
        ({"model": "x", "first_stage": {"name": "dense"}, "depth": "ten"}, re.escape("build('rerank').depth: expected an integer of 1 or more or null, got 'ten'")),
    ],
)
def test_a_bad_rerank_config_is_a_clear_error(params, message):
    with pytest.raises(HarnessError, match=message):
        build("rerank", corpus=ikat_corpus(SMALL), **params)


@pytest.mark.parametrize("depth", [0, "ten"])
def test_rerank_called_directly_checks_its_depth_as_a_config_does_before_loading_a_model(first_stage, depth):
    with pytest.raises(HarnessError, match=re.escape(
            f"rerank.depth: expected an integer of 1 or more or null, got {depth!r}")):
        rerank(ikat_corpus(SMALL), first_stage=first_stage, model="absent", depth=depth)


def test_rerank_without_a_corpus_is_a_clear_error(first_stage):
    with pytest.raises(HarnessError, match="rerank needs a corpus"):
        build("rerank", corpus=None, first_stage=first_stage, model="x")
