"""The front end's wiring: built-ins of a higher layer that register into a lower layer's
registry, named here so that the lower layer names nothing above it.

The `benchmark:` corpus format is the benchmarks' (harness.topics, above harness.corpus), the
`ptkb_topk` query strategy ranks PTKB statements (harness.ikat, above harness.queries), the
`minilm` and `assignments` judges are the response evaluation's (harness.responses, above
harness.judge), sharded dense search runs on the scale-out stages (harness.scale, above
harness.retrieve), and each iKAT year's checks fill the registry of the module they import
(harness.ikat.checks, so it cannot import them back). `import harness` hands this table to
harness.registry, and a registry imports its modules on its first look-up: lazily, so `harness
eval --help` stays fast, and from a source checkout as from an install (entry points would need
an install). tests/test_layers.py checks every entry: the registry exists, and each module sits
above it or in its own package, never below.
"""

from harness.registry import extend

EXTENSIONS: dict[str, tuple[str, ...]] = {
    "harness.corpus.readers:CORPUS_FORMATS": ("harness.topics",),
    "harness.queries:STRATEGIES": ("harness.ikat.ptkb_topk",),
    "harness.judge.base:JUDGES": ("harness.responses.baseline", "harness.responses.assign"),
    "harness.retrieve.dense:SHARDED_SEARCH": ("harness.scale.search",),
    "harness.ikat.checks:CHECKS": ("harness.ikat.checks_2023", "harness.ikat.checks_2025"),
}


def install() -> None:
    extend(EXTENSIONS)
