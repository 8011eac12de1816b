"""The (query, passage) pairs `harness judge` asks about: the unjudged ones in the top k of
runs, with the query and its conversation from the benchmark and the passage's text from the
corpus the runs were made on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.corpus import Corpus, find_sourced_texts
from harness.corpus.segment import document_text
from harness.errors import HarnessError
from harness.judge.model import Item
from harness.queries.llm import history_text
from harness.topics import Benchmark
from harness.trec import Qrels, Run

QUERY_FIELDS = ("utterance", "manual_rewrite", "automatic_rewrite")
# what each item carries for the prompt template
ITEM_FIELDS = ("query", "context", "passage", "title", "ptkb")


def sample_item() -> Item:
    """An item of relevance_items' kind, its fields empty: the llm judge's prompt is filled with
    it before any pair is read (harness.judge.llm.check_prompt)."""
    return Item(("", ""), dict.fromkeys(ITEM_FIELDS, ""))


def unjudged_pairs(runs: Sequence[Run], depth: int, judged: Qrels | None) -> tuple[list[tuple[str, str]], int]:
    """(qid, docid) pairs in the top `depth` of any run that `judged` does not label, each
    once, by query then by first appearance; and how many judged pairs were skipped."""
    known = judged.judgments if judged is not None else {}
    pairs: dict[tuple[str, str], None] = {}
    skipped: set[tuple[str, str]] = set()
    qids = sorted({qid for run in runs for qid in run.scores}, key=_natural)
    for qid in qids:
        labelled = known.get(qid, {})
        for run in runs:
            for docid, _ in run.ranked(qid, depth):
                (skipped.add if docid in labelled else pairs.setdefault)((qid, docid))
    return list(pairs), len(skipped)


def _natural(qid: str) -> list:
    """'2_10' after '2_9': numbers compared as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", qid)]


def relevance_items(pairs: Sequence[tuple[str, str]], benchmark: Benchmark, corpora: Sequence[Corpus],
                    query_field: str = "utterance") -> tuple[list[Item], dict[str, int]]:
    """Items keyed (qid, docid) with the fields of ITEM_FIELDS, and for each passage the index in
    `corpora` of the one its text came from (the first holding it). A query that is not a turn of
    the benchmark, a turn without the chosen query field, or a passage none of the corpora
    holds is a one-line error (a judge must not grade an empty text). Without a corpus (a
    judge that answers from recorded labels reads no text) the passage field is empty."""
    if query_field not in QUERY_FIELDS:
        raise HarnessError(f"unknown query field {query_field!r}; known: {', '.join(QUERY_FIELDS)}")
    turns = {turn.qid: (conversation, index) for conversation in benchmark.conversations
             for index, turn in enumerate(conversation.turns)}
    strange = sorted({qid for qid, _ in pairs if qid not in turns}, key=_natural)
    if strange:
        raise HarnessError(f"{len(strange)} queries of the runs are not turns of {benchmark.name} "
                           f"(e.g. {strange[0]!r}); is --topics the benchmark the runs answer?")
    texts = passages(corpora, {docid for _, docid in pairs}) if corpora else {}
    items = []
    for qid, docid in pairs:
        conversation, index = turns[qid]
        turn = conversation.turns[index]
        query = getattr(turn, query_field)
        if not query:
            raise HarnessError(f"turn {qid} of {benchmark.name} has no {query_field}")
        items.append(Item((qid, docid), {
            "query": query,
            "context": history_text(conversation, index) or "(none: this is the first message)",
            "passage": texts[docid][1] if docid in texts else "",
            "title": conversation.title or "",
            "ptkb": "\n".join(f"- {statement.text}" for statement in conversation.personal) or "(none)",
        }))
    return items, {docid: source for docid, (source, _) in texts.items()}


def passages(corpora: Sequence[Corpus], wanted: set[str]) -> dict[str, tuple[int, str]]:
    """The text of each wanted passage as every judge reads it (document_text: the title on
    the first line, then the contents), with the index of the corpus it came from, from one
    pass over each corpus in turn, read until every passage is found (the first corpus holding
    a passage gives its text): a run may search several corpora as one (a config's `corpus:` list)."""
    texts = find_sourced_texts(corpora, wanted, document_text)
    absent = sorted(wanted - set(texts))
    if absent:
        where = f"corpus {corpora[0].name}" if len(corpora) == 1 else f"any of the corpora {', '.join(c.name for c in corpora)}"
        raise HarnessError(f"{len(absent)} of the {len(wanted)} passages to judge are not in {where} "
                           f"(e.g. {absent[0]!r}); give the corpus the runs were made on (each of them, if they "
                           "searched several)")
    return texts
