"""Per-benchmark measure sets, each with the convention it follows and where that comes from.

`rel=2` marks measures computed with trec_eval's `-l2` (grades >= 2 count as relevant for
binary measures); nDCG always uses the graded judgments. Depth is trec_eval's `-M`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from numbers import Integral
from dataclasses import dataclass

from harness.errors import HarnessError, Spelling
from harness.evaluate.measures import parse_measures, reads_deeper
from harness.registry import Registry, first_sentence, instances_of

DEFAULT_MEASURES = ["nDCG@10", "P@10", "AP", "RR", "R@1000"]
# said by --measures' help of eval, compare and qrels rank-agree
DEFAULT_HELP = f"default: {' '.join(DEFAULT_MEASURES)}, or --preset's"


@dataclass(frozen=True)
class Preset:
    measures: tuple[str, ...]
    depth: int | None
    source: str
    # Passage runs whose ids are `<docid><sep><n>` are judged at document level: each
    # document scores its best passage (MaxP) and its first occurrence wins.
    passage_separator: str | None = None


# a plug-in's preset is a Preset too, declared as a built-in is, by its source's first sentence
PRESETS: Registry[Preset] = Registry("measure preset", group="harness.presets",
                                     summary=lambda preset: first_sentence(preset.source))


@PRESETS.adapter
def _plugin_preset(name: str, obj: object) -> Preset:
    """A plug-in's preset is a Preset whose fields hold what a built-in's do, checked as the flags
    that stand for them are: a dataclass checks no type, and a depth of -5 scored every run 0, a
    depth "100" was a traceback, measures "nDCG@3" were read letter by letter, none an empty board."""
    preset = instances_of(PRESETS.kind, Preset)(name, obj)
    if problem := _field_problem(preset):
        raise HarnessError(f"{PRESETS.kind} {name!r}: {problem}")
    return preset


def _field_problem(preset: Preset) -> str | None:
    """The first field of `preset` off its type, worded as the flag that stands for it is
    refused (--measures' parser, --depth's and --passage-separator's words); None where all fit."""
    measures = preset.measures
    if not isinstance(measures, (tuple, list)) or not measures:
        return f"measures must be a non-empty tuple of measure names such as ('nDCG@10', 'RR'), not {measures!r}"
    try:
        parse_measures(list(measures), announce=False)
    except HarnessError as error:
        return f"measures: {error}"
    if preset.depth is not None and (problem := depth_problem(preset.depth)):
        return f"depth {problem}"
    if not isinstance(preset.source, str) or not preset.source.strip():
        return f"source must be text saying where the convention comes from, not {preset.source!r}"
    if preset.passage_separator is not None and (problem := separator_problem(preset.passage_separator)):
        return f"passage_separator {problem}"
    return None


def _add(name: str, preset: Preset) -> None:
    """A preset declared by its source's first sentence: the convention it follows, and where from."""
    PRESETS.add(name, preset, first_sentence(preset.source))


_add("cast2019", Preset(
    measures=("nDCG@3", "nDCG@1000", "AP(rel=2)@1000", "RR(rel=2)", "R(rel=2)@1000"),
    depth=1000,
    source="TREC CAsT 2019 overview (Dalton, Xiong, Callan), evaluation section: passage "
    "ranking to depth 1000, nDCG@3 headline; binary measures count grade >= 2 (fairly relevant).",
))
_add("cast2020", Preset(
    measures=("nDCG@3", "nDCG@1000", "AP(rel=2)@1000", "RR(rel=2)", "R(rel=2)@1000"),
    depth=1000,
    source="TREC CAsT 2020 overview (Dalton, Xiong, Callan): same protocol as 2019, nDCG@3 "
    "headline, binary relevance at grade >= 2.",
))
_add("cast2021", Preset(
    measures=("nDCG@3", "nDCG@5", "nDCG@500", "AP(rel=2)@500", "RR(rel=2)", "R(rel=2)@500"),
    depth=500,
    source="NIST evaluation letter for TREC CAsT 2021: document-level qrels, passage runs "
    "de-duplicated to documents (MaxP, first occurrence), nDCG@3/5/500 and AP@500; binary "
    "measures at grade >= 2; depth 500.",
    passage_separator="-",
))
_add("cast2022", Preset(
    measures=("nDCG@3", "nDCG@5", "nDCG@1000", "AP(rel=2)@1000", "RR(rel=2)", "R(rel=2)@1000"),
    depth=1000,
    source="TREC CAsT 2022 overview: passage-level qrels (grades 0-4), nDCG@3 headline; "
    "binary measures at grade >= 2; depth 1000.",
))
_add("ikat2023", Preset(
    measures=("nDCG@3", "nDCG@5", "nDCG@1000", "P(rel=2)@20", "AP(rel=2)@1000", "R(rel=2)@1000", "RR(rel=2)"),
    depth=1000,
    source="TREC iKAT 2023 overview (Aliannejadi et al.): passage ranking scored with nDCG@3/5, "
    "nDCG, P@20, mAP and Recall@1000; binary measures count grade >= 2; depth 1000.",
))
_add("ikat2024", Preset(
    measures=("nDCG@5", "nDCG@10", "nDCG@1000", "P(rel=2)@20", "AP(rel=2)@1000", "R(rel=2)@1000", "RR(rel=2)"),
    depth=1000,
    source="TREC iKAT 2024 overview (Abbasiantaeb et al.): nDCG@5/10 headline, P@20, mAP, "
    "Recall@1000; binary measures at grade >= 2; depth 1000.",
))
_add("ptkb", Preset(
    measures=("nDCG@3", "P@3", "R@3", "RR"),
    depth=None,
    source="TREC iKAT 2023 PTKB statement ranking task: nDCG@3, P@3, Recall@3 and MRR against "
    "the NIST PTKB qrels (binary: grade 1 = relevant statement).",
))
_add("recommendation", Preset(
    measures=("R@1", "R@10", "R@50", "nDCG@10"),
    depth=None,
    source="Conversational recommendation convention (e.g. CRS evaluations on ReDial / "
    "OpenDialKG): Recall@1/10/50 over the recommended items, with nDCG@10. Each is computed per turn, "
    "as trec_eval computes recall (R@k: the share of the turn's recommended items in its top k) and "
    "averaged over turns; not per recommended item, as iEvaLM-CRS's and CRSLab's RecMetric count a hit "
    "for each item and average over items (iEvaLM-CRS's ndcg@k likewise). The two differ where a turn "
    "recommends more than one item (OpenDialKG test, bm25: R@10 0.4888 per turn, 0.4849 per item): a "
    "paper's per-item recall is not this number. The hit ratio (a turn with any "
    "recommended item in its top k) is HR@k, Success@k.",
))


def preset_help() -> str:
    """--preset's help (eval, compare, qrels rank-agree): every preset with what it computes, so
    that one is chosen knowing its measures, not by reading this file; a plug-in's that cannot be
    loaded, or whose name two packages claim, marked BROKEN and why, the others listed still (it
    was a traceback for --help, whatever preset was asked)."""
    listed = []
    for name in PRESETS.names():
        try:
            preset = PRESETS.get(name)
        except HarnessError as error:
            why = str(error).removeprefix(f"{PRESETS.kind} {name!r}: ")  # as `harness components` says it
            listed.append(f"{name}: BROKEN: {why}".replace("%", "%%"))  # (argparse formats help with %)
            continue
        listed.append(f"{name}: {settings_text(preset.measures, preset.depth, preset.passage_separator)}")
    return ("a benchmark's official measures, with its depth and passage separator (--measures, --depth and "
            f"--passage-separator, where given, take their place): {'; '.join(listed)}")


def settings_text(measures: Sequence[str], depth: int | None, passage_separator: str | None) -> str:
    """What a preset computes in one line, as --preset's help and `harness components preset` say it:
    `nDCG@3 RR, depth 1000, passages by document (separator '-')`."""
    return (" ".join(measures) + (f", depth {depth}" if depth else "")
            + (f", passages by document (separator {passage_separator!r})" if passage_separator else ""))


def measure_settings(measures: str | Sequence[str] | None, preset: str | None, depth: int | None,
                     passage_separator: str | None, *, spelling: Spelling) -> tuple[list[str], int | None, str | None]:
    """Measures, depth and passage separator as `harness eval` / `compare` / the Python API
    take them: explicit values win over the preset's, the preset's over the defaults. A bad
    depth or separator is named as `spelling` (the caller's flags or arguments) names it."""
    if preset is not None and not isinstance(preset, str):  # a Preset object was an AttributeError traceback
        raise HarnessError(f"{spelling.name('preset')} takes a preset's name (a built-in's, an entry point's or a "
                           f"python:module:attr spec), not a {type(preset).__name__}: name your Preset by its module "
                           "and attribute, python:module:attr")
    chosen = PRESETS.get(preset) if preset else None
    if isinstance(measures, str) or (measures is not None and not isinstance(measures, Iterable)):
        measures = [measures]  # one measure, not its characters (anything else is refused by name below)
    measures = list(measures) if measures else (list(chosen.measures) if chosen else DEFAULT_MEASURES)
    depth = depth if depth is not None else (chosen.depth if chosen else None)
    if depth is not None and (problem := depth_problem(depth)):
        raise HarnessError(f"{spelling.name('depth')} {problem}")
    if passage_separator is not None and (problem := separator_problem(passage_separator)):
        raise HarnessError(f"{spelling.name('passage_separator')} {problem}")
    separator = passage_separator or (chosen.passage_separator if chosen else None)
    return measures, depth, separator


DEPTH_LIMIT = 2**63 - 1  # a C long, as trec_eval reads -M: numpy and the compiled route count in 64 bits


def depth_problem(depth: object) -> str | None:
    """Why `depth` cannot be trec_eval's -M, worded to follow the setting's name (--depth, depth=,
    a preset's depth); None when it can."""
    if isinstance(depth, Integral) and not isinstance(depth, bool) and depth > DEPTH_LIMIT:
        return f"must be at most {DEPTH_LIMIT} documents (trec_eval reads -M as a C long), not {depth!r}"
    if isinstance(depth, Integral) and not isinstance(depth, bool) and depth >= 1:
        return None
    return f"must be a positive number of documents, not {depth!r}"


def separator_problem(separator: object) -> str | None:
    """Why `separator` cannot split passage ids into document and passage number, worded to
    follow the setting's name; None when it can. One rule for --passage-separator, the API's
    passage_separator= and the configs' `passage_separator:` key."""
    if isinstance(separator, str) and separator and not separator.isspace():
        return None
    return (f"must be the character(s) between a document id and its passage number, such as '-' or ':', "
            f"not {separator!r}")


def depth_warning(measures: Sequence[str], depth: int | None, given: int | None, preset: str | None, *,
                  spelling: Spelling, others: dict[str, int] | None = None) -> str | None:
    """What a `depth` shallower than a measure reads does to its number (measure_settings' depth:
    `given` by the caller, else the preset's), in one line for `harness eval` / `compare` /
    `qrels rank-agree` (stderr) and the Python API (warnings.warn) alike, the depth named as
    the caller set it; None when every measure is read whole. `others`: columns shown beside the
    measures, by how deep they read (compare's Judged@10)."""
    if depth is None:
        return None
    problem = reads_deeper(measures, depth, "depth", spelling, others)
    if problem is None:
        return None
    source = spelling.given("depth", depth) if given is not None else f"the {preset} preset's depth {depth}"
    return f"{source} keeps {depth} documents per query, {problem}"
