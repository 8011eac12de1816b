"""`harness judge`: label the unjudged (query, passage) pairs in the top k of runs with an LLM
(or with recorded labels), and write the new labels as a qrels file with a provenance sidecar."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.cli import add_output, add_runs, number_in, runs
from harness.errors import HarnessError, InputError, counted, verb
from harness.judge import make
from harness.judge.base import (JUDGES, Judge, answered, check_parsed, counts, failed_why, provenance_of, quoting,
                                 read_provenance, sidecar, write_qrels)
from harness.judge.llm import CONCURRENCY, RETRIES, default_prompt
from harness.judge.make import LlmOptions, Syntax, llm_params, no_llm_argument
from harness.judge.pairs import QUERY_FIELDS, relevance_items, sample_item, unjudged_pairs
from harness.judge.scales import SCALES
from harness.paths import file_sha256, refuse_overwriting
from harness.registry import UnknownName, split_spec
from harness.trec import Qrels

DEFAULT_SCALE = "relevance-0-4"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runs(parser, "TREC run files whose top-k pairs to judge")
    parser.add_argument("--topics", required=True, metavar="BENCHMARK",
                        help="the benchmark the runs answer (queries and their conversations), e.g. ikat2024")
    parser.add_argument("--corpus", metavar="SPEC", nargs="+", action="extend",
                        help="where the passages' text is: one or more corpus specs (file, irds:ID, benchmark:NAME), "
                             "searched in order, as a config's corpus: list; default: the corpora every split of the "
                             "benchmark brings, its own split's first (the file judge needs none)")
    add_output(parser, required=True, metavar="QRELS",
               help="the qrels file of the new labels (and its sidecar QRELS.provenance.json)")
    parser.add_argument("--qrels", help="labels already made (e.g. NIST's): pairs they judge are not judged again "
                                        "(unless --judged-queries-only)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--holes-only", action="store_true",
                      help="judge only the holes of the queries --qrels judges, the labels --fill uses (default: "
                           "the pairs of every query of the runs)")
    only.add_argument("--judged-queries-only", action="store_true",
                      help="judge every pair of the queries --qrels judges, the pairs it labels too: the labels "
                           "qrels agree and rank-agree compare with people's")
    parser.add_argument("--depth", type=number_in(1, 10**6, whole=True), default=10,
                        help="judge each run's top K per query (default 10)")
    parser.add_argument("--judge", default="llm", metavar="JUDGE",
                        help="llm (default), file, or a plug-in: an entry point of harness.judges or "
                             "python:MODULE:ATTR[:ARG]")
    parser.add_argument("--labels", help="the file judge's recorded labels (a qrels file)")
    parser.add_argument("--scale", choices=SCALES.names(),
                        help=f"the label scale (default {DEFAULT_SCALE}, iKAT's; the file judge's: the scale the "
                             "--labels file's provenance sidecar records, where it has one)")
    parser.add_argument("--query-field", choices=QUERY_FIELDS, default="utterance",
                        help="what the judge reads as the question (default: the user's utterance, "
                             "with the conversation before it)")
    add_llm_arguments(parser, "harness/judge/prompts/relevance.txt")


class LlmOption(argparse.Action):
    """An llm judge option, noted as given: with another judge it is an error (check_llm_options),
    where one left at its default (--model's $HARNESS_LLM_MODEL, say) is not."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.llm_options_given = [*namespace.llm_options_given, self.option_strings[0]]


def add_llm_arguments(parser: argparse.ArgumentParser, default_prompt: str) -> argparse._ArgumentGroup:
    """The llm judge's endpoint, prompt, concurrency, retries, timeout and cache options (also
    for other commands that judge with it); the group, for a command's own llm options (action=LlmOption)."""
    parser.set_defaults(llm_options_given=[])
    llm = parser.add_argument_group("llm judge (an OpenAI-compatible chat endpoint)")
    llm.add_argument("--model", action=LlmOption, default=os.environ.get("HARNESS_LLM_MODEL"),
                     help="model name (default $HARNESS_LLM_MODEL)")
    llm.add_argument("--base-url", action=LlmOption, default=os.environ.get("HARNESS_LLM_BASE_URL"),
                     help="e.g. http://127.0.0.1:8000/v1 (default $HARNESS_LLM_BASE_URL)")
    llm.add_argument("--api-key-env", action=LlmOption, default="OPENAI_API_KEY",
                     help="environment variable holding the key, if the endpoint needs one (default OPENAI_API_KEY)")
    llm.add_argument("--prompt", action=LlmOption,
                     help=f"prompt template file (default: the harness's {default_prompt})")
    llm.add_argument("--concurrency", action=LlmOption, type=number_in(1, 1024, whole=True), default=CONCURRENCY,
                     help=f"requests at once (default {CONCURRENCY})")
    llm.add_argument("--retries", action=LlmOption, type=number_in(0, 100, whole=True), default=RETRIES,
                     help=f"retries of a timeout, 429 or 5xx, with exponential backoff (default {RETRIES})")
    llm.add_argument("--timeout", action=LlmOption, type=number_in(0, 3600, open_low=True), default=120.0,
                     help="seconds to wait for one answer (default 120)")
    llm.add_argument("--cache", action=LlmOption, help="answer cache folder (default: the harness cache's judge/)")
    return llm


def check_llm_options(args: argparse.Namespace) -> None:
    """An llm judge option given with another judge is an error: it was silently ignored."""
    if args.judge != "llm" and args.llm_options_given:
        raise HarnessError(f"{args.llm_options_given[0]} is an option of --judge llm, not of --judge {args.judge}")


def make_judge(args: argparse.Namespace) -> Judge:
    """The judge the options name (checked before any pair is read), made by the one factory
    (harness.judge.make): `file` from --labels and --scale, `llm` from its options. --labels with
    another judge is an error, as an llm option is: the llm judge, the default, ignored it (and
    with HARNESS_LLM_* set sent every pair to the model). The built-in judges of support (`harness
    responses`') are refused."""
    check_llm_options(args)
    if args.labels and args.judge != "file":
        raise HarnessError(f"--labels is an option of --judge file, not of --judge {args.judge}: give --judge file "
                           "to answer from the recorded labels")

    def support(argument: str | None, settings: Mapping[str, Any]) -> dict[str, Any]:
        raise HarnessError(f"--judge {args.judge} judges support (harness responses eval), not relevance; "
                           "use llm, file or a plug-in")

    syntaxes: dict[str, Syntax] = {name: support for name in JUDGES.built_ins() if name not in ("file", "llm")}
    syntaxes["file"] = lambda argument, settings: _labels(args, argument)
    syntaxes["llm"] = lambda argument, settings: _llm(args, argument)
    return make.make_judge(args.judge, syntaxes, names=("llm", "file", "python:MODULE:ATTR[:ARG]"),
                           settings=_plugin_scale(args))


def _plugin_scale(args: argparse.Namespace) -> dict[str, Any]:
    """--scale for a plug-in judge: its `scale` parameter where it declares one (as llm and file
    do), else an error: its labels are on the scale it names itself, and --scale was ignored."""
    typed = split_spec(args.judge)[0]
    if args.scale is None or typed in JUDGES.built_ins():
        return {}
    try:
        declaration = JUDGES.declaration(typed)
    except UnknownName:  # said by make_judge, with the judges it takes
        return {}
    if declaration.param("scale") is None:
        raise HarnessError(f"--scale is an option of --judge llm, --judge file and a plug-in judge declaring a "
                           f"scale parameter, not of --judge {args.judge}: its labels are on the scale it names itself")
    return {"scale": SCALES.get(args.scale)}


def _labels(args: argparse.Namespace, argument: str | None) -> dict[str, Any]:
    """The file judge's parameters: --labels, on --scale, else the scale its sidecar records."""
    if argument is not None:
        raise HarnessError(f"--judge {args.judge}: the file judge's labels are --labels FILE, not a text after its "
                           "name")
    if not args.labels:
        raise HarnessError("--judge file needs --labels FILE (a qrels file of recorded labels)")
    from harness.judge.file import recorded_scale

    scale = args.scale or recorded_scale(args.labels, read_provenance(args.labels)) or DEFAULT_SCALE
    return {"path": args.labels, "scale": SCALES.get(scale)}


def _llm(args: argparse.Namespace, argument: str | None) -> dict[str, Any]:
    """The llm judge's parameters from its options, with the shipped relevance prompt and --scale."""
    no_llm_argument(argument)
    return llm_params(llm_options(args), default_prompt("relevance"), SCALES.get(args.scale or DEFAULT_SCALE),
                      sample_item())


def llm_options(args: argparse.Namespace) -> LlmOptions:
    """The llm judge's options as add_llm_arguments reads them (--prompt: the judge's template)."""
    if not args.model or not args.base_url:
        raise HarnessError("the llm judge needs --model and --base-url (or HARNESS_LLM_MODEL and HARNESS_LLM_BASE_URL)")
    return LlmOptions(args.model, args.base_url, args.prompt, args.api_key_env, args.timeout, args.concurrency,
                      args.retries, Path(args.cache) if args.cache else None)


def on_judged_queries(pairs: list[tuple[str, str]], human: Qrels, queries: set[str],
                      args: argparse.Namespace) -> tuple[list[tuple[str, str]], int]:
    """The pairs to judge and how many lie on queries --qrels does not judge, whose labels --fill,
    agree and rank-agree never use (--holes-only and --judged-queries-only leave them out). A
    --qrels judging none of the runs' queries (the wrong year's) skips nothing: said before any
    pair is judged (an llm judge would be paid for pairs people judged), an error with either
    (nothing is left to judge)."""
    if not queries.intersection(human.judgments):
        words = (f"--qrels {args.qrels} judges none of the runs' {len(queries)} queries; is it the qrels of --topics "
                 f"{args.topics}, the benchmark the runs answer?")
        if only_option(args):
            raise HarnessError(f"{words} ({only_option(args)} leaves nothing to judge)")
        print(f"warning: {words} (no pair is skipped)", file=sys.stderr)
    judged = [pair for pair in pairs if pair[0] in human.judgments]
    return (judged if only_option(args) else pairs), len(pairs) - len(judged)


def only_option(args: argparse.Namespace) -> str | None:
    """--holes-only or --judged-queries-only, whichever is given (argparse allows one)."""
    return "--holes-only" if args.holes_only else "--judged-queries-only" if args.judged_queries_only else None


def no_label(labels: dict[str, dict[str, int]], pairs: list[tuple[str, str]], args: argparse.Namespace) -> None:
    """--labels labelling none of the pairs to judge would write an empty qrels, which fills
    nothing: an error, saying whether the file judges their queries at all (the wrong year's
    labels do not). The file is what to fix: an InputError naming it, with no `--help` tail."""
    queries = {qid for qid, _ in pairs}
    common = len(queries.intersection(labels))
    hint = (f"are these labels of --topics {args.topics}, the benchmark the runs answer?" if not common else
            f"it judges {common} of their {len(queries)} queries, other passages of them")
    raise InputError(args.labels, f"--labels labelling none of the {len(pairs)} (qid, docid) pairs to judge: "
                                  f"nothing to write; {hint}")


def other_splits_note(topics: str, specs: list[str], sources: dict[str, int]) -> None:
    """The passages to judge that --topics' own split's corpus lacks, read from the other
    splits' (shipped_corpora, the default): one note saying how many and which split holds
    them. Right where the runs searched those too (iKAT 2023's pools), it is a run made on the
    wrong split's corpus otherwise (PragmatiCQA's val spans for its test turns). `sources`: for
    each passage, the index in `specs` of the corpus whose text was read (the own split's
    first), known from the one search for the texts: no corpus is read again (a passage two
    other splits held would count for the first alone; the shipped splits share none)."""
    from collections import Counter

    from harness.topics import held_by

    found_in = Counter(specs[source] for source in sources.values())
    held = {spec: found_in[spec] for spec in specs if found_in[spec] and spec != f"benchmark:{topics}"}
    if held:
        outside = sum(held.values())
        print(f"note: {outside} of the {len(sources)} passages to judge {verb(outside, 'is', 'are')} not in "
              f"the corpus of --topics {topics} but in other splits' corpora: {held_by(held)}; right if the runs "
              "searched them too, else give --corpus the corpus the runs were made on", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from harness.topics import load, shipped_corpora
    from harness.trec import read_qrels, read_run

    files = runs(args)
    refuse_overwriting([*files, args.qrels, args.labels], [("--output", args.out),
                                                            ("--output", sidecar(args.out))])
    if args.holes_only and not args.qrels:
        raise HarnessError("--holes-only needs --qrels: the holes are the pairs --qrels does not judge on the "
                           "queries it judges")
    if args.judged_queries_only and not args.qrels:
        raise HarnessError("--judged-queries-only needs --qrels: it judges the queries --qrels judges")
    judge = make_judge(args)
    benchmark = load(args.topics)
    if args.corpus:
        from harness.corpus.readers import open_corpus

        corpora = {spec: open_corpus(spec) for spec in args.corpus}
    elif args.judge == "file":
        corpora = {}  # recorded labels, answered by (qid, docid): no passage text needed
    elif not (corpora := shipped_corpora(args.topics)):
        raise HarnessError(f"{args.topics} brings no corpus: give --corpus, the corpus the runs were made on")
    human = read_qrels(args.qrels) if args.qrels else None
    ranked = [read_run(path, depth=args.depth) for path in files]
    pairs, skipped = unjudged_pairs(ranked, args.depth, None if args.judged_queries_only else human)
    elsewhere = 0  # pairs on queries --qrels does not judge
    if human is not None:
        pairs, elsewhere = on_judged_queries(pairs, human, {qid for run in ranked for qid in run.scores}, args)
    items, sources = relevance_items(pairs, benchmark, list(corpora.values()), args.query_field)
    if not args.corpus and len(corpora) > 1:  # before any answer is paid for
        other_splits_note(args.topics, list(corpora), sources)
    judgments = answered(judge, items, progress=True)
    example = check_parsed(judgments, judge.scale, "check --prompt (does it ask for one label?), --scale and --model")
    provenance = quoting({"counts": counts(judgments), **provenance_of(judge)}, example)  # a plug-in's may lack counts
    provenance["inputs"] = {
        "runs": {path: file_sha256(path) for path in files}, "depth": args.depth, "topics": args.topics,
        "corpus": list(corpora) or None, "query_field": args.query_field,
        "qrels": {args.qrels: file_sha256(args.qrels)} if args.qrels else None, "skipped_judged": skipped,
        "holes_only": args.holes_only, "judged_queries_only": args.judged_queries_only,
    }
    if args.judge == "file" and pairs and not provenance["counts"].get("ok"):
        no_label(judge.labels, pairs, args)
    written = write_qrels(args.out, judgments, provenance)
    tally = provenance["counts"]
    sent = f", {counted(provenance['requests'], 'request')}" if "requests" in provenance else ""
    known = (f"{counted(skipped, 'pair')} already in --qrels skipped; " if args.qrels and not args.judged_queries_only
             else "")
    if only_option(args):
        known += f"{counted(elsewhere, 'pair')} on queries --qrels does not judge left out ({only_option(args)}); "
    elif elsewhere:
        known += (f"{counted(elsewhere, 'pair')} judged on queries --qrels does not judge, whose labels --fill "
                  "does not use (--holes-only leaves them out); ")
    print(f"judged {counted(tally.get('pairs', 0), 'pair')} ({tally.get('cached', 0)} from the cache{sent}; "
          f"{tally.get('unparseable', 0)} unparseable, {tally.get('failed', 0)} failed, "
          f"{tally.get('missing', 0)} missing); {known}"
          f"wrote {written} labels to {args.out} and {sidecar(args.out)}", file=sys.stderr)
    if example is not None:
        print(f"note: {tally['unparseable']} of {tally['pairs']} answers off the scale {judge.scale.span()}, "
              f"counted as unparseable (never labelled): e.g. {example!r}", file=sys.stderr)
    if tally.get("failed"):
        print(f"warning: {counted(tally['failed'], 'pair')} {failed_why([provenance])}; run again to ask them "
              "again (the answers received are cached)", file=sys.stderr)
        return 1
    return 0
