"""The measures the harness accepts: one table of families, each equal to a trec_eval measure
(Judged, which trec_eval lacks, to ir-measures' own).

Every family below is computed on a run already in trec_eval's canonical order (score
descending, docid descending): in numpy by `harness.evaluate.ranked` where it has code for
the family, else by ir-measures with strictly decreasing scores, so no provider's own tie
rule can matter (see `harness.evaluate`). A measure ir-measures accepts
but that cannot be made equal to trec_eval's is refused with the reason, never computed
differently. Per family: the trec_eval measure it equals, the parameters it takes, and
whether trec_eval's `all` line sums it (counts) or averages it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import HarnessError, Spelling, listed, verb
from harness.evaluate.names import EXAMPLES
from harness.registry import Registry



@dataclass(frozen=True)
class Family:
    trec_eval: str  # the trec_eval measure it equals ("-M k" = evaluated at depth k), or the ir-measures one
    rel: bool = True  # takes rel= (trec_eval -l): grades >= rel count as relevant
    cutoff: str = "optional"  # "required", "optional" or "none" (the @k)
    summed: bool = False  # a count: trec_eval's `all` line is the sum over queries


FAMILIES: Registry[Family] = Registry("measure family")
FAMILIES.add("nDCG", Family("ndcg, ndcg_cut.k (graded gains, no rel=)", rel=False),
             "normalised discounted cumulative gain, on the graded labels")
FAMILIES.add("P", Family("P.k", cutoff="required"), "precision: the share of the top k that is relevant")
FAMILIES.add("R", Family("recall.k", cutoff="required"),
             "recall: the share of the relevant documents found in the top k")
FAMILIES.add("AP", Family("map, map_cut.k"), "average precision (mean over queries: MAP)")
FAMILIES.add("RR", Family("recip_rank (@k: recip_rank at -M k)"),
             "reciprocal rank of the first relevant document (mean over queries: MRR)")
FAMILIES.add("Rprec", Family("Rprec", cutoff="none"), "precision at R, the number of relevant documents")
FAMILIES.add("Bpref", Family("bpref", cutoff="none"),
             "binary preference: how few judged non-relevant documents rank above each relevant one")
FAMILIES.add("Success", Family("success.k", cutoff="required"),
             "1 when the top k holds a relevant document, else 0 (hit ratio, HR@k)")
FAMILIES.add("Judged", Family("none: ir-measures' Judged@k, the share of the top min(k, ranked) the qrels list",
                              rel=False, cutoff="required"),
             "the share of the top k that the qrels judge")
FAMILIES.add("infAP", Family("infAP", cutoff="none"), "inferred average precision, for qrels judged on a sample")
# set measures score the whole ranking handed on, which the harness has already cut to the depth (-M)
FAMILIES.add("SetP", Family("set_P", cutoff="none"), "precision of the whole ranking (cut at the depth)")
FAMILIES.add("SetR", Family("set_recall", cutoff="none"), "recall of the whole ranking (cut at the depth)")
FAMILIES.add("SetAP", Family("set_map", cutoff="none"), "set precision times set recall")
FAMILIES.add("NumQ", Family("num_q", rel=False, cutoff="none", summed=True),
             "the number of queries")
FAMILIES.add("NumRel", Family("num_rel (rel=1 only)", cutoff="none", summed=True),
             "the number of relevant documents in the qrels, summed over queries")
FAMILIES.add("NumRet", Family("num_ret; with rel=: num_rel_ret", cutoff="none", summed=True),
             "the number of documents retrieved (with rel=, of relevant ones), summed over queries")

# Why the families ir-measures offers beyond the table are refused.
REFUSED = {
    "ERR": "ERR comes from gdeval, not trec_eval, and gdeval breaks ties its own way",
    "SetF": "trec_eval's set_F takes only the first beta it is given",
    "IPrec": "ir-measures' interpolated precision is not trec_eval's iprec_at_recall at every level",
    "Compat": "compatibility has no trec_eval counterpart",
    "alpha_nDCG": "alpha-nDCG needs subtopic qrels (ndeval), not trec_eval",
}
PARAM_REASONS = {
    "dcg": "trec_eval's nDCG uses the log2 discount only",
    "gains": "trec_eval's nDCG takes the qrels grades as gains",
    "judged_only": "trec_eval -J is not applied by the harness: it changes every measure at once",
}


def _refuse(name: str, reason: str) -> HarnessError:
    return HarnessError(f"measure {name!r} is refused: {reason}")


# trec_eval keeps cutoffs and relevance levels in C ints: beyond, pytrec_eval fails or wraps around
C_INT_MAX = 2**31 - 1


def check_measure(name: str, measure) -> Family:
    """The family of a parsed measure, or a one-line error saying why it cannot equal trec_eval."""
    family_name = measure.NAME
    if family_name not in FAMILIES:
        reason = REFUSED.get(family_name, "it has no trec_eval counterpart the harness can match")
        known = ", ".join(FAMILIES.names())
        raise _refuse(name, f"{reason} (accepted families: {known})")
    family = FAMILIES.get(family_name)
    params = dict(measure.params)
    for param, reason in PARAM_REASONS.items():
        if param in params:
            raise _refuse(name, reason)
    cutoff = params.pop("cutoff", None)
    rel = params.pop("rel", None)
    if params:
        raise _refuse(name, f"parameters {', '.join(params)} are not supported")
    if cutoff is None and family.cutoff == "required":
        raise _refuse(name, f"{family_name} needs a cutoff, e.g. {family_name}@10")
    if cutoff is not None:
        if family.cutoff == "none":
            raise _refuse(name, f"{family_name} takes no cutoff")
        if not isinstance(cutoff, int) or isinstance(cutoff, bool) or not 1 <= cutoff <= C_INT_MAX:
            raise _refuse(name, _cutoff_problem(cutoff))
    if rel is not None:
        if not family.rel:
            raise _refuse(name, f"{family_name} takes no rel= (it uses the graded judgments)")
        if not isinstance(rel, int) or isinstance(rel, bool) or not 1 <= rel <= C_INT_MAX:
            raise _refuse(name, _rel_problem(rel))
        if family_name == "NumRel" and rel != 1:
            raise _refuse(name, "pytrec_eval counts num_rel at level 1 whatever the level; use NumRet(rel=k) "
                                "for relevant retrieved at level k")
    return family


def _cutoff_problem(cutoff: object) -> str:
    return f"the cutoff must be a whole number of documents from 1 to {C_INT_MAX}, not {cutoff!r}"


def _rel_problem(rel: object) -> str:
    return f"rel= must be a grade from 1 to {C_INT_MAX} (trec_eval -l), not {rel!r}"


# a negative cutoff or level, which ir-measures' parser refuses with its own words
_NEGATIVE = re.compile(r"@(-[0-9]+)$|rel=(-[0-9]+)")


def _unreadable(name: str, error: Exception) -> HarnessError:
    detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    return HarnessError(f"cannot read measure {name!r} ({detail}); use ir-measures syntax, {EXAMPLES}, "
                        "or a trec_eval name (ndcg_cut_10, P_5, map)")


def _parse_one(name: str):
    """The checked ir-measures object for one name in either syntax (harness.evaluate.names)."""
    import ir_measures

    from harness.evaluate.names import MeasureNameError, canonical

    if not isinstance(name, str):
        raise HarnessError(f"a measure name is text such as 'nDCG@10', not {name!r}")
    try:
        spelled = canonical(name, FAMILIES.names())
    except MeasureNameError as error:
        raise HarnessError(f"cannot read measure {name!r}: {error}") from None
    try:
        measure = ir_measures.parse_measure(spelled)
    except Exception as error:  # noqa: BLE001 - ir-measures raises many kinds for a bad name
        if negative := _NEGATIVE.search(spelled):  # told as nDCG@0 and P(rel=0)@3 are
            cutoff, rel = negative.groups()
            raise _refuse(name, _cutoff_problem(int(cutoff)) if cutoff else _rel_problem(int(rel))) from None
        raise _unreadable(name, error) from None
    check_measure(name, measure)
    try:
        measure.validate_params()
    except Exception as error:  # noqa: BLE001 - an AssertionError, KeyError or ValueError
        raise _unreadable(name, error) from None
    return measure


def parse_measures(names: Sequence[str], *, announce: bool = True) -> list:
    """ir-measures objects for measure names (ir-measures or trec_eval syntax, in any case),
    each checked against the table. Every name that cannot be read, or whose measure cannot
    equal trec_eval's, is named in one error; a translated name's measure is said once on
    stderr (`announce`)."""
    from harness.evaluate.names import announce as tell

    if isinstance(names, str):  # a single name, not its characters
        names = [names]
    parsed, problems = [], []
    for name in names:
        try:
            parsed.append(_parse_one(name))
        except HarnessError as error:
            problems.append(str(error))
    if len(problems) == 1:
        raise HarnessError(problems[0])
    if problems:
        raise HarnessError(f"{len(problems)} of {len(names)} measures refused: " + "; ".join(problems))
    seen: dict[str, str] = {}
    for name, measure in zip(names, parsed):
        if str(measure) in seen:
            first = seen[str(measure)]
            what = f"{first!r} and {name!r} are the same measure ({measure})" if first != name else f"{name!r} is"
            raise HarnessError(f"{what} listed twice in {list(names)}")
        seen[str(measure)] = name
    if announce:
        tell([(name, str(measure)) for name, measure in zip(names, parsed)])
    return parsed


def reads_deeper(names: Sequence[str], depth: int, key: str, spelling: Spelling,
                 others: dict[str, int] | None = None, *, ranks: bool = False) -> str | None:
    """What reads deeper than the `depth` documents scored, in the words `harness run` (k) and
    `eval`/`compare` (--depth) warn with: 'fewer than R@100 (100) reads: scored on the top 10 alone;
    ask for R@10, which reads no deeper, or give --depth 100 ...', the setting `key` as the caller
    spells it; `others`, further depths by what sets them; None when nothing does.
    R@100 over 10 documents is R@10 under R@100's name: right for the run, not for the name. The
    measures cut at the depth read what is scored; more of the setting reads deeper where it
    `ranks` the runs deeper (a config's k), and where it only cuts them (--depth), in runs that
    rank that deep alone: a depth cut to the shallowest run's (the depth warning's advice, depths.py)
    is not undone."""
    parsed = parse_measures(list(names), announce=False)
    cut = {name: measure for name, measure in zip(names, parsed) if measure.params.get("cutoff", 0) > depth}
    deeper = {name: measure.params["cutoff"] for name, measure in cut.items()}
    deeper.update({what: value for what, value in (others or {}).items() if value > depth})
    if not deeper:
        return None
    listing = ", ".join(f"{name} ({value})" for name, value in deeper.items())
    shorter = list(dict.fromkeys(str(measure(cutoff=depth)) for measure in cut.values()))  # R@100, R@1000: R@10
    reads = verb(len(shorter), "reads", "read")
    instead = f"ask for {listed(shorter)}, which {reads} no deeper, or " if shorter else ""
    give = spelling.given(key, max(deeper.values()))
    return (f"fewer than {listing} reads: scored on the top {depth} alone; {instead}give {give} "
            f"{'for what the names say' if ranks else 'where every run ranks that deep'}")


def family(measure) -> Family:
    return FAMILIES.get(measure.NAME)
