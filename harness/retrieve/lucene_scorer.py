"""BM25 scored in numpy exactly as Lucene 9.9 and Anserini 1.7 score it, from what Lucene stored.

pyserini's `batch_search` spends its time in Java, loading every hit's stored document; this
route reads the index once and then scores whole batches in numpy, with the same float32
arithmetic, so rankings and scores are those of pyserini, bit for bit (`test_lucene_scorer`
checks it on every iKAT 2023 test turn, BM25 and RM3):

- **Reading.** One Java pass over Lucene's own index (`lucene_export/PostingsExport.java`,
  through Lucene's API) writes the text field's terms, postings (int32 docids, uint16
  frequencies), each document's 1-byte length norm and the `id` field as flat arrays into a
  folder beside the index (`NAME.bm25-export`; under the cache if that is not writable).
  They are memory-mapped, so opening costs seconds and memory follows the terms searched,
  not the collection. The export is keyed by the index's commit (its `segments_N` file,
  which holds Lucene's random segment ids): a rebuilt index is exported anew.
- **Scoring.** `BM25Similarity`: idf = log(1 + (N - n + 0.5)/(n + 0.5)) in double then
  float; avgdl = float(sumTotalTermFreq / docCount); per norm byte
  1/(k1 * ((1 - b) + b * dl / avgdl)) in float; per posting
  w - w / (1 + tf * normInverse) in float with w = boost * idf; a document's clause scores
  summed in double and cast to float, as Lucene's disjunction scorers do.
- **Pruning.** MaxScore, as Lucene prunes, without changing a hit: each term's best possible
  score (from its largest frequency and the shortest document) tells which postings lists
  need reading in full; the others are consulted by binary search for the documents that
  can still reach the k-th score (`LuceneScorer._top`).
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
import os
import shutil
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.atomic import temp_folder
from harness.errors import HarnessError
from harness.paths import cache_root

FIELD = "contents"  # Anserini's analysed text field
ID_FIELD = "id"
EXPORTER = "harness.lucene.PostingsExport"
EXPORT_FORMAT = 2  # bump when the files change
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
    max_freqs: np.ndarray  # int32: each term's largest frequency
    postings: np.ndarray  # int32 Lucene docids (memory-mapped)
    freqs: np.ndarray  # uint16 term frequencies, 65535 for those in big_freqs (memory-mapped)
    big_freqs: np.ndarray  # int64 (posting number, frequency) rows for frequencies over 65535
    doc_count: int  # documents with the field (CollectionStatistics.docCount)
    sum_total_term_freq: int
    length_table: np.ndarray  # float32[256]: SmallFloat.byte4ToInt of each norm byte

    def frequencies(self, positions: slice | np.ndarray) -> np.ndarray:
        """float32 frequencies of the postings at `positions` (a slice, or posting numbers)."""
        tf = self.freqs[positions].astype(_F32)
        if len(self.big_freqs):  # an index with a frequency over 65535: rare, so not fast
            numbers = np.arange(positions.start, positions.stop) if isinstance(positions, slice) else positions
            where = np.minimum(np.searchsorted(self.big_freqs[:, 0], numbers), len(self.big_freqs) - 1)
            match = self.big_freqs[where, 0] == numbers
            tf[match] = self.big_freqs[where[match], 1]
        return tf


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
        starts=np.fromfile(export / "starts.i64", dtype=np.int64),
        max_freqs=np.fromfile(export / "max_freqs.i32", dtype=np.int32),
        postings=postings,
        freqs=freqs,
        big_freqs=np.fromfile(export / "big_freqs.i64", dtype=np.int64).reshape(-1, 2),
        doc_count=reader.getDocCount(FIELD),
        sum_total_term_freq=reader.getSumTotalTermFreq(FIELD),
        length_table=np.array([small_float.byte4ToInt(i - 256 if i > 127 else i) for i in range(256)], dtype=_F32),
    )


def commit_key(folder: Path) -> str:
    """The sha256 of the index's commit files (`segments_N`): Lucene writes random segment
    ids into them, so a rebuilt or changed index never has the key of the old one."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("segments_*")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def export_folders(folder: Path) -> list[Path]:
    """Where an index's export lives: beside it, else (not writable there) under the cache."""
    folder = Path(folder).resolve()
    keyed = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return [folder.parent / f"{folder.name}.bm25-export", cache_root() / "bm25-exports" / f"{folder.name}-{keyed}"]


def exported(reader, folder: Path) -> Path | str:
    """The folder of the index's export, written first if missing or made from another
    commit; or why Lucene's exporter could not write it."""
    key = {"format": EXPORT_FORMAT, "field": FIELD, "id field": ID_FIELD, "commit": commit_key(folder)}
    candidates = export_folders(folder)
    for target in candidates:
        if _manifest(target) == key:
            return target
    for target in candidates:
        try:
            return _export(reader, target, key)
        except OSError as error:
            failure = f"cannot write the postings export {target}: {error}"
    return failure


def _manifest(target: Path) -> dict | None:
    try:
        return json.loads((target / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _export(reader, target: Path, key: dict) -> Path | str:
    """Lucene's exporter into a hidden folder beside `target`, checked, then renamed into place."""
    from jnius import JavaException, autoclass

    try:
        exporter = autoclass(EXPORTER)
    except JavaException:  # a JVM started by someone else before harness (ensure_jvm) could
        return f"{EXPORTER} is not on the running JVM's class path"
    building = temp_folder(target.parent, f".{target.name}.building")
    try:
        why = exporter.export(reader, FIELD, ID_FIELD, str(building))
        if why:
            return why
        freqs = np.memmap(building / "freqs.u16", dtype=np.uint16, mode="r")
        big = np.fromfile(building / "big_freqs.i64", dtype=np.int64).reshape(-1, 2)
        total = int(freqs.sum(dtype=np.int64)) + int((big[:, 1] - 0xFFFF).sum())
        del freqs
        if total != reader.getSumTotalTermFreq(FIELD):
            return "the exported term frequencies do not add up to the index's statistics"
        (building / EXPORT_MANIFEST).write_text(json.dumps(key, indent=1) + "\n", encoding="utf-8")
        if target.exists():  # another commit's export, or one another process just finished
            shutil.rmtree(target)
        os.replace(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def _strings(blob: Path, ends: Path) -> list[str]:
    """UTF-8 strings stored back to back, with their end offsets."""
    data = blob.read_bytes()
    bounds = [0, *np.fromfile(ends, dtype=np.int64).tolist()]
    return [data[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])]


class LuceneScorer:
    """Lucene's BM25 over a `LuceneIndex`: weighted term queries in, Anserini's hits out."""

    def __init__(self, index: LuceneIndex, k1: float, b: float) -> None:
        self.index = index
        k1, b = _F32(k1), _F32(b)
        avgdl = _F32(index.sum_total_term_freq / index.doc_count)
        # BM25Similarity's cache, one float op at a time as Java does them
        cache = _F32(1) / (k1 * ((_F32(1) - b) + b * index.length_table / avgdl))
        self.norm_inverse = cache[index.norms]  # per document
        self.max_norm_inverse = self.norm_inverse.max()
        df = np.diff(index.starts).astype(np.float64)
        self.idf = np.log(1 + (index.doc_count - df + 0.5) / (df + 0.5)).astype(_F32)

    def search(self, queries: Sequence[dict[str, float]], k: int, threads: int = 1) -> list[list[tuple[str, float]]]:
        """Top k (docid, score) per query, each query a {analysed term: boost} bag; queries
        are spread over `threads` threads (numpy lets go of the GIL in its loops)."""
        local = threading.local()

        def top(query: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
            if not hasattr(local, "totals"):  # one query's double sums, zeroed again after it
                local.totals = np.zeros(len(self.norm_inverse))
            return self._top(query, k, local.totals)

        if threads > 1 and len(queries) > 1:
            with ThreadPoolExecutor(threads) as pool:
                found = list(pool.map(top, queries))
        else:
            found = [top(query) for query in queries]
        scores = _adjust_ties([scores for _, scores in found])
        return [
            list(zip(self.index.docids[docs].tolist(), adjusted))
            for (docs, _), adjusted in zip(found, scores)
        ]

    def _top(self, query: dict[str, float], k: int, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lucene docids and float32 scores of the best k, by score then id.

        MaxScore, exactly. Terms are taken by their best possible score, highest first, and
        their postings scored in full into `totals` until the terms left could not lift a
        document they alone match to the k-th score (a lower bound of which is the k-th
        best partial score among the documents of the first lists). The k-th full score of
        the 2k best partial ones then bounds it closer; the other terms' scores are added,
        best bound first, to the documents scored so far that can still reach it. A
        document's clause scores are summed in double (exactly: a few float32 values of
        similar size) and cast to float, as in Lucene."""
        index = self.index
        clauses = [(t, _F32(boost) * self.idf[t]) for term, boost in query.items()
                   if (t := index.vocabulary.get(term)) is not None]
        if not clauses:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=_F32)
        bounds = np.array([w - w / (_F32(1) + _F32(index.max_freqs[t]) * self.max_norm_inverse)
                           for t, w in clauses], dtype=_F32)
        by_bound = np.argsort(-bounds, kind="stable")
        # rest[j]: the best double sum of a document matching none of the first j terms
        rest = np.append(np.cumsum(bounds[by_bound][::-1].astype(np.float64))[::-1], 0)
        threshold = _F32(-np.inf)  # at most the k-th best score
        scored: list[np.ndarray] = []
        pool = None  # documents of the first lists, whose partial scores bound the k-th score
        while len(scored) < len(clauses) and not _F32(rest[len(scored)]) < threshold:
            docs, contribution = self._clause(*clauses[by_bound[len(scored)]])
            totals[docs] += contribution  # a term's postings are distinct documents
            scored.append(docs)
            if pool is None and sum(map(len, scored)) >= 2 * k:
                pool = np.asarray(docs) if len(scored) == 1 else np.unique(np.concatenate(scored))
            if pool is not None and len(pool) >= k:
                partial = totals[pool].astype(_F32)
                threshold = np.partition(partial, len(partial) - k)[len(partial) - k]
        candidates = _union(scored, len(totals))
        partial = totals[candidates]
        totals[candidates] = 0
        left = [clauses[i] for i in by_bound[len(scored):]]
        if left:
            # the k-th full score among the best partial ones: a closer bound of the k-th score
            best = np.argpartition(-partial, min(2 * k, len(partial) - 1))[: 2 * k]
            best.sort()
            full = partial[best]
            for clause in left:
                self._add_matches(clause, candidates[best], full, totals)
            if len(full) >= k:
                threshold = max(threshold, np.partition(full.astype(_F32), len(full) - k)[len(full) - k])
            for j, clause in enumerate(left):
                reach = (partial + rest[len(scored) + j]).astype(_F32) >= threshold
                candidates, partial = candidates[reach], partial[reach]
                self._add_matches(clause, candidates, partial, totals)
        scores = partial.astype(_F32)
        if len(scores) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((self.index.id_rank[candidates], -scores))[:k]
        return candidates[order], scores[order]

    def _clause(self, t: int, weight: np.float32) -> tuple[np.ndarray, np.ndarray]:
        """Documents and float32 BM25 scores of term t's postings."""
        span = slice(int(self.index.starts[t]), int(self.index.starts[t + 1]))
        docs = self.index.postings[span]
        score = self.norm_inverse[docs]  # then, in place, weight - weight / (1 + tf * normInverse)
        score *= self.index.frequencies(span)
        score += _F32(1)
        np.divide(weight, score, out=score)
        np.subtract(weight, score, out=score)
        return docs, score

    def _add_matches(self, clause: tuple[int, np.float32], candidates: np.ndarray, scores: np.ndarray,
                     totals: np.ndarray) -> None:
        """Adds term t's scores to the (sorted) candidates it occurs in: found by binary search
        in its postings, or for many candidates by scoring them all into `totals` (zeroed after)."""
        t, weight = clause
        first, end = int(self.index.starts[t]), int(self.index.starts[t + 1])
        if len(candidates) * 8 > end - first:
            docs, contribution = self._clause(t, weight)
            totals[docs] = contribution
            scores += totals[candidates]
            totals[docs] = 0
            return
        postings = self.index.postings[first:end]
        where = np.searchsorted(postings, candidates)
        found = where < len(postings)
        found[found] = postings[where[found]] == candidates[found]
        tf = self.index.frequencies(first + where[found])
        scores[found] += weight - weight / (_F32(1) + tf * self.norm_inverse[candidates[found]])


def _union(docs: list[np.ndarray], max_doc: int) -> np.ndarray:
    """The sorted distinct documents of several postings lists: by sorting when they are
    few, by marking a bitmap of the collection when they are many."""
    if sum(map(len, docs)) * 16 < max_doc:
        return np.unique(np.concatenate(docs))
    seen = np.zeros(max_doc, dtype=bool)
    for matched in docs:
        seen[matched] = True
    return np.flatnonzero(seen).astype(np.int32)


def _adjust_ties(rankings: list[np.ndarray]) -> list[list[float]]:
    """Anserini's ScoreTiesAdjusterReranker on each best-first float32 score list: round to
    1e-4 (in double, half up), then lower the n-th of a run of near-ties by n * 1e-6f. Run
    column by column across all queries at once, in float32 as Java does it."""
    depth = max((len(r) for r in rankings), default=0)
    if depth == 0:
        return [[] for _ in rankings]
    grid = np.full((len(rankings), depth), np.nan)
    for row, scores in zip(grid, rankings):
        row[: len(scores)] = scores
    scaled = grid * 1e4
    floor = np.floor(scaled)
    rounded = ((floor + (scaled - floor >= 0.5)) / 1e4).astype(_F32)  # Math.round, then / 1e4d
    adjusted = rounded.copy()
    dup = np.zeros(len(rankings), dtype=_F32)
    for i in range(1, depth):
        tie = ~(adjusted[:, i - 1] - rounded[:, i] > _F32(1e-4))
        dup = np.where(tie, dup + 1, 0).astype(_F32)
        adjusted[:, i] = rounded[:, i] - _F32(1e-6) * dup
    return [adjusted[row, : len(scores)].tolist() for row, scores in enumerate(rankings)]


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
