"""Re-ranking: a cross-encoder re-scores the top hits of any first-stage retriever.

    {name: rerank, model: /models/ms-marco-MiniLM-L-6-v2, depth: 100,
     first_stage: {name: bm25, k1: 0.9, b: 0.4}}

The first stage is asked for `depth` hits (default: the k asked of the re-ranker); all of
them are re-scored by the cross-encoder (its raw logit, no sigmoid, so near-certain pairs
still differ) and the result is cut to k. With depth < k the run has `depth` hits.
Ties in the cross-encoder score keep first-stage order.

Without a model this stage refuses to start (HarnessError) rather than passing the first
stage through: a run labelled as re-ranked that silently is not would corrupt every
comparison made with it. Models load from local folders only.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.paths import home_expanded
from harness.registry import REQUIRED, AtLeast, Param, check_given
from harness.retrieve import BATCH_SIZE, DEVICE, FOLDER, RETRIEVERS, THREADS, Retriever, SearchQuery
from harness.retrieve.embeddings import default_device, import_sentence_transformers, passage_text, torch_threads
from harness.retrieve.fusion import build_from_spec
from harness.retrieve.specs import RetrieverSpecs
from harness.trec import Run

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder


class RerankRetriever:
    def __init__(
        self,
        corpus: Corpus,
        first_stage: Retriever,
        model: CrossEncoder,
        *,
        depth: int | None,
        batch_size: int,
        threads: int | None = None,
    ):
        self.corpus = corpus
        self.first_stage = first_stage
        self.model = model
        self.depth = depth
        self.batch_size = batch_size
        self.threads = threads  # torch's CPU threads while this stage scores, and only then

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        first = self.first_stage.search(queries, self.depth or k)
        candidates = {query.qid: list(first.scores.get(query.qid, {})) for query in queries}
        texts = self._texts({docid for docids in candidates.values() for docid in docids})
        pairs = [(query.text, texts[docid]) for query in queries for docid in candidates[query.qid]]
        scores = iter(self._score(pairs))
        results = {}
        for query in queries:
            rescored = [(float(next(scores)), rank, docid) for rank, docid in enumerate(candidates[query.qid])]
            rescored.sort(key=lambda item: (-item[0], item[1]))
            results[query.qid] = [(docid, score) for score, _, docid in rescored[:k]]
        return Run.of(results)

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        import torch

        if not pairs:
            return []
        with torch_threads(self.threads):
            return self.model.predict(
                pairs, batch_size=self.batch_size, activation_fn=torch.nn.Identity(),
                show_progress_bar=len(pairs) > 1000,
            ).tolist()

    def _texts(self, docids: set[str]) -> dict[str, str]:
        """One pass over the corpus for the candidates' texts (the corpus is a stream)."""
        texts = {}
        for document in self.corpus.documents():
            if document.id in docids:
                texts[document.id] = passage_text(document)
                if len(texts) == len(docids):
                    break
        missing = docids - texts.keys()
        if missing:
            raise HarnessError(
                f"rerank: the first stage returned {len(missing)} docid(s) not in corpus {self.corpus.name!r}, "
                f"e.g. {sorted(missing)[0]!r}; the first stage must search the same corpus"
            )
        return texts


DEPTH = Param("depth", AtLeast(1, or_none=True), None, "first-stage hits re-scored per query (default: k)")


@RETRIEVERS.register("rerank", "a cross-encoder re-scores the top hits of a first-stage retriever", [
    Param("first_stage", RetrieverSpecs(), REQUIRED, "the retriever whose hits are re-scored: a name or {name, params}"),
    Param("model", FOLDER, REQUIRED, "local cross-encoder folder (none ships, none is downloaded: e.g. a copy of "
          "cross-encoder/ms-marco-MiniLM-L-6-v2)"),
    DEPTH,
    Param("max_length", int | None, None, "tokens per query and passage pair (default: the model's)"),
    BATCH_SIZE, DEVICE, THREADS,
    Param("index", FOLDER, None, "handed to the first stage (a config's `corpus: {index: NAME}`)"),
], preload=import_sentence_transformers, needs=("torch", "sentence_transformers"), reads_documents=True)
def rerank(
    corpus: Corpus | None = None,
    *,
    first_stage: Mapping | str,
    model: str,
    depth: int | None = None,
    max_length: int | None = None,
    batch_size: int = 32,
    device: str | None = None,
    threads: int | None = None,
    index: str | None = None,
) -> RerankRetriever:
    """The first stage's hits re-scored by the cross-encoder (the parameters as declared above)."""
    if corpus is None:
        raise HarnessError("rerank needs a corpus: the cross-encoder reads the passages' text")
    check_given("rerank", (DEPTH,), depth=depth)  # before the model loads
    cross_encoder = load_cross_encoder(model, max_length=max_length, device=device)
    first = build_from_spec(first_stage, corpus, index)
    return RerankRetriever(corpus, first, cross_encoder, depth=depth, batch_size=batch_size, threads=threads)


def load_cross_encoder(model: str, *, max_length: int | None = None, device: str | None = None) -> CrossEncoder:
    path = home_expanded(model)
    if not (path / "config.json").is_file():
        raise HarnessError(
            f"rerank model folder {path} not found (or has no config.json); cross-encoders load from "
            "local folders only: copy one there, or remove the rerank stage"
        )
    if not _is_cross_encoder(path):
        raise HarnessError(
            f"rerank model {path} is not a cross-encoder (no *ForSequenceClassification architecture in its "
            "config.json): loading it as one would score with an untrained head"
        )
    loaded = _load(str(path.resolve()), device or default_device(), max_length)
    if loaded.num_labels != 1:
        raise HarnessError(
            f"rerank model {path} outputs {loaded.num_labels} labels; a re-ranker must output one relevance score"
        )
    return loaded


def _is_cross_encoder(path: Path) -> bool:
    """A sequence-classification checkpoint, or one sentence-transformers saved as a CrossEncoder."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if any(name.endswith("ForSequenceClassification") for name in config.get("architectures") or []):
        return True
    st_config = path / "config_sentence_transformers.json"
    return st_config.is_file() and json.loads(st_config.read_text(encoding="utf-8")).get("model_type") == "CrossEncoder"


@functools.lru_cache(maxsize=2)
def _load(path: str, device: str, max_length: int | None) -> CrossEncoder:
    import_sentence_transformers()
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(path, device=device, max_length=max_length, local_files_only=True)
    except (OSError, ValueError) as error:
        raise HarnessError(f"cannot load the cross-encoder in {path}: {error}") from error
