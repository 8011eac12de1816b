"""Topic adapters: each benchmark's files -> `Conversation`s, registered by name.

An adapter is a callable `(split: str | None) -> Benchmark`, registered with a summary, its
splits (the default first: the split the official qrels judge) and the typed fields its
turns and conversations carry beyond the basics (`topics.model`). `load("ikat2023:train")`
splits the name at ':'; a bare name gives the default split.
`benchmark:NAME[:SPLIT]`, the corpus an adapter builds, is registered here as a format of
harness.corpus.readers.open_corpus (whose registry names this module as a plugin).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, replace
from pathlib import Path

from harness.corpus import Corpus
from harness.corpus.readers import CORPUS_FORMATS, CorpusFormat, irds_id, irds_qrels, keyed_by_reader
from harness.errors import HarnessError, InputError
from harness.registry import Param, Registry, UnknownName, split_spec
from harness.trec import Qrels, read_qrels
from harness.topics.model import Conversation, PersonalStatement, Query, Turn


@dataclass(frozen=True)
class Benchmark:
    """What an adapter returns. Qrels and corpus are callables so that loading stays lazy."""

    name: str  # "NAME:SPLIT" as the user spells it
    conversations: tuple[Conversation, ...]
    qrels: Callable[[], Qrels] | None = None  # shipped official qrels, or ones the adapter derives
    corpus: Corpus | None = None  # the benchmark's own corpus, where it brings one

    @property
    def turns(self) -> list[Turn]:
        return [turn for conversation in self.conversations for turn in conversation.turns]


Adapter = Callable[[str | None], Benchmark]
ADAPTERS: Registry[Adapter] = Registry(
    "benchmark", ("harness.topics.cast", "harness.topics.cosrec", "harness.topics.crsarena", "harness.topics.ikat",
                  "harness.topics.opendialkg", "harness.topics.pragmaticqa"), group="harness.benchmarks")


def load(name: str) -> Benchmark:
    """Load `NAME` or `NAME:SPLIT` through its registered adapter."""
    base, split = split_spec(name)  # `python:module:attr[:SPLIT]` too
    if base == "irds" and split:  # read as benchmark `irds`, split ID, it was 'unknown benchmark'
        raise HarnessError(f"{name}: topics are a benchmark name (`harness topics list` lists them), not an "
                           f"ir_datasets id; the ids irds:harness/<benchmark>[/<split>] are those benchmarks"
                           f"{_as_benchmark(split)}")
    try:
        adapter = ADAPTERS.get(base)
    except UnknownName:
        if not Path(name).is_file():
            raise
        raise HarnessError(f"{name}: topics are a benchmark name (`harness topics list`), not a file: give your own "
                           "queries as a benchmark plug-in, python:MODULE:ATTR, a function returning a "
                           "harness.topics.Benchmark of them (README: Your own topics)") from None
    benchmark = adapter(split)
    if benchmark.corpus is None:
        return benchmark
    # a plug-in's corpus keyed by its code too: with a `known_fingerprint` (its file's sha256) alone, a reader
    # since changed kept the runs and the index of what it read before
    origin = ADAPTERS.origin(base)
    return replace(benchmark, corpus=keyed_by_reader(benchmark.corpus, origin, lambda: {"benchmark": origin}))


def _as_benchmark(dataset_id: str) -> str:
    """`: write ikat2023:test` for `harness/ikat2023/test`; '' for an id of no benchmark."""
    prefix, _, rest = dataset_id.partition("/")
    return f": write {rest.replace('/', ':')}" if prefix == "harness" and rest else ""


def names() -> list[str]:
    """Every registered adapter name."""
    return ADAPTERS.names()


def splits(name: str) -> tuple[str, ...]:
    """The splits adapter `name` declares, the default first (none for a plug-in that declares none)."""
    return ADAPTERS.declaration(name).splits


def fields(name: str) -> tuple[Param, ...]:
    """The typed fields `NAME[:SPLIT]`'s turns carry beyond the basics: the turn fields it
    declares, then its conversation fields (which every turn of the conversation has)."""
    declaration = ADAPTERS.declaration(split_spec(name)[0])
    return declaration.fields + declaration.conversation_fields


def check_field(name: str, field: str, option: str) -> None:
    """Refuse, in one line listing the declared ones, a field benchmark `name` does not declare."""
    declared = [param.name for param in fields(name)]
    if field not in declared:
        raise HarnessError(f"{option} {field!r}: {name} declares no such field of its turns or conversations; "
                           f"declared: {', '.join(declared) or 'none'}")


def shipped_corpora(name: str) -> dict[str, Corpus]:
    """The corpora the splits of benchmark `name` bring, by their `benchmark:` specs: `name`'s
    own first, then the other splits' in declared order, each corpus once (OpenDialKG's splits
    share one). A run may search several as one (the default config: iKAT 2023's test and train
    provenance pools), so a command looking up its passages reads them all, first found first."""
    base, _ = split_spec(name)
    corpora: dict[str, Corpus] = {}
    for each in (name, *(f"{base}:{split}" for split in splits(base))):
        corpus = load(each).corpus
        if corpus is not None and all(corpus.name != known.name for known in corpora.values()):
            corpora[f"benchmark:{each}"] = corpus
    return corpora


def splits_holding(corpora: Mapping[str, Corpus], ids: Set[str]) -> dict[str, int]:
    """Each of `corpora` (other splits' corpora by their `benchmark:` specs, as shipped_corpora
    names them) that holds some of `ids`, with how many (one pass over each): where passages
    missing from the split given are, for a note saying so (held_by)."""
    held = {spec: sum(document.id in ids for document in corpus.documents()) for spec, corpus in corpora.items()}
    return {spec: count for spec, count in held.items() if count}


def held_by(held: Mapping[str, int]) -> str:
    """splits_holding's answer in a note's words: 'benchmark:ikat2023:train (it holds 3 of them)'."""
    return ", ".join(f"{spec} (it holds {count} of them)" for spec, count in held.items())


def _benchmark_corpus(name: str) -> Corpus:
    corpus = load(name).corpus
    if corpus is None:
        raise HarnessError(f"benchmark {name!r} ships no corpus")
    return corpus


def benchmark_qrels_name(spec: str | Path) -> str | None:
    """NAME[:SPLIT] of `benchmark:NAME[:SPLIT]` where qrels are expected, as the corpus format
    spells it; None for a path (a file of that name too), as irds_id reads `irds:ID`."""
    prefix = "benchmark:"
    return spec[len(prefix):] if isinstance(spec, str) and spec.startswith(prefix) and not Path(spec).exists() \
        else None


def benchmark_hint(spec: str | Path) -> str:
    """Where `spec`, given for qrels, is no file but a benchmark as `topics:` names it
    (`opendialkg:test`), how its qrels are named; '' otherwise."""
    if not isinstance(spec, str):
        return ""
    try:
        there = Path(spec).exists()
    except OSError:  # a name too long for the file system: no benchmark's either
        return ""
    if not there and split_spec(spec)[0] in names():  # names() scans the entry points: ~40 ms
        return f" (a benchmark's own qrels are named benchmark:{spec})"
    return ""


def own_qrels(name: str) -> Callable[[], Qrels]:
    """What reads the qrels benchmark `name` ships or derives (an error where it has none)."""
    benchmark = load(name)
    if benchmark.qrels is None:
        raise HarnessError(f"benchmark:{name}: benchmark {benchmark.name!r} ships no qrels")
    return benchmark.qrels


def read_qrels_spec(spec: str | Path) -> Qrels:
    """The qrels named where a qrels file is expected: the file; `irds:ID`, an ir_datasets
    dataset's; `benchmark:NAME[:SPLIT]`, those the benchmark ships or derives, with which a run
    over `topics: NAME[:SPLIT]` is scored (OpenDialKG's are derived: no file holds them until
    `harness run` writes one, which a hosted task could not name before)."""
    if (name := benchmark_qrels_name(spec)) is not None:
        return own_qrels(name)()
    if hint := benchmark_hint(spec):
        raise InputError(spec, f"no such file{hint}")
    return irds_qrels(dataset_id) if (dataset_id := irds_id(spec)) is not None else read_qrels(spec)


# `benchmark:NAME[:SPLIT]` wherever a corpus is named (claims no path: only ever by its prefix)
CORPUS_FORMATS.add("benchmark", CorpusFormat(open=_benchmark_corpus, claims=lambda spec: False),
                   "the corpus a benchmark brings", [Param("NAME", str, desc="the benchmark, NAME[:SPLIT]")])


__all__ = ["ADAPTERS", "Adapter", "Benchmark", "Conversation", "PersonalStatement", "Query", "Turn",
           "benchmark_hint", "benchmark_qrels_name", "check_field", "fields", "held_by", "load", "names", "own_qrels",
           "read_qrels_spec", "shipped_corpora", "splits", "splits_holding"]
