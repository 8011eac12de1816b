"""Every harness benchmark as an ir_datasets dataset: `harness/<benchmark>[/<split>]`.

ir_datasets (and through it PyTerrier's `irds:` prefix) then reads the harness's topics:

    import harness, ir_datasets
    dataset = ir_datasets.load("harness/ikat2023/test")
    pt.get_dataset("irds:harness/ikat2023/test").get_topics("text")

`harness/<benchmark>` is the benchmark's default split (the one its official qrels judge);
`harness/<benchmark>/<split>` names each of its splits. Queries
carry the turn (`text`), its rewrites, the conversation before it and the PTKB; qrels are
the benchmark's (shipped or derived); docs exist where the benchmark brings its corpus
(PragmatiCQA spans, OpenDialKG items, iKAT 2023 provenance passages).

ir_datasets has no plugin entry point, so `import harness` installs a hook (`install`) that
calls `register()` once ir_datasets is imported; this module is imported only then.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import NamedTuple

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel

from harness import topics
from harness.topics import Benchmark, Conversation
from harness.topics.opendialkg import OpenDialKGTurn

PREFIX = "harness"


class HarnessQuery(NamedTuple):
    """One turn. `text` is the utterance as spoken (`harness topics export --strategy raw`);
    `context` the dialogue before it as (utterance, response) pairs, each earlier user turn once
    (`Conversation.dialogue`, the history the strategies read: never the turn's own utterance and
    response, which CoSRec's intents and personalised copies of one utterance share), OpenDialKG's
    the turn's `context`, the dialogue's utterances before the request, each as (utterance, '')
    (unlabelled by speaker); `ptkb` the personal statements as (id, text) pairs (CoSRec: every
    user's profile, id = user id); `user` the user the turn is for where the benchmark names one
    (a CoSRec personalised copy `<intent>#<k>`); `parent_id` the turn before it in the
    conversation (on a CAsT 2022 tree, its parent on the path). Missing texts and ids are ''."""

    query_id: str
    text: str
    manual_rewrite: str
    automatic_rewrite: str
    response: str
    conversation_id: str
    turn_index: int
    parent_id: str
    provenance: tuple[str, ...]
    context: tuple[tuple[str, str], ...]
    ptkb: tuple[tuple[str, str], ...]
    user: str

    def default_text(self) -> str:
        return self.text


class HarnessDoc(NamedTuple):
    doc_id: str
    text: str
    title: str

    def default_text(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text


class _Source:
    """A benchmark, loaded on first use (registration itself reads no file)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @cached_property
    def benchmark(self) -> Benchmark:
        return topics.load(self.name)


def _context(conversation: Conversation, index: int) -> tuple[tuple[str, str], ...]:
    turn = conversation.turns[index]
    if isinstance(turn, OpenDialKGTurn):  # its conversation holds the recommendation turns only
        return tuple((utterance, "") for utterance in turn.context)
    return tuple((t.utterance, t.response or "") for t in conversation.dialogue(index))


class HarnessQueries(BaseQueries):
    def __init__(self, source: _Source) -> None:
        self._source = source

    def queries_iter(self) -> Iterator[HarnessQuery]:
        """Each qid once, in conversation and turn order (flattened CAsT 2022 trees repeat turns)."""
        seen: set[str] = set()
        for conversation in self._source.benchmark.conversations:
            ptkb = tuple((s.id, s.text) for s in conversation.personal)
            for index, turn in enumerate(conversation.turns):
                if turn.qid in seen:
                    continue
                seen.add(turn.qid)
                parent = conversation.turns[index - 1].qid if index else ""
                yield HarnessQuery(turn.qid, turn.utterance, turn.manual_rewrite or "", turn.automatic_rewrite or "",
                                   turn.response or "", conversation.id, index, parent,
                                   tuple(turn.provenance), _context(conversation, index), ptkb,
                                   getattr(turn, "user", None) or "")

    def queries_cls(self) -> type:
        return HarnessQuery

    def queries_namespace(self) -> str:
        return f"{PREFIX}/{self._source.name.partition(':')[0]}"

    def queries_lang(self) -> str:
        return "en"


class HarnessQrels(BaseQrels):
    def __init__(self, source: _Source) -> None:
        self._source = source

    def qrels_iter(self) -> Iterator[TrecQrel]:
        for qid, judged in self._source.benchmark.qrels().judgments.items():
            for docid, grade in judged.items():
                yield TrecQrel(qid, docid, grade, "0")

    def qrels_cls(self) -> type:
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return {}


class HarnessDocs(BaseDocs):
    def __init__(self, source: _Source) -> None:
        self._source = source

    def docs_iter(self) -> Iterator[HarnessDoc]:
        for document in self._source.benchmark.corpus.documents():
            yield HarnessDoc(document.id, document.contents, document.title or "")

    @cached_property
    def _count(self) -> int:
        return sum(1 for _ in self._source.benchmark.corpus.documents())

    def docs_count(self) -> int:
        return self._count

    def docs_cls(self) -> type:
        return HarnessDoc

    def docs_namespace(self) -> str:
        return f"{PREFIX}/{self._source.name.partition(':')[0]}"

    def docs_lang(self) -> str:
        return "en"


class HarnessDataset(Dataset):
    """Queries always; qrels and docs only where the benchmark has them (checked on first ask,
    so registering all benchmarks loads none)."""

    def __init__(self, name: str) -> None:
        self._source = _Source(name)
        super().__init__(HarnessQueries(self._source), HarnessQrels(self._source), HarnessDocs(self._source))

    def has_qrels(self) -> bool:
        return self._source.benchmark.qrels is not None

    def has_docs(self) -> bool:
        return self._source.benchmark.corpus is not None

    def __getattr__(self, attr: str):
        if (attr.startswith("qrels_") and not self.has_qrels()) or (attr.startswith("docs_") and not self.has_docs()):
            raise AttributeError(f"{PREFIX} dataset {self._source.name} has no {attr.partition('_')[0]}")
        return super().__getattr__(attr)


def dataset_ids() -> dict[str, str]:
    """ir_datasets id -> harness `NAME[:SPLIT]`, for every benchmark and split."""
    ids = {}
    for name in topics.names():
        ids[f"{PREFIX}/{name}"] = name
        ids.update({f"{PREFIX}/{name}/{split}": f"{name}:{split}" for split in topics.splits(name)})
    return ids


def register() -> None:
    """Register every id with ir_datasets (once; a second call finds them there)."""
    registry = ir_datasets.registry
    for dataset_id, name in dataset_ids().items():
        if dataset_id not in registry._registered:
            registry.register(dataset_id, HarnessDataset(name))


register()  # on import, so that `import harness.irds` alone (ir_datasets' hook imports it too) registers
