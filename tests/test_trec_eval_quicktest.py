"""trec_eval's own quicktest (its Makefile's `quicktest` target), read from
../shared/reference/trec_eval/test: for every measure of its expected outputs that the
harness accepts (trec_eval names mapped by harness.evaluate.names; not unj, which it refuses),
the harness's value equals trec_eval's, per query and on `all`, to the 4 decimals printed.

The files stay in ../shared (NIST's, not copied into the repo); without them the tests skip
in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.evaluate import Evaluator
from harness.evaluate.measures import family, parse_measures
from harness.trec import read_qrels, read_run
from tests.conftest import reference_dir

pytestmark = pytest.mark.reference

# expected output -> (qrels, run, trec_eval -M depth, relevance level -l); the Makefile's options
QUICKTEST = {
    "out.test.aq": ("qrels.test", "results.test", None, 1),  # -m all_trec -q
    "out.test.aqc": ("qrels.test", "results.trunc", None, 1),  # -m all_trec -q -c
    "out.test.aqcM": ("qrels.test", "results.trunc", 100, 1),  # -m all_trec -q -c -M100
    "out.test.aql": ("qrels.rel_level", "results.test", None, 2),  # -m all_trec -q -l2
}


def expected(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval's output: measure -> qid ('all' too) -> value as printed."""
    values: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        values.setdefault(name, {})[qid] = value
    return values


def harness_name(trec_eval_name: str, level: int) -> str | None:
    """The harness measure for a trec_eval output name at relevance level `level`, or None
    where the harness refuses the name."""
    try:
        measure = parse_measures([trec_eval_name], announce=False)[0]
    except HarnessError:
        return None
    if level == 1:
        return trec_eval_name
    if measure.NAME == "NumRel":  # num_rel at -l2 counts grades >= 2; refused at rel=2 (pytrec_eval)
        return None
    if not family(measure).rel or str(measure) == "NumRet":  # graded gains, or counts with no level
        return trec_eval_name
    return str(measure(rel=level))


@pytest.mark.parametrize("output", sorted(QUICKTEST))
def test_every_accepted_measure_equals_trec_evals_quicktest(output):
    folder = reference_dir("trec_eval", "test")
    qrels_file, run_file, depth, level = QUICKTEST[output]
    reference = expected(folder / output)
    names = {te: name for te in reference if (name := harness_name(te, level)) is not None}
    assert len(names) >= 40, sorted(names)  # every accepted family is in all_trec's output
    evaluation = Evaluator(read_qrels(folder / qrels_file), list(names.values()), announce=False)(
        read_run(folder / run_file, depth=depth), depth)
    differences = []
    for te, name in names.items():
        for qid, printed in reference[te].items():
            value = evaluation.means[name] if qid == "all" else evaluation.per_query[name][qid]
            ours = f"{value:.0f}" if name in evaluation.counts else f"{value:.4f}"
            if ours != printed:
                differences.append(f"{te} ({name}) {qid}: trec_eval {printed}, harness {ours}")
    assert not differences, "\n".join(differences)
