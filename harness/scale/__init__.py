"""Scale-out for the stages whose cost grows with the collection: segmentation, passage
encoding and dense search, on one machine (`local`, the default) or on a Ray cluster (`ray`).

Work is cut into shards fixed by the input alone (one ClueWeb22 file, or a range of
documents), each written atomically with its count and sha256 and listed in a manifest, so
a rerun redoes only the shards that are missing or changed, and the output does not depend
on the engine or the number of workers. Ray is imported only when the `ray` engine starts.

    shards.py   shard plans, manifests, the resumable driver loop with progress
    segment.py  `harness segment --engine ...`: passages per shard, concatenated in order
    encode.py   `harness encode`: passage vectors per shard (.npy + ids)
    search.py   sharded exact / approximate dense search, each shard searched where it lives

The engines (local, ray) and the exact and approximate search kernels live in
harness.compute, below harness.retrieve, whose dense retriever uses them; this package sits
above it (README, "Layers"): search.py registers into the dense retriever's SHARDED_SEARCH
registry, and the front end (harness._assembly) imports it when that registry is first used.
"""
