"""`harness eval` equals trec_eval to 4 decimals on the CAsT 2021 organiser document runs.

The reference is trec_eval's own C code, reached two independent ways: pytrec_eval (the
trec_eval 9.0.8 sources compiled into pytrec-eval-terrier, fed by its own file parsers,
with trec_eval's -c done here by hand), and the trec_eval binary built from
../shared/reference/trec_eval, run as `trec_eval -c -M1000 [-l2]`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import pytrec_eval

from harness.evaluate import evaluate
from harness.trec import read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

TREC_EVAL_MEASURES = ("ndcg_cut.3,5,500", "map_cut.500", "recip_rank", "recall.500")
# harness measure -> (trec_eval measure, relevance level)
MEASURES = {
    "nDCG@3": ("ndcg_cut_3", 1),
    "nDCG@5": ("ndcg_cut_5", 1),
    "nDCG@500": ("ndcg_cut_500", 1),
    "AP@500": ("map_cut_500", 1),
    "RR": ("recip_rank", 1),
    "R@500": ("recall_500", 1),
    "AP(rel=2)@500": ("map_cut_500", 2),
    "RR(rel=2)": ("recip_rank", 2),
    "R(rel=2)@500": ("recall_500", 2),
}


def pytrec_eval_means(qrels_path: Path, run_path: Path, level: int) -> dict[str, float]:
    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_EVAL_MEASURES), relevance_level=level)
    per_query = evaluator.evaluate(run)
    names = next(iter(per_query.values())).keys()
    # trec_eval -c: every qrels query counts, the ones missing from the run as 0
    return {name: sum(per_query.get(qid, {}).get(name, 0.0) for qid in qrels) / len(qrels) for name in names}


@pytest.mark.parametrize("run_path", CAST2021_DOC_RUNS, ids=lambda p: p.stem)
def test_equals_trec_eval_c_code_via_pytrec_eval(run_path: Path) -> None:
    ours = evaluate(read_qrels(CAST2021_QRELS), read_run(run_path), list(MEASURES), depth=1000).means
    for level in (1, 2):
        wanted = {name: trec for name, (trec, lvl) in MEASURES.items() if lvl == level}
        reference = pytrec_eval_means(CAST2021_QRELS, run_path, level)
        for name, trec_name in wanted.items():
            assert f"{ours[name]:.4f}" == f"{reference[trec_name]:.4f}", (name, level)


@pytest.mark.reference
@pytest.mark.parametrize("run_path", CAST2021_DOC_RUNS, ids=lambda p: p.stem)
@pytest.mark.slow
def test_equals_trec_eval_binary(trec_eval: Path, run_path: Path) -> None:
    ours = evaluate(read_qrels(CAST2021_QRELS), read_run(run_path), list(MEASURES), depth=1000).means
    for level in (1, 2):
        wanted = {name: trec for name, (trec, lvl) in MEASURES.items() if lvl == level}
        output = subprocess.run(
            [str(trec_eval), "-c", "-M1000", f"-l{level}",
             *(arg for measure in TREC_EVAL_MEASURES for arg in ("-m", measure)),
             str(CAST2021_QRELS), str(run_path)],
            check=True, capture_output=True, text=True,
        ).stdout
        reference = {line.split()[0]: float(line.split()[2]) for line in output.splitlines()}
        for name, trec_name in wanted.items():
            assert f"{ours[name]:.4f}" == f"{reference[trec_name]:.4f}", (name, level)
