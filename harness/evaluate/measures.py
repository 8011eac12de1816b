"""The measures the harness accepts: one table of families, each equal to a trec_eval measure.

Every family below is computed by ir-measures on a run already in trec_eval's canonical
order (score descending, docid descending) with strictly decreasing scores, so no
provider's own tie rule can matter (see `harness.evaluate`). A measure ir-measures accepts
but that cannot be made equal to trec_eval's is refused with the reason, never computed
differently. Per family: the trec_eval measure it equals, the parameters it takes, and
whether trec_eval's `all` line sums it (counts) or averages it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.registry import Registry

EXAMPLES = "e.g. nDCG@10, P(rel=2)@5, AP(rel=2)@1000, RR, R@100"


@dataclass(frozen=True)
class Family:
    trec_eval: str  # the trec_eval measure it equals ("-M k" = evaluated at depth k)
    rel: bool = True  # takes rel= (trec_eval -l): grades >= rel count as relevant
    cutoff: str = "optional"  # "required", "optional" or "none" (the @k)
    summed: bool = False  # a count: trec_eval's `all` line is the sum over queries


FAMILIES: Registry[Family] = Registry("measure family")
FAMILIES.add("nDCG", Family("ndcg, ndcg_cut.k (graded gains, no rel=)", rel=False))
FAMILIES.add("P", Family("P.k", cutoff="required"))
FAMILIES.add("R", Family("recall.k", cutoff="required"))
FAMILIES.add("AP", Family("map, map_cut.k"))
FAMILIES.add("RR", Family("recip_rank (@k: recip_rank at -M k)"))
FAMILIES.add("Rprec", Family("Rprec", cutoff="none"))
FAMILIES.add("Bpref", Family("bpref", cutoff="none"))
FAMILIES.add("Success", Family("success.k", cutoff="required"))
FAMILIES.add("Judged", Family("1 - unj.k (negative grades are unjudged, empty ranks are not)",
                              rel=False, cutoff="required"))
FAMILIES.add("infAP", Family("infAP", cutoff="none"))
FAMILIES.add("NumQ", Family("num_q", rel=False, cutoff="none", summed=True))
FAMILIES.add("NumRel", Family("num_rel (rel=1 only)", cutoff="none", summed=True))
FAMILIES.add("NumRet", Family("num_ret; with rel=: num_rel_ret", cutoff="none", summed=True))

# Why the families ir-measures offers beyond the table are refused.
REFUSED = {
    "ERR": "ERR comes from gdeval, not trec_eval, and gdeval breaks ties its own way",
    "SetP": "set measures ignore the ranking depth trec_eval applies (-M); use P@k",
    "SetR": "set measures ignore the ranking depth trec_eval applies (-M); use R@k",
    "SetF": "trec_eval's set_F takes only the first beta it is given",
    "SetAP": "set measures ignore the ranking depth trec_eval applies (-M); use AP",
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
            raise _refuse(name, f"the cutoff must be a whole number of documents from 1 to {C_INT_MAX}, not {cutoff!r}")
    if rel is not None:
        if not family.rel:
            raise _refuse(name, f"{family_name} takes no rel= (it uses the graded judgments)")
        if not isinstance(rel, int) or isinstance(rel, bool) or not 1 <= rel <= C_INT_MAX:
            raise _refuse(name, f"rel= must be a grade from 1 to {C_INT_MAX} (trec_eval -l), not {rel!r}")
        if family_name == "NumRel" and rel != 1:
            raise _refuse(name, "pytrec_eval counts num_rel at level 1 whatever the level; use NumRet(rel=k) "
                                "for relevant retrieved at level k")
    return family


def _unreadable(name: str, error: Exception) -> HarnessError:
    detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    return HarnessError(f"cannot read measure {name!r} ({detail}); use ir-measures syntax, {EXAMPLES}")


def parse_measures(names: Sequence[str]) -> list:
    """ir-measures objects for measure names, each checked against the table, with a one-line
    error for a name that cannot be read or a measure that cannot equal trec_eval's."""
    import ir_measures

    parsed = []
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except Exception as error:  # noqa: BLE001 - ir-measures raises many kinds for a bad name
            raise _unreadable(name, error) from None
        check_measure(name, measure)
        try:
            measure.validate_params()
        except Exception as error:  # noqa: BLE001 - an AssertionError, KeyError or ValueError
            raise _unreadable(name, error) from None
        parsed.append(measure)
    if len({str(m) for m in parsed}) != len(parsed):
        raise HarnessError(f"a measure is listed twice in {list(names)}")
    return parsed


def family(measure) -> Family:
    return FAMILIES.get(measure.NAME)
