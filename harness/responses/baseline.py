"""`minilm`: an offline BASELINE judge of support, not a substitute for an LLM or a person.

It embeds the claim (a nugget, or an answer sentence) and each sentence of the evidence (the
response, or the cited passage) with the shipped all-MiniLM-L6-v2 (harness.retrieve's local
encoder, never a hub), takes the highest cosine similarity, and answers on the support-0-2
scale: 2 (support) at or above `support`, 1 (partial support) at or above `partial`, else 0.
The thresholds (0.7 and 0.5 by default) are settings, not calibrated on people's labels;
how well the judge agrees with people must be measured before its scores are trusted.

Similarities are cached on disk per model (cache_root()/judge/minilm/), keyed by the claim
and the evidence, so a rerun loads no model and changing a threshold re-judges for free. The
cache is written after every CHUNK_PAIRS new pairs, so a kill or Ctrl-C during a long cold run
loses at most one chunk and the rerun resumes from the cache. A text is encoded once per run,
in the chunk that first needs it, and a vector moves in its last bits with the texts encoded
beside it: the vectors later chunks reuse are kept beside the cache (`<model>.carried/`) until
the run ends, so a resumed run computes the similarities an uninterrupted one does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zipfile
from collections.abc import Sequence
from pathlib import Path

from harness.atomic import atomic_write
from harness.errors import HarnessError, Interrupted
from harness.judge.base import CACHE_DIR, JUDGES, counts, now
from harness.judge.model import Item, Judgment
from harness.judge.scales import SUPPORT_0_2
from harness.paths import cache_root, home_expanded
from harness.registry import Param

SUPPORT_THRESHOLD = 0.7
PARTIAL_THRESHOLD = 0.5
CHUNK_PAIRS = 4096  # new pairs computed between two writes of the cache
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The text split after . ! ? followed by space, and at line breaks (a plain baseline rule)."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def claim_and_evidence(item: Item) -> tuple[str, str]:
    """(nugget, response) for nugget assignment, (sentence, passage) for citation support."""
    if "nugget" in item.fields:
        return item.fields["nugget"], item.fields.get("response", "")
    if "sentence" in item.fields:
        return item.fields["sentence"], item.fields.get("passage", "")
    raise HarnessError(f"the minilm judge needs nugget+response or sentence+passage fields, got "
                       f"{', '.join(sorted(item.fields))}")


def _keys(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The cache key of each pair: sha256 of json.dumps([claim, evidence]), built from each
    distinct text's JSON once (a response is paired with every nugget of its turn)."""
    encoded: dict[str, str] = {}

    def dumped(text: str) -> str:
        found = encoded.get(text)
        if found is None:
            found = encoded[text] = json.dumps(text, ensure_ascii=False)
        return found

    return [hashlib.sha256(f"[{dumped(claim)}, {dumped(evidence)}]".encode("utf-8")).hexdigest()[:32]
            for claim, evidence in pairs]


def _carried(folder: Path) -> dict[str, object]:
    """The vectors an interrupted run encoded for its later chunks (a damaged file's texts are encoded again)."""
    import numpy as np

    vectors: dict[str, object] = {}
    for file in sorted(folder.glob("*.npz")):
        try:
            with np.load(file) as data:
                vectors.update(zip(data["texts"].tolist(), data["vectors"]))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            pass
    return vectors


class MiniLMJudge:
    """The offline baseline (see the module docstring)."""

    scale = SUPPORT_0_2

    def __init__(self, support: float = SUPPORT_THRESHOLD, partial: float = PARTIAL_THRESHOLD,
                 model: str | None = None, cache_dir: Path | None = None, batch_size: int = 64,
                 chunk_pairs: int = CHUNK_PAIRS) -> None:
        if not 0 <= partial <= support <= 1:
            raise HarnessError(f"minilm thresholds must satisfy 0 <= partial <= support <= 1, got "
                               f"partial {partial}, support {support}")
        self.name = "minilm"
        self.support, self.partial = support, partial
        self.model = model
        self.batch_size = batch_size
        self.chunk_pairs = chunk_pairs
        self._cache_dir = cache_dir
        self._counts: dict[str, int] = {}
        self.encoded = 0  # texts the last judge() encoded (0 when every pair came from the cache)

    def _model_path(self) -> Path:
        from harness.retrieve.embeddings import default_model_path

        if self.model:
            return home_expanded(self.model)
        return default_model_path(  # the judge's model is a parameter, not an option of `--judge minilm`
            "which the judge needs for sentence-transformers too; from Python, evaluate(..., judge='minilm', "
            "model=FOLDER) names another local sentence-transformers folder")

    def _cache_file(self) -> Path:
        from harness.retrieve.embeddings import model_identity

        identity = model_identity(str(self._model_path().resolve()))
        return (self._cache_dir or cache_root() / "judge" / "minilm") / f"{identity[:24]}.json"

    def label(self, similarity: float) -> int:
        return 2 if similarity >= self.support else 1 if similarity >= self.partial else 0

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[float], list[bool]]:
        """Highest claim-sentence cosine per (claim, evidence) pair, and whether it came from the cache."""
        path = self._cache_file()
        try:
            cache = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            cache = {}  # a damaged cache is rebuilt
        keys = _keys(pairs)
        todo = {key: pair for key, pair in zip(keys, pairs) if key not in cache}
        if todo:
            self._fill(cache, path, list(todo.items()), set(keys))
        return [cache[key] for key in keys], [key not in todo for key in keys]

    def _fill(self, cache: dict[str, float], path: Path, pending: list[tuple[str, tuple[str, str]]],
              asked: set[str]) -> None:
        """The pending pairs' similarities into `cache`, chunk by chunk, the cache written after
        each. Ctrl-C says how many pairs are cached, and how to resume."""
        import numpy as np

        carried = path.with_suffix(".carried")
        split: dict[str, list[str]] = {}  # evidence -> its sentences (a response is the evidence of many pairs)
        for _, (_, evidence) in pending:
            if evidence not in split:
                split[evidence] = sentences(evidence)
        chunks = [pending[start:start + self.chunk_pairs] for start in range(0, len(pending), self.chunk_pairs)]
        texts = [list(dict.fromkeys([claim for _, (claim, _) in chunk] +
                                    [s for _, (_, evidence) in chunk for s in split[evidence]])) for chunk in chunks]
        last = {text: index for index, found in enumerate(texts) for text in found}  # the last chunk needing it
        try:
            from harness.retrieve.embeddings import load_encoder

            encoder = load_encoder(self.model, normalize=True, batch_size=self.batch_size)
            vectors = _carried(carried)
            for index, chunk in enumerate(chunks):
                fresh = [text for text in texts[index] if text not in vectors]
                if fresh:
                    vectors.update(zip(fresh, encoder.encode_documents(fresh)))
                    self.encoded += len(fresh)
                    later = [text for text in fresh if last[text] > index]
                    if later:  # before the cache: a kill between the two writes keeps them for the chunk redone
                        carried.mkdir(parents=True, exist_ok=True)
                        with atomic_write(carried / f"{os.getpid()}-{index}.npz", "wb") as handle:
                            np.savez_compressed(handle, texts=np.array(later),  # padded to the longest: compressed
                                                vectors=np.stack([vectors[t] for t in later]))
                for key, (claim, evidence) in chunk:
                    parts = split[evidence]
                    cache[key] = (round(float(np.max(np.stack([vectors[s] for s in parts]) @ vectors[claim])), 6)
                                  if parts else 0.0)
                with atomic_write(path) as handle:  # a kill loses at most the chunk in progress
                    json.dump(cache, handle)
        except KeyboardInterrupt:
            judged = sum(key in cache for key in asked)
            if not judged:
                raise Interrupted(f"0 of {len(asked)} pairs judged: nothing cached yet (the cache is written "
                                  f"after every {self.chunk_pairs} pairs computed, the first once MiniLM has loaded)"
                                  ) from None
            raise Interrupted(f"{judged} of {len(asked)} pairs judged, their similarities cached in {path}; run the "
                              "same command again to resume (they are not computed again)") from None
        shutil.rmtree(carried, ignore_errors=True)

    def judge(self, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
        pairs = [claim_and_evidence(item) for item in items]
        self.encoded = 0
        values, hits = self.similarities(pairs) if pairs else ([], [])
        judgments = [Judgment(item.key, self.label(value), "ok", f"{value:.6f}", hit)
                     for item, value, hit in zip(items, values, hits)]
        self._counts = counts(judgments)
        return judgments

    def provenance(self) -> dict:
        return {"judge": self.name, "kind": "offline baseline (MiniLM cosine similarity with thresholds)",
                "model": str(self._model_path()), "thresholds": {"support": self.support, "partial": self.partial},
                "scale": self.scale.name, "date": now(), "counts": dict(self._counts), "encoded_texts": self.encoded}


JUDGES.add("minilm", MiniLMJudge, "offline baseline of support: MiniLM cosine similarity with thresholds", [
    Param("support", float, SUPPORT_THRESHOLD, "similarity from which a claim is supported (label 2)"),
    Param("partial", float, PARTIAL_THRESHOLD, "similarity from which it is partly supported (label 1)"),
    Param("model", str | None, None, "local sentence-transformers folder (default: the shipped all-MiniLM-L6-v2)"),
    CACHE_DIR,
    Param("batch_size", int, 64, "texts encoded at once"),
    Param("chunk_pairs", int, CHUNK_PAIRS, "new pairs computed between two writes of the cache"),
])
