"""Where work runs and the vector-search kernels it runs, below the retrievers that use them.

    engines.py  the engine registry (local, ray): run shard tasks, hold shard searchers
    exact.py    shape-independent exact scores (float64 dot products rounded to float32)
    approx.py   approximate faiss indexes (hnsw, ivfpq) proposing candidates to re-score

They import nothing above harness.registry: the dense retriever (harness.retrieve.dense)
searches with exact.py and approx.py and names an engine for sharded search; the sharded
stages themselves live in harness.scale, above the retrievers (README, "Layers").
"""
