"""Every measure family the harness accepts equals `trec_eval -q -c -M` to 4 decimals (but
Judged, which trec_eval lacks: ir-measures' own, tests/test_judged.py).

The reference is trec_eval itself, built from its C sources in ../shared/reference. Inputs
are the real qrels of CAsT 2019-2022 and iKAT 2023/2024 (a seeded sample of queries, with
some judgments turned into -1, trec_eval's "in the pool but unjudged"), and seeded random
runs made to hit the edges: many tied scores, negative and scientific scores, duplicate
documents (trec_eval refuses a file with duplicates, so it gets the file with the
duplicates removed, the highest-scored copy kept), queries missing from the run, queries not
in the qrels, empty rankings, at depth none and 25. Per query and on the `all` line. Then
small files at the edges of the file formats, each given to both as it is.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from harness.evaluate import evaluate
from harness.trec import Qrels, read_qrels, read_run
from tests.conftest import qrels_root

pytestmark = [pytest.mark.reference, pytest.mark.slow]

QRELS = {
    "cast2019": qrels_root() / "cast" / "2019qrels.txt",
    "cast2020": qrels_root() / "cast" / "2020qrels.txt",
    "cast2021": qrels_root() / "cast" / "trec-cast-qrels-docs.2021.qrel",
    "cast2022": qrels_root() / "cast" / "cast2022.qrel",
    "ikat2023": qrels_root() / "ikat" / "2023-qrels.all-turns.txt",
    "ikat2024": qrels_root() / "ikat" / "2024-qrels.txt",
}
DEPTHS = (None, 25)

# harness measure -> (trec_eval measure name as printed, relevance level -l, depth -M override)
# RR@k is trec_eval's recip_rank on the top k (-M k).
MEASURES: dict[str, tuple[str, int, int | None]] = {
    "nDCG": ("ndcg", 1, None), "nDCG@3": ("ndcg_cut_3", 1, None), "nDCG@10": ("ndcg_cut_10", 1, None),
    "P@5": ("P_5", 1, None), "P(rel=2)@5": ("P_5", 2, None),
    "R@10": ("recall_10", 1, None), "R(rel=2)@10": ("recall_10", 2, None),
    "AP": ("map", 1, None), "AP(rel=2)": ("map", 2, None),
    "AP@10": ("map_cut_10", 1, None), "AP(rel=2)@10": ("map_cut_10", 2, None),
    "RR": ("recip_rank", 1, None), "RR(rel=2)": ("recip_rank", 2, None),
    "RR@5": ("recip_rank", 1, 5), "RR(rel=2)@5": ("recip_rank", 2, 5),
    "Rprec": ("Rprec", 1, None), "Rprec(rel=2)": ("Rprec", 2, None),
    "Bpref": ("bpref", 1, None), "Bpref(rel=2)": ("bpref", 2, None),
    "Success@5": ("success_5", 1, None), "Success(rel=2)@5": ("success_5", 2, None),
    "HR@3": ("success_3", 1, None), "Hit(rel=2)@3": ("success_3", 2, None),  # a recommender's hit ratio
    "infAP": ("infAP", 1, None), "infAP(rel=2)": ("infAP", 2, None),
    "SetP": ("set_P", 1, None), "SetP(rel=2)": ("set_P", 2, None),
    "SetR": ("set_recall", 1, None), "SetR(rel=2)": ("set_recall", 2, None),
    "SetAP": ("set_map", 1, None), "SetAP(rel=2)": ("set_map", 2, None),
    "NumQ": ("num_q", 1, None), "NumRel": ("num_rel", 1, None), "NumRet": ("num_ret", 1, None),
    "NumRelRet": ("num_rel_ret", 1, None), "NumRet(rel=2)": ("num_rel_ret", 2, None),
}
TREC_EVAL_ARGS = [
    "-m", "ndcg", "-m", "ndcg_cut.3,10", "-m", "P.5", "-m", "recall.10", "-m", "map", "-m", "map_cut.10",
    "-m", "recip_rank", "-m", "Rprec", "-m", "bpref", "-m", "success.3,5", "-m", "infAP",
    "-m", "set_P", "-m", "set_recall", "-m", "set_map",
    "-m", "num_q", "-m", "num_rel", "-m", "num_ret", "-m", "num_rel_ret",
]
SCORE_FORMATS = ("{:d}", "{:.1f}", "{:.3e}", "{:.2E}", "{:+.2f}")


def sample_qrels(name: str, rng: random.Random, folder: Path) -> Path:
    """20 real queries of the qrels, with about 1 judgment in 12 turned into -1."""
    judgments = read_qrels(QRELS[name]).judgments
    chosen = rng.sample(sorted(judgments), 20)
    path = folder / f"{name}.qrels"
    with path.open("w") as out:
        for qid in chosen:
            for docid, grade in judgments[qid].items():
                out.write(f"{qid} 0 {docid} {-1 if rng.random() < 1 / 12 else grade}\n")
    return path


def random_run(qrels: Qrels, rng: random.Random, folder: Path) -> tuple[Path, Path]:
    """A run full of edges, and the same run without its duplicates for trec_eval."""
    qids = sorted(qrels.judgments)
    answered = rng.sample(qids, 16) + ["999_1", "999_2"]  # 4 judged queries missing, 2 unjudged
    lines: list[tuple[str, str, str]] = []
    for qid in answered:
        judged = list(qrels.judgments.get(qid, {}))
        size = rng.choice([0, 1, 3, 10, 30, 60])
        docs = [rng.choice(judged) if judged and rng.random() < 0.6 else f"UNJ_{rng.randrange(500)}"
                for _ in range(size)]
        for docid in docs:
            value = rng.choice([rng.randrange(-3, 4), rng.randrange(-3, 4), rng.uniform(-50, 50), 0])
            text = rng.choice(SCORE_FORMATS)
            score = text.format(int(value)) if text == "{:d}" else text.format(value)
            lines.append((qid, docid, score))
    full, deduplicated = folder / "run.txt", folder / "run-dedup.txt"
    best: dict[tuple[str, str], int] = {}  # (qid, docid) -> the line of its highest score (the first of equals)
    for number, (qid, docid, score) in enumerate(lines):
        if (qid, docid) not in best or float(score) > float(lines[best[qid, docid]][2]):
            best[qid, docid] = number
    kept = set(best.values())
    with full.open("w") as out_full, deduplicated.open("w") as out_dedup:
        for number, (qid, docid, score) in enumerate(lines):
            line = f"{qid} Q0 {docid} {number + 1} {score} rnd\n"
            out_full.write(line)
            if number in kept:
                out_dedup.write(line)
    return full, deduplicated


def seeded_inputs(name: str, seed: int, folder: Path) -> tuple[Path, Qrels, Path, Path]:
    """The qrels sampled from `name` (its path and judgments) and a random run over them (with
    and without its duplicates), in a new `folder`, the same for the same seed."""
    rng = random.Random(seed)
    folder.mkdir()
    qrels_path = sample_qrels(name, rng, folder)
    qrels = read_qrels(qrels_path)
    return (qrels_path, qrels, *random_run(qrels, rng, folder))


def trec_eval_values(binary: Path, qrels: Path, run: Path, level: int, depth: int | None) -> dict:
    """(trec_eval measure, qid) -> value, `all` included."""
    args = [str(binary), "-q", "-c", f"-l{level}", *([f"-M{depth}"] if depth else []), *TREC_EVAL_ARGS]
    output = subprocess.run([*args, str(qrels), str(run)], check=True, capture_output=True, text=True).stdout
    values = {}
    for line in output.splitlines():
        measure, qid, value = line.split()
        values[measure, qid] = float(value)
    return values


def mismatches_with_trec_eval(binary: Path, ours, measures: list[str], qrels_path: Path, qrels: Qrels,
                              deduplicated: Path, depth: int | None, compared: dict[str, int],
                              worst: dict[str, float]) -> list[tuple]:
    """Where an evaluation of `measures` (names of MEASURES) differs from trec_eval's on the run
    without its duplicates, per query and `all`: (measure, qid, ours, theirs); each family's
    count of values compared and largest difference added to `compared` and `worst`."""
    canonical = dict(zip(measures, ours.measures, strict=True))  # NumRelRet is NumRet(rel=1)
    reference: dict[tuple[int, int | None], dict] = {}
    mismatches = []
    for measure in measures:
        trec_name, level, cut = MEASURES[measure]
        effective = min(filter(None, (depth, cut)), default=None)
        if (level, effective) not in reference:
            reference[level, effective] = trec_eval_values(binary, qrels_path, deduplicated, level, effective)
        rows = {qid: value for (m, qid), value in reference[level, effective].items() if m == trec_name}
        # trec_eval prints num_q on the `all` line only
        assert set(rows) == ({"all"} if trec_name == "num_q" else set(qrels.judgments) | {"all"}), measure
        for qid, value in rows.items():
            mine = ours.means[canonical[measure]] if qid == "all" else ours.per_query[canonical[measure]][qid]
            difference = abs(mine - value)
            family = measure.split("(")[0].split("@")[0]
            compared[family] += 1
            worst[family] = max(worst[family], difference)
            if difference > 5e-5 + 1e-9:
                mismatches.append((measure, qid, mine, value))
    return mismatches


def test_every_accepted_measure_equals_trec_eval_per_query_and_all(trec_eval, tmp_path):
    compared: dict[str, int] = defaultdict(int)
    worst: dict[str, float] = defaultdict(float)
    mismatches = []
    for seed, name in enumerate(QRELS):
        qrels_path, qrels, full, deduplicated = seeded_inputs(name, seed, tmp_path / name)
        run = read_run(full)
        assert run.duplicates > 0
        for depth in DEPTHS:
            ours = evaluate(qrels, run, list(MEASURES), depth=depth)
            mismatches += [(name, depth, *mismatch) for mismatch in mismatches_with_trec_eval(
                trec_eval, ours, list(MEASURES), qrels_path, qrels, deduplicated, depth, compared, worst)]
    print("\nfamily      values compared  max difference")
    for family in compared:
        print(f"{family:<11} {compared[family]:>15}  {worst[family]:.2g}")
    assert not mismatches, mismatches[:20]


def computed_by_the_compiled_route(measures) -> list[str]:
    """The measures `harness eval`'s compiled route computes (harness.evaluate.lean)."""
    from harness.evaluate.lean import computes
    from harness.evaluate.measures import parse_measures

    return [name for name, measure in zip(measures, parse_measures(list(measures), announce=False))
            if computes(measure)]


def compiled_route():
    """harness.evaluate.lean.lean_scores, or skip where the route is not built."""
    from harness.evaluate import lean

    if lean.compiled() is None:
        pytest.skip("harness eval's compiled route is not built here (`pip install -e .` builds "
                    "harness/evaluate/_lean.c)")
    return lean.lean_scores


def test_the_compiled_route_equals_trec_eval_per_query_and_all(trec_eval, tmp_path):
    """`harness eval`'s route without numpy, on the runs above and on the same lines shuffled
    (every query written in many places: the run is read whole)."""
    lean_scores = compiled_route()
    measures = computed_by_the_compiled_route(MEASURES)
    assert {m.split("(")[0].split("@")[0] for m in measures} >= {"nDCG", "P", "R", "AP", "RR", "Rprec", "Success",
                                                                "NumQ", "NumRel", "NumRet"}
    compared: dict[str, int] = defaultdict(int)
    worst: dict[str, float] = defaultdict(float)
    mismatches = []
    for seed, name in enumerate(QRELS):
        qrels_path, qrels, full, deduplicated = seeded_inputs(name, seed, tmp_path / name)
        lines = full.read_text().splitlines(keepends=True)
        random.Random(seed).shuffle(lines)
        shuffled = tmp_path / name / "shuffled.txt"
        shuffled.write_text("".join(lines))
        for depth in DEPTHS:
            scored = lean_scores(str(qrels_path), [str(full), str(shuffled)], measures, depth, False)
            assert scored is not None, (name, depth)
            for ours in scored.evaluations:
                assert ours.duplicates == read_run(full).duplicates > 0
                mismatches += [(name, depth, ours.run_name, *mismatch) for mismatch in mismatches_with_trec_eval(
                    trec_eval, ours, measures, qrels_path, qrels, deduplicated, depth, compared, worst)]
    assert sum(compared.values()) > 10_000 and not mismatches, mismatches[:20]


# Real CAsT 2019 judgments of query 31_1 (grades 0-3) and a run over their documents; each
# case as (qrels, run, depth).
_Q = "".join(f"31_1 Q0 CAR_{doc} {grade}\n" for doc, grade in (
    ("116d829c4c800c2fc70f11692fec5e8c7e975250", 0), ("1463f964653c5c9f614a0a88d26b175e4a8120f1", 1),
    ("172e16e89ea3d5546e53384a27c3be299bcfe968", 2), ("2174ad0aa50712ff24035c23f59a3c2b43267650", 3)))
_R = ("31_1 Q0 CAR_1463f964653c5c9f614a0a88d26b175e4a8120f1 1 3.0 r\n"
      "31_1 Q0 CAR_172e16e89ea3d5546e53384a27c3be299bcfe968 2 2.0 r\n"
      "31_1 Q0 CAR_2174ad0aa50712ff24035c23f59a3c2b43267650 3 1.0 r\n")
EDGES = {
    "comment lines": ("# judged by NIST\n" + _Q, "# run 1\n   # indented\n" + _R, None),
    "a qrels line starting with '#' is a comment, not query '#31_1'": (
        _Q.replace("\n", "\n#31_1 0 CAR_x 1\n", 1), _R, None),
    "a no-break space inside an id": (_Q, _R.replace("CAR_172e", "CAR_\u00a0172e"), None),
    "signed rank": (_Q, _R.replace(" 1 3.0", " +1 3.0"), None),
    "a duplicate below the depth: the higher copy is ranked": (
        _Q, "31_1 Q0 CAR_172e16e89ea3d5546e53384a27c3be299bcfe968 1 0.5 r\n" + _R, 2),
    "CRLF line ends": (_Q.replace("\n", "\r\n"), _R.replace("\n", "\r\n"), None),
    # one double however written ties (then docid descending: 2174, 172e, 1463); 0.1 + 1e-13 is
    # above them (a float32 reader would tie it too, and rank 116d, graded 0, last)
    "scores tied as doubles, not as float32": (_Q, "".join(
        f"31_1 Q0 CAR_{doc} {rank} {score} r\n" for rank, (doc, score) in enumerate((
            ("1463f964653c5c9f614a0a88d26b175e4a8120f1", "0.1"), ("172e16e89ea3d5546e53384a27c3be299bcfe968", "1e-1"),
            ("2174ad0aa50712ff24035c23f59a3c2b43267650", ".100"),
            ("116d829c4c800c2fc70f11692fec5e8c7e975250", "0.1000000000001")), start=1)), None),
    # Python's str.split splits at 0x1C-0x1F, C's isspace does not: read as docid CAR_x, rank 1,
    # score 4 (ranked first), the line was scored wrongly
    "ASCII separators 0x1C-0x1F inside an id": (_Q + "31_1 Q0 CAR_x\x1d1 0\n", _R + "31_1 Q0 CAR_x\x1d1 4 0.5 r\n", None),
}


@pytest.mark.parametrize("case", EDGES)
def test_files_at_the_edges_of_the_format_equal_trec_eval(trec_eval, tmp_path, case):
    qrels_text, run_text, depth = EDGES[case]
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_bytes(qrels_text.encode())
    run_path.write_bytes(run_text.encode())
    ours = evaluate(read_qrels(qrels_path), read_run(run_path), list(MEASURES), depth=depth)
    canonical = dict(zip(MEASURES, ours.measures, strict=True))
    for level in (1, 2):
        theirs = trec_eval_values(trec_eval, qrels_path, run_path, level, depth)
        for measure, (trec_name, measure_level, cut) in MEASURES.items():
            if measure_level != level or cut is not None:
                continue
            value = theirs[trec_name, "all"]
            assert abs(ours.means[canonical[measure]] - value) <= 5e-5, (case, measure)


def test_bpref_at_a_level_above_a_querys_grades_is_trec_evals_without_its_overread(trec_eval, tmp_path):
    """trec_eval's bpref adds up its count of judgments per grade below -l, reading past the
    end of that array for a query graded lower (which scores 0 whatever it reads): pytrec_eval
    did the same in this process, and a large rel= crashed it. So `harness eval` runs in a
    process of its own here: were that back, this test fails, naming the signal, where it
    would take the test process down with it."""
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text(_Q + "31_2 0 CAR_a 1\n31_2 0 CAR_b 0\n")  # 31_2 graded 0 and 1 only
    run_path.write_text(_R + "31_2 Q0 CAR_b 1 2.0 r\n31_2 Q0 CAR_a 2 1.0 r\n")
    levels = (2, 3, 4, 2147483647)  # trec_eval crashes at the last
    done = subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
                           "eval", "--qrels", str(qrels_path), "--per-query", "--format", "json", "--measures",
                           *(f"Bpref(rel={level})" for level in levels), "--", str(run_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (f"harness eval ended by signal {signal.Signals(-done.returncode).name}"
                                  if done.returncode < 0 else done.stderr)
    ours = json.loads(done.stdout)["run"]
    for level in levels[:-1]:
        theirs = trec_eval_values(trec_eval, qrels_path, run_path, level, None)
        measure = f"Bpref(rel={level})"
        assert {qid: value for (m, qid), value in theirs.items() if m == "bpref"} == pytest.approx(
            {**ours["per_query"][measure], "all": ours[measure]}, abs=5e-5)
    assert ours["Bpref(rel=2147483647)"] == 0


def test_the_all_line_adds_the_queries_one_by_one_as_trec_eval_does(trec_eval, tmp_path):
    """P@20 of 0, .25, .15, .3, .35, .1, .4 and .8 on 8 queries: added one by one, as trec_eval
    adds them, they make 2.3499999999999996, whose mean prints 0.2937; Python's sum() adds
    with compensation from 3.12 on, to 2.35, whose mean printed 0.2938."""
    relevant = (0, 5, 3, 6, 7, 2, 8, 16)  # each query's first documents of its 20
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("".join(f"q{query} 0 d{rank} {int(rank <= hits)}\n"
                                  for query, hits in enumerate(relevant, start=1) for rank in range(1, 21)))
    run_path.write_text("".join(f"q{query} Q0 d{rank} {rank} {21 - rank} r\n"
                                for query in range(1, len(relevant) + 1) for rank in range(1, 21)))
    printed = subprocess.run([str(trec_eval), "-c", "-m", "P.20", str(qrels_path), str(run_path)], check=True,
                             capture_output=True, text=True).stdout.split()
    ours = evaluate(read_qrels(qrels_path), read_run(run_path), ["P@20"]).means["P@20"]
    assert (f"{ours:.4f}", printed) == ("0.2937", ["P_20", "all", "0.2937"])


# --- a run of a million lines, read as `harness eval` reads it --------------------------------

BIG_QRELS = ("cast2019", "cast2022")
# RR@k changes trec_eval's -M: left to the test above
BIG_MEASURES = {m: v for m, v in MEASURES.items() if v[2] is None}


def big_files(folder: Path, rng: random.Random, queries: int = 510, depth: int = 2000) -> tuple[Path, Path, Path]:
    """qrels: `queries` copies of real CAsT 2019/2022 queries (1 judgment in 12 made -1); a run of
    `queries` x `depth` lines in rank order with many tied scores (one decimal, the ties in
    random order), judged and unjudged documents, 1% of the queries left out and a few
    unjudged ones answered; and the same run with a few duplicates (a lower copy of a
    document, which trec_eval would refuse: it gets the first file)."""
    judged = {}
    for name in BIG_QRELS:
        judged.update(read_qrels(QRELS[name]).judgments)
    templates = sorted(judged)
    qrels, run, duplicated = folder / "big.qrels", folder / "big.run", folder / "big-duplicates.run"
    with qrels.open("w") as out_qrels, run.open("w") as out_run, duplicated.open("w") as out_duplicated:
        for number in range(queries + 5):
            template = templates[number % len(templates)]
            qid = f"{template}.{number // len(templates)}"
            if number < queries:
                out_qrels.writelines(f"{qid} 0 {docid} {-1 if rng.random() < 1 / 12 else grade}\n"
                                     for docid, grade in judged[template].items())
            if rng.random() < 0.01:
                continue
            pool = sorted(judged[template])
            docids = set(rng.sample(pool, min(len(pool), rng.randrange(depth // 2))))
            while len(docids) < depth:
                docids.add(f"{rng.choice(pool)[:-4]}{rng.randrange(10_000):04d}")
            docids = list(docids)
            rng.shuffle(docids)
            scores = sorted((round(rng.uniform(0, 20), 1) for _ in docids), reverse=True)
            lines = [f"{qid} Q0 {docid} {rank} {score:.1f} big\n" for rank, (docid, score)
                     in enumerate(zip(docids, scores), start=1)]
            out_run.writelines(lines)
            out_duplicated.writelines(lines)
            out_duplicated.writelines(f"{qid} Q0 {docid} {depth + 1} -1.0 big\n" for docid in docids[:3])
    return qrels, run, duplicated


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, Path, Path]:
    """big_files, made once for the tests of this module that read them."""
    return big_files(tmp_path_factory.mktemp("big"), random.Random(26))


def test_every_accepted_measure_equals_trec_eval_on_a_million_line_run_read_as_harness_eval_reads_it(
        trec_eval, big):
    """The fast routes of `harness eval`, at depth 1000, on 1M lines: per query and `all`; the same
    values from the file with duplicates. The numpy route (pyarrow reader; with only the
    vectorised families, the run put into trec_eval's order chunk by chunk while read, keeping
    no docid), and the compiled route (harness.evaluate.lean) where it is built."""
    from harness.evaluate import Evaluator, RunFileOptions, evaluate_file
    from harness.evaluate.tables import read_qrels_table

    qrels_path, run_path, duplicated_path = big
    assert sum(1 for _ in run_path.open()) >= 1_000_000
    qrels = read_qrels_table(qrels_path)
    everything = Evaluator(qrels, list(BIG_MEASURES))
    vectorised = Evaluator(qrels, [m for m in BIG_MEASURES if not m.startswith("infAP")])
    options = RunFileOptions(depth=1000)
    evaluations = [evaluate_file(everything, run_path, options), evaluate_file(vectorised, run_path, options),
                   evaluate_file(vectorised, duplicated_path, options)]
    assert evaluations[2].duplicates > 0
    from harness.evaluate.lean import compiled

    if compiled() is not None:  # and by the compiled route, which `harness eval` takes on these files
        scored = compiled_route()(str(qrels_path), [str(run_path), str(duplicated_path)],
                                  computed_by_the_compiled_route(BIG_MEASURES), 1000, False)
        assert scored is not None and scored.evaluations[1].duplicates == evaluations[2].duplicates
        evaluations += scored.evaluations
    theirs = {level: trec_eval_values(trec_eval, qrels_path, run_path, level, 1000) for level in (1, 2)}
    mismatches, compared = [], 0
    for ours in evaluations:
        canonical = dict(zip(BIG_MEASURES, everything.measures, strict=True))
        for measure in ours.measures:
            name = next(m for m, c in canonical.items() if c == measure)
            trec_name, level, _ = BIG_MEASURES[name]
            for (printed, qid), value in theirs[level].items():
                if printed != trec_name:
                    continue
                mine = ours.means[measure] if qid == "all" else ours.per_query[measure][qid]
                compared += 1
                if abs(mine - value) > 5e-5 + 1e-9:
                    mismatches.append((measure, qid, mine, value))
    assert compared > 30_000 and not mismatches, mismatches[:20]


def test_a_large_run_read_in_parts_on_all_cores_scores_as_read_on_one(big, tmp_path):
    """The compiled route cuts a large run where a query ends and reads the parts at once; a run
    writing a query in two places (here, its first line moved to the end) is read again whole."""
    from harness.evaluate.coverage import RARELY
    from harness.evaluate.lean import compiled

    module = compiled()
    if module is None:
        compiled_route()  # skips, saying why
    qrels_path, run_path, _ = big
    lines = run_path.read_text().splitlines(keepends=True)
    moved = tmp_path / "moved.run"
    moved.write_text("".join([*lines[1:], lines[0]]))
    qrels = module.Qrels(str(qrels_path))
    specs = [(module.nDCG, 10, -1), (module.AP, -1, -1), (module.R, 1000, 2), (module.Judged, 10, -1)]
    for path in (run_path, moved):
        one, parts = (module.evaluate(qrels, str(path), 1000, specs, False, RARELY, threads) for threads in (1, 4))
        assert parts == one
    assert module.evaluate(qrels, str(moved), 1000, specs, False, RARELY, 4) == module.evaluate(
        qrels, str(run_path), 1000, specs, False, RARELY, 4)
