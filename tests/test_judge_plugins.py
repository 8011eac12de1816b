"""Judge plug-ins (`--judge python:module:attr`, entry points of `harness.judges`): the members
of the `Judge` protocol the harness uses are checked when the plug-in is made, and its answer
(one Judgment per item, by key, its labels on its scale) before anything is written, in
`harness judge` and `harness responses eval` alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.cli import main
from harness.errors import HarnessError
from harness.judge.base import provenance_of, read_provenance, sidecar, write_qrels
from harness.judge.model import Judgment
from harness.judge.scales import RELEVANCE_0_4, SUPPORT_0_2, YES_NO, Scale
from harness.paths import file_sha256
from harness.responses import compare, evaluate
from harness.responses.evaluation import evaluate_runs
from harness.responses.judges import make_judge
from harness.responses.model import Nugget, NuggetBank, Response, ResponseRun, Sentence

QIDS = ("0_1", "0_2")  # iKAT 2024 turns (the topics ship with the harness)
NOT_A_JUDGE = 3  # what a `python:` spec names by mistake: a constant


class Lengths:
    """labels a passage 2 when it is long, else 0; leaves the counts out of its provenance"""

    name = "lengths"
    scale = RELEVANCE_0_4

    def __init__(self, label: int = 2) -> None:
        self.label = label

    def judge(self, items, progress=False):
        return [Judgment(item.key, self.label, "ok", "", False) for item in items]

    def provenance(self):
        return {"judge": self.name, "scale": self.scale.name}


class NoProvenance:
    """a judge without provenance()"""

    name = "bare"
    scale = RELEVANCE_0_4

    def judge(self, items, progress=False):
        return []


def _judge(tmp_path: Path, spec: str, *more: str) -> int:
    run, corpus = tmp_path / "a.run", tmp_path / "corpus.jsonl"
    run.write_text("".join(f"{q} Q0 d{q} 1 1.0 mine\n" for q in QIDS))
    corpus.write_text("".join(json.dumps({"id": f"d{q}", "contents": "text"}) + "\n" for q in QIDS))
    return main(["judge", str(run), "--topics", "ikat2024", "--corpus", str(corpus),
                 "--output", str(tmp_path / "out.qrels"), "--judge", spec, *more])


def test_a_plugin_lacking_a_judge_member_is_one_line_naming_it_and_the_member(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:NoProvenance") == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert "'python:tests.test_judge_plugins:NoProvenance' (NoProvenance) has no provenance()" in error
    assert not (tmp_path / "out.qrels").exists()


def test_a_plugin_that_cannot_be_called_is_one_line_naming_it_and_what_was_expected(tmp_path, capsys):
    """It was a TypeError traceback ('int' object is not callable) from the harness's own code."""
    assert _judge(tmp_path, "python:tests.test_judge_plugins:NOT_A_JUDGE") == 2
    assert capsys.readouterr().err == ("harness judge: error: judge 'python:tests.test_judge_plugins:NOT_A_JUDGE': "
                                       "got int; expected a judge class or a function that returns a judge "
                                       "(README: Your own system)\n")


def test_a_plugin_label_off_its_scale_is_refused_before_the_qrels_is_written(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Lengths:7") == 2
    assert ("judge 'lengths' (class tests.test_judge_plugins.Lengths) gave label 7, which is not on its scale "
            "relevance-0-4 (0 to 4)") in capsys.readouterr().err
    assert not (tmp_path / "out.qrels").exists()


def test_a_plugin_provenance_without_counts_gets_the_harness_counts(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Lengths:2") == 0
    assert (tmp_path / "out.qrels").read_text() == "".join(f"{q} 0 d{q} 2\n" for q in QIDS)
    assert read_provenance(tmp_path / "out.qrels")["counts"]["ok"] == len(QIDS)


class Generated(Lengths):
    """answers a generator"""

    def judge(self, items, progress=False):
        return (Judgment(item.key, self.label, "ok", "", False) for item in items)


class Fewer(Lengths):
    """leaves the last item unanswered"""

    def judge(self, items, progress=False):
        return super().judge(items)[:-1]


class SameKey(Lengths):
    """names the first item in every judgment"""

    def judge(self, items, progress=False):
        return [Judgment(items[0].key, self.label, "ok", "", False) for _ in items]


class Unknown(Lengths):
    """names a pair it was not given"""

    def judge(self, items, progress=False):
        return [Judgment(("9_9", "nope"), self.label, "ok", "", False), *super().judge(items)[1:]]


class Maybe(Lengths):
    """answers a status that is none of the judge's statuses"""

    def judge(self, items, progress=False):
        return [Judgment(item.key, None, "maybe", "", False) for item in items]


class Boolean(Lengths):
    """labels True, which Python takes for 1 and a qrels file would hold as the word"""

    def judge(self, items, progress=False):
        return [Judgment(item.key, True, "ok", "", False) for item in items]


class LabelledFailure(Lengths):
    """a label beside status failed, which responses eval would score as a judged label"""

    def judge(self, items, progress=False):
        return [Judgment(item.key, self.label, "failed", "", False) for item in items]


class PathProvenance(Lengths):
    """provenance() holds a Path, which JSON cannot hold"""

    def provenance(self):
        return {"judge": self.name, "model": Path("/models/x")}


def test_a_plugin_answering_a_generator_keeps_every_label(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Generated:2") == 0
    assert (tmp_path / "out.qrels").read_text() == "".join(f"{q} 0 d{q} 2\n" for q in QIDS)


class Argmax(Lengths):
    """labels by numpy's argmax, as a model's classifier head does: numpy integers"""

    def judge(self, items, progress=False):
        import numpy as np

        return [Judgment(item.key, np.argmax([0.1, 0.2, 0.9]), "ok", "", False) for item in items]


def test_a_plugin_labelling_with_numpy_integers_is_taken_and_written_as_whole_numbers(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Argmax") == 0
    assert (tmp_path / "out.qrels").read_text() == "".join(f"{q} 0 d{q} 2\n" for q in QIDS)
    assert read_provenance(tmp_path / "out.qrels")["counts"]["ok"] == len(QIDS)


@pytest.mark.parametrize("name, problem", [
    ("Fewer", "answered 1 judgments for 2 items: none for item ('0_2', 'd0_2'); expected one judgment per item, "
              "its item_key the item's key"),
    ("SameKey", "answered item ('0_1', 'd0_1') twice; expected one judgment per item"),
    ("Unknown", "answered a judgment for item_key ('9_9', 'nope'), which names no item it was given"),
    ("Maybe", "answered status 'maybe' for item ('0_1', 'd0_1'); expected one of ok, unparseable, failed, missing"),
    ("Boolean", "gave label True, which is not on its scale relevance-0-4 (0 to 4)"),
    ("LabelledFailure", "answered label 2 with status 'failed' for item ('0_1', 'd0_1'); a label goes with status ok "
                        "alone (else None)"),
    ("PathProvenance", "provenance() holds 'model': PosixPath('/models/x'), which JSON cannot hold (Object of type "
                       "PosixPath is not JSON serializable); expected strings, numbers, booleans, None, and lists "
                       "and dicts of them"),
])
def test_a_plugin_answer_not_one_judgment_per_item_is_one_line_naming_it_before_anything_is_written(
        tmp_path, capsys, name, problem):
    assert _judge(tmp_path, f"python:tests.test_judge_plugins:{name}") == 2
    error = capsys.readouterr().err
    assert error == (f"harness judge: error: judge 'lengths' (class tests.test_judge_plugins.{name}): {problem}\n"
                     if name == "PathProvenance" else
                     f"harness judge: error: judge 'lengths' (class tests.test_judge_plugins.{name}) {problem}\n")
    assert not list(tmp_path.glob("out.qrels*"))


class Overlap:
    """supports a nugget (2) when its words are all in the response, else 0; `order` answers in reverse, `drop`
    leaves the last judgment out, `lazy` answers a generator"""

    name = "overlap"
    scale = SUPPORT_0_2

    def __init__(self, order: str = "given") -> None:
        self.order = order

    def judge(self, items, progress=False):
        found = [Judgment(item.key, 2 * (set(item.fields["nugget"].split()) <= set(item.fields["response"].split())),
                          "ok", "", False) for item in items]
        return {"given": found, "reversed": found[::-1], "drop": found[:-1], "lazy": iter(found)}[self.order]

    def provenance(self):
        return {"judge": self.name}


def _nugget_inputs() -> tuple[list[ResponseRun], NuggetBank]:
    """Two runs answering two turns, and a bank of three nuggets on them."""
    bank = NuggetBank("bank", {"1_1": (Nugget("a", "paris capital", 1, True), Nugget("b", "seine river", 1, True)),
                               "1_2": (Nugget("c", "louvre", 1, True),)}, "rule")
    runs = [ResponseRun(name, Path(f"{name}.jsonl"), "test", {turn: Response(turn, text, (Sentence(text),))
                                                              for turn, text in texts.items()})
            for name, texts in (("good", {"1_1": "paris capital on the seine river", "1_2": "the louvre"}),
                                ("poor", {"1_1": "paris capital", "1_2": "no idea"}))]
    return runs, bank


def _nugget_scores(order: str) -> dict[str, float]:
    runs, bank = _nugget_inputs()
    return evaluate_runs(runs, bank, Overlap(order)).aggregate().set_index("run")["all"].to_dict()


@pytest.mark.parametrize("order", ["reversed", "lazy"])
def test_responses_eval_pairs_a_judges_judgments_with_nuggets_by_key_whatever_their_order(order):
    assert _nugget_scores("given") == {"good": 1.0, "poor": 0.25}
    assert _nugget_scores(order) == _nugget_scores("given")


def test_responses_eval_refuses_a_judge_answering_fewer_judgments_in_one_line_naming_it_and_the_item():
    with pytest.raises(HarnessError) as raised:
        _nugget_scores("drop")
    assert str(raised.value) == ("judge 'overlap' (class tests.test_judge_plugins.Overlap) answered 5 judgments for 6 "
                                 "items: none for item ('1_2', 'poor', 'c'); expected one judgment per item, its "
                                 "item_key the item's key")


def test_responses_eval_records_what_a_plugin_judge_is_in_its_assignments_sidecar(tmp_path):
    (tmp_path / "bank.json").write_text(json.dumps({"1_1": {"1": {"text": "paris capital", "relevance": "3"}}}))
    (tmp_path / "r.json").write_text(json.dumps({"1_1": {"one": "paris capital", "two": "rome"}}))
    assert main(["responses", "eval", str(tmp_path / "r.json"), "--nuggets", str(tmp_path / "bank.json"), "--judge",
                 "python:tests.test_judge_plugins:Overlap:reversed", "--assignments-out", str(tmp_path / "a.jsonl"),
                 "--output", str(tmp_path / "report.json")]) == 0
    record = read_provenance(tmp_path / "a.jsonl", "assignments_sha256")
    assert record["scale"] == "support-0-2"
    assert record["plugin"]["spec"] == "python:tests.test_judge_plugins:Overlap:reversed"
    assert record["plugin"]["sha256"] == file_sha256(__file__)


class YesNo(Lengths):
    """answers yes (1) for every passage, on the yes-no scale; says nothing of its scale in its provenance"""

    scale = YES_NO

    def __init__(self) -> None:
        super().__init__(1)

    def provenance(self):
        return {"judge": self.name}


class Scaled(Lengths):
    """labels on the scale it is given (a declared `scale` parameter): its top grade"""

    def __init__(self, scale: Scale = RELEVANCE_0_4) -> None:
        self.scale = scale
        self.label = max(scale.labels)


def test_a_plugins_sidecar_records_its_scale_and_identity_as_a_runs_json_records_a_plugin(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:YesNo") == 0
    record = read_provenance(tmp_path / "out.qrels")
    assert record["scale"] == "yes-no"
    assert record["plugin"] == {"spec": "python:tests.test_judge_plugins:YesNo",
                                "python": "tests.test_judge_plugins:YesNo", "module": "tests.test_judge_plugins",
                                "sha256": file_sha256(__file__)}


def test_a_plugins_labels_on_another_top_grade_are_filled_with_the_scale_warning(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:YesNo") == 0
    (tmp_path / "human.qrels").write_text("0_1 0 other 4\n0_2 0 other 0\n")
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "human.qrels"), "--fill",
                 str(tmp_path / "out.qrels"), "--measures", "nDCG@3"]) == 0
    assert (f"warning: {tmp_path / 'out.qrels'}: its provenance sidecar puts its labels on the scale yes-no (0 to 1), "
            f"but the top grade of {tmp_path / 'human.qrels'} is 4: each filled label is scored as the human grade "
            "of the same number, mixing the two scales; they are the labels of the plug-in judge "
            "python:tests.test_judge_plugins:YesNo, on the scale it names itself: judge with one on the scale "
            "relevance-0-4") in capsys.readouterr().err.splitlines()


def test_a_plugins_labels_are_filed_again_on_their_scale_by_the_file_judge(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:YesNo") == 0
    (tmp_path / "labels.qrels").write_bytes((tmp_path / "out.qrels").read_bytes())
    sidecar(tmp_path / "labels.qrels").write_bytes(sidecar(tmp_path / "out.qrels").read_bytes())
    assert main(["judge", str(tmp_path / "a.run"), "--topics", "ikat2024", "--output", str(tmp_path / "out.qrels"),
                 "--judge", "file", "--labels", str(tmp_path / "labels.qrels")]) == 0
    assert read_provenance(tmp_path / "out.qrels")["scale"] == "yes-no"


def test_scale_given_to_a_plugin_judge_without_a_scale_parameter_is_an_error(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:YesNo", "--scale", "relevance-0-4") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "harness judge: error: --scale is an option of --judge llm, --judge file and a plug-in judge declaring a "
        "scale parameter, not of --judge python:tests.test_judge_plugins:YesNo: its labels are on the scale it "
        "names itself (`harness judge --help` lists the options)")
    assert not (tmp_path / "out.qrels").exists()


def test_scale_given_to_a_plugin_judge_declaring_a_scale_parameter_is_passed_to_it(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Scaled", "--scale", "yes-no") == 0
    assert (tmp_path / "out.qrels").read_text() == "".join(f"{q} 0 d{q} 1\n" for q in QIDS)
    assert read_provenance(tmp_path / "out.qrels")["scale"] == "yes-no"


def _on_unknown_scale(tmp_path: Path) -> Path:
    """Labels whose sidecar records a plug-in's scale, lab-0-1, which no installed package registers."""
    labels = tmp_path / "labels.qrels"
    labels.write_text("".join(f"{q} 0 d{q} 1\n" for q in QIDS))
    sidecar(labels).write_text(json.dumps({"judge": "lab", "scale": "lab-0-1", "qrels_sha256": file_sha256(labels)}))
    return labels


def test_labels_on_a_scale_no_installed_package_registers_are_filled_with_a_warning_saying_so(tmp_path, capsys):
    labels = _on_unknown_scale(tmp_path)
    _judge(tmp_path, "python:tests.test_judge_plugins:Lengths")  # the run
    (tmp_path / "human.qrels").write_text("0_1 0 other 4\n0_2 0 other 0\n")
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "human.qrels"), "--fill", str(labels),
                 "--measures", "nDCG@3"]) == 0
    assert (f"warning: {labels}: its provenance sidecar puts its labels on the scale 'lab-0-1', which no installed "
            "package registers (install the package whose scale it is); whether it fits the top grade 4 of "
            f"{tmp_path / 'human.qrels'} is not checked") in capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("scale", [[], ["--scale", "relevance-0-4"]])
def test_labels_on_a_scale_no_installed_package_registers_are_not_filed_again_on_another(tmp_path, capsys, scale):
    labels = _on_unknown_scale(tmp_path)
    assert _judge(tmp_path, "file", "--labels", str(labels), *scale) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"harness judge: error: {labels}: its provenance sidecar records its labels on the scale 'lab-0-1', which no "
        "installed package registers (install the package whose scale it is)")
    assert not (tmp_path / "out.qrels").exists()


OVERLAP = "python:tests.test_judge_plugins:Overlap:reversed"


def test_the_python_api_records_what_a_plugin_judge_it_is_given_by_name_is():
    """As `harness responses eval`'s report records it: the spec, and what the registry loaded for it."""
    runs, bank = _nugget_inputs()
    _, aggregate = evaluate(runs, bank, judge=OVERLAP)
    assert aggregate.attrs["judge"]["plugin"] == {"spec": OVERLAP, "python": "tests.test_judge_plugins:Overlap",
                                                  "module": "tests.test_judge_plugins", "sha256": file_sha256(__file__)}
    assert compare(runs, bank, judge=OVERLAP).attrs["judge"]["plugin"] == aggregate.attrs["judge"]["plugin"]


def test_a_plugin_judge_carries_what_it_is_from_the_factory_to_wherever_it_is_handed():
    runs, bank = _nugget_inputs()
    judge = make_judge(OVERLAP)
    assert evaluate_runs(runs, bank, judge).judge["plugin"]["spec"] == OVERLAP


def test_a_judge_object_its_user_built_records_its_class_and_the_sha256_of_its_module():
    """No spec names it: its class does, and its module's file tells two versions of its code apart."""
    runs, bank = _nugget_inputs()
    assert evaluate_runs(runs, bank, Overlap()).judge["plugin"] == {
        "class": "tests.test_judge_plugins.Overlap", "module": "tests.test_judge_plugins",
        "sha256": file_sha256(__file__)}


JUDGE_MODULE = '''
from harness.judge.model import Judgment
from harness.judge.scales import SUPPORT_0_2


class Strict:
    name = "strict"
    scale = SUPPORT_0_2

    def judge(self, items, progress=False):
        return [Judgment(item.key, 0, "ok", "", False) for item in items]

    def provenance(self):
        return {}
'''


def test_a_judge_object_of_an_installed_package_records_its_distribution_and_version(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "lab_judges_j22-0.3.dist-info").mkdir(parents=True)
    (site / "lab_judges_j22-0.3.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-judges-j22\n"
                                                                    "Version: 0.3\n")
    (site / "lab_judges_j22-0.3.dist-info" / "top_level.txt").write_text("lab_judges_j22\n")
    (site / "lab_judges_j22.py").write_text(JUDGE_MODULE)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "lab_judges_j22", raising=False)  # put back as it was (absent) after the test
    from lab_judges_j22 import Strict

    runs, bank = _nugget_inputs()
    assert evaluate_runs(runs, bank, Strict()).judge["plugin"] == {
        "class": "lab_judges_j22.Strict", "distribution": "lab-judges-j22", "version": "0.3",
        "module": "lab_judges_j22", "sha256": file_sha256(site / "lab_judges_j22.py")}


def test_a_user_built_judges_labels_on_another_top_grade_name_its_class_in_the_scale_warning(tmp_path, capsys):
    _judge(tmp_path, "python:tests.test_judge_plugins:Lengths")  # the run
    judge, labels = YesNo(), tmp_path / "labels.qrels"
    write_qrels(labels, [Judgment((q, f"d{q}"), 1, "ok", "", False) for q in QIDS], provenance_of(judge))
    (tmp_path / "human.qrels").write_text("0_1 0 other 4\n0_2 0 other 0\n")
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "human.qrels"), "--fill", str(labels),
                 "--measures", "nDCG@3"]) == 0
    assert ("they are the labels of the plug-in judge tests.test_judge_plugins.YesNo, on the scale it names itself"
            in capsys.readouterr().err)


EXPECTED_SCALE = ("expected Scale(name, labels, meaning): a name (a str), labels (a tuple of distinct whole numbers) "
                  "and their meaning (a tuple of str, one for each label, in their order)")


class Uneven(Lengths):
    """a scale of three labels and two meanings"""

    scale = Scale("lab-uneven", (0, 1, 2), ("no", "yes"))


class Twice(Lengths):
    """a scale listing a label twice"""

    scale = Scale("lab-twice", (0, 1, 1), ("no", "yes", "yes"))


class Worded(Lengths):
    """a scale whose labels are words"""

    scale = Scale("lab-worded", ("no", "yes"), ("not relevant", "relevant"))


@pytest.mark.parametrize("judge, problem", [
    ("Uneven", "'lab-uneven' has 3 labels and 2 meanings"),
    ("Twice", "'lab-twice' lists label 1 twice"),
    ("Worded", "'lab-worded' has label 'no', not a whole number"),
])
def test_a_plugin_judge_on_a_malformed_scale_of_its_own_is_refused_when_made_in_one_line(tmp_path, capsys, judge,
                                                                                          problem):
    assert _judge(tmp_path, f"python:tests.test_judge_plugins:{judge}") == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert f"judge 'python:tests.test_judge_plugins:{judge}' ({judge}): its scale {problem}; {EXPECTED_SCALE}" in error
    assert not (tmp_path / "out.qrels").exists()


class ShortSupport(Overlap):
    """its own copy of support-0-2, a meaning short"""

    scale = Scale("support-0-2", (0, 1, 2), ("no support", "support"))


def test_a_judge_object_on_a_malformed_scale_is_refused_before_it_is_asked_anything():
    runs, bank = _nugget_inputs()
    with pytest.raises(HarnessError) as raised:
        evaluate_runs(runs, bank, ShortSupport())
    assert str(raised.value) == ("judge 'overlap' (class tests.test_judge_plugins.ShortSupport): its scale "
                                 f"'support-0-2' has 3 labels and 2 meanings; {EXPECTED_SCALE}")


def test_a_registered_plugin_scale_that_is_malformed_is_one_line_naming_its_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "lab_scales_j22-0.1.dist-info").mkdir(parents=True)
    (site / "lab_scales_j22-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-scales-j22\n"
                                                                    "Version: 0.1\n")
    (site / "lab_scales_j22-0.1.dist-info" / "entry_points.txt").write_text(
        "[harness.scales]\nlab-uneven = lab_scales_j22:uneven\n")
    (site / "lab_scales_j22.py").write_text('from harness.judge.scales import Scale\n\n'
                                            'uneven = Scale("lab-uneven", (0, 1, 2), ("no", "yes"))\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(harness.__file__).parents[1]), str(site)])}
    probe = "from harness.judge.scales import SCALES; SCALES.get('lab-uneven')"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.stderr.splitlines()[-1] == (
        f"harness.errors.HarnessError: scale 'lab-uneven' has 3 labels and 2 meanings; {EXPECTED_SCALE} "
        "(entry point lab_scales_j22:uneven of lab-scales-j22 0.1)")
