"""`harness run` writes the qrels it scores with where no file holds them (derived from the
data, or restricted to the corpus), and copies a qrels file into its output, so that `harness
compare --qrels` can take them from the output folder alone."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.errors import HarnessError
from harness.topics import load
from harness.trec import Qrels, qrels_text, read_qrels

PQA_QRELS = "qrels/pragmaticqa-val-derived.qrels"  # `pragmaticqa:val (derived)`, made a file name


def _config(folder: Path, experiment: dict, name: str = "c.yaml") -> Path:
    config = folder / name
    config.write_text(yaml.safe_dump({"k": 10, "output": str(folder / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"],
         **experiment}]}), encoding="utf-8")
    return config


def _ranked(query: str, k: int):
    return [("d1", 2.0), ("d2", 1.0)]


def _run(config: Path, *options: str) -> int:
    from harness.retrieve import RETRIEVERS

    with RETRIEVERS.using({"ranked": _ranked}):
        return main(["run", str(config), *options])


@pytest.mark.java
@pytest.mark.slow
def test_the_written_qrels_given_to_harness_compare_reproduce_the_leaderboards_means(tmp_path, capsys):
    """PragmatiCQA's derived qrels and iKAT 2023's restricted to the shipped passages, BM25 runs."""
    config = tmp_path / "small.yaml"
    out = tmp_path / "runs"
    config.write_text(yaml.safe_dump({"output": str(out), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw", "hqe"], "retrievers": ["bm25"], "k": 20,
         "measures": ["nDCG@3", "nDCG@10", "RR", "R@20"]},
        {"name": "ikat", "topics": "ikat2023:test", "strategies": ["raw", "manual"], "retrievers": ["bm25"], "k": 100,
         "corpus": ["benchmark:ikat2023:test", "benchmark:ikat2023:train"], "qrels_restrict_to_corpus": True,
         "measures": ["nDCG@5", "P(rel=2)@20", "RR(rel=2)"]}]}), encoding="utf-8")
    assert main(["run", str(config)]) == 0
    board = capsys.readouterr().out
    restricted = "2023-qrels.all-turns@ikat2023:test-provenance+ikat2023:train-provenance"
    for name, written, tags in (
        ("pragmaticqa:val (derived)", out / PQA_QRELS, ["pragmaticqa-val.raw.bm25", "pragmaticqa-val.hqe.bm25"]),
        (restricted, out / "qrels" / f"{restricted.replace(':', '-')}.qrels",
         ["ikat2023-test.raw.bm25", "ikat2023-test.manual.bm25"]),
    ):
        assert f"Qrels `{name}` ({written}): " in board
        records = {tag: json.loads((out / f"{tag}.json").read_text(encoding="utf-8"))["scores"] for tag in tags}
        assert {record["qrels_file"] for record in records.values()} == {str(written)}
        compared = tmp_path / "compared.json"
        measures = list(records[tags[0]]["evaluation"]["measures"])
        assert main(["compare", "--qrels", str(written), *(str(out / f"{tag}.run") for tag in tags),
                     "--measures", *measures, "--output", str(compared)]) == 0
        runs = json.loads(compared.read_text(encoding="utf-8"))["runs"]
        for tag, record in records.items():
            assert {m: runs[tag][m]["mean"] for m in measures} == record["evaluation"]["means"]


def test_derived_qrels_are_written_once_as_sorted_trec_qrels_and_left_alone_while_unchanged(tmp_path, capsys):
    """Four columns, queries and documents in sorted order, the same bytes on every rerun: a
    rerun does not touch the file (its mtime stays); a file that differs is replaced."""
    config = _config(tmp_path, {})
    assert _run(config) == 0
    written = tmp_path / "runs" / PQA_QRELS
    assert read_qrels(written).judgments == load("pragmaticqa:val").qrels().judgments
    lines = [line.split() for line in written.read_text(encoding="utf-8").splitlines()]
    assert {len(fields) for fields in lines} == {4} and {fields[1] for fields in lines} == {"0"}
    assert lines == sorted(lines, key=lambda fields: (fields[0], fields[2]))
    before = written.stat().st_mtime_ns
    assert _run(config) == 0
    assert written.stat().st_mtime_ns == before
    written.write_text("1_1 0 d1 1\n", encoding="utf-8")
    assert _run(config) == 0
    assert read_qrels(written).judgments == load("pragmaticqa:val").qrels().judgments


def test_a_qrels_file_of_ones_own_is_copied_into_the_output_and_named_by_the_board_and_the_runs_json(tmp_path,
                                                                                                      capsys):
    """runs/ handed on alone carries it: the copy, named by its content, gives `harness compare` the
    board's numbers once the original is gone."""
    import hashlib

    qrels = tmp_path / "mine.txt"
    qrels.write_text("1_1 0 d2 1\n", encoding="utf-8")
    assert _run(_config(tmp_path, {"qrels": str(qrels)})) == 0
    copy = tmp_path / "runs" / "qrels" / f"mine-{hashlib.sha256(qrels.read_bytes()).hexdigest()[:12]}.txt"
    assert copy.read_bytes() == qrels.read_bytes()
    scores = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json").read_text(encoding="utf-8"))["scores"]
    assert (scores["qrels_file"], scores["qrels_copied_from"]) == (str(copy), str(qrels))
    assert f"Qrels `mine` ({copy}, a copy of {qrels}): 1 judged queries" in capsys.readouterr().out
    qrels.unlink()
    compared = tmp_path / "compared.json"
    assert main(["compare", "--qrels", str(copy), str(tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run"),
                 "--measures", "RR", "--output", str(compared)]) == 0
    assert json.loads(compared.read_text())["runs"]["pragmaticqa-val.raw.ranked"]["RR"]["mean"] == \
        scores["evaluation"]["means"]["RR"]


def test_two_qrels_files_of_one_name_keep_a_copy_each_and_an_edited_one_replaces_neither(tmp_path, capsys):
    files = []
    for name, docid in (("a", "d1"), ("b", "d2")):
        (tmp_path / name).mkdir()
        files.append(tmp_path / name / "mine.txt")
        files[-1].write_text(f"1_1 0 {docid} 1\n", encoding="utf-8")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": name, "tag": name, "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"],
         "retrievers": ["ranked"], "qrels": str(file)} for name, file in zip("ab", files)]}), encoding="utf-8")
    assert _run(config) == 0
    copies = [Path(json.loads((tmp_path / "runs" / f"{tag}.json").read_text())["scores"]["qrels_file"]) for tag in "ab"]
    assert [read_qrels(copy).judgments for copy in copies] == [{"1_1": {"d1": 1}}, {"1_1": {"d2": 1}}]
    files[0].write_text("1_1 0 d1 1\n1_1 0 d2 1\n", encoding="utf-8")  # (another config's runs may name the copy)
    assert _run(config) == 0
    edited = Path(json.loads((tmp_path / "runs" / "a.json").read_text())["scores"]["qrels_file"])
    assert read_qrels(edited).judgments == {"1_1": {"d1": 1, "d2": 1}}
    assert read_qrels(copies[0]).judgments == {"1_1": {"d1": 1}}


def test_a_qrels_file_already_in_the_outputs_qrels_folder_is_its_own_copy(tmp_path, capsys):
    """A colleague scoring on the copy they were sent gets no copy of the copy."""
    folder = tmp_path / "runs" / "qrels"
    folder.mkdir(parents=True)
    qrels = folder / "mine-0123456789ab.txt"
    qrels.write_text("1_1 0 d2 1\n", encoding="utf-8")
    assert _run(_config(tmp_path, {"qrels": str(qrels)})) == 0
    assert list(folder.iterdir()) == [qrels]
    assert f"Qrels `mine-0123456789ab` ({qrels}): 1 judged" in capsys.readouterr().out


def test_a_qrels_files_sha256_is_recorded_beside_the_judgments_hash_to_check_a_copy_against(tmp_path):
    """A colleague sent runs/ and the qrels file checks that file with sha256sum: the judgments'
    hash (`scores.for.qrels`) does not change with the lines' order, the file's does."""
    import hashlib

    qrels = tmp_path / "mine.txt"
    qrels.write_text("1_1 0 d2 1\n1_1 0 d1 0\n", encoding="utf-8")
    config = _config(tmp_path, {"qrels": str(qrels)})
    record = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json"
    assert _run(config) == 0
    judged = json.loads(record.read_text(encoding="utf-8"))["scores"]
    qrels.write_text("1_1 0 d1 0\n1_1 0 d2 1\n", encoding="utf-8")
    assert _run(config) == 0
    scores = json.loads(record.read_text(encoding="utf-8"))["scores"]
    assert scores["for"]["qrels"] == judged["for"]["qrels"] and scores["evaluation"] == judged["evaluation"]
    assert judged["qrels_file_sha256"] != scores["qrels_file_sha256"] == hashlib.sha256(qrels.read_bytes()).hexdigest()


def test_a_qrels_file_is_read_once_per_version_however_many_runs_score_on_it(tmp_path, monkeypatch):
    """Each run's preparation named the copy by the file's sha256, and each run's JSON recorded
    the copy's: the same bytes read twice a run. Once per process now, until the file is edited."""
    import hashlib

    from harness import paths

    monkeypatch.setattr(paths, "SETTLED_NS", 0)  # a file just written is trusted by its version at once
    read, feed = [], paths.feed_file

    def counted(digest, path):
        if Path(path).is_relative_to(tmp_path) and Path(path).suffix != ".run":  # (not the plug-in's module,
            read.append(Path(path).name)  # nor a finished run's file, hashed to know it unedited)
        return feed(digest, path)

    monkeypatch.setattr(paths, "feed_file", counted)
    qrels = tmp_path / "mine.txt"
    config = _config(tmp_path, {"qrels": str(qrels), "strategies": ["raw", "hqe"]})
    for text, edited in (("1_1 0 d2 1\n", True), ("1_1 0 d2 1\n", False), ("1_1 0 d1 1\n1_1 0 d2 1\n", True)):
        if edited:
            qrels.write_text(text, encoding="utf-8")
        read.clear()
        assert _run(config) == 0
        digest = hashlib.sha256(text.encode()).hexdigest()
        copy = f"mine-{digest[:12]}.txt"
        assert read == (["mine.txt", copy] if edited else [])
        for tag in ("pragmaticqa-val.raw.ranked", "pragmaticqa-val.hqe.ranked"):
            scores = json.loads((tmp_path / "runs" / f"{tag}.json").read_text(encoding="utf-8"))["scores"]
            assert (Path(scores["qrels_file"]).name, scores["qrels_file_sha256"]) == (copy, digest)


def test_a_finished_run_file_is_read_once_per_version_however_often_its_config_is_resumed(tmp_path, monkeypatch,
                                                                                           capsys):
    """Each check that a finished run's file is unedited hashed it: harness.run called again in one
    process (a notebook cell run again) read every run file again. Once per process now, until the
    file is written again (the same bytes: a new version, read again, still finished)."""
    from harness import paths

    monkeypatch.setattr(paths, "SETTLED_NS", 0)  # a file just written is trusted by its version at once
    read, feed = [], paths.feed_file

    def counted(digest, path):
        if Path(path).suffix == ".run":
            read.append(Path(path).name)
        return feed(digest, path)

    monkeypatch.setattr(paths, "feed_file", counted)
    config = _config(tmp_path, {"strategies": ["raw", "hqe"]})
    files = ["pragmaticqa-val.hqe.ranked.run", "pragmaticqa-val.raw.ranked.run"]
    assert _run(config) == 0
    assert read == []  # hashed as it was written, not read back
    for _ in range(3):
        assert _run(config) == 0
    assert sorted(read) == files
    run_file = tmp_path / "runs" / files[0]
    run_file.write_bytes(run_file.read_bytes())
    read.clear()
    capsys.readouterr()
    assert _run(config, "--dry-run") == 0
    assert read == [files[0]]
    assert [line.rsplit("\t", 1)[1] for line in capsys.readouterr().out.splitlines() if "\t" in line] == [
        "finished", "finished"]


def test_a_dry_run_writes_no_qrels(tmp_path, capsys):
    assert _run(_config(tmp_path, {}), "--dry-run") == 0
    assert not (tmp_path / "runs" / "qrels").exists()


def test_a_finished_runs_json_recorded_without_its_qrels_file_gets_it_without_being_scored_again(tmp_path,
                                                                                                 monkeypatch, capsys):
    """A run finished before qrels were written keeps its recorded scores; its JSON names the file."""
    from harness.runner import runner

    config = _config(tmp_path, {})
    assert _run(config) == 0
    path = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["scores"]["qrels_file"]
    path.write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr(runner, "score", lambda *args: pytest.fail("scored again"))
    assert _run(config) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["scores"]["qrels_file"] == str(tmp_path / "runs" / PQA_QRELS)


def test_two_sets_of_qrels_of_one_name_get_two_files(tmp_path, capsys):
    """Two `mine.txt` restricted to one corpus: the second file's name takes its hash's first 8
    digits, and neither replaces the other's."""
    corpus = tmp_path / "pool.jsonl"
    corpus.write_text("".join(json.dumps({"id": docid, "contents": "text"}) + "\n" for docid in ("d1", "d2")),
                      encoding="utf-8")
    experiments = []
    for name, docid in (("a", "d1"), ("b", "d2")):
        qrels = tmp_path / name / "mine.txt"
        qrels.parent.mkdir()
        qrels.write_text(f"1_1 0 {docid} 1\n", encoding="utf-8")
        experiments.append({"name": name, "tag": name, "topics": "pragmaticqa:val", "strategies": ["raw"],
                            "measures": ["RR"], "retrievers": ["ranked"], "qrels": str(qrels), "corpus": str(corpus),
                            "qrels_restrict_to_corpus": True})
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": experiments}),
                      encoding="utf-8")
    assert _run(config) == 0
    files = [Path(json.loads((tmp_path / "runs" / f"{tag}.json").read_text())["scores"]["qrels_file"]) for tag in "ab"]
    assert files[0].name == "mine@pool.jsonl.qrels" and files[1].name.startswith("mine@pool.jsonl-")
    assert [read_qrels(file).judgments for file in files] == [{"1_1": {"d1": 1}}, {"1_1": {"d2": 1}}]


def test_qrels_text_refuses_an_id_that_would_break_a_qrels_line():
    with pytest.raises(HarnessError, match="'a b'"):
        qrels_text(Qrels("q", {"1": {"a b": 1}}))


@pytest.mark.slow
def test_the_leaderboard_and_report_note_queries_the_restricted_qrels_leave_without_a_grade_2_passage(tmp_path,
                                                                                                      capsys):
    """iKAT 2023 on the 894 shipped passages: 23 of its 74 judged turns keep no passage of grade 2,
    so the section's rel=2 measures are 0 there for every run, and their means at most 51/74:
    said once, under the experiment's own note, in the leaderboard and report.html alike."""
    config = _config(tmp_path, {"topics": "ikat2023:test", "strategies": ["manual", "raw"], "note": "Small pool.",
                                "corpus": ["benchmark:ikat2023:test", "benchmark:ikat2023:train"],
                                "qrels_restrict_to_corpus": True, "measures": ["nDCG@3", "R(rel=2)@10", "RR(rel=2)"]})
    assert _run(config, "--report") == 0
    said = ("23 of 74 judged queries have no judgment of grade >= 2: R(rel=2)@10 and RR(rel=2) score 0 there for "
            "every run (R(rel=2)@10 and RR(rel=2) can reach at most 0.6892)")
    board = (tmp_path / "runs" / "leaderboard.md").read_text(encoding="utf-8")
    assert board.count(said) == 1 and f"> Small pool.\n\n> {said}\n\nQrels `" in board
    assert board in capsys.readouterr().out
    report = (tmp_path / "runs" / "report.html").read_text(encoding="utf-8")
    assert report.count(f"<p class='legend'>{escape(said)}</p>") == 1


def test_report_without_the_configs_inputs_says_how_to_score_the_runs_from_the_output_folder_alone(tmp_path,
                                                                                                   monkeypatch, capsys):
    """runs/ handed on with its config, not its qrels file: --report cannot check the runs against
    the inputs, and says the `harness compare` line that gives the board's numbers from runs/."""
    import shlex

    monkeypatch.chdir(tmp_path)
    Path("my").mkdir()
    Path("my/pq.qrels").write_text("1_1 0 d2 1\n1_2 0 d1 1\n", encoding="utf-8")
    config = Path("c.yaml")
    config.write_text(yaml.safe_dump({"k": 10, "output": "runs/repro", "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR", "R@10"], "retrievers": ["ranked"],
         "qrels": "my/pq.qrels"}]}), encoding="utf-8")
    assert _run(config) == 0
    capsys.readouterr()
    Path("my/pq.qrels").rename("elsewhere.qrels")
    assert _run(config, "--report") == 2
    said = capsys.readouterr().err.splitlines()
    assert said[0] == "harness run: error: c.yaml: experiments[0].qrels: no such file: my/pq.qrels"
    assert said[1].startswith("--report checks each run against the config's inputs")
    assert said[2].startswith("harness compare --qrels runs/repro/qrels/pq-") and len(said) == 3
    compared = Path("compared.json")
    assert main([*shlex.split(said[2])[1:], "--output", str(compared)]) == 0
    means = json.loads(compared.read_text(encoding="utf-8"))["runs"]["pragmaticqa-val.raw.ranked"]
    recorded = json.loads(Path("runs/repro/pragmaticqa-val.raw.ranked.json").read_text())["scores"]["evaluation"]
    assert {measure: means[measure]["mean"] for measure in ("RR", "R@10")} == recorded["means"]


def _runs_without_their_qrels(output: str) -> Path:
    """A config scoring one run on its own pq.qrels into `output`, run, then its qrels file gone."""
    Path("pq.qrels").write_text("1_1 0 d2 1\n1_2 0 d1 1\n", encoding="utf-8")
    config = Path("c.yaml")
    config.write_text(yaml.safe_dump({"k": 10, "output": output, "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"],
         "qrels": "pq.qrels"}]}), encoding="utf-8")
    assert _run(config) == 0
    Path("pq.qrels").unlink()
    return config


def test_the_report_hint_names_the_qrels_copy_in_the_folder_handed_on_not_where_the_runs_were_made(tmp_path,
                                                                                                   monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = _runs_without_their_qrels("runs/repro")
    Path("got").mkdir()
    Path("runs/repro").rename("got/repro")
    capsys.readouterr()
    assert _run(config, "--report", "--output", "got/repro") == 2
    line = capsys.readouterr().err.splitlines()[2]
    assert line.startswith("harness compare --qrels got/repro/qrels/pq-")
    assert main(line.split()[1:]) == 0


def test_the_report_hint_reads_the_output_key_as_a_run_does_its_placeholders_filled(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    config = _runs_without_their_qrels("{cache}/runs")
    capsys.readouterr()
    assert _run(config, "--report") == 2
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 3 and said[2].startswith(f"harness compare --qrels {tmp_path / 'cache' / 'runs' / 'qrels'}/pq-")
