"""`--fill`'s warning when the filled labels' scale is not the human qrels' (harness.judge.fill)."""

from __future__ import annotations

from pathlib import Path

from harness.judge.base import counts, write_qrels
from harness.judge.fill import fill
from harness.judge.model import Judgment
from harness.paths import qrels_root
from harness.trec import Qrels, read_qrels


def judged_fill(path: Path, human: Qrels, scale: str) -> Path:
    """One label a judge gave on `scale` to a passage of a human-judged query no person judged,
    written as `harness judge` writes it: the qrels and its provenance sidecar."""
    qid = next(iter(human.judgments))
    write_qrels(path, [Judgment((qid, "a-hole"), 1, "ok", "1", False)], {"judge": "file", "scale": scale})
    return path


def test_a_fill_whose_sidecar_is_of_another_version_of_the_file_draws_no_scale_warning(tmp_path):
    """The sidecar's scale is that of the labels it was written for: a file changed since then
    is warned of as such (its provenance line), not as labels on the sidecar's scale."""
    human = read_qrels(qrels_root() / "ikat" / "2024-qrels.txt")
    path = judged_fill(tmp_path / "llm.qrels", human, "yes-no")
    assert fill(human, path).scale_warning is not None  # yes-no labels into iKAT's 0-4 grades
    path.write_text(path.read_text() + f"{next(iter(human.judgments))} 0 another-hole 3\n")
    filled = fill(human, path)
    assert filled.scale_warning is None
    assert filled.provenance.endswith("(WARNING: the file changed since its sidecar was written)")


def test_a_fill_whose_sidecar_counts_failed_pairs_is_said_to_be_incomplete_in_the_notes(tmp_path):
    """Pairs the judge got no answer for stay holes: the notes every report prints under its
    title say how many, from the sidecar, and how to finish the fill; a complete fill is silent."""
    human = read_qrels(qrels_root() / "ikat" / "2024-qrels.txt")
    qid = next(iter(human.judgments))
    judgments = [Judgment((qid, "a-hole"), 1, "ok", "1", False), Judgment((qid, "b-hole"), None, "failed", "", False),
                 Judgment((qid, "c-hole"), None, "failed", "", False)]
    path = tmp_path / "part.qrels"
    write_qrels(path, judgments, {"counts": counts(judgments), "judge": "llm", "scale": "relevance-0-4"})
    assert fill(human, path).notes(path)[-1] == (
        "WARNING: part.qrels: 2 of the 3 pairs it was asked to judge got no label (its sidecar: 2 failed): rerun "
        "`harness judge` to finish it")
    unparseable = [*judgments, Judgment((qid, "d-hole"), None, "unparseable", "maybe", False)]
    write_qrels(path, unparseable, {"counts": counts(unparseable), "judge": "llm", "scale": "relevance-0-4"})
    assert fill(human, path).notes(path)[-1] == (
        "WARNING: part.qrels: 3 of the 4 pairs it was asked to judge got no label (its sidecar: 2 failed, 1 "
        "unparseable): rerun `harness judge` to finish it; an unparseable answer is cached: check the judge's "
        "--prompt and --scale")
    write_qrels(path, unparseable[2:], {"counts": counts(unparseable[2:]), "judge": "file", "scale": "relevance-0-4"})
    assert fill(human, path).notes(path)[-1] == (
        "WARNING: part.qrels: 2 of the 2 pairs it was asked to judge got no label (its sidecar: 1 failed, 1 "
        "unparseable): rerun `harness judge` to finish it; an unparseable label is the --labels file's: check it "
        "and --scale")
    write_qrels(path, judgments[:1], {"counts": counts(judgments[:1]), "judge": "llm", "scale": "relevance-0-4"})
    assert fill(human, path).incomplete is None
    assert not any("WARNING" in note for note in fill(human, path).notes(path))


def derived(benchmark: str) -> Qrels:
    from harness.topics import load

    return load(benchmark).qrels()


def test_qrels_of_relevant_documents_only_take_a_fill_whose_top_grade_is_theirs_without_warning(tmp_path):
    """OpenDialKG's derived qrels grade every recommended item 1 and have no 0: yes-no labels
    (0 to 1) fit them, as relevance-0-4 labels fit iKAT's 0-4 grades."""
    for human, scale in ((derived("opendialkg:valid"), "yes-no"),
                         (read_qrels(qrels_root() / "ikat" / "2024-qrels.txt"), "relevance-0-4")):
        assert fill(human, judged_fill(tmp_path / f"{scale}.qrels", human, scale)).scale_warning is None


def test_a_fill_of_another_top_grade_is_told_the_relevance_scale_of_the_human_top_grade(tmp_path):
    """yes-no labels in OpenDialKG's 1s are fine, relevance-0-4 labels are not: told yes-no."""
    human = derived("opendialkg:valid")
    path = judged_fill(tmp_path / "llm.qrels", human, "relevance-0-4")
    assert fill(human, path).scale_warning == (
        f"{path}: its provenance sidecar puts its labels on the scale relevance-0-4 (0 to 4), but the top grade of "
        "opendialkg:valid (derived) is 1: each filled label is scored as the human grade of the same number, mixing "
        "the two scales; judge with --scale yes-no")


def test_a_file_judges_labels_of_another_top_grade_are_told_to_rerun_the_judge_that_made_them(tmp_path):
    """The file judge refuses a --scale other than the one its labels' sidecar records: the
    cure is the judge that made them, on the scale of the human top grade."""
    human = derived("opendialkg:valid")
    made = judged_fill(tmp_path / "llm.qrels", human, "relevance-0-4")
    path = tmp_path / "file.qrels"
    write_qrels(path, [], {"judge": "file", "scale": "relevance-0-4", "labels": str(made),
                           "source_provenance": {"judge": "file", "scale": "relevance-0-4",
                                                 "source_provenance": {"judge": "llm", "model": "m",
                                                                       "scale": "relevance-0-4"}}})
    assert fill(human, path).scale_warning.endswith(
        "mixing the two scales; the file judge keeps the scale of the labels it recorded: rerun the judge that made "
        "them (judge llm, model m) with --scale yes-no")


def test_no_relevance_scale_of_the_human_top_grade_is_told_the_grade_never_the_support_scale(tmp_path):
    """CoSRec's curated qrels grade 0 to 2, as support-0-2 does, and PragmatiCQA's 1 to 2; that
    scale grades how far a text backs a statement, not relevance: the top grade is what to meet."""
    cosrec = qrels_root() / "cosrec" / "curated.qrels"
    for human, name in ((read_qrels(cosrec), cosrec), (derived("pragmaticqa:val"), "pragmaticqa:val (derived)")):
        path = judged_fill(tmp_path / "llm.qrels", human, "relevance-0-4")
        assert fill(human, path).scale_warning == (
            f"{path}: its provenance sidecar puts its labels on the scale relevance-0-4 (0 to 4), but the top grade "
            f"of {name} is 2: each filled label is scored as the human grade of the same number, mixing the two "
            "scales; judge with a --scale whose top grade is 2")


def test_a_judge_made_qrels_filled_from_labels_without_a_sidecar_is_asked_whether_the_two_were_swapped(tmp_path):
    """`--qrels LLM.qrels --fill HUMAN.qrels` gives other numbers, not zeros: the judge's sidecar
    beside --qrels, and none beside --fill, are the sign; the right order draws no such warning."""
    people = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    llm = judged_fill(tmp_path / "llm.qrels", read_qrels(people), "relevance-0-4")
    assert fill(read_qrels(llm), people).misfit == (
        f"--qrels {llm} was made by `harness judge` (it has a provenance sidecar) and --fill {people} has none: "
        "did you swap --qrels and --fill? (the people's labels go to --qrels)")
    assert fill(read_qrels(people), llm).misfit is None


def test_a_fill_judging_none_of_the_human_queries_is_warned_of_as_another_years_qrels(tmp_path, capsys):
    """iKAT 2024's qrels as the fill of 2023's add 0 labels: a warning on stderr, as `harness
    judge` warns of a wrong-year --qrels, not only the note counting 0 labels added; an empty
    fill (a judge found no holes) is not warned of."""
    from harness.cli import main

    human, other = qrels_root() / "ikat" / "2023-qrels.all-turns.txt", qrels_root() / "ikat" / "2024-qrels.txt"
    run = tmp_path / "r.run"
    run.write_text(f"{next(iter(read_qrels(human).judgments))} Q0 d 1 1 r\n")
    assert main(["eval", "--qrels", str(human), str(run), "--measures", "P@1", "--fill", str(other)]) == 0
    assert (f"warning: --fill {other} judges none of the 176 queries --qrels {human} judges: 0 labels added; "
            "is it the qrels of the same benchmark and year?") in capsys.readouterr().err.splitlines()
    empty = tmp_path / "empty.qrels"
    empty.write_text("")
    assert fill(read_qrels(human), empty).misfit is None
