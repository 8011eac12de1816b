"""Whether a run's documents are the qrels' documents at all: a run whose retrieved ids almost
never occur in the judgments scores 0 everywhere, which trec_eval prints without a word (a
passage run against document qrels, lower-cased ids, another collection's ids).

`docid_warning` looks at the top 10 of each judged query the run answers and, when fewer than
`RARELY` of them are judged and under `FOUND` of the queries find any judged document there,
says how many are and what the ids look like: passage ids `<docid><sep><n>` of judged
documents (naming the passage separator setting, as the caller spells it, and the presets
that set it; a hosted task's team, which sets nothing, is told what to ask its organisers),
or judged ids in another case (to be written as the qrels write them; a team, which never sees
the qrels, is pointed to the task's collection). Where judged documents turn up for
many queries the ids are the qrels' own: the judgments are sparse (PragmatiCQA's derived qrels
judge a few spans a turn), not mismatched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice

from harness.errors import Spelling
from harness.trec import passage_document

TOP = 10
RARELY = 0.05  # under 1 judged document in 20 of the top 10s: "almost never"
FOUND = 0.1  # a judged document in the top 10 of 1 query in 10: the run reads the qrels' ids
SEPARATORS = ("-", ":", "_", "#", ".")


def _judged(rankings: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], key=None) -> int:
    return sum((key(docid) if key else docid) in judgments[qid] for qid, docids in rankings.items() for docid in docids)


def docid_warning(run_name: str, rankings: Mapping[str, Iterable[str]], judgments: Mapping[str, Mapping[str, int]],
                  qrels_name: str, spelling: Spelling) -> str | None:
    """A one-line warning when the run's top-10 documents (`rankings`: best-first docids of
    the judged queries it answers) are almost never judged; None otherwise. `spelling` names
    the passage separator setting as the caller takes it; to a team (TEAM) the run and the
    qrels, hidden, are the task's, not `run_name` and `qrels_name`."""
    top = {qid: top_docids for qid, docids in rankings.items() if (top_docids := list(islice(docids, TOP)))}
    shown = sum(map(len, top.values()))
    judged = _judged(top, judgments)
    if not shown or judged >= RARELY * shown:
        return None
    if sum(any(docid in judgments[qid] for docid in docids) for qid, docids in top.items()) >= FOUND * len(top):
        return None
    if spelling.team:  # the run's file is stored by its hash, no name of the team's; the qrels are hidden
        message = f"only {judged} of the {shown} documents in the run's top {TOP}s are judged in the task's qrels"
    else:
        message = (f"run {run_name!r}: only {judged} of the {shown} documents in its top {TOP}s are judged in "
                   f"{qrels_name}")
    return message + ", so nearly every measure is 0" + _why(top, judgments, judged, shown, spelling)


def _why(top: Mapping[str, list[str]], judgments: Mapping[str, Mapping[str, int]], judged: int, shown: int,
         spelling: Spelling) -> str:
    from harness.evaluate.presets import PRESETS

    best = max(((_judged(top, judgments, lambda d, s=s: passage_document(d, s)), s) for s in SEPARATORS),
               default=(0, ""))
    if best[0] > max(judged, RARELY * shown):
        separator = best[1]
        presets = [name for name in PRESETS.names() if PRESETS.get(name).passage_separator == separator]
        example = next(d for docids in top.values() for d in docids if passage_document(d, separator) != d)
        looks = (f"; its ids look like passage ids of judged documents ({example!r} is passage "
                 f"{example.rpartition(separator)[2]} of {passage_document(example, separator)!r})")
        if spelling.team:
            return (f"{looks}, and the task judges documents: ask its organisers to judge each document by "
                    f"its best passage ({spelling.given('passage_separator', separator)} on the task)")
        setting = _separator_setting(separator, presets, spelling)
        return (f"{looks}: judge documents by their best passage with {setting}; read so, {best[0]} of the {shown} "
                "would be judged")
    folded = {qid: {docid.casefold() for docid in docs} for qid, docs in judgments.items()}
    in_other_case = sum(docid.casefold() in folded[qid] for qid, docids in top.items() for docid in docids)
    if in_other_case > max(judged, RARELY * shown):
        ids = "the task's collection writes them" if spelling.team else "the qrels write them"
        return (f"; {in_other_case} of them are judged ids written in another case (ids are compared exactly, "
                f"as trec_eval compares them): write the run's ids as {ids}")
    if spelling.team:
        return "; check that the run's ids are the document ids of the task's collection"
    return "; check that the run and the qrels use the same collection and document ids"


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
