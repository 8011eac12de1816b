"""The dense retriever on a GPU gives what it gives on the CPU. These run only where torch sees
a CUDA device (never in CI: there they skip with one line); figures in benchmarks/encode_speed.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.retrieve import build
from harness.retrieve.embeddings import encode_all, load_encoder
from harness.retrieve.dense import SEARCH_BACKENDS
from harness.compute.exact import exact_search, longest_norm
from tests.conftest import ikat_corpus
from tests.test_dense import QUERIES
from tests.test_rerank import cross_encoder_dir  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def shipped_passages():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the GPU paths are checked on a machine with one")
    from harness import topics

    return list(topics.load("ikat2023").corpus.documents())


def test_gpu_vectors_stay_within_1e_5_cosine_of_cpu_vectors_on_every_shipped_ikat_passage(shipped_passages):
    _, cpu = encode_all(load_encoder(device="cpu"), iter(shipped_passages))
    _, gpu = encode_all(load_encoder(device="cuda"), iter(shipped_passages))
    cosine = np.sum(cpu * gpu, axis=1)  # both unit length
    assert cosine.min() >= 1 - 1e-5, f"{np.sum(cosine < 1 - 1e-5)} of {len(cosine)} vectors moved"


def test_on_a_gpu_worker_threads_give_the_vectors_one_thread_gives(shipped_passages):
    encoder = load_encoder(device="cuda")
    assert encoder.workers > 1
    _, together = encode_all(encoder, iter(shipped_passages))
    _, alone = encode_all(dataclasses.replace(encoder, workers=1), iter(shipped_passages))
    assert np.array_equal(together, alone)


def test_the_callers_autocast_applies_on_every_worker_thread(shipped_passages):
    """harness encode --dtype float16 runs the model under torch.autocast on a GPU."""
    import torch

    encoder = load_encoder(device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        _, together = encode_all(encoder, iter(shipped_passages))
        _, alone = encode_all(dataclasses.replace(encoder, workers=1), iter(shipped_passages))  # the caller's thread
    _, full = encode_all(encoder, iter(shipped_passages))
    assert np.array_equal(together, alone) and not np.array_equal(together, full)


def test_the_torch_backend_on_the_gpu_finds_what_numpy_finds(shipped_passages):
    encoder = load_encoder(device="cuda")
    _, vectors = encode_all(encoder, iter(shipped_passages))
    queries = encoder.encode_queries([query.text for query in QUERIES])
    found = {
        name: exact_search(vectors, queries, 100, SEARCH_BACKENDS.get(name)(vectors), longest=longest_norm(vectors))
        for name in ("numpy", "torch")
    }
    for ours, theirs in zip(found["torch"], found["numpy"]):
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))


def test_on_a_gpu_the_dense_retriever_runs_there_and_ranks_the_top_10_as_on_the_cpu(shipped_passages, tmp_path):
    runs = {}
    for device, asked in (("cuda", None), ("cpu", "cpu")):  # a GPU is the default where there is one
        # each encodes the corpus: the vector cache is shared across devices
        retriever = build("dense", corpus=ikat_corpus(), device=asked, cache_dir=str(tmp_path / device))
        runs[device] = retriever.search(QUERIES, 10)
        assert retriever.encoder.model.device.type == device
    for query in QUERIES:
        assert [hit.docid for hit in runs["cuda"][query.qid]] == [hit.docid for hit in runs["cpu"][query.qid]]


def test_on_a_gpu_rerank_runs_there_and_orders_the_first_stage_hits_as_on_the_cpu(shipped_passages, cross_encoder_dir, tmp_path):
    first_stage = {"name": "dense", "device": "cpu", "cache_dir": str(tmp_path)}  # the same candidates for both
    runs = {}
    for device, asked in (("cuda", None), ("cpu", "cpu")):  # a GPU is the default where there is one
        reranker = build("rerank", corpus=ikat_corpus(), first_stage=first_stage, model=str(cross_encoder_dir),
                         depth=20, device=asked)
        runs[device] = reranker.search(QUERIES, 10)
        assert reranker.model.model.device.type == device
    for query in QUERIES:
        gpu, cpu = runs["cuda"][query.qid], runs["cpu"][query.qid]
        assert [hit.docid for hit in gpu] == [hit.docid for hit in cpu]
        assert np.allclose([hit.score for hit in gpu], [hit.score for hit in cpu], rtol=1e-4, atol=1e-5)
