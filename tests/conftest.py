"""Shared paths to the real benchmark files the tests run on."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from harness.corpus import Corpus, Document
from harness.paths import data_root, qrels_root

CAST2021_QRELS = qrels_root() / "cast" / "trec-cast-qrels-docs.2021.qrel"
CAST2021_DOC_RUNS = sorted((data_root() / "cast" / "2021" / "baselines" / "document_runs").glob("*.run"))
CAST2021_PASSAGE_RUNS = sorted((data_root() / "cast" / "2021" / "baselines").glob("*.trec"))

PASSAGES_USED = 32


def ikat_passages(limit: int = PASSAGES_USED) -> Iterator[Document]:
    """The first `limit` iKAT 2023 provenance passages, as the ikat2023 adapter reads them."""
    from harness.topics import load

    return itertools.islice(load("ikat2023").corpus.documents(), limit)


@dataclass
class CountingStream:
    """A corpus's document stream that counts how often it is read (i.e. encoded)."""

    limit: int
    passes: int = 0

    def __call__(self) -> Iterator[Document]:
        self.passes += 1
        return ikat_passages(limit=self.limit)


def ikat_corpus(limit: int = PASSAGES_USED) -> Corpus:
    """Fingerprinted from the file, so that computing the key does not count as a read."""
    source = data_root() / "ikat" / "2023" / "data" / "2023_test_topics_psg_text.jsonl"
    digest = hashlib.sha256(source.read_bytes() + f"first {limit}".encode()).hexdigest()
    return Corpus(f"ikat23-test-psg-{limit}", CountingStream(limit), known_fingerprint=digest)


def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An embeddings cache shared by the test modules that fuse or re-rank: encode once."""
    return str(tmp_path_factory.getbasetemp() / "shared-embeddings")


@pytest.fixture(scope="session")
def ikat_cache(tmp_path_factory):
    """One index/embedding cache for every iKAT test module of the session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE", str(tmp_path_factory.getbasetemp() / "ikat-cache"))
        yield


@pytest.fixture(scope="session")
def ikat2023():
    from harness.topics import load

    return load("ikat2023")
