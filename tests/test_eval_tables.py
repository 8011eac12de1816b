"""`harness eval`'s fast route (harness/evaluate/tables.py) reads every file as the exact
readers of harness.trec do: the same values, the same duplicates dropped; a file it does not
take is handed to them. Chunks made small here, so that ties and queries cross their bounds.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.errors import FLAGS
from harness.evaluate import Evaluator, RunFileOptions, evaluate, evaluate_file
from harness.evaluate import tables
from harness.evaluate.coverage import docid_warning
from harness.trec import read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

MEASURES = ["nDCG@3", "nDCG", "P(rel=2)@5", "R@100", "AP(rel=2)", "AP@10", "RR", "RR(rel=2)@5", "Rprec",
            "Success@5", "Judged@10", "NumRet", "NumRet(rel=2)", "NumRel", "NumQ"]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(tables, "CHUNK", 8192)
    monkeypatch.setattr(tables, "BLOCK", 4096)


def tied_run(path: Path, shuffle: bool = False, repeat: int = 0) -> Path:
    """A CAsT 2021 organiser run with its scores cut to one decimal (many ties, written in the
    run's order, not by docid), optionally its lines shuffled, or `repeat` documents per query
    written again lower down."""
    lines = CAST2021_DOC_RUNS[0].read_text(encoding="utf-8").splitlines()
    out, seen = [], {}
    for line in lines:
        qid, q0, docid, rank, score, tag = line.split()
        out.append(f"{qid} {q0} {docid} {rank} {float(score):.1f} {tag}")
        seen.setdefault(qid, []).append(docid)
    out += [f"{qid} Q0 {docid} 9999 -5.0 dup" for qid, docids in seen.items() for docid in docids[:repeat]]
    if shuffle:
        random.Random(26).shuffle(out)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def assert_same_as_the_exact_reader(path: Path, depth: int | None = 100) -> None:
    qrels = read_qrels(CAST2021_QRELS)
    fast = evaluate_file(Evaluator(tables.read_qrels_table(CAST2021_QRELS), MEASURES), path,
                         RunFileOptions(depth=depth))
    exact = evaluate(qrels, read_run(path), MEASURES, depth=depth)
    assert fast.per_query == exact.per_query
    assert fast.means == exact.means
    assert (fast.duplicates, fast.missing_queries, fast.unjudged_queries) == \
           (exact.duplicates, exact.missing_queries, exact.unjudged_queries)


def test_a_run_in_rank_order_is_ordered_while_read_keeping_no_docid_and_scores_as_the_exact_reader(tmp_path):
    path = tied_run(tmp_path / "run.txt")
    table = tables.read_run_table(path, qrels=tables.read_qrels_table(CAST2021_QRELS))
    assert table.ordered and not len(table.docids)
    assert_same_as_the_exact_reader(path)
    assert_same_as_the_exact_reader(path, depth=None)


def test_a_run_read_in_one_pass_is_warned_about_with_the_top_10s_the_exact_reader_reads(tmp_path):
    lines = [line.split() for line in tied_run(tmp_path / "run.txt").read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "run.txt"  # ids lower-cased (the warning counts those judged in another case), and tied by
    path.write_text("".join(f"{qid} Q0 {docid.lower()} {rank} {float(score) // 2} t\n"  # twos: across the 10th rank
                            for qid, _, docid, rank, score, _ in lines), encoding="utf-8")
    fast = evaluate_file(Evaluator(tables.read_qrels_table(CAST2021_QRELS), ["RR"]), path, RunFileOptions(depth=100))
    assert "written in another case" in fast.docid_warning
    exact, qrels = read_run(path), read_qrels(CAST2021_QRELS)
    top_10s = {qid: [docid for docid, _ in exact.ranked(qid, 10)] for qid in exact.scores if qid in qrels.judgments}
    assert fast.docid_warning == docid_warning("run", top_10s, qrels.judgments, str(CAST2021_QRELS), FLAGS)
    assert evaluate(qrels, exact, ["RR"], depth=100).docid_warning == fast.docid_warning


def test_a_run_not_in_rank_order_scores_as_the_exact_reader(tmp_path):
    assert_same_as_the_exact_reader(tied_run(tmp_path / "run.txt", shuffle=True))


def test_repeated_documents_are_dropped_and_counted_as_the_exact_reader_does(tmp_path):
    path = tied_run(tmp_path / "run.txt", repeat=2)
    assert read_run(path).duplicates > 0
    assert_same_as_the_exact_reader(path)


@pytest.mark.parametrize("form", ["tabs", "CRLF", "comments", "signed ranks", "padded", "non-ASCII ids"])
def test_a_run_outside_the_common_form_scores_as_the_exact_reader(tmp_path, form):
    path = tied_run(tmp_path / "run.txt")
    text = path.read_text(encoding="utf-8")
    text = {"tabs": lambda: text.replace(" ", "\t"),
            "CRLF": lambda: text.replace("\n", "\r\n"),
            "comments": lambda: "# a comment\n" + text.replace("\n", "\n  # indented\n", 3),
            "signed ranks": lambda: text.replace(" Q0 ", " Q0  ").replace(" 1 ", " +1 "),
            "padded": lambda: text.replace("\n", " \n"),
            "non-ASCII ids": lambda: text.replace("KILT_", "KILT_\u00e9\u00a0"),
            }[form]()
    path.write_text(text, encoding="utf-8")
    assert_same_as_the_exact_reader(path)


@pytest.mark.parametrize("form", ["as shipped", "tabs", "comments"])
def test_qrels_read_fast_hold_the_judgments_the_exact_reader_reads(tmp_path, form):
    text = CAST2021_QRELS.read_text(encoding="utf-8")
    text = {"as shipped": text, "tabs": text.replace(" ", "\t"), "comments": "# judged\n" + text}[form]
    path = tmp_path / "qrels.txt"
    path.write_text(text, encoding="utf-8")
    table = tables.read_qrels_table(path)
    assert table.qrels.judgments == read_qrels(path).judgments
    assert tables.QrelsTable.from_qrels(read_qrels(path)).qrels.judgments == read_qrels(path).judgments
