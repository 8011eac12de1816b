"""Measure names as people write them: ir-measures syntax (`nDCG@10`, `P(rel=2)@5`) or
trec_eval's (`ndcg_cut_10`, `P_5`, `map`, `recip_rank`), mapped onto the ir-measures
measure the harness computes, whose value equals trec_eval's.

One case rule (`CASE_RULE`): a measure's name is matched without regard to case, in both
syntaxes; its parameters are read as written. The name given stays the name reported
(`harness.evaluate.Evaluator`): `NumRelRet` is printed as NumRelRet, `ndcg_cut_10` as
ndcg_cut_10. Recommender-systems researchers' hit ratio (`HR@10`, `Hit@10`) is
ir-measures' Success@k (`RECOMMENDER`).
"""

from __future__ import annotations

import difflib
import re
import shlex
import sys
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

EXAMPLES = "e.g. nDCG@10, P(rel=2)@5, AP(rel=2)@1000, RR, R@100"
CASE_RULE = "measure names are matched without regard to case (NDCG@10 = ndcg@10 = nDCG@10, map = MAP)"

# ir-measures' names (and its aliases), by lower-case spelling; the harness's table
# (harness.evaluate.measures) decides which of them are computed.
# (A spelling listed later wins: ir-measures' own Rprec and Bpref over its RPrec and BPref.)
IR_MEASURES = {name.lower(): name for name in (
    "BPref", "RPrec", "AP", "MAP", "nDCG", "P", "Precision", "R", "Recall", "RR", "MRR", "Rprec", "Bpref",
    "Success", "Judged", "infAP", "NumQ", "NumRel", "NumRet", "NumRelRet", "SetP", "SetR", "SetAP", "SetF",
    "SetRelP", "ERR", "IPrec", "Compat", "alpha_nDCG", "alpha_DCG", "RBP", "INST", "INSQ", "SDCG", "StRecall",
    "BPM", "Accuracy",
)}

# Recommender-systems names (ir-measures syntax, looked up lower-cased) of a measure the harness
# computes: the hit ratio HR@k / Hit@k, a query with a relevant item in its top k, is Success@k
# (trec_eval's success_k), not R@k, which is less where a query has more than one relevant item.
RECOMMENDER = {"hr": "Success", "hit": "Success"}


@dataclass(frozen=True)
class TrecEvalName:
    name: str  # as trec_eval prints it
    measure: str  # the ir-measures measure, `{k}` where the cutoff goes
    cutoff: bool = False  # written `<name>_<k>` (or trec_eval's command-line `<name>.<k>`)


# trec_eval's measure names (as its output prints them; looked up lower-cased) that equal a
# measure the harness computes, under the -M depth and -l level the harness applies to all.
TREC_EVAL = {entry.name.lower(): entry for entry in (
    TrecEvalName("map", "AP"),
    TrecEvalName("map_cut", "AP@{k}", cutoff=True),
    TrecEvalName("ndcg", "nDCG"),
    TrecEvalName("ndcg_cut", "nDCG@{k}", cutoff=True),
    TrecEvalName("P", "P@{k}", cutoff=True),
    TrecEvalName("recall", "R@{k}", cutoff=True),
    TrecEvalName("recip_rank", "RR"),
    TrecEvalName("Rprec", "Rprec"),
    TrecEvalName("bpref", "Bpref"),
    TrecEvalName("success", "Success@{k}", cutoff=True),
    TrecEvalName("infAP", "infAP"),
    TrecEvalName("num_q", "NumQ"),
    TrecEvalName("num_rel", "NumRel"),
    TrecEvalName("num_ret", "NumRet"),
    TrecEvalName("num_rel_ret", "NumRet(rel=1)"),
    TrecEvalName("set_P", "SetP"),
    TrecEvalName("set_recall", "SetR"),
    TrecEvalName("set_map", "SetAP"),
)}

# trec_eval measures with a close harness measure that is not the same number: the advice.
TREC_EVAL_ADVICE = {
    "unj": "Judged@{k}, ir-measures' share of the top {k} the qrels judge (1 - unj_{k} where every judged query "
           "ranks {k} documents, none graded below 0)",
}
TREC_EVAL_REFUSED = {
    "gm_": "trec_eval's gm_map and gm_bpref are geometric means over the queries, which the harness does not take "
           "(map and bpref are the arithmetic means)",
    "set_f": "trec_eval's set_F weighs by a beta the harness does not pass; use set_P and set_recall",
    "iprec_at_recall": "interpolated precision is not computed as trec_eval computes it at every level",
}

_IR_MEASURES_SYNTAX = re.compile(r"([A-Za-z_]+)(.*)", re.DOTALL)
_PUNCTUATION = re.compile(r"[(),]")  # what tells a comma outside parentheses (`_top_level_parts`)
_TREC_EVAL_SYNTAX = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)(?:[._]([0-9]+))?")


class MeasureNameError(ValueError):
    """A name that is no measure the harness computes; the message suggests the nearest."""


def canonical(name: str, computed: Collection[str]) -> str:
    """The ir-measures spelling of `name` (checked against the harness's table later);
    `computed`: the families the harness computes, for suggestions."""
    listed = listed_measures(name)
    if listed is not None:
        form = ("argument, not a comma-separated list" if "@" in name or "(" in name
                else "name, not trec_eval's list form")
        raise MeasureNameError(f"one measure per {form}: give {' '.join(map(shlex.quote, listed))}")
    if any(character.isspace() for character in name):  # ir-measures reads 'nDCG @3', headed so
        raise MeasureNameError(f"a measure's name holds no space: give {shlex.quote(''.join(name.split()))}")
    if "@" in name or "(" in name:
        match = _IR_MEASURES_SYNTAX.fullmatch(name)
        written = match.group(1).lower() if match else ""
        head = IR_MEASURES.get(written) or RECOMMENDER.get(written)
        if head is None:
            hint = _nearest(match.group(1), _families(computed), match.group(2)) if match else ""
            raise MeasureNameError(f"no such measure{hint}")
        return head + match.group(2)
    match = _TREC_EVAL_SYNTAX.fullmatch(name)
    if match is None:
        raise MeasureNameError(f"no such measure{_nearest(name, _trec_eval_names(), '')}")
    base, cutoff = match.group(1).lower(), match.group(2)
    entry = TREC_EVAL.get(base)
    if entry is not None and entry.cutoff == (cutoff is not None):
        return entry.measure.format(k=cutoff)
    if cutoff is None and base in IR_MEASURES:
        return IR_MEASURES[base]
    if cutoff is None and base in RECOMMENDER:
        raise MeasureNameError(f"the hit ratio needs a cutoff: give {name}@10 ({RECOMMENDER[base]}@10)")
    if base in TREC_EVAL_ADVICE and cutoff is not None:
        raise MeasureNameError(f"trec_eval's measure is not computed; use {TREC_EVAL_ADVICE[base].format(k=cutoff)}")
    refused = next((reason for prefix, reason in TREC_EVAL_REFUSED.items() if base.startswith(prefix)), None)
    if refused:
        raise MeasureNameError(f"refused: {refused}")
    if entry is not None:  # a cutoff missing, or given where trec_eval takes none
        wanted = f"{entry.name}_10" if entry.cutoff else entry.name
        raise MeasureNameError(f"trec_eval writes it {wanted} (the harness's {entry.measure.format(k=10)})")
    written = match.group(1).rstrip("0123456789")  # P5: P and 5 (not a regex: `(.*?)([0-9]*)` is n² on digits)
    number = cutoff or match.group(1)[len(written):]
    close = difflib.get_close_matches(written.lower(), list(TREC_EVAL), n=1, cutoff=0.6)
    if close and TREC_EVAL[close[0]].cutoff:
        suggestion = f"; nearest valid name: {TREC_EVAL[close[0]].name}_{number or 10}"
    else:
        suggestion = _nearest(written, _trec_eval_names(), "")
    raise MeasureNameError(f"not a measure the harness computes{suggestion}")


def listed_measures(name: str) -> list[str] | None:
    """The measures a comma-separated `name` lists ('P@5,10': P@5 and P@10; trec_eval's
    command-line 'P.5,10': P_5 and P_10), to be given one each; None for a single name."""
    if "@" in name or "(" in name:
        parts = _top_level_parts(name)
        return _completed(parts) if len(parts) > 1 else None
    if "," not in name:
        return None
    base, _, cutoffs = name.partition(".")  # trec_eval's -m P.5,10
    return [f"{base}_{k}" for k in cutoffs.split(",")] if cutoffs else _completed(name.split(","))


def _top_level_parts(name: str) -> list[str]:
    """`name` cut at each comma outside parentheses (one whose next parenthesis is not a closing one:
    inside, commas part a measure's parameters), less the spaces around each. In linear time: a pattern
    looked ahead for the next parenthesis to the end from each comma, and along a run of spaces from each
    of its spaces (40,000 spaces: 2 s)."""
    cuts, following = [], ""
    for mark in reversed(list(_PUNCTUATION.finditer(name))):
        if mark.group() != ",":
            following = mark.group()
        elif following != ")":
            cuts.append(mark.start())
    cuts.reverse()
    if not cuts:
        return [name]
    pieces = [name[start + 1:end] for start, end in zip([-1, *cuts], [*cuts, len(name)])]
    return [pieces[0].rstrip(), *(piece.strip() for piece in pieces[1:-1]), pieces[-1].lstrip()]


def _completed(listed: Sequence[str]) -> list[str]:
    """The names of a list's parts: a bare number takes the measure before it ('P@5,10')."""
    names: list[str] = []
    for part in filter(None, (part.strip() for part in listed)):  # 'nDCG@3,' lists nDCG@3 alone
        if part.isdigit() and names and "@" in names[-1]:
            part = f"{names[-1].rpartition('@')[0]}@{part}"
        names.append(part)
    return names


def _families(computed: Collection[str]) -> dict[str, str]:
    """Lower-case spelling -> ir-measures spelling, of the families the harness computes."""
    return {lower: name for lower, name in IR_MEASURES.items() if name in computed}


def _trec_eval_names() -> dict[str, str]:
    return {lower: entry.name for lower, entry in TREC_EVAL.items()}


def _nearest(written: str, spellings: dict[str, str], rest: str) -> str:
    """'; nearest valid name: X' for the accepted spelling closest to `written`, if one is close."""
    close = difflib.get_close_matches(written.lower(), list(spellings), n=1, cutoff=0.6)
    if close:
        return f"; nearest valid name: {spellings[close[0]]}{rest}"
    return f"; use ir-measures syntax ({EXAMPLES}) or a trec_eval name such as ndcg_cut_10, P_5, map"


# The translations said within a `said_once` block (a config read, a command's evaluators), so that
# a config's experiments naming the same measures say each once, and the next read (a notebook's
# next harness.run) says them again. Outside one, each parse says its own.
_said: ContextVar[set[tuple[str, str]] | None] = ContextVar("said", default=None)


@contextmanager
def said_once() -> Iterator[None]:
    """Within the block, each translated name is said once."""
    token = _said.set(set())
    try:
        yield
    finally:
        _said.reset(token)


def announce(pairs: Sequence[tuple[str, str]]) -> None:
    """Say on stderr which measure each translated name is computed as, once in a `said_once` block."""
    said = _said.get()
    said = set() if said is None else said
    new = [(given, name) for given, name in pairs if given != name and (given, name) not in said]
    if not new:
        return
    said.update(new)
    mapping = ", ".join(f"{given} = {name}" for given, name in new)
    print(f"measures: {mapping} (reported under the names given; values equal trec_eval's)", file=sys.stderr)
