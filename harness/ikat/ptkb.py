"""The iKAT PTKB statement ranking task: for each turn, rank the user's PTKB statements.

A turn's statements are ranked with the conversation so far only (the turn and the turns
before it), never a later turn. Methods, registered by name in `METHODS`:

- `bm25`: the Lucene BM25 retriever over the statements (harness.retrieve `bm25`);
- `dense`: the bi-encoder retriever over the statements (harness.retrieve `dense`);
- `gold`: the turn's PTKB provenance from the topics file, for manual runs.

The statements of every conversation given form one corpus (ids `<conversation>/<statement
id>`), and a turn's results are filtered to its own conversation's statements. Runs are
evaluated against the NIST PTKB qrels (qrels/ikat/ptkb_rel_nist, 2023 test turns) with the
`ptkb` measure preset (harness.evaluate.presets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from harness.corpus import Corpus, Document
from harness.errors import HarnessError
from harness.registry import Registry
from harness.topics import Benchmark
from harness.topics.model import Conversation
from harness.trec import Qrels, Ranking, Run

if TYPE_CHECKING:
    from harness.evaluate import Evaluation

QUERY_FIELDS = ("utterance", "manual_rewrite", "automatic_rewrite")


class PTKBRanker(Protocol):
    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> dict[str, Ranking]:
        """{turn qid: best-first [(statement id, score)]} for (conversation, turn index) pairs."""
        ...


# factory(conversations whose statements may be ranked, **params) -> ranker
METHODS: Registry[Callable[..., PTKBRanker]] = Registry("PTKB ranking method")


def rank_ptkb(benchmark: Benchmark, method: str, **params) -> dict[str, Ranking]:
    """{turn qid: best-first [(PTKB statement id, score)]} for every turn of the benchmark."""
    ranker = METHODS.get(method)(benchmark.conversations, **params)
    return ranker.rank([(c, i) for c in benchmark.conversations for i in range(len(c.turns))])


def turn_query(conversation: Conversation, index: int, field: str = "utterance", history: int | None = None) -> str:
    """The user utterances before the turn (the last `history` of them; None: all, 0: none),
    then the turn's own text (its utterance or a rewrite): the conversation so far only."""
    if field not in QUERY_FIELDS:
        raise HarnessError(f"PTKB query field must be one of {', '.join(QUERY_FIELDS)}, not {field!r}")
    turn = conversation.turns[index]
    text = getattr(turn, field)
    if text is None:
        raise HarnessError(f"turn {turn.qid} has no {field}")
    earlier = [t.utterance for t in conversation.history(index)]
    if history is not None:
        earlier = earlier[-history:] if history > 0 else []
    return " ".join([*earlier, text])


def statements_corpus(conversations: Sequence[Conversation]) -> Corpus:
    """Every conversation's PTKB as one corpus, ids `<conversation>/<statement id>`."""

    def documents() -> Iterator[Document]:
        for conversation in conversations:
            for statement in conversation.personal:
                yield Document(f"{conversation.id}/{statement.id}", statement.text)

    names = ",".join(c.id for c in conversations)
    return Corpus(f"ptkb[{names[:60]}{'...' if len(names) > 60 else ''}]", documents)


class RetrievalRanker:
    """A harness retriever over the statements; a turn keeps the hits of its own PTKB."""

    def __init__(
        self,
        retriever_name: str,
        conversations: Sequence[Conversation],
        *,
        field: str = "utterance",
        history: int | None = None,
        **params,
    ) -> None:
        from harness.retrieve import build

        self.field, self.history = field, history
        self.depth = sum(len(c.personal) for c in conversations)  # reaches every own statement
        known = [c for c in conversations if c.personal]
        self.retriever = build(retriever_name, corpus=statements_corpus(known), **params) if known else None

    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> dict[str, Ranking]:
        from harness.retrieve import SearchQuery

        prefixes = {c.turns[i].qid: f"{c.id}/" for c, i in turns}
        if self.retriever is None:
            return dict.fromkeys(prefixes, [])
        queries = [SearchQuery(c.turns[i].qid, turn_query(c, i, self.field, self.history)) for c, i in turns]
        hits = self.retriever.search(queries, self.depth)
        return {
            qid: [(h.docid[len(prefix):], h.score) for h in hits.get(qid, []) if h.docid.startswith(prefix)]
            for qid, prefix in prefixes.items()
        }


@METHODS.register("bm25")
def bm25(conversations: Sequence[Conversation], **params) -> PTKBRanker:
    """params: field, history (see turn_query), and the bm25 retriever's own (k1, b, ...)."""
    return RetrievalRanker("bm25", conversations, **params)


@METHODS.register("dense")
def dense(conversations: Sequence[Conversation], **params) -> PTKBRanker:
    """params: field, history (see turn_query), and the dense retriever's own (model, ...)."""
    return RetrievalRanker("dense", conversations, **params)


def check_params(method: str, params: Mapping[str, Any]) -> None:
    """What a config may give a method, checked when it is read: `field` and `history`, and
    for bm25 and dense their retriever's parameters (a SpecError at `params.<key>`)."""
    from harness.retrieve.specs import SpecError, check_spec

    if method == "gold":
        if params:
            raise SpecError(f"params.{sorted(params)[0]}", "the gold PTKB method takes no parameters")
        return
    rest = dict(params)
    field, history = rest.pop("field", "utterance"), rest.pop("history", None)
    if field not in QUERY_FIELDS:
        raise SpecError("params.field", f"expected one of {', '.join(QUERY_FIELDS)}, got {field!r}")
    if history is not None and (isinstance(history, bool) or not isinstance(history, int)):
        raise SpecError("params.history", f"expected an integer or null, got {history!r}")
    check_spec(method, rest)


class GoldRanker:
    """The turn's own PTKB provenance from the topics (Turn.extra["ptkb_provenance"]), in the
    listed order: a manual run, not a system."""

    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> dict[str, Ranking]:
        rankings: dict[str, Ranking] = {}
        for conversation, index in turns:
            turn = conversation.turns[index]
            ids = list(dict.fromkeys(turn.extra.get("ptkb_provenance", ())))
            rankings[turn.qid] = [(pid, float(len(ids) - i)) for i, pid in enumerate(ids)]
        return rankings


@METHODS.register("gold")
def gold(conversations: Sequence[Conversation], **params) -> PTKBRanker:
    if params:
        raise HarnessError(f"the gold PTKB method takes no parameters, got {', '.join(sorted(params))}")
    return GoldRanker()


def ptkb_run(rankings: dict[str, Ranking], name: str) -> Run:
    return Run(name, {qid: dict(ranking) for qid, ranking in rankings.items()})


def evaluate_ptkb(rankings: dict[str, Ranking], name: str, qrels: Qrels | None = None) -> Evaluation:
    """Score a PTKB ranking with the `ptkb` preset's measures against the NIST PTKB qrels (by default)."""
    from harness.evaluate import evaluate
    from harness.evaluate.presets import PRESETS
    from harness.topics.ikat import ptkb_qrels

    return evaluate(qrels or ptkb_qrels("nist"), ptkb_run(rankings, name), list(PRESETS.get("ptkb").measures))
