"""BM25 scored exactly as Lucene 9.9 and Anserini 1.7 score it, from what Lucene stored.

pyserini's `batch_search` spends its time in Java, loading every hit's stored document; this
route reads the index once and then scores whole batches in a compiled loop
(`_lucene_kernels`, numba) on all the threads asked for, with the same float32
arithmetic, so rankings and scores are those of pyserini, bit for bit (`test_lucene_scorer`
checks it on every iKAT 2023 test turn, BM25 and RM3):

- **Reading.** One Java pass over Lucene's own index (`lucene_export/PostingsExport.java`,
  through Lucene's API) writes the text field's terms, postings (int32 docids, uint16
  frequencies), each document's 1-byte length norm and the `id` field as flat arrays into a
  folder beside the index (`NAME.bm25-export`; under the cache if that is not writable);
  then one compiled pass adds each block of 128 postings' largest frequency and smallest
  norm byte (`write_block_bounds`). They are memory-mapped, so opening costs seconds and
  memory follows the terms searched, not the collection. The export is keyed by the
  index's commit (its `segments_N` file, which holds Lucene's random segment ids): a rebuilt
  index is exported anew.
- **Scoring.** `BM25Similarity`: idf = log(1 + (N - n + 0.5)/(n + 0.5)) in double then
  float; avgdl = float(sumTotalTermFreq / docCount); per norm byte
  1/(k1 * ((1 - b) + b * dl / avgdl)) in float; per posting
  w - w / (1 + tf * normInverse) in float with w = boost * idf; a document's clause scores
  summed in double and cast to float, as Lucene's disjunction scorers do.
- **Pruning.** Block-max MaxScore, as Lucene prunes, without changing a hit: documents are
  scored a window at a time; a block's largest frequency and smallest norm bound its
  scores, and in each window the terms whose bounds cannot lift a document to the k-th best
  score so far are only looked up for the documents the other terms can lift there
  (`_lucene_kernels.top_candidates`).
- **Order and ties.** Anserini sorts by score, then by the `id` field (byte order), and then
  (`ScoreTiesAdjusterReranker`) rounds each score to 1e-4 and lowers the n-th score of a run
  of near ties (gap to the previous adjusted score not above 1e-4f) by n * 1e-6f.
- **Queries** are analysed by the searcher's own analyzer, a whole batch in one call; RM3's
  expanded, weighted query comes from Anserini itself.

Indexes with deleted documents are not read (`read_index` returns the reason) and stay with
pyserini.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.atomic import build_once
from harness.errors import HarnessError
from harness.paths import cache_root, commit_key
from harness.progress import say_made
from harness.trec import Kept, Run, kept_ranking

FIELD = "contents"  # Anserini's analysed text field
ID_FIELD = "id"
EXPORTER = "harness.lucene.PostingsExport"
EXPORT_FORMAT = 3  # bump when the files change
EXPORT_MANIFEST = "export.json"
# Joins a batch of queries into one text for one analyzer call; no analyzer splits or stems it.
_SEPARATOR = "zzqharnessqueryseparatorqzz"

_F32 = np.float32


@dataclass(frozen=True)
class LuceneIndex:
    """What Lucene stored for the text field, in Lucene's document order."""

    docids: np.ndarray  # object array of external ids
    id_rank: np.ndarray  # int32: each document's position in the id field's sort order
    norms: np.ndarray  # uint8: each document's encoded length (0 when the field is absent)
    vocabulary: dict[str, int]
    starts: np.ndarray  # int64, len(vocabulary)+1: term t's postings are starts[t]:starts[t+1]
    postings: np.ndarray  # int32 Lucene docids (memory-mapped)
    freqs: np.ndarray  # uint16 term frequencies, 65535 for those in big_freqs (memory-mapped)
    big_freqs: np.ndarray  # int64 (posting number, frequency) rows for frequencies over 65535
    block_starts: np.ndarray  # int64, len(vocabulary)+1: term t's blocks of postings (_lucene_kernels.BLOCK)
    block_max_tf: np.ndarray  # int32: each block's largest frequency
    block_min_norm: np.ndarray  # uint8: each block's smallest norm byte
    doc_count: int  # documents with the field (CollectionStatistics.docCount)
    sum_total_term_freq: int
    length_table: np.ndarray  # float32[256]: SmallFloat.byte4ToInt of each norm byte


def read_index(reader, folder: Path) -> LuceneIndex | str:
    """The index in `folder` behind a Lucene IndexReader (a pyjnius proxy), from its export
    (made on first use), or why it cannot be read."""
    from jnius import autoclass

    if reader.numDeletedDocs() > 0:
        return "the index has deleted documents"
    postings_total = reader.getSumDocFreq(FIELD)
    if postings_total <= 0:
        return f"the index has no postings in field {FIELD!r}"
    export = exported(reader, Path(folder))
    if isinstance(export, str):
        return export
    max_doc = reader.maxDoc()
    postings = np.memmap(export / "docs.i32", dtype=np.int32, mode="r")
    freqs = np.memmap(export / "freqs.u16", dtype=np.uint16, mode="r")
    norms = np.fromfile(export / "norms.u8", dtype=np.uint8)
    if len(postings) != postings_total or len(freqs) != postings_total or len(norms) != max_doc:
        return f"the postings exported to {export} do not add up to the index's statistics"
    starts = np.fromfile(export / "starts.i64", dtype=np.int64)
    first_blocks = block_starts(starts)
    block_max_tf = np.fromfile(export / "block_max_tf.i32", dtype=np.int32)
    block_min_norm = np.fromfile(export / "block_min_norm.u8", dtype=np.uint8)
    blocks = first_blocks[-1]
    if starts[-1] != postings_total or len(block_max_tf) != blocks or len(block_min_norm) != blocks:
        return f"the postings exported to {export} do not add up to the index's statistics"
    id_docs = np.fromfile(export / "id_docs.i32", dtype=np.int32)
    docids = np.empty(max_doc, dtype=object)
    docids[id_docs] = _strings(export / "ids.utf8", export / "id_ends.i64")
    id_rank = np.empty(max_doc, dtype=np.int32)
    id_rank[id_docs] = np.arange(max_doc, dtype=np.int32)  # the id field's terms come in byte order
    small_float = autoclass("org.apache.lucene.util.SmallFloat")
    return LuceneIndex(
        docids=docids,
        id_rank=id_rank,
        norms=norms,
        vocabulary={term: i for i, term in enumerate(_strings(export / "terms.utf8", export / "term_ends.i64"))},
        starts=starts,
        postings=postings,
        freqs=freqs,
        big_freqs=np.fromfile(export / "big_freqs.i64", dtype=np.int64).reshape(-1, 2),
        block_starts=first_blocks,
        block_max_tf=block_max_tf,
        block_min_norm=block_min_norm,
        doc_count=reader.getDocCount(FIELD),
        sum_total_term_freq=reader.getSumTotalTermFreq(FIELD),
        length_table=np.array([small_float.byte4ToInt(i - 256 if i > 127 else i) for i in range(256)], dtype=_F32),
    )


def block_starts(starts: np.ndarray) -> np.ndarray:
    """Where each term's blocks of postings begin, from where its postings do."""
    from harness.retrieve._lucene_kernels import BLOCK

    return np.concatenate(([0], np.cumsum((np.diff(starts) + BLOCK - 1) // BLOCK)))


def export_folders(folder: Path) -> list[Path]:
    """Where an index's export lives: beside it, else (not writable there) under the cache."""
    folder = Path(folder).resolve()
    keyed = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return [folder.parent / f"{folder.name}.bm25-export", cache_root() / "bm25-exports" / f"{folder.name}-{keyed}"]


def exported(reader, folder: Path) -> Path | str:
    """The folder of the index's export, written first if missing or made from another
    commit (said from a second on: progress.say_made); or why Lucene's exporter could not write it."""
    key = {"format": EXPORT_FORMAT, "field": FIELD, "id field": ID_FIELD, "commit": commit_key(folder)}
    candidates = export_folders(folder)
    for target in candidates:
        if _manifest(target) == key:
            return target
    from harness.retrieve._lucene_kernels import compile_kernels

    compile_kernels()  # first (seconds once a process, which the search pays anyway): not the export's time
    for target in candidates:
        try:
            return _export(reader, target, key)
        except OSError as error:
            failure = f"cannot write the postings export {target}: {error}"
    return failure


def write_block_bounds(export: Path) -> None:
    """Each block of postings' largest frequency and smallest norm byte (`block_*` files),
    the bounds of its BM25 scores whatever k1 and b."""
    from harness.retrieve._lucene_kernels import block_bounds

    postings = np.memmap(export / "docs.i32", dtype=np.int32, mode="r")
    freqs = np.memmap(export / "freqs.u16", dtype=np.uint16, mode="r")
    starts = np.fromfile(export / "starts.i64", dtype=np.int64)
    max_tf, min_norm = block_bounds(
        starts, block_starts(starts), postings, freqs,
        np.fromfile(export / "big_freqs.i64", dtype=np.int64).reshape(-1, 2),
        np.fromfile(export / "norms.u8", dtype=np.uint8))
    max_tf.tofile(export / "block_max_tf.i32")
    min_norm.tofile(export / "block_min_norm.u8")


def _manifest(target: Path) -> dict | None:
    try:
        return json.loads((target / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _export(reader, target: Path, key: dict) -> Path | str:
    """Lucene's exporter into a hidden folder beside `target`, checked, then renamed into place
    (a big index's export takes a while: said as its index is); or the export another process
    wrote meanwhile (atomic.build_once); or why it cannot be written."""
    from jnius import JavaException, autoclass

    try:
        exporter = autoclass(EXPORTER)
    except JavaException:  # a JVM started by someone else before harness (ensure_jvm) could
        return f"{EXPORTER} is not on the running JVM's class path"

    def write(building: Path) -> tuple[Path | None, Path | str]:
        why = exporter.export(reader, FIELD, ID_FIELD, str(building))
        if why:
            return None, why
        freqs = np.memmap(building / "freqs.u16", dtype=np.uint16, mode="r")
        big = np.fromfile(building / "big_freqs.i64", dtype=np.int64).reshape(-1, 2)
        total = int(freqs.sum(dtype=np.int64)) + int((big[:, 1] - 0xFFFF).sum())
        del freqs
        if total != reader.getSumTotalTermFreq(FIELD):
            return None, "the exported term frequencies do not add up to the index's statistics"
        write_block_bounds(building)
        (building / EXPORT_MANIFEST).write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
        return building, target  # (replacing another commit's export)

    export, started = build_once(target, f"writing the BM25 export {target}",
                                 lambda: target if _manifest(target) == key else None, write)
    if started is not None and export == target:
        say_made(f"BM25 export of {reader.maxDoc()} documents", target, started)
    return export


def _strings(blob: Path, ends: Path) -> list[str]:
    """UTF-8 strings stored back to back, with their end offsets."""
    data = blob.read_bytes()
    bounds = [0, *np.fromfile(ends, dtype=np.int64).tolist()]
    return [data[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])]


class LuceneScorer:
    """Lucene's BM25 over a `LuceneIndex`: weighted term queries in, Anserini's hits out."""

    def __init__(self, index: LuceneIndex, k1: float, b: float, window: int | None = None) -> None:
        self.index = index
        self.window = window  # documents scored together (_lucene_kernels.WINDOW unless set: tests)
        k1, b = _F32(k1), _F32(b)
        avgdl = _F32(index.sum_total_term_freq / index.doc_count)
        # BM25Similarity's cache, one float op at a time as Java does them
        self.norm_inverse = _F32(1) / (k1 * ((_F32(1) - b) + b * index.length_table / avgdl))  # per norm byte
        # the largest normInverse of a norm byte n or more: a block's bound from its smallest one
        self.best_norm_inverse = np.maximum.accumulate(self.norm_inverse[::-1])[::-1].copy()
        df = np.diff(index.starts).astype(np.float64)
        self.idf = np.log(1 + (index.doc_count - df + 0.5) / (df + 0.5)).astype(_F32)

    def search(self, queries: Mapping[str, dict[str, float]], k: int, threads: int = 1) -> Run:
        """The top k hits of each query, {qid: {analysed term: boost}}, spread over `threads`
        threads (the compiled loops let go of the GIL), each kept as a Run keeps it by the
        thread that found it (an external id the index repeats: its first hit)."""
        from harness.retrieve._lucene_kernels import adjust_ties

        def top(query: dict[str, float]) -> Kept:
            docs, scores = self._top(query, k)
            docids, adjusted = self.index.docids[docs].tolist(), adjust_ties(scores).tolist()
            kept = dict(zip(docids, adjusted))  # no id repeated, as nearly always: kept as it is
            return Kept(kept, 0, None) if len(kept) == len(docids) else kept_ranking(list(zip(docids, adjusted)))

        if threads > 1 and len(queries) > 1:
            with ThreadPoolExecutor(threads) as pool:
                return Run.of_kept(dict(zip(queries, pool.map(top, queries.values()))))
        return Run.of_kept({qid: top(query) for qid, query in queries.items()})

    def _top(self, query: dict[str, float], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Lucene docids and float32 scores of the best k, by score then id (block-max
        MaxScore over the postings: `_lucene_kernels.top_candidates`)."""
        from harness.retrieve._lucene_kernels import WINDOW, top_candidates

        index = self.index
        terms = np.array([t for term in query if (t := index.vocabulary.get(term)) is not None], dtype=np.int64)
        if not len(terms):
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=_F32)
        weights = np.array([boost for term, boost in query.items() if term in index.vocabulary], dtype=_F32)
        weights *= self.idf[terms]
        k = min(k, len(index.docids))  # top_candidates keeps a heap of k scores: no more than there are documents
        docs, scores = top_candidates(terms, weights, k, self.window or WINDOW, index.starts, index.postings,
                                      index.freqs, index.big_freqs, index.norms, self.norm_inverse, index.block_starts,
                                      index.block_max_tf, index.block_min_norm, self.best_norm_inverse)
        order = np.lexsort((index.id_rank[docs], -scores))[:k]
        return docs[order], scores[order]


def analyze(analyzer, texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens by a Lucene analyzer: one call for the whole batch (texts joined by a
    separator token), one per text if the separator does not come back intact."""
    from jnius import autoclass

    utils = autoclass("io.anserini.analysis.AnalyzerUtils")
    if not texts:
        return []
    tokens = _tokens(utils.analyze(analyzer, f" {_SEPARATOR} ".join(texts)))
    batches: list[list[str]] = [[]]
    for token in tokens:
        if token == _SEPARATOR:
            batches.append([])
        else:
            batches[-1].append(token)
    if len(batches) == len(texts) and all(_SEPARATOR not in text for text in texts):
        return batches
    return [_tokens(utils.analyze(analyzer, text)) for text in texts]


def _tokens(java_list) -> list[str]:
    """A java.util.List<String> in one call (its toString); tokens hold no ", "."""
    text = java_list.toString()[1:-1]
    tokens = text.split(", ") if text else []
    if len(tokens) != java_list.size():
        return [java_list.get(i) for i in range(java_list.size())]
    return tokens


def bag_of_words(tokens: list[str]) -> dict[str, float]:
    """Anserini's BagOfWordsQueryGenerator: one clause per distinct token, boosted by its count."""
    return {term: float(count) for term, count in Counter(tokens).items()}


def feedback_query(searcher, text: str) -> dict[str, float]:
    """RM3's expanded query, {term: weight}, as Anserini's Rm3Reranker builds it."""
    terms = searcher.get_feedback_terms(text)
    found = {}
    body = terms.toString()[1:-1]
    for item in body.split(", ") if body else []:
        term, _, weight = item.rpartition("=")
        found[term] = float(weight)
    if len(found) != terms.size():
        raise HarnessError(f"cannot read RM3 feedback terms for query {text!r}")
    return found
