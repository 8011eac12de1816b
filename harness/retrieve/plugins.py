"""A plug-in's object made into a retriever factory, checked when a config names it.

What a researcher has is one of:

- a search function `f(query: str, k: int) -> iterable of (docid, score)`; keyword parameters
  after `query` and `k` are the config's `params:`. A batch form may sit beside it as the
  function's `batch` attribute, `f.batch(queries: list[str], k) -> one iterable per query`;
- a class whose instances have `search(queries, k) -> {qid: [(docid, score), ...]}` (the
  retriever interface, whose answer may also be a `harness.trec.Run`); its constructor's
  parameters are the config's `params:`, and it is given the experiment's `corpus` if it
  takes one;
- an object with that `search` method, or a PyTerrier transformer (`qid`, `query` in;
  `qid`, `docno`, `score` out).

Anything else, or a function that cannot be called as `f(query, k)`, is a one-line error naming
the plug-in, raised when the name is first looked up (the config check does that). Whatever a
plug-in answers becomes a `Run` here, at the edge, checked, in trec_eval's order (ties by docid
descending) and its repeats dropped before the top k are taken, so the harness past this module
sees one ranking type. A score is a real number (int, float, numpy's): float() alone would take
"3.5" and True.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from numbers import Real
from typing import Any

from harness.errors import HarnessError
from harness.retrieve import RETRIEVERS, Retriever, RetrieverFactory, SearchQuery
from harness.trec import Hit, Kept, Run, canonical_order, field_ok, kept_ranking

_EXPECTED = ("a function f(query: str, k: int) -> [(docid, score), ...], a class or object with "
             "search(queries, k), or a PyTerrier transformer")


@RETRIEVERS.adapter
def adapt(name: str, obj: Any) -> RetrieverFactory:
    """The factory the registry keeps for a plug-in retriever's object."""
    if inspect.isclass(obj):
        if not callable(getattr(obj, "search", None)):
            raise HarnessError(f"retriever {name!r}: class {obj.__qualname__} has no search(queries, k) method; "
                               f"expected {_EXPECTED}")
        return _class_factory(name, obj)
    if _is_transformer(obj):
        return _constant(_Transformer(name, obj), obj)
    if callable(getattr(obj, "search", None)):
        return _constant(_Searcher(name, obj), obj)
    if callable(obj):
        return _function_factory(name, obj)
    raise HarnessError(f"retriever {name!r}: got {type(obj).__name__}; expected {_EXPECTED}")


def _constant(retriever: Retriever, obj: Any) -> RetrieverFactory:
    """A factory that always gives `retriever`, the wrapper of the plug-in object `obj`,
    described by `obj`'s class (its summary in `harness components`)."""
    def factory(corpus: Any = None) -> Retriever:
        return retriever

    factory.__doc__ = type(obj).__doc__
    return factory


def _signature(target: Callable) -> inspect.Signature:
    """With its annotations as types where they can be read (a module that postpones them has
    strings), so that the declaration read from it checks them."""
    try:
        return inspect.signature(target, eval_str=True)
    except Exception:  # an annotation naming what its module does not define
        return inspect.signature(target)


def _class_factory(name: str, cls: type) -> RetrieverFactory:
    signature = _signature(cls)
    takes_corpus = "corpus" in signature.parameters

    def factory(corpus: Any = None, **params: Any) -> Retriever:
        return _Searcher(name, cls(corpus=corpus, **params) if takes_corpus else cls(**params))

    corpus = inspect.Parameter("corpus", inspect.Parameter.KEYWORD_ONLY, default=None)
    factory.__signature__ = signature if takes_corpus else _with(signature, corpus)  # type: ignore[attr-defined]
    factory.__doc__ = cls.__doc__
    return factory


def _function_factory(name: str, function: Callable) -> RetrieverFactory:
    try:
        signature = _signature(function)
        signature.bind_partial("query", 10)
    except (TypeError, ValueError):
        shown = _signature_text(function)
        raise HarnessError(f"retriever {name!r}: {getattr(function, '__qualname__', function)}{shown} cannot be "
                           f"called as f(query, k); expected {_EXPECTED}") from None
    batch = getattr(function, "batch", None)
    rest = list(signature.parameters.values())[2:]
    takes_corpus = any(param.name == "corpus" for param in rest)

    def factory(corpus: Any = None, **params: Any) -> Retriever:
        if takes_corpus:
            params["corpus"] = corpus
        return _Function(name, function, batch if callable(batch) else None, params)

    own = [param if param.kind is param.VAR_KEYWORD else param.replace(kind=inspect.Parameter.KEYWORD_ONLY)
           for param in rest if param.kind is not param.VAR_POSITIONAL]  # `**params` stays open
    corpus = inspect.Parameter("corpus", inspect.Parameter.KEYWORD_ONLY, default=None)
    factory.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=own if takes_corpus else [corpus, *own])
    factory.__doc__ = function.__doc__
    return factory


def _with(signature: inspect.Signature, extra: inspect.Parameter) -> inspect.Signature:
    """The signature with a keyword-only parameter added before any `**kwargs`."""
    params = list(signature.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    return signature.replace(parameters=[*params[:at], extra, *params[at:]])


def _signature_text(function: Callable) -> str:
    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):
        return "(...)"


class _Function:
    """A search function behind the retriever interface; its hits best first, at most k."""

    def __init__(self, name: str, function: Callable, batch: Callable | None, params: dict[str, Any]) -> None:
        self.name, self.function, self.batch, self.params = name, function, batch, params

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        if self.batch is None:
            return Run.of_kept({query.qid: self._top(query, lambda: self.function(query.text, k, **self.params), k)
                                for query in queries})
        with _answering(queries):
            answered = self.batch([query.text for query in queries], k, **self.params)
            one_each = isinstance(answered, Iterable) and not isinstance(answered, (str, bytes, Mapping))
            answers = list(answered) if one_each else None
        if answers is None or len(answers) != len(queries):  # zip would drop or misalign queries without a word
            got = type(answered).__name__ if answers is None else f"{len(answers)} ranking{'s' * (len(answers) != 1)}"
            raise HarnessError(f"retriever {self.name!r}: batch(queries, k) answered {got} for {len(queries)} "
                               "queries; expected one list of (docid, score) pairs per query, in their order")
        return Run.of_kept({query.qid: self._top(query, lambda: answer, k) for query, answer in zip(queries, answers)})

    def _top(self, query: SearchQuery, answer: Callable[[], Iterable], k: int) -> Kept:
        """`top` of `answer()`, an exception of the plug-in's own noted with the query (an answer
        may be a generator, running the plug-in's code as `top` reads it)."""
        with _answering([query]):
            return top(self.name, query.qid, answer(), k)


class _Searcher:
    """An object with the retriever interface; its answer, a Run or {qid: pairs}, checked and
    made a Run as a function's is (best first, the top k, finite scores)."""

    def __init__(self, name: str, searcher: Any) -> None:
        self.name, self.searcher = name, searcher

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        with _answering(queries):  # a copy: a plug-in emptying it (`queries.pop()`) leaves the harness's list whole
            answer = self.searcher.search(list(queries), k)
        if not isinstance(answer, Mapping):
            raise HarnessError(f"retriever {self.name!r}: search(queries, k) answered {type(answer).__name__}; "
                               "expected {qid: [(docid, score), ...]}")
        _refuse_stray(self.name, "search(queries, k) answered", answer, queries,
                      "the qids of the SearchQuery objects, as strings")
        return Run.of_kept({query.qid: top(self.name, query.qid, answer.get(query.qid, ()), k) for query in queries})


@contextmanager
def _answering(queries: Sequence[SearchQuery]) -> Iterator[None]:
    """A plug-in's own exception noted with the query it was answering (a batch's: how many and the
    first), the first thing its author needs: `harness run` prints the note on the error's line."""
    try:
        yield
    except HarnessError:  # the harness's own check of the answer, which names the query itself
        raise
    except Exception as error:
        first = queries[0]
        text = first.text if len(first.text) <= 60 else f"{first.text[:57]}..."
        many = f"a batch of {len(queries)} queries, the first " if len(queries) > 1 else ""
        error.add_note(f"answering {many}query {first.qid} ({text!r})")
        raise


def _refuse_stray(name: str, how: str, answered: Iterable, queries: Sequence[SearchQuery], expected: str,
                  as_qid: Callable[[Any], Any] = lambda qid: qid) -> None:
    """An answer for a query not asked (an int qid, a mangled or another batch's one: `as_qid(qid)`
    not among the asked qids) is an error naming it: its ranking would be dropped without a word
    and the asked query scored as an empty ranking."""
    asked = {query.qid for query in queries}
    stray = next((qid for qid in answered if as_qid(qid) not in asked), None)
    if stray is not None:
        raise HarnessError(f"retriever {name!r}: {how} query {_short(stray)}, which it was not asked (asked: "
                           f"{', '.join(sorted(asked)[:3])}{', ...' if len(asked) > 3 else ''}); expected {expected}")


def top(name: str, qid: str, answer: Iterable, k: int) -> Kept:
    """(docid, score) pairs in trec_eval's order (score descending, ties by docid descending,
    whatever order the plug-in listed them in: its numbers are then those of `harness eval` on
    the same pairs, and the same in every process), the top k distinct documents: a document
    answered again is dropped (its first, best score kept) and counted before the cut, so an
    answer of k distinct documents keeps them all. Anything else is a one-line error naming
    the plug-in and the query."""
    if answer is None or isinstance(answer, (str, bytes, Mapping)) or not isinstance(answer, Iterable):
        raise HarnessError(f"retriever {name!r} answered {_short(answer)} for query {qid}; "
                           "expected a list of (docid, score) pairs")
    found = []
    for item in answer:
        try:
            if isinstance(item, (str, bytes)):  # "d1" would unpack as ("d", "1")
                raise TypeError
            docid, score = item
        except (TypeError, ValueError):
            raise HarnessError(f"retriever {name!r} answered {_short(item)} for query {qid}; "
                               "expected (docid, score) pairs") from None
        if type(score) is not float and not _number(score):
            raise HarnessError(f"retriever {name!r} answered the score {_short(score)} ({type(score).__name__}) for "
                               f"query {qid}, document {_short(docid)}; expected a number (an int or a float, numpy's too; "
                               "not a bool or a string)")
        try:
            score = float(score)
        except OverflowError:  # an int beyond any float (10**400): not finite
            score = math.inf
        if not isinstance(docid, str) or not field_ok(docid) or not math.isfinite(score):
            raise HarnessError(f"retriever {name!r} answered {_short(item)} for query {qid}; "
                               "expected a docid string (non-empty, no whitespace or NUL byte) and a finite score")
        found.append(Hit(docid, score))
    kept = kept_ranking(canonical_order(found))
    return kept._replace(scores=dict(islice(kept.scores.items(), k)))


def _number(score: Any) -> bool:
    """Whether `score` is a real number and not a bool (numpy's bool_ is no `Real`): float()
    would also take "3.5" and True, a plug-in's mistake that would rank documents by accident."""
    return isinstance(score, Real) and not isinstance(score, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{type(value).__name__} {text[:50]}..."


def _is_transformer(obj: Any) -> bool:
    """A PyTerrier transformer (pyterrier is not imported to tell: it is there if one exists)."""
    pyterrier = sys.modules.get("pyterrier")
    return pyterrier is not None and isinstance(obj, pyterrier.Transformer)


class _Transformer:
    """A PyTerrier pipeline as a retriever: a batch of queries in, its result frame's
    (docno, score) per qid out."""

    def __init__(self, name: str, transformer: Any) -> None:
        self.name, self.transformer = name, transformer

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        import pandas as pd

        frame = pd.DataFrame({"qid": [query.qid for query in queries], "query": [query.text for query in queries]})
        with _answering(queries):
            result = self.transformer.transform(frame)
        missing = {"qid", "docno", "score"} - set(result.columns)
        if missing:
            raise HarnessError(f"retriever {self.name!r}: the transformer's result has no column "
                               f"{sorted(missing)[0]!r}; expected qid, docno, score")
        groups = dict(list(result.groupby("qid", sort=False)))
        _refuse_stray(self.name, "the transformer's result has", groups, queries,
                      "the qid column of the frame it was given, its strings unchanged", str)
        grouped = {str(qid): list(zip(group["docno"].astype(str), group["score"])) for qid, group in groups.items()}
        return Run.of_kept({query.qid: top(self.name, query.qid, grouped.get(query.qid, []), k) for query in queries})
