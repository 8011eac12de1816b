"""Topic adapters: each benchmark's files -> `Conversation`s, registered by name.

An adapter is a callable `(split: str | None) -> Benchmark`. `load("ikat2023:train")`
splits the name at ':'; a bare name gives the split the official qrels judge.
`benchmark:NAME[:SPLIT]`, the corpus an adapter builds, is registered here as a format of
harness.corpus.readers.open_corpus (whose registry names this module as a plugin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from harness.corpus import Corpus
from harness.corpus.readers import CORPUS_FORMATS, CorpusFormat
from harness.errors import HarnessError
from harness.registry import Registry
from harness.trec import Qrels
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
ADAPTERS: Registry[Adapter] = Registry("topic adapter", package=__name__, group="harness.benchmarks")


def load(name: str) -> Benchmark:
    """Load `NAME` or `NAME:SPLIT` through its registered adapter."""
    base, _, split = name.partition(":")
    return ADAPTERS.get(base)(split or None)


def names() -> list[str]:
    """Every registered adapter name."""
    return ADAPTERS.names()


def splits(name: str) -> tuple[str, ...]:
    """The splits adapter `name` knows, as its own refusal of an unknown split lists them
    (adapters check the split before reading any file, so this is cheap)."""
    from harness.topics._common import UnknownSplit

    try:
        ADAPTERS.get(name)("\0")
    except UnknownSplit as error:
        return error.splits
    raise HarnessError(f"topic adapter {name!r} accepted the split '\\0'; it must refuse unknown splits")


def _benchmark_corpus(name: str) -> Corpus:
    corpus = load(name).corpus
    if corpus is None:
        raise HarnessError(f"benchmark {name!r} ships no corpus")
    return corpus


# `benchmark:NAME[:SPLIT]` wherever a corpus is named (claims no path: only ever by its prefix)
CORPUS_FORMATS.add("benchmark", CorpusFormat(open=_benchmark_corpus, claims=lambda spec: False))


__all__ = ["ADAPTERS", "Adapter", "Benchmark", "Conversation", "PersonalStatement", "Query", "Turn", "load", "names",
           "splits"]
