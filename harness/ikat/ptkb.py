"""The iKAT PTKB statement ranking task: for each turn, rank the user's PTKB statements.

A turn's statements are ranked with the conversation so far only (the turn and the turns
before it), never a later turn, nor the turn's own answer (its response, its assessed PTKB
provenance): a method is built with the users' statements alone and handed each turn as a query
strategy is (`handed`). Methods, registered by name in `METHODS`:

- `bm25`: the Lucene BM25 retriever over the statements (harness.retrieve `bm25`);
- `dense`: the bi-encoder retriever over the statements (harness.retrieve `dense`);
- `gold`: the turn's PTKB provenance from the topics file, for manual runs: an oracle by design,
  the only method handed the turn's assessed fields.

`bm25` and `dense` search the statements of every conversation as one corpus (ids
`<conversation>/<statement id>` there), a turn's results filtered to its own conversation's
statements; every method answers a turn's ranking by the statements' own ids. Runs are
evaluated against the NIST PTKB qrels (qrels/ikat/ptkb_rel_nist, 2023 test turns) with the
`ptkb` measure preset (harness.evaluate.presets).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol

from harness.corpus import Corpus, Document
from harness.errors import HarnessError
from harness.registry import Param, Registry, as_declared, declared
from harness.topics import Benchmark
from harness.topics.model import Conversation, so_far
from harness.trec import Run

QUERY_FIELDS = ("utterance", "manual_rewrite", "automatic_rewrite")


def require_ptkb(conversations: Sequence[Conversation], needs: str, topics: str = "these topics") -> None:
    """`needs` (a strategy, a task) reads the users' PTKB statements: topics where no
    conversation has any are an error, as `variant` is on topics without query variants, not
    queries or rankings silently made without them. Some conversations without (CoSRec's
    crowd users who stated no preference) are fine."""
    if not any(conversation.personal for conversation in conversations):
        raise HarnessError(f"{needs} needs PTKB statements, and no conversation of {topics} has any "
                           "(iKAT and CoSRec benchmarks have them)")


class PTKBRanker(Protocol):
    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> Run:
        """A run {turn qid: best-first [(statement id, score)]} for (conversation, turn index) pairs,
        each conversation as `handed` gives it, the statement ids those of `Conversation.personal`."""
        ...


# factory(conversations whose statements may be ranked, **params) -> ranker
METHODS: Registry[Callable[..., PTKBRanker]] = Registry("PTKB ranking method", group="harness.ptkb_methods")


@METHODS.adapter
def _plugin_method(name: str, obj: Any) -> Callable[..., PTKBRanker]:
    """A plug-in's method is a function or class `f(conversations, **params)` making a ranker whose
    `rank(turns)` answers a harness.trec.Run; its parameters after the first are a config's (`params:`)."""
    expected = "a function or class f(conversations, **params) making an object with rank(turns) -> Run"
    try:
        signature = inspect.signature(obj)
        signature.bind_partial(None)  # its other parameters, required ones too, are a config's
    except (TypeError, ValueError):
        raise HarnessError(f"PTKB ranking method {name!r}: {getattr(obj, '__qualname__', type(obj).__name__)} "
                           f"cannot be called as f(conversations); expected {expected}") from None

    @functools.wraps(obj)
    def factory(conversations: Sequence[Conversation], **params: Any) -> PTKBRanker:
        ranker = obj(conversations, **params)
        if not callable(getattr(ranker, "rank", None)):
            raise HarnessError(f"PTKB ranking method {name!r} made {type(ranker).__name__}; expected {expected}")
        return _CheckedRanker(name, ranker)

    factory.declaration = declared(name, obj, skip=list(signature.parameters)[:1])  # type: ignore[attr-defined]
    return factory


class _CheckedRanker:
    """A plug-in's ranker, whose answer is checked to be a Run."""

    def __init__(self, name: str, ranker: PTKBRanker) -> None:
        self.name, self.ranker = name, ranker

    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> Run:
        found = self.ranker.rank(turns)
        if not isinstance(found, Run):
            raise HarnessError(f"PTKB ranking method {self.name!r} answered {type(found).__name__}; expected a "
                               "harness.trec.Run (Run.of({turn qid: [(statement id, score), ...]}))")
        self._refuse_strays(found, turns)
        return found

    def _refuse_strays(self, found: Run, turns: Sequence[tuple[Conversation, int]]) -> None:
        """A ranking for a turn not asked, or of a statement its user has not, is an error naming
        it: it would be dropped without a word, or scored as an unjudged statement."""
        own = {c.turns[i].qid: [s.id for s in c.personal] for c, i in turns}
        for qid in found:
            if qid not in own:
                asked = list(own)
                raise HarnessError(f"PTKB ranking method {self.name!r} ranked turn {qid!r}, which it was not asked "
                                   f"(asked: {', '.join(asked[:3])}{', ...' if len(asked) > 3 else ''})")
            stray = next((hit.docid for hit in found[qid] if hit.docid not in own[qid]), None)
            if stray is not None:
                ids = ", ".join(own[qid][:5]) + (", ..." if len(own[qid]) > 5 else "") or "none"
                raise HarnessError(f"PTKB ranking method {self.name!r} ranked statement {stray!r} for turn {qid}, "
                                   f"which is none of its user's (their ids: {ids}); expected the ids of the "
                                   "statements in the conversation's personal")


def rank_ptkb(benchmark: Benchmark, method: str, **params) -> Run:
    """{turn qid: best-first [(PTKB statement id, score)]} for every turn of the benchmark, a
    run named after the method, given `params` as a config writes them (checked when it was
    read) and taking them as declared, as `harness.retrieve.build` hands a retriever its own
    (`order: reversed` a method's Order.REVERSED)."""
    factory = METHODS.get(method)
    statements = [Conversation(c.id, (), personal=c.personal) for c in benchmark.conversations]
    ranker = factory(statements, **as_declared(METHODS.declaration(method), params))
    ranked = ranker.rank([(handed(method, c, i), i) for c in benchmark.conversations for i in range(len(c.turns))])
    ranked.name = method
    return ranked


def handed(method: str, conversation: Conversation, index: int) -> Conversation:
    """What `method` ranks the statements of the turn `index` with: the conversation so far, that
    turn as the user asked it (`so_far`), as a query strategy is handed it. The built-in `gold`
    alone, an oracle by design, gets the turn as the benchmark has it: its assessed PTKB
    provenance is what it ranks (a plug-in taking its name is not it)."""
    if METHODS.get(method) is gold:
        return dataclasses.replace(conversation, turns=conversation.turns[: index + 1])
    return so_far(conversation, index)


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

    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> Run:
        from harness.retrieve import SearchQuery

        prefixes = {c.turns[i].qid: f"{c.id}/" for c, i in turns}
        if self.retriever is None:
            return Run.of(dict.fromkeys(prefixes, []))
        queries = [SearchQuery(c.turns[i].qid, turn_query(c, i, self.field, self.history)) for c, i in turns]
        found = self.retriever.search(queries, self.depth)
        return Run.of({
            qid: [(docid[len(prefix):], score) for docid, score in found.pairs(qid) if docid.startswith(prefix)]
            for qid, prefix in prefixes.items()
        })


FIELD = Param("field", Literal[QUERY_FIELDS], "utterance", "the turn's text the query ends with")
HISTORY = Param("history", int | None, None, "how many earlier user utterances go before it (default: all)")


def _retrieval_method(retriever: str) -> None:
    """Registers the method `retriever`: that retriever over the statements (RetrievalRanker),
    taking how a turn's query is made (field, history) and then the retriever's own parameters,
    and preloading and needing what the retriever preloads and needs with those parameters (all
    read from its declaration when asked)."""
    def params() -> list[Param]:
        from harness.retrieve import RETRIEVERS

        return [FIELD, HISTORY, *RETRIEVERS.declaration(retriever).params]

    def preload() -> object:
        from harness.retrieve import RETRIEVERS

        own = RETRIEVERS.declaration(retriever).preload
        return own() if own is not None else None

    def preload_if(params: Mapping[str, Any]) -> bool:
        from harness.retrieve import RETRIEVERS

        return RETRIEVERS.declaration(retriever).preload_for(params) is not None

    def needs_with(params: Mapping[str, Any], count: Callable[[int], int | None]) -> tuple[str, ...]:
        from harness.retrieve import RETRIEVERS

        # it searches a turn's PTKB statements, a handful, not the corpus `count` counts
        return RETRIEVERS.declaration(retriever).needs_for(params, lambda limit: 0)

    METHODS.add(retriever, functools.partial(RetrievalRanker, retriever),
                f"the {retriever} retriever over the statements", params, preload=preload, preload_if=preload_if,
                needs_with=needs_with)


_retrieval_method("bm25")
_retrieval_method("dense")


class GoldRanker:
    """The turn's own PTKB provenance from the topics (IkatTurn.ptkb_provenance), in the
    listed order: a manual run, not a system."""

    def rank(self, turns: Sequence[tuple[Conversation, int]]) -> Run:
        from harness.topics.ikat import IkatTurn

        rankings: dict[str, list[tuple[str, float]]] = {}
        for conversation, index in turns:
            turn = conversation.turns[index]
            ids = list(dict.fromkeys(turn.ptkb_provenance if isinstance(turn, IkatTurn) else ()))
            rankings[turn.qid] = [(pid, float(len(ids) - i)) for i, pid in enumerate(ids)]
        return Run.of(rankings)


@METHODS.register("gold", "the turn's own PTKB provenance from the topics (the assessors' answer), in order: "
                  "an oracle, a manual run (ikat from-trec --run-type manual)")
def gold(conversations: Sequence[Conversation], **params) -> PTKBRanker:
    if params:
        raise HarnessError(f"the gold PTKB method takes no parameters, got {', '.join(sorted(params))}")
    return GoldRanker()
