"""BM25 scored in numpy exactly as Lucene 9.9 and Anserini 1.7 score it, from what Lucene stored.

pyserini's `batch_search` spends its time in Java, loading every hit's stored document; this
route reads the index once and then scores whole batches in numpy, with the same float32
arithmetic, so rankings and scores are those of pyserini, bit for bit (`test_lucene_scorer`
checks it on every iKAT 2023 test turn, BM25 and RM3):

- **Reading.** Lucene rewrites the index into its own plain-text codec (SimpleText) in one
  `IndexWriter.addIndexes` call, so postings, each document's 1-byte length norm and the
  `id` field come out in bulk rather than through one JNI call per posting; the text is
  parsed with regular expressions and numpy.
- **Scoring.** `BM25Similarity`: idf = log(1 + (N - n + 0.5)/(n + 0.5)) in double then
  float; avgdl = float(sumTotalTermFreq / docCount); per norm byte
  1/(k1 * ((1 - b) + b * dl / avgdl)) in float; per posting
  w - w / (1 + tf * normInverse) in float with w = boost * idf; a document's clause scores
  summed in double and cast to float, as Lucene's disjunction scorers do.
- **Order and ties.** Anserini sorts by score, then by the `id` field (byte order), and then
  (`ScoreTiesAdjusterReranker`) rounds each score to 1e-4 and lowers the n-th score of a run
  of near ties (gap to the previous adjusted score not above 1e-4f) by n * 1e-6f.
- **Queries** are analysed by the searcher's own analyzer, a whole batch in one call; RM3's
  expanded, weighted query comes from Anserini itself.

Indexes with deleted documents or more than `MAX_POSTINGS` postings are not read
(`read_index` returns the reason) and stay with pyserini.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from harness.atomic import temp_folder
from harness.errors import HarnessError

FIELD = "contents"  # Anserini's analysed text field
ID_FIELD = "id"
# The SimpleText copy holds every position as a line of text: beyond this, reading it would
# cost more than pyserini's searches save.
MAX_POSTINGS = 20_000_000
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
    postings: np.ndarray  # int32 Lucene docids
    freqs: np.ndarray  # float32 term frequencies
    doc_count: int  # documents with the field (CollectionStatistics.docCount)
    sum_total_term_freq: int
    length_table: np.ndarray  # float32[256]: SmallFloat.byte4ToInt of each norm byte


def read_index(reader) -> LuceneIndex | str:
    """The index behind a Lucene IndexReader (a pyjnius proxy), or why it cannot be read."""
    from jnius import autoclass

    if reader.numDeletedDocs() > 0:
        return "the index has deleted documents"
    postings_total = reader.getSumDocFreq(FIELD)
    if postings_total <= 0:
        return f"the index has no postings in field {FIELD!r}"
    if postings_total > MAX_POSTINGS:
        return f"{postings_total:,} postings (over {MAX_POSTINGS:,})"

    folder = str(temp_folder(Path(tempfile.gettempdir()), ".harness-simpletext"))  # a dead run's copy is removed
    try:
        config = autoclass("org.apache.lucene.index.IndexWriterConfig")()
        config.setCodec(autoclass("org.apache.lucene.codecs.simpletext.SimpleTextCodec")())
        config.setUseCompoundFile(False)
        directory = autoclass("org.apache.lucene.store.FSDirectory").open(
            autoclass("java.io.File")(folder).toPath()
        )
        writer = _index_writer()(directory, config)
        wrap = autoclass("org.apache.lucene.index.SlowCodecReaderWrapper").wrap
        leaves = reader.leaves()
        writer.addIndexes(*[wrap(leaves.get(i).reader()) for i in range(leaves.size())])
        writer.close()
        directory.close()
        postings_file, norms_file = _segment_files(folder)
        with open(postings_file, "rb") as handle:
            text = handle.read()
        with open(norms_file, "rb") as handle:
            norms_text = handle.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    small_float = autoclass("org.apache.lucene.util.SmallFloat")
    max_doc = reader.maxDoc()
    terms, starts, postings, freqs = _parse_field(_section(text, FIELD), with_freqs=True)
    id_terms, _, id_docs, _ = _parse_field(_section(text, ID_FIELD), with_freqs=False)
    if len(postings) != postings_total or int(freqs.sum()) != reader.getSumTotalTermFreq(FIELD):
        return "the plain-text copy of the postings does not add up to the index's statistics"
    if len(id_docs) != max_doc or len(id_terms) != max_doc:
        return f"not every document has one {ID_FIELD!r} of its own"
    docids = np.empty(max_doc, dtype=object)
    docids[id_docs] = id_terms
    id_rank = np.empty(max_doc, dtype=np.int32)
    id_rank[np.argsort(np.array([d.encode() for d in docids], dtype=object), kind="stable")] = np.arange(max_doc)
    return LuceneIndex(
        docids=docids,
        id_rank=id_rank,
        norms=_parse_norms(_section(norms_text, FIELD), max_doc),
        vocabulary={term: i for i, term in enumerate(terms)},
        starts=starts,
        postings=postings,
        freqs=freqs.astype(_F32),
        doc_count=reader.getDocCount(FIELD),
        sum_total_term_freq=reader.getSumTotalTermFreq(FIELD),
        length_table=np.array([small_float.byte4ToInt(i - 256 if i > 127 else i) for i in range(256)], dtype=_F32),
    )


@cache
def _index_writer():
    """IndexWriter with `addIndexes(CodecReader...)` bound by signature: pyjnius's overload
    matching takes the `Directory...` variant for a list of readers."""
    from jnius import JavaClass, JavaMethod, MetaJavaClass

    class IndexWriter(JavaClass, metaclass=MetaJavaClass, classparams=(False, False)):  # not autoclass's
        __javaclass__ = "org/apache/lucene/index/IndexWriter"
        __javaconstructor__ = [
            ("(Lorg/apache/lucene/store/Directory;Lorg/apache/lucene/index/IndexWriterConfig;)V", False)
        ]
        addIndexes = JavaMethod("([Lorg/apache/lucene/index/CodecReader;)J", varargs=True)
        close = JavaMethod("()V")

    return IndexWriter


def _segment_files(folder: str) -> tuple[str, str]:
    postings = list(Path(folder).glob("*.pst"))
    norms = list(Path(folder).glob("*.len"))
    if len(postings) != 1 or len(norms) != 1:
        raise HarnessError(f"Lucene's SimpleText copy in {folder} is not one segment")
    return str(postings[0]), str(norms[0])


def _section(text: bytes, field: str) -> bytes:
    """One field's part of a SimpleText postings or norms file."""
    start = text.find(b"field " + field.encode() + b"\n")
    if start < 0:
        return b""
    end = re.compile(rb"^(field |END$)", re.M).search(text, start + 1)
    return text[start : end.start() if end else len(text)]


def _unescape(term: bytes) -> str:
    """SimpleText writes a backslash before each backslash or newline byte of a term."""
    if b"\\" in term:
        term = re.sub(rb"\\(.)", rb"\1", term, flags=re.S)
    return term.decode("utf-8")


def _numbers(lines: list[bytes]) -> np.ndarray:
    return np.array(lines, dtype=bytes).astype(np.int64) if lines else np.zeros(0, dtype=np.int64)


def _parse_field(section: bytes, with_freqs: bool):
    """Terms, postings offsets, docids and (optionally) frequencies of one field's section."""
    raw = np.frombuffer(section, dtype=np.uint8)
    line_starts = np.flatnonzero(raw[:-5] == ord("\n")) + 1
    term_lines = line_starts[raw[line_starts + 2] == ord("t")]  # "  term X"
    doc_lines = line_starts[raw[line_starts + 4] == ord("d")]  # "    doc N"
    terms = [_unescape(t) for t in re.findall(rb"^  term (.*)$", section, re.M)]
    docs = _numbers(re.findall(rb"^    doc (\d+)$", section, re.M)).astype(np.int32)
    freqs = _numbers(re.findall(rb"^      freq (\d+)$", section, re.M)) if with_freqs else None
    if len(terms) != len(term_lines) or len(docs) != len(doc_lines):
        raise HarnessError("Lucene's SimpleText postings did not parse line by line")
    owner = np.searchsorted(term_lines, doc_lines) - 1  # the term each doc line follows
    starts = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(terms)), out=starts[1:])
    return terms, starts, docs, freqs


def _parse_norms(section: bytes, max_doc: int) -> np.ndarray:
    """Encoded norm bytes: after `type`, `minvalue` and `pattern`, a value line (minus the
    minimum) and a T/F line (has a value) per document."""
    lines = section.split(b"\n")
    if not lines[2].strip().startswith(b"minvalue "):
        raise HarnessError("Lucene's SimpleText norms have no minvalue line")
    minimum = int(lines[2].split()[1])
    values, present = lines[4 : 4 + 2 * max_doc : 2], lines[5 : 5 + 2 * max_doc : 2]
    norms = (_numbers(values) + minimum) & 0xFF
    norms[np.array(present) != b"T"] = 0
    return norms.astype(np.uint8)


class LuceneScorer:
    """Lucene's BM25 over a `LuceneIndex`: weighted term queries in, Anserini's hits out."""

    def __init__(self, index: LuceneIndex, k1: float, b: float) -> None:
        self.index = index
        k1, b = _F32(k1), _F32(b)
        avgdl = _F32(index.sum_total_term_freq / index.doc_count)
        # BM25Similarity's cache, one float op at a time as Java does them
        cache = _F32(1) / (k1 * ((_F32(1) - b) + b * index.length_table / avgdl))
        self.norm_inverse = cache[index.norms]  # per document
        df = np.diff(index.starts).astype(np.float64)
        self.idf = np.log(1 + (index.doc_count - df + 0.5) / (df + 0.5)).astype(_F32)

    def search(self, queries: Sequence[dict[str, float]], k: int) -> list[list[tuple[str, float]]]:
        """Top k (docid, score) per query, each query a {analysed term: boost} bag."""
        found = [self._top(query, k) for query in queries]
        scores = _adjust_ties([scores for _, scores in found])
        return [
            list(zip(self.index.docids[docs].tolist(), adjusted))
            for (docs, _), adjusted in zip(found, scores)
        ]

    def _top(self, query: dict[str, float], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Lucene docids and float32 scores of the best k, by score then id."""
        index = self.index
        docs, contributions = [], []
        for term, boost in query.items():
            t = index.vocabulary.get(term)
            if t is None:
                continue
            span = slice(index.starts[t], index.starts[t + 1])
            matched = index.postings[span]
            weight = _F32(boost) * self.idf[t]
            contributions.append(weight - weight / (_F32(1) + index.freqs[span] * self.norm_inverse[matched]))
            docs.append(matched)
        if not docs:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=_F32)
        if len(docs) == 1:
            candidates, scores = docs[0], contributions[0]
        else:
            matched = np.concatenate(docs)
            candidates, where = np.unique(matched, return_inverse=True)
            scores = np.bincount(where, weights=np.concatenate(contributions).astype(np.float64)).astype(_F32)
        if len(scores) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((self.index.id_rank[candidates], -scores))[:k]
        return candidates[order], scores[order]


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
