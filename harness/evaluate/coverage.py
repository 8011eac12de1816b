"""Whether a run's documents are the qrels' documents at all: a run whose retrieved ids almost
never occur in the judgments scores 0 everywhere, which trec_eval prints without a word (a
passage run against document qrels, lower-cased ids, another collection's ids).

`docid_warning` looks at the top 10 of each judged query the run answers and, when fewer than
`RARELY` of them are judged, under `FOUND` of the queries find any judged document there and
under `ELSEWHERE` of the distinct ids there are judged for any query, says how many are and what
the ids look like: passage ids `<docid><sep><n>` of judged documents (naming the passage
separator setting, as the caller spells it, and the presets that set it; a hosted task's team,
which sets nothing, is told what to ask its organisers), or judged ids in another case (to be
written as the qrels write them; a team, which never sees the qrels, is pointed to the task's
collection). Where judged documents turn up for many queries, or the run's ids are judged for
other queries, the ids are the qrels' own: the judgments are sparse (PragmatiCQA's derived
qrels judge a few spans a turn; a recommendation turn's, its 1-2 recommended items, which a
popularity recommender seldom ranks for that turn, though they are the catalogue's), not
mismatched.

Ids judged only in another case are warned of on their own too, where the run finds judged
documents elsewhere: CoSRec's recommendation intents judge Amazon ASINs, its search intents
MS MARCO ids, so a recommender that lower-cases its ids scores 0 on the one and well on the
other, and the run as a whole looks fine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import islice

from harness.errors import Spelling, shown_id
from harness.trec import passage_document

TOP = 10
RARELY = 0.05  # under 1 judged document in 20 of the top 10s: "almost never" (and, judged only in another case, "many")
FOUND = 0.1  # a judged document in the top 10 of 1 query in 10: the run reads the qrels' ids
ELSEWHERE = 0.1  # 1 distinct top-10 id in 10 judged for some query: the qrels' ids, sparsely judged
SEPARATORS = ("-", ":", "_", "#", ".")


def _judged(rankings: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], key=None) -> int:
    return sum((key(docid) if key else docid) in judgments[qid] for qid, docids in rankings.items() for docid in docids)


def may_warn(judged: int, shown: int) -> bool:
    """Whether `docid_warning` can warn of top 10s of which `judged` of the `shown` documents
    are judged: documents judged only in another case must be at least as many as those judged
    as written, so with more than half judged there is nothing to warn of (and no docid to read)."""
    return 0 < shown and 2 * judged <= shown


def _rarely_judged(judged: int, shown: int) -> bool:
    """Whether top 10s of which `judged` of the `shown` documents are judged are judged so rarely
    (under `RARELY`) that their ids may be another collection's."""
    return judged < RARELY * shown


def must_look(judged: int, shown: int, in_other_case: Callable[[], bool]) -> bool:
    """Whether `docid_warning` must read a run's top 10s, `judged` of their `shown` documents
    judged: where it can warn (`may_warn`) and they are judged so rarely that their ids may be
    another collection's, or, judged more often, where ids judged only in another case (the one
    warning left) may be among them (`in_other_case`, asked only then). Both of harness eval's
    routes decide so: the numpy route (Evaluator._docid_warning) screens by the run's top documents
    against every judged id, the compiled route (lean.py) by its count of those judged for their
    query only in another case."""
    return may_warn(judged, shown) and (_rarely_judged(judged, shown) or in_other_case())


def may_be_in_other_case(docids: Iterable[str], written: set[str], folded: set[str]) -> bool:
    """Whether any of these top documents matches a judged id (`written`; `folded`: case-folded)
    only once case is ignored, for any query: where none does, a run judged often enough to find
    documents needs no per-query look (`docid_warning`, a second a 10M-line run, 0.8 s 100 runs)."""
    return any(docid not in written and docid.casefold() in folded for docid in docids)


def docid_warning(run_name: str, rankings: Mapping[str, Iterable[str]], judgments: Mapping[str, Mapping[str, int]],
                  qrels_name: str, spelling: Spelling) -> str | None:
    """A one-line warning when the run's top-10 documents (`rankings`: best-first docids of
    the judged queries it answers) are almost never judged, or judged far more often once case
    is ignored than as written; None otherwise. `spelling` names the passage separator setting
    as the caller takes it; to a team (TEAM) the run and the qrels, hidden, are the task's, not
    `run_name` and `qrels_name`."""
    top = {qid: top_docids for qid, docids in rankings.items() if (top_docids := list(islice(docids, TOP)))}
    shown = sum(map(len, top.values()))
    judged = _judged(top, judgments)
    if not may_warn(judged, shown):
        return None
    case = _in_other_case(top, judgments, judged, shown)
    if spelling.team:  # the run's file is stored by its hash, no name of the team's; the qrels are hidden
        documents = f"documents in the run's top {TOP}s are judged in the task's qrels"
    else:
        documents = f"documents in its top {TOP}s are judged in {qrels_name}"
    opening = "" if spelling.team else f"run {run_name!r}: "
    if _mismatched(top, judgments, judged, shown):
        return (f"{opening}only {judged} of the {shown} {documents}, so nearly every measure is 0"
                + _why(top, judgments, judged, shown, case, spelling))
    if case is None:
        return None
    return (f"{opening}{case[0]} of the {shown} {documents} only once case is ignored, so each counts as unjudged"
            + _case_advice(case, spelling))


def _mismatched(top: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], judged: int,
                shown: int) -> bool:
    """Whether the top 10s read another id space than the qrels': few of their documents
    judged, few queries finding any, and few of their ids judged for any query at all."""
    if not _rarely_judged(judged, shown):
        return False
    if sum(any(docid in judgments[qid] for docid in docids) for qid, docids in top.items()) >= FOUND * len(top):
        return False
    distinct = {docid for docids in top.values() for docid in docids}
    return len(distinct & set().union(*judgments.values())) < ELSEWHERE * len(distinct)


def _in_other_case(top: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], judged: int,
                   shown: int) -> tuple[int, str, str] | None:
    """How many of the top 10s' documents are judged only once case is ignored, with one of
    them and the id the qrels judge for it, where they are many (`RARELY` of the top 10s) and
    at least as many as those judged as written; None otherwise."""
    count, example = 0, None
    for qid, docids in top.items():
        unjudged = [docid for docid in docids if docid not in judgments[qid]]
        if not unjudged:
            continue
        folded = {docid.casefold(): docid for docid in judgments[qid]}
        for docid in unjudged:
            if (written := folded.get(docid.casefold())) is not None:
                count, example = count + 1, example or (docid, written)
    if example is None or count < max(judged, RARELY * shown):
        return None
    return count, *example


def _case_advice(case: tuple[int, str, str], spelling: Spelling) -> str:
    """What to do about ids judged only in another case: a team, which never sees the qrels,
    is shown its own id alone and pointed to the task's collection."""
    if spelling.team:
        return (f" (e.g. {shown_id(case[1])}; ids are compared exactly, as trec_eval compares them): write the "
                "run's ids as the task's collection writes them")
    return (f" ({shown_id(case[1])} is judged as {shown_id(case[2])}; ids are compared exactly, as trec_eval compares "
            "them): write the run's ids as the qrels write them")


def _why(top: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], judged: int, shown: int,
         case: tuple[int, str, str] | None, spelling: Spelling) -> str:
    from harness.evaluate.presets import PRESETS

    best = max(((_judged(top, judgments, lambda d, s=s: passage_document(d, s)), s) for s in SEPARATORS),
               default=(0, ""))
    if best[0] > max(judged, RARELY * shown):
        separator = best[1]
        # (a plug-in's that cannot be loaded is no advice)
        presets = [name for name in PRESETS.names()
                   if name in PRESETS and PRESETS.get(name).passage_separator == separator]
        example = next(d for docids in top.values() for d in docids if passage_document(d, separator) != d)
        looks = (f"; its ids look like passage ids of judged documents ({shown_id(example)} is passage "
                 f"{example.rpartition(separator)[2]} of {shown_id(passage_document(example, separator))})")
        if spelling.team:
            return (f"{looks}, and the task judges documents: ask its organisers to judge each document by "
                    f"its best passage ({spelling.given('passage_separator', separator)} on the task)")
        setting = _separator_setting(separator, presets, spelling)
        return (f"{looks}: judge documents by their best passage with {setting}; read so, {best[0]} of the {shown} "
                "would be judged")
    if case is not None:
        return f"; {case[0]} of them are judged ids written in another case" + _case_advice(case, spelling)
    if spelling.team:
        return "; check that the run's ids are the document ids of the task's collection"
    return "; check that the run and the qrels use the same collection and document ids" + _examples(top, judgments)


def _examples(top: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]]) -> str:
    """One id of the run's and one the qrels judge, for the same query (its best-graded), side
    by side: what the two id spaces look like (`Panic_Room` against OpenDialKG's `418`)."""
    for qid, docids in top.items():
        if judged := judgments[qid]:
            best = max(judged, key=judged.get)
            return (f" (query {shown_id(qid)}: the run ranks {shown_id(docids[0])} first; the qrels judge "
                    f"{shown_id(best)})")
    return ""


def _separator_setting(separator: str, presets: list[str], spelling: Spelling) -> str:
    """The setting that reads `separator` as the caller gives it (the flag, the argument, the
    experiment's key), naming the presets that set it: in a config, a preset sets its measures
    and depth too."""
    setting = spelling.given("passage_separator", separator)
    if not presets:
        return setting + (" in the experiment" if spelling.config else "")
    if spelling.config:
        return (f"{setting} in the experiment (or {' or '.join(spelling.given('preset', name) for name in presets)}, "
                "which sets it with its measures and depth)")
    return f"{setting} (the preset {' / '.join(presets)} sets it)"
