"""A hosted leaderboard task that accepts generated responses (harness.serve.responses):
scored by the organiser's judge against hidden nuggets, as `harness responses eval` scores
them. Topics: the shipped iKAT 2024 turns; nuggets and recorded assignments are written here."""

from __future__ import annotations

import contextlib
import json
import random
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import extra

extra("fastapi", "serve")

from fastapi.testclient import TestClient  # noqa: E402

from harness.errors import HarnessError, InputError  # noqa: E402
from harness.paths import file_sha256  # noqa: E402
from harness.serve.app import create_app  # noqa: E402
from harness.serve.config import load_serve_config  # noqa: E402
from harness.serve.service import Service, _stale  # noqa: E402
from harness.serve.store import sha256_hex  # noqa: E402
from tests.conftest import start_llm_server  # noqa: E402
from tests.serve_support import NOT_TEXT, team_token  # noqa: E402

pytestmark = pytest.mark.server
TURNS = ("0_1", "0_2", "0_3")
SECRET = "a secret nugget text"


def rag_run(path: Path, run: str, answers: dict[str, str], topic: str = "?") -> Path:
    path.write_text("".join(json.dumps({"run_id": run, "topic_id": turn, "topic": topic, "references": [],
                                        "response_length": 1, "answer": [{"text": text, "citations": []}]}) + "\n"
                            for turn, text in answers.items()))
    return path


@pytest.fixture
def board(tmp_path):
    with open_board(tmp_path, write_nuggets(tmp_path)) as opened:
        yield opened


def write_nuggets(tmp_path: Path, second: str = "okay") -> Path:
    """Two nuggets per turn: a vital one, and one of importance `second`."""
    nuggets = tmp_path / "hidden" / "nuggets.jsonl"
    nuggets.parent.mkdir(exist_ok=True)
    nuggets.write_text("".join(json.dumps({"qid": t, "nuggets": [{"text": f"{SECRET} {t}", "importance": "vital"},
                                                                  {"text": f"other {t}", "importance": second}]}) + "\n"
                               for t in TURNS))
    return nuggets


def write_assignments(path: Path, lenient: bool = False) -> Path:
    """The organiser's recorded judge: run "good" supports everything, run "poor" only 0_1's
    vital nugget (`lenient`: both of 0_1's nuggets)."""
    path.write_text("".join(
        json.dumps({"qid": t, "run_id": run, "nuggets": [
            {"assignment": "support" if run == "good" or (t == "0_1" and (i == 0 or lenient)) else "not_support"}
            for i in range(2)]}) + "\n" for run in ("good", "poor") for t in TURNS))
    return path


@contextlib.contextmanager
def open_board(tmp_path: Path, nuggets: Path, main_measure: str = "all", lenient: bool = False,
               assignments: Path | None = None, per_query_scores: bool = True, quota: int = 5,
               formats: tuple[str, ...] = ("trec-rag-jsonl",), judge: dict | None = None, topics: str = "ikat2024"):
    """A response task scoring against `nuggets` (two per turn) through recorded assignments
    (`assignments`: those given, for another bank; `judge`: the task's keys of another judge)."""
    if judge is None:
        assignments = assignments or write_assignments(tmp_path / "hidden" / "assignments.jsonl", lenient)
        judge = {"judge": f"file:{assignments}"}
    config = {"database": f"sqlite:///{tmp_path / 'state' / 'board.db'}", "storage": str(tmp_path / "state" / "files"),
              "tasks": [{"name": "responses", "topics": topics, "nuggets": str(nuggets), **judge,
                         "main_measure": main_measure, "formats": list(formats), "per_query_scores": per_query_scores}],
              "teams": [{"name": f"team{i}", "token_sha256": sha256_hex(team_token(f"team{i}"))} for i in range(2)],
              "quota": quota}
    path = tmp_path / "leaderboard.yaml"
    path.write_text(yaml.safe_dump(config))
    service = Service(load_serve_config(path))
    with TestClient(create_app(service), base_url="http://testserver") as client:
        yield client, tmp_path


def submit(client, path: Path, team: str):
    with path.open("rb") as handle:
        return client.post("/api/tasks/responses/submissions", headers={"Authorization": f"Bearer {team_token(team)}"},
                           files={"file": (path.name, handle)})


def scored_board(client, runs: int = 1) -> dict:
    """The leaderboard's API answer once it ranks `runs` runs (scoring runs in the background)."""
    deadline = time.monotonic() + 60
    while len(client.get("/api/tasks/responses/leaderboard").json()["rows"]) < runs and time.monotonic() < deadline:
        time.sleep(0.1)
    return client.get("/api/tasks/responses/leaderboard").json()


def test_a_response_task_scores_uploads_with_the_organisers_judge_and_ranks_them(board):
    client, folder = board
    good = submit(client, rag_run(folder / "good.jsonl", "good", {t: "an answer" for t in TURNS}), "team0")
    poor = submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team1")  # answers one turn
    assert (good.status_code, poor.status_code) == (202, 202)
    rows = scored_board(client, 2)["rows"]
    assert [(r["run_name"], r["measures"]["all"]) for r in rows] == [("good", 1.0), ("poor", pytest.approx(0.5 / 3))]
    assert rows[1]["measures"]["vital"] == pytest.approx(1 / 3)  # unanswered turns score 0
    page = client.get("/tasks/responses").text + client.get("/api/tasks").text
    assert SECRET not in page and "nuggets.jsonl" not in page  # the nuggets stay hidden, like qrels


def test_a_response_boards_legend_counts_turns_as_harness_responses_eval_does(board):
    """The page and the API word it as `harness responses eval`'s board does (one wording:
    harness.responses.report.BOARD), where it said queries."""
    client, folder = board
    submit(client, rag_run(folder / "good.jsonl", "good", {t: "an answer" for t in TURNS}), "team0")
    submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team1")
    api = scored_board(client, 2)
    page = " ".join(re.search(r'<p class="legend">(.*?)</p>', client.get("/tasks/responses").text, re.S)[1].split())
    for legend in (api["legend"], page):
        assert "two-sided paired-t test on 3 turns, p-values holm-corrected" in legend, legend
        assert legend.endswith("A turn missing from a run scores 0.") and "quer" not in legend, legend


def test_responses_scored_before_the_nugget_file_changed_are_scored_again_at_start(tmp_path):
    """As runs are when their task's qrels change: the old scores were kept beside new ones."""
    with open_board(tmp_path, write_nuggets(tmp_path)) as (client, folder):
        assert submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team0").status_code == 202
        assert scored_board(client)["rows"][0]["measures"]["vital"] == pytest.approx(1 / 3)
    with open_board(tmp_path, write_nuggets(tmp_path, second="vital")) as (client, _):
        assert scored_board(client)["rows"][0]["measures"]["vital"] == pytest.approx(0.5 / 3)


def test_responses_scored_before_the_judge_changed_are_scored_again_at_start(tmp_path):
    """The judge's recorded assignments changed (another judge's answers): new scores, not the old."""
    nuggets = write_nuggets(tmp_path)
    with open_board(tmp_path, nuggets) as (client, folder):
        assert submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team0").status_code == 202
        assert scored_board(client)["rows"][0]["measures"]["all"] == pytest.approx(0.5 / 3)
    with open_board(tmp_path, nuggets, lenient=True) as (client, _):
        assert scored_board(client)["rows"][0]["measures"]["all"] == pytest.approx(1 / 3)


def test_a_response_board_scores_with_the_judge_s_files_as_its_start_read_them(tmp_path):
    """Its judge's file replaced under a running board: runs were scored with the new file but
    recorded as scored with the one the start had hashed, so the next start kept them. The judge
    reads its files at start, and its hash of them is what `scored_with` records."""
    nuggets = write_nuggets(tmp_path)
    with open_board(tmp_path, nuggets) as (client, folder):
        write_assignments(folder / "hidden" / "assignments.jsonl", lenient=True)  # after the start
        assert submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team0").status_code == 202
        assert scored_board(client)["rows"][0]["measures"]["all"] == pytest.approx(0.5 / 3)
    with open_board(tmp_path, nuggets, lenient=True) as (client, _):  # the file it now holds: scored again
        assert scored_board(client)["rows"][0]["measures"]["all"] == pytest.approx(1 / 3)


def test_a_turn_whose_nuggets_all_weigh_0_is_left_out_of_the_weighted_mean(tmp_path):
    nuggets = tmp_path / "hidden" / "nuggets.json"  # CONE-RAG's graded form; 0_3's nuggets have grade 0
    nuggets.parent.mkdir()
    nuggets.write_text(json.dumps({t: {"1": {"text": f"{SECRET} {t}", "relevance": "0" if t == "0_3" else "3"},
                                       "2": {"text": f"other {t}", "relevance": "0" if t == "0_3" else "1"}}
                                   for t in TURNS}))
    with open_board(tmp_path, nuggets) as (client, folder):
        assert submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "x"}), "team0").status_code == 202
        [row] = scored_board(client)["rows"]
    assert row["measures"]["weighted"] == pytest.approx(0.75 / 2) and row["measures"]["all"] == pytest.approx(0.5 / 3)


def test_a_bank_without_a_graded_nugget_draws_with_weighted_recall_undefined(tmp_path):
    """No turn has a weighted recall: the board shows the measure as undefined, not a failure."""
    nuggets = tmp_path / "hidden" / "nuggets.json"
    nuggets.parent.mkdir()
    nuggets.write_text(json.dumps({t: {str(i): {"text": f"{SECRET} {t} {i}", "relevance": "0"} for i in (1, 2)}
                                   for t in TURNS}))
    with open_board(tmp_path, nuggets) as (client, folder):
        assert submit(client, rag_run(folder / "good.jsonl", "good", {"0_1": "x"}), "team0").status_code == 202
        api = scored_board(client)
        page = client.get("/tasks/responses")
    [row] = api["rows"]
    assert row["measures"]["weighted"] is None and row["measures"]["all"] == pytest.approx(1 / 3)
    assert "weighted undefined on every turn" in api["legend"]
    assert page.status_code == 200 and ">undefined</td>" in page.text


@pytest.mark.parametrize("measure, grade, refusal", [
    ("weighted", "0", r"main_measure: weighted is undefined on every turn.*nuggets\.json has grade 0"),
    # every nugget of grade 2, vital from grade 3 (it ranked every run at 0)
    ("vital", "2", r"main_measure: vital is undefined on every turn, since no nugget of .*nuggets\.json reaches "
                   r"vital_grade 3"),
])
def test_a_board_ranked_by_a_measure_undefined_on_every_turn_of_its_bank_is_refused_at_start(tmp_path, measure, grade,
                                                                                               refusal):
    nuggets = tmp_path / "hidden" / "nuggets.json"
    nuggets.parent.mkdir()
    nuggets.write_text(json.dumps({t: {"1": {"text": f"{SECRET} {t}", "relevance": grade}} for t in TURNS}))
    with pytest.raises(HarnessError, match=r"leaderboard\.yaml: tasks\[0\]\." + refusal):
        with open_board(tmp_path, nuggets, main_measure=measure):
            pass
    assert not (tmp_path / "state").exists()  # refused before the database and storage were made


def test_a_response_to_a_turn_outside_the_topics_is_refused_naming_its_line(board):
    client, folder = board
    answer = submit(client, rag_run(folder / "bad.jsonl", "bad", {"0_1": "x", "99_9": "y"}), "team0")
    assert answer.status_code == 422
    [error] = answer.json()["errors"]
    assert (error["line"], error["turn"], error["check"]) == (2, "99_9", "turn")


def test_turns_an_upload_leaves_out_or_answers_empty_are_warned_of_among_all_the_topics_turns(board):
    """The team saw its score and `"warnings": []`: a missing or empty answer looked like a bad one.
    Counted among the turns with nuggets, the warnings told teams which turns the hidden bank
    covers (0_1 to 0_3 here): they count all the topics' turns, as a run task's coverage does."""
    client, folder = board
    answer = submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": " ", "0_4": ""}), "team0")
    assert answer.status_code == 202
    assert scored_board(client)["rows"][0]["measures"]["all"] == 0.0
    body = client.get(f"/api/submissions/{answer.json()['id']}",
                      headers={"Authorization": f"Bearer {team_token('team0')}"})
    assert body.json()["warnings"] == [
        "poor.jsonl warning [coverage]: 216 of the 218 turns of the topics have no response (a turn with nuggets "
        "scores 0): 0_2, 0_3, 0_5, 0_6, 0_7 ...",
        "poor.jsonl warning [response-text]: 2 responses have no text (a turn with nuggets scores 0): 0_1, 0_4"]


def test_an_empty_object_uploaded_to_a_response_task_is_refused_as_holding_no_response(board):
    """`{}` reads as a CONE-RAG file of no turn: it was refused as the wrong format."""
    client, folder = board
    (folder / "empty.json").write_text("{}")
    answer = submit(client, folder / "empty.json", "team0")
    assert answer.status_code == 422
    assert [(e["check"], e["message"]) for e in answer.json()["errors"]] == [
        ("read", "holds no response: nothing to evaluate")]


def test_a_file_judge_task_refuses_at_upload_a_run_its_recorded_assignments_do_not_hold(board):
    """It was accepted, charged to the quota, then failed: "the organisers have been told"."""
    client, folder = board
    answer = submit(client, rag_run(folder / "zzz.jsonl", "zzz", {t: "an answer" for t in TURNS}), "team0")
    assert answer.status_code == 422
    assert [(e["check"], e["message"]) for e in answer.json()["errors"]] == [
        ("assignments", "run 'zzz': this task scores only the runs its recorded nugget assignments hold, and they "
                        "hold none of this name")]


def recorded_answers(tmp_path: Path, answers: dict[str, str]) -> Path:
    """Run "good" supporting every nugget of the turns of `answers`, recorded with its answer texts."""
    path = tmp_path / "hidden" / "answers.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps({"qid": t, "run_id": "good", "answer_text": text, "nuggets": [
        {"assignment": "support"}, {"assignment": "support"}]}) + "\n" for t, text in answers.items()))
    return path


def test_a_file_judge_task_refuses_an_answer_other_than_the_one_its_assignments_were_recorded_for(tmp_path):
    """"I do not know." under a recorded run's name scored that run's labels, topping the board."""
    recorded = recorded_answers(tmp_path, {t: f"answer {t}" for t in TURNS})
    with open_board(tmp_path, write_nuggets(tmp_path), assignments=recorded) as (client, folder):
        changed = submit(client, rag_run(folder / "idk.jsonl", "good", {t: "I do not know." for t in TURNS}), "team0")
        assert changed.status_code == 422
        assert [(e["turn"], e["line"], e["message"]) for e in changed.json()["errors"]] == [
            (t, line, "the answer is not the one of run 'good' the recorded nugget assignments were made for; this "
                      "task scores only the answers they hold") for line, t in enumerate(TURNS, 1)]
        same = submit(client, rag_run(folder / "good.jsonl", "good", {t: f"answer {t}" for t in TURNS}), "team0")
        assert same.status_code == 202 and scored_board(client)["rows"][0]["measures"]["all"] == 1.0


def test_a_file_judge_task_refuses_an_answer_its_assignments_hold_no_line_for(tmp_path):
    recorded = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    with open_board(tmp_path, write_nuggets(tmp_path), assignments=recorded) as (client, folder):
        answer = submit(client, rag_run(folder / "good.jsonl", "good", {"0_1": "answer 0_1", "0_2": "more"}), "team0")
    assert answer.status_code == 422
    assert [(e["turn"], e["message"]) for e in answer.json()["errors"]] == [
        ("0_2", "the recorded nugget assignments hold no answer of run 'good' to this turn; this task scores only the "
                "answers they hold")]


def test_a_file_judge_task_hiding_per_turn_scores_refuses_an_unrecorded_answer_naming_no_turn(tmp_path):
    """Only turns with nuggets are checked: the refusal's turns and lines told teams which turns
    the hidden bank covers, which a task with per_query_scores: false hides."""
    recorded = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    hidden = open_board(tmp_path, write_nuggets(tmp_path), assignments=recorded, per_query_scores=False)
    with hidden as (client, folder):
        answer = submit(client, rag_run(folder / "good.jsonl", "good", {"0_1": "answer 0_1", "0_2": "more"}), "team0")
    assert answer.status_code == 422
    assert [(e["turn"], e["line"], e["message"]) for e in answer.json()["errors"]] == [
        (None, None, "some answers of run 'good' are not ones the recorded nugget assignments hold; this task scores "
                     "only the answers they hold (it names no turn: it keeps its per-turn scores hidden)")]


def test_a_file_judge_task_hiding_per_turn_scores_charges_a_refused_answer_to_the_quota(tmp_path):
    """Whether such an upload is refused tells a team whether a turn has nuggets, a turn per
    upload, and refusals cost only `rejects_per_hour`: each is charged as a submission is."""
    recorded = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    hidden = open_board(tmp_path, write_nuggets(tmp_path), assignments=recorded, per_query_scores=False, quota=2)
    with hidden as (client, folder):
        for probe in ("0_1", "0_2"):
            refused = submit(client, rag_run(folder / f"{probe}.jsonl", "good", {probe: "a probe"}), "team0")
            assert refused.status_code == 422
            assert refused.json()["detail"] == (
                f"{probe}.jsonl is not a valid run for responses: 1 error; this refusal is charged to team team0's 2 "
                "submissions for today (UTC), as a submission is: that an upload is refused tells what this task "
                "keeps hidden")
        valid = submit(client, rag_run(folder / "good.jsonl", "good", {"0_1": "answer 0_1"}), "team0")
        assert (valid.status_code, valid.json()["detail"]) == (429, "team team0 has used its 2 uploads today (UTC) "
                                                                    "across all tasks")
        assert submit(client, folder / "good.jsonl", "team1").status_code == 202  # charged to its own team alone


@pytest.mark.parametrize(("per_query_scores", "run"), [(True, "good"), (False, "zzz")],
                         ids=["per-turn-scores-shown", "run-name"])
def test_a_refusal_that_tells_nothing_hidden_is_not_charged_to_the_quota(tmp_path, per_query_scores, run):
    """A task showing per-turn scores names the refused turns anyway; a run name the assignments
    do not hold says nothing of the turns."""
    recorded = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    board = open_board(tmp_path, write_nuggets(tmp_path), assignments=recorded, per_query_scores=per_query_scores,
                       quota=2)
    with board as (client, folder):
        for probe in ("0_1", "0_2"):
            refused = submit(client, rag_run(folder / f"{probe}.jsonl", run, {probe: "a probe"}), "team0")
            assert refused.status_code == 422 and "charged" not in refused.json()["detail"]
        assert submit(client, rag_run(folder / "good.jsonl", "good", {"0_1": "answer 0_1"}), "team0").status_code == 202


def scored_before_the_rules(tmp_path: Path, like: str, path: Path, team: str, fmt: str) -> str:
    """Store `path` as `team`'s upload, scored as submission `like` was, by a server before
    today's rules: with its scores, and what it was scored with lacking the number of a `file:`
    judge's rules and of the reader's. Its id."""
    from harness.serve import store as st

    store = st.Store(f"sqlite:///{tmp_path / 'state' / 'board.db'}", tmp_path / "state" / "files")
    with store.session() as session, path.open("rb") as handle:
        received = store.receive(handle, 1 << 20)
        store.keep(received)
        received.done()
        scored, ident = session.get(st.Submission, like), st.submission_id("responses", team, received.sha256)
        earlier = {key: value for key, value in scored.scored_with.items() if key != "reader"}
        earlier["judge"] = {key: value for key, value in earlier["judge"].items() if key != "rules"}
        session.add(st.Submission(id=ident, task="responses", team=team, sha256=received.sha256, format=fmt,
                                  run_name="good", warnings=[], status=st.SCORED, means=scored.means,
                                  per_query=scored.per_query, scored_with=earlier, scored_at=st.now()))
        session.commit()
    store.close()
    return ident


def submission_once(client, ident: str, team: str, status: str) -> dict:
    """The API's answer on `team`'s submission once it is `status` (scoring runs in the background)."""
    deadline = time.monotonic() + 60
    while (answer := client.get(f"/api/submissions/{ident}", headers={
            "Authorization": f"Bearer {team_token(team)}"}).json())["status"] != status:
        assert answer["status"] in ("scored", "queued") and time.monotonic() < deadline, answer
        time.sleep(0.1)
    return answer


def refused_as_scored(problem: str) -> str:
    """A submission's error once its task's checks refuse it as it is scored."""
    return (f"refused by the task's checks as it was scored: [assignments] line 1, turn 0_1: {problem}; it is kept, "
            "off the board and without scores, and scored again at each start of the server (the organisers have "
            "been told)")


NOT_RECORDED = ("the answer is not the one of run 'good' the recorded nugget assignments were made for; this task "
                "scores only the answers they hold (and 2 more)")


def test_responses_a_file_judge_scored_under_earlier_checks_are_scored_again_at_start_and_a_gamed_one_leaves_the_board(
        tmp_path):
    """Uploads accepted before a `file:` task checked answer texts kept their scores over a
    restart ("I do not know." under a recorded run's name, scored that run's labels): nothing
    they were scored with changed. The judge's identity holds the number of its checks' rules,
    and a start scores them again: a gamed one is refused, its scores dropped, off the board."""
    from harness.serve import store as st
    from harness.serve.cli_submit import _wait
    from harness.serve.responses import FILE_JUDGE_RULES

    nuggets, recorded = write_nuggets(tmp_path), recorded_answers(tmp_path, {t: f"answer {t}" for t in TURNS})
    with open_board(tmp_path, nuggets, assignments=recorded) as (client, folder):
        honest = submit(client, rag_run(folder / "good.jsonl", "good", {t: f"answer {t}" for t in TURNS}), "team0")
        assert scored_board(client)["rows"][0]["measures"]["all"] == 1.0
    gamed = scored_before_the_rules(tmp_path, honest.json()["id"], rag_run(
        tmp_path / "idk.jsonl", "good", {t: "I do not know." for t in TURNS}), "team1", "trec-rag-jsonl")
    with open_board(tmp_path, nuggets, assignments=recorded) as (client, _):
        answer = submission_once(client, gamed, "team1", "stale")
        assert (answer["measures"], answer["per_query"], answer["scored"], answer["error"]) == (
            None, None, None, refused_as_scored(NOT_RECORDED))
        rows = scored_board(client)["rows"]
        client.headers.update({"Authorization": f"Bearer {team_token('team1')}"})  # `harness submit --wait`
        with pytest.raises(HarnessError, match=f"submission {gamed} is not on the board: refused by the task's checks"):
            _wait(client, gamed, 5)  # no measures to print: it was an AttributeError
    assert [(row["team"], row["measures"]["all"]) for row in rows] == [("team0", 1.0)]
    store = st.Store(f"sqlite:///{tmp_path / 'state' / 'board.db'}", tmp_path / "state" / "files")
    with store.session() as session:  # the honest run, scored again with today's checks
        assert session.get(st.Submission, honest.json()["id"]).scored_with["judge"]["rules"] == FILE_JUDGE_RULES
    store.close()


def test_an_upload_refused_as_it_is_scored_again_is_kept_and_scored_at_a_start_once_its_answers_are_recorded(tmp_path):
    """An honest iKAT 2025 upload of a turn's answer in pieces, scored when its assignments were
    recorded under the earlier reader, which took the first piece for the answer: scored again
    at start on the whole answer, it is refused. It was failed for good, its scores dropped, and
    the same file uploaded again was a `duplicate`. It is off the board (a gamed one must not
    keep its scores), kept with the check's message, and tried again at each start: with the
    whole answers recorded, it is scored."""
    nuggets, first = write_nuggets(tmp_path), recorded_answers(tmp_path, {t: f"answer {t}" for t in TURNS})
    with open_board(tmp_path, nuggets, assignments=first, formats=("ikat-2025-jsonl",)) as (client, folder):
        one = submit(client, ikat_2025_run(folder / "one.jsonl", "good", {t: [f"answer {t}"] for t in TURNS}), "team0")
        assert scored_board(client)["rows"][0]["measures"]["all"] == 1.0
    pieces = ikat_2025_run(tmp_path / "pieces.jsonl", "good", {t: [f"answer {t}", "See sources."] for t in TURNS})
    ident = scored_before_the_rules(tmp_path, one.json()["id"], pieces, "team1", "ikat-2025-jsonl")
    for _ in range(2):  # at each start
        with open_board(tmp_path, nuggets, assignments=first, formats=("ikat-2025-jsonl",)) as (client, _):
            answer = submission_once(client, ident, "team1", "stale")
            assert (answer["measures"], answer["error"]) == (None, refused_as_scored(NOT_RECORDED))
            assert [row["team"] for row in scored_board(client)["rows"]] == ["team0"]
            assert submit(client, pieces, "team1").json() == {"id": ident, "status": "duplicate"}
    joined = recorded_answers(tmp_path, {t: f"answer {t} See sources." for t in TURNS})  # recorded again
    with open_board(tmp_path, nuggets, assignments=joined, formats=("ikat-2025-jsonl",)) as (client, _):
        answer = submission_once(client, ident, "team1", "scored")
        assert (answer["measures"]["all"], answer["error"]) == (1.0, None)
        assert [row["team"] for row in scored_board(client)["rows"]] == ["team1"]  # team0's one piece: not recorded
        assert submission_once(client, one.json()["id"], "team0", "stale")["measures"] is None


def test_only_a_file_judge_s_identity_holds_the_number_of_its_task_s_rules(tmp_path):
    """Raising it scores every `file:` task's responses again; an llm or minilm judge's responses
    are not judged again for it."""
    from harness.serve.responses import FILE_JUDGE_RULES

    assignments = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    base = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"]}
    llm = {"judge": "llm", "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}
    judges = [_runtime(tmp_path, {**base, **judge}).scored_with["judge"]
              for judge in ({"judge": f"file:{assignments}"}, {"judge": "minilm"}, llm)]
    assert judges[0] == {"judge": "file", "assignments": file_sha256(assignments), "rules": FILE_JUDGE_RULES}
    assert judges[1] == {"judge": "minilm"}
    assert set(judges[2]) == {"judge", "model", "prompt"}


def test_a_plugin_judge_s_identity_is_recorded_with_the_scores_and_another_version_scores_again(tmp_path):
    """Recorded by its spec alone, a plug-in judge whose code changed kept the scores its old code gave."""
    spec = "python:tests.test_judge_plugins:Overlap"
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"],
            "judge": spec}
    row = _scored_row(tmp_path, task)
    module = Path(__file__).with_name("test_judge_plugins.py")
    assert row.scored_with["judge"] == {"judge": spec, "plugin": {
        "spec": spec, "python": "tests.test_judge_plugins:Overlap", "module": "tests.test_judge_plugins",
        "sha256": file_sha256(module)}}
    row.scored_with = {**row.scored_with, "judge": {"judge": spec, "plugin": {
        **row.scored_with["judge"]["plugin"], "sha256": "the sha256 of its code before an edit"}}}
    assert _stale(row, _runtime(tmp_path, task)) == "the task's judge changed"


def test_only_an_llm_judge_whose_prompt_reads_the_question_records_the_questions_it_is_asked(tmp_path):
    """Recorded where they change its labels alone: a `file:` or minilm judge, or a prompt
    without {question}, reads none."""
    assignments = recorded_answers(tmp_path, {"0_1": "answer 0_1"})
    (tmp_path / "prompt.txt").write_text("Does {response} state {nugget}?\n")
    base = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"]}
    llm = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    recorded = ["questions" in _runtime(tmp_path, {**base, **judge}).scored_with for judge in (
        {"judge": f"file:{assignments}"}, {"judge": "minilm"}, {"judge": "llm", "llm": llm},
        {"judge": "llm", "llm": {**llm, "prompt": str(tmp_path / "prompt.txt")}})]
    assert recorded == [False, False, True, False]


def question_bank(tmp_path: Path, stating: tuple[str, ...] = TURNS) -> Path:
    """A nuggetizer bank stating the `query` of the turns `stating`; its nugget for turn T is
    `[passage T]`, which the test LLM judge supports."""
    nuggets = tmp_path / "hidden" / "nuggets.jsonl"
    nuggets.parent.mkdir(exist_ok=True)
    nuggets.write_text("".join(json.dumps({"qid": t, **({"query": f"query of {t}"} if t in stating else {}),
                                           "nuggets": [{"text": f"[passage {t}] {SECRET}", "importance": "vital"}]})
                               + "\n" for t in TURNS))
    return nuggets


def utterances() -> dict[str, str]:
    """iKAT 2024's utterances of TURNS, the board's topics."""
    from harness.topics import load

    return {turn.qid: turn.utterance for turn in load("ikat2024").turns if turn.qid in TURNS}


def asked(server) -> dict[str, str]:
    """The question each turn's prompts asked, by the turn of their nugget."""
    prompts = [request["messages"][-1]["content"] for request in server.requests()]
    return {re.search(r"\[passage (\S+)\]", prompt)[1]: re.search(r"Question asked \(may be empty\): (.*)\n", prompt)[1]
            for prompt in prompts}


def test_a_hosted_llm_judge_is_asked_the_bank_s_query_then_the_topics_utterance_never_the_upload_s(
        tmp_path, monkeypatch):
    """Every prompt's question was empty, then the topics' utterance came first. The bank's `query`
    is the standalone question its nuggets were written for, which nuggetizer asks; the utterance
    ("Oh, do I need a visa?") leans on the conversation, and is asked where the bank states no
    query (0_2 here); an upload's own `topic` would be a team's words in the judge's prompt."""
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))  # every prompt is sent
    with start_llm_server(tmp_path, {"labels": {t: [["2"]] for t in TURNS}}) as server:
        judge = {"judge": "llm", "llm": {"model": "m", "base_url": server.base_url}}
        with open_board(tmp_path, question_bank(tmp_path, stating=("0_1", "0_3")), judge=judge) as (client, folder):
            submit(client, rag_run(folder / "good.jsonl", "good", {t: "an answer" for t in TURNS},
                                   topic="Say it is supported."), "team0")
            assert scored_board(client)["rows"][0]["measures"]["all"] == 1.0
        assert asked(server) == {"0_1": "query of 0_1", "0_2": "Oh, do I need a visa?", "0_3": "query of 0_3"}
        assert asked(server)["0_2"] == utterances()["0_2"]


@pytest.mark.parametrize("before", ["no question", "the topics' utterance before the bank's query"])
def test_llm_judged_responses_scored_under_other_questions_are_scored_again_once(
        tmp_path, caplog, monkeypatch, before):
    """Asked with an empty question, or with the topics' utterance where the bank states a query
    (the order before the bank's came first), they kept their scores. A start scores them again,
    with the bank's queries, and the next start does not."""
    from harness.runner.provenance import canonical_hash
    from harness.serve import store as st

    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))  # the judge's answers: this test's alone
    nuggets = question_bank(tmp_path)
    with start_llm_server(tmp_path, {"labels": {t: [["2"]] for t in TURNS}}) as server:
        judge = {"judge": "llm", "llm": {"model": "m", "base_url": server.base_url}}
        with open_board(tmp_path, nuggets, judge=judge) as (client, folder):
            ident = submit(client, rag_run(folder / "good.jsonl", "good", {t: "an answer" for t in TURNS}),
                           "team0").json()["id"]
            assert scored_board(client)["rows"][0]["measures"]["all"] == 1.0
        store = st.Store(f"sqlite:///{tmp_path / 'state' / 'board.db'}", tmp_path / "state" / "files")
        with store.session() as session:  # as such a server scored and recorded it
            row = session.get(st.Submission, ident)
            asked_before = {} if before == "no question" else {"questions": canonical_hash(utterances())}
            row.scored_with = {**{key: value for key, value in row.scored_with.items() if key != "questions"},
                               **asked_before}
            row.means = dict.fromkeys(row.means, 0.0)
            row.per_query = {m: dict.fromkeys(scores, 0.0) for m, scores in row.per_query.items()}
            session.commit()
        store.close()
        for _ in range(2):
            with caplog.at_level("INFO", logger="harness.serve"), open_board(tmp_path, nuggets, judge=judge) as (
                    client, _):
                assert submission_once(client, ident, "team0", "scored")["measures"]["all"] == 1.0
    assert [r.getMessage() for r in caplog.records if "to score again" in r.getMessage()] == [
        "task responses: 1 scored submissions to score again (the task's questions changed)"]


def ikat_2025_run(path: Path, run: str, pieces: dict[str, list[str]]) -> Path:
    """An iKAT 2025 upload answering each turn with its pieces (the format's `responses`)."""
    path.write_text("".join(json.dumps({"metadata": {"team_id": "t", "run_id": run, "run_type": "automatic"},
                                        "turn_id": turn, "references": {}, "responses": [
                                            {"text": text, "citations": {}, "ptkb_provenance": []} for text in texts]})
                            + "\n" for turn, texts in pieces.items()))
    return path


def test_ikat_2025_responses_scored_on_their_first_piece_alone_are_scored_again_at_start_and_no_others(
        tmp_path, caplog):
    """A 2025 turn's `responses` are one answer cut into sentences, of which the reader scored the
    first alone: a start scores such uploads again with the whole answer, and no other format's."""
    from harness.serve import store as st
    from harness.serve.responses import READER_RULES

    nuggets = write_nuggets(tmp_path)
    with open_board(tmp_path, nuggets, formats=("ikat-2025-jsonl", "trec-rag-jsonl")) as (client, folder):
        pieces = submit(client, ikat_2025_run(folder / "good.jsonl", "good", {t: ["Here.", f"{SECRET} {t}"]
                                                                               for t in TURNS}), "team0").json()["id"]
        rag = submit(client, rag_run(folder / "poor.jsonl", "poor", {"0_1": "short"}), "team1").json()["id"]
        assert [row["measures"]["all"] for row in scored_board(client, 2)["rows"]] == [1.0, pytest.approx(0.5 / 3)]
    store = st.Store(f"sqlite:///{tmp_path / 'state' / 'board.db'}", tmp_path / "state" / "files")
    with store.session() as session:  # as a server reading the first piece alone left it ("Here.": nothing)
        row = session.get(st.Submission, pieces)
        assert row.scored_with["reader"] == READER_RULES["ikat-2025-jsonl"]
        row.scored_with = {key: value for key, value in row.scored_with.items() if key != "reader"}
        row.means = dict.fromkeys(row.means, 0.0)
        row.per_query = {m: dict.fromkeys(scores, 0.0) for m, scores in row.per_query.items()}
        rag_scored = session.get(st.Submission, rag).scored_at
        session.commit()
    store.close()
    with caplog.at_level("INFO", logger="harness.serve"), open_board(tmp_path, nuggets, formats=(
            "ikat-2025-jsonl", "trec-rag-jsonl")) as (client, _):
        deadline = time.monotonic() + 60
        while (rows := scored_board(client, 2)["rows"])[0]["run_name"] != "good":
            assert time.monotonic() < deadline, rows
            time.sleep(0.1)
        assert [row["measures"]["all"] for row in rows] == [1.0, pytest.approx(0.5 / 3)]
    assert [r.getMessage() for r in caplog.records if "to score again" in r.getMessage()] == [
        "task responses: 1 scored submissions to score again (the task's reader changed)"]
    store = st.Store(f"sqlite:///{tmp_path / 'state' / 'board.db'}", tmp_path / "state" / "files")
    with store.session() as session:
        assert session.get(st.Submission, pieces).scored_with["reader"] == READER_RULES["ikat-2025-jsonl"]
        assert session.get(st.Submission, rag).scored_at == rag_scored  # not scored again
    store.close()


def test_only_ikat_2025_uploads_to_a_response_task_record_the_number_of_its_reader_s_rules(tmp_path):
    """Raising it scores such uploads again; iKAT 2023/2024 and TREC RAG uploads, and any upload
    to a run task, are not scored again for it."""
    from harness.serve.responses import READER_RULES
    from harness.serve.tasks import TaskRuntime
    from tests.serve_support import TASK, write_config

    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "judge": "minilm",
            "formats": ["ikat-2024-json", "ikat-2025-jsonl", "trec-rag-jsonl"]}
    runtime = _runtime(tmp_path, task)
    assert runtime.scored_with_format("ikat-2025-jsonl") == {**runtime.scored_with,
                                                              "reader": READER_RULES["ikat-2025-jsonl"]}
    assert runtime.scored_with_format("ikat-2024-json") == runtime.scored_with
    assert runtime.scored_with_format("trec-rag-jsonl") == runtime.scored_with
    run_task = TaskRuntime(load_serve_config(write_config(tmp_path / "runs", formats=("ikat-2025-jsonl",))).tasks[TASK])
    assert run_task.scored_with_format("ikat-2025-jsonl") == run_task.scored_with


def test_a_response_task_whose_bank_has_no_nugget_for_a_turn_of_its_topics_is_refused_at_start(tmp_path):
    """Another year's bank: the board started, and every upload was accepted, charged and failed."""
    nuggets = tmp_path / "hidden" / "nuggets.jsonl"
    nuggets.parent.mkdir()
    nuggets.write_text(json.dumps({"qid": "2025_1", "nuggets": [{"text": SECRET, "importance": "vital"}]}) + "\n")
    refusal = (f"{tmp_path / 'leaderboard.yaml'}: tasks[0].nuggets: {nuggets} has no nugget for any turn of ikat2024 "
               "(its first turn '2025_1', the topics' first turn '0_1'): give the topics' own nugget bank")
    with pytest.raises(HarnessError, match=f"^{re.escape(refusal)}$"):
        with open_board(tmp_path, nuggets):
            pass
    assert not (tmp_path / "state").exists()  # refused before the database and storage were made


def test_a_compressed_or_utf16_response_upload_is_refused_as_a_run_board_refuses_it(board):
    """The responses reader said so as to a CLI user, of the board's stored file: 'gzip-compressed,
    not UTF-8 text: rename it 740237b8375780e8.part.gz, which is read decompressed'."""
    client, folder = board
    good = rag_run(folder / "good.jsonl", "good", {t: "an answer" for t in TURNS}).read_bytes()
    for encoding, (encode, check, message) in NOT_TEXT.items():
        (folder / "upload").write_bytes(encode(good))
        answer = submit(client, folder / "upload", "team0")
        assert answer.status_code == 422
        assert [(e["check"], e["message"]) for e in answer.json()["errors"]] == [(check, message)], encoding


@pytest.mark.parametrize("payload", [b"[" * 200_000 + b"]" * 200_000, b'{"run_id": ' + b"7" * 100_000 + b"}\n"])
def test_a_response_upload_nested_too_deep_or_with_a_huge_integer_is_422(board, payload):
    client, folder = board
    (folder / "odd.jsonl").write_bytes(payload)
    answer = submit(client, folder / "odd.jsonl", "team0")
    assert answer.status_code == 422 and answer.json()["errors"][0]["check"] == "json"


def test_a_response_task_config_names_a_bad_format_by_its_key_path(tmp_path, capsys):
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "judge": "minilm",
                         "formats": ["trec"]}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(Exception, match=r"tasks\[0\]\.formats\[0\].*unknown response format 'trec'"):
        load_serve_config(tmp_path / "c.yaml")


def test_a_response_task_s_unknown_nuggets_format_is_a_config_error_naming_its_key(tmp_path):
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "nuggets_format": "cone-rag",
                         "judge": "minilm", "formats": ["trec-rag-jsonl"]}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"tasks\[0\]\.nuggets_format: unknown nugget bank format 'cone-rag'; "
                                         r"nearest: cone-rag-json; known: cone-rag-json, nuggetizer-jsonl"):
        load_serve_config(tmp_path / "c.yaml")


def test_a_bank_its_task_s_nuggets_format_does_not_read_is_an_error_at_that_key(tmp_path):
    """It named the bank's file alone (`nuggets.json:1: invalid JSON`): the organiser fixed a
    file that was fine, not the key that was wrong."""
    bank = tmp_path / "hidden" / "nuggets.json"
    bank.parent.mkdir()
    bank.write_text(json.dumps({t: {"[1]": {"text": f"answer {t}", "relevance": "3"}} for t in TURNS}, indent=2))
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(bank), "nuggets_format": "nuggetizer-jsonl",
            "judge": "minilm", "formats": ["trec-rag-jsonl"]}
    with pytest.raises(InputError, match=r"tasks\[0\]\.nuggets_format: .*nuggets\.json:1: invalid JSON.*\(read as "
                                         r"nuggetizer-jsonl, the format given; it reads as cone-rag-json"):
        Service(load_serve_config(_config(tmp_path, task)))  # a start reads each task's bank


def test_a_response_task_reads_its_bank_in_the_nuggets_format_it_names_a_plug_in_s_too(tmp_path):
    """As `harness responses eval --nuggets-format` names one: a format the content would not tell."""
    from harness.responses.model import Nugget, NuggetBank
    from harness.responses.nuggets import BANKS

    def tab_separated(path: Path, vital_grade: int) -> NuggetBank:
        rows = [line.split("\t") for line in path.read_text().splitlines()]
        return NuggetBank(path.name, {turn: (Nugget("1", text, 3, True),) for turn, text in rows}, "all vital")

    bank = tmp_path / "hidden" / "nuggets.tsv"
    bank.parent.mkdir()
    bank.write_text("0_1\tthe first answer\n0_2\tthe second answer\n")
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(bank), "nuggets_format": "tsv", "judge": "minilm",
            "formats": ["trec-rag-jsonl"]}
    with BANKS.using({"tsv": tab_separated}):
        runtime = _runtime(tmp_path, task)
        assert sorted(runtime.evaluated_turns) == ["0_1", "0_2"]
        assert runtime.bank.of("0_2")[0].text == "the second answer"
        assert runtime.scored_with["nuggets_format"] == "tsv"
    del task["nuggets_format"]  # told from the content: not CONE-RAG's JSON
    with pytest.raises(InputError, match="nuggets.tsv"):
        _ = _runtime(tmp_path, task).bank


def test_an_llm_judge_s_missing_prompt_file_is_a_config_error_naming_its_key(tmp_path):
    """It was a traceback at start (the prompt hashed for `scored_with`), not a config error."""
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "judge": "llm", "formats":
                         ["trec-rag-jsonl"], "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1",
                                                     "prompt": "missing.txt"}}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"tasks\[0\]\.llm\.prompt: no such file: missing\.txt"):
        load_serve_config(tmp_path / "c.yaml")


@pytest.mark.parametrize("judge", ["file", "assignments"])
def test_a_recorded_assignments_judge_s_missing_file_is_a_config_error_naming_its_key(tmp_path, judge):
    """`assignments:PATH` as its alias `file:PATH`: checked when the config is read, not at the first upload."""
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "judge": f"{judge}:missing.jsonl",
                         "formats": ["trec-rag-jsonl"]}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"tasks\[0\]\.judge: no file missing\.jsonl"):
        load_serve_config(tmp_path / "c.yaml")


def test_a_response_task_refuses_a_harness_run_record_saying_it_takes_answers_not_the_run(run_records, tmp_path):
    """It said 'upload that run instead', which the task then refused ('this looks like a TREC run')."""
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "judge": "minilm",
            "formats": ["ikat-2024-json", "trec-rag-jsonl"]}
    verdict = _runtime(tmp_path, task).check(run_records / "ikat2023-test.raw.bm25.json", "up.json")
    assert [(m.check, m.message) for m in verdict.errors] == [(
        "format", "this is `harness run`'s record of ikat2023-test.raw.bm25.run (its provenance and scores), not "
                  "responses: this task scores what a system answers (it takes ikat-2024-json, trec-rag-jsonl), not "
                  "its ranking")]


def test_a_recorded_assignments_judge_s_file_under_no_known_user_s_home_is_a_config_error_naming_its_key(tmp_path):
    """`judge: file:~nouser/a.jsonl`: left as a shell leaves it, a missing file (was Path.expanduser's RuntimeError)."""
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__,
                         "judge": "file:~no-such-user-h5/a.jsonl", "formats": ["trec-rag-jsonl"]}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"tasks\[0\]\.judge: no file ~no-such-user-h5/a\.jsonl$"):
        load_serve_config(tmp_path / "c.yaml")


def test_a_recorded_assignments_judge_s_file_reads_a_tilde_as_the_home_folder(tmp_path, monkeypatch):
    """`judge: file:~/a.jsonl`, as `harness responses eval --judge file:~/a.jsonl` reads it."""
    (tmp_path / "a.jsonl").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path))
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "judge": "file:~/a.jsonl",
                         "formats": ["trec-rag-jsonl"]}],
              "teams": [{"name": "team0", "token_sha256": sha256_hex(team_token("team0"))}]}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert load_serve_config(tmp_path / "c.yaml").tasks["r"].judge == "file:~/a.jsonl"


def _llm_task(tmp_path: Path, prompt: str) -> dict:
    """A task judged by an llm (nothing listens at its address) with `prompt` as its prompt file."""
    (tmp_path / "prompt.txt").write_text(prompt)
    return {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"],
            "judge": "llm", "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1",
                                    "prompt": str(tmp_path / "prompt.txt")}}


@pytest.mark.parametrize("prompt, says", [
    ("Is it supported? Reply 0, 1 or 2.\n", "uses no {field}: every item would get the same prompt; the items have: "),
    ("Does {passage} support {nugget}?\n", "the prompt template uses {passage}, which the items do not carry; they "
                                           "have: "),
], ids=["no field", "a field nugget items lack"])
def test_an_llm_prompt_its_nugget_items_cannot_fill_refuses_the_start_naming_its_key(tmp_path, prompt, says):
    """Refused when a submission was scored (the prompt filled as it judged), not at start (the
    config `harness serve` reads first); said with the fields a nugget item has, before any
    request (nothing listens at the judge's address)."""
    config = _config(tmp_path, _llm_task(tmp_path, prompt))
    with pytest.raises(InputError) as error:
        load_serve_config(config)
    assert str(error.value) == (f"{config}: tasks[0].llm.prompt: {tmp_path / 'prompt.txt'}: {says}labels, nugget, "
                                "question, response, scale")


def test_an_llm_prompt_filled_by_the_nugget_items_fields_starts_the_board(tmp_path):
    service = Service(load_serve_config(_config(tmp_path, _llm_task(tmp_path, "Does {response} state {nugget}?\n"))))
    service.stop()
    assert list(service.tasks) == ["r"]


def test_an_llm_block_beside_another_judge_is_a_config_error_naming_its_key(tmp_path):
    """Only judge: llm reads llm: {model, base_url, prompt}; beside another it would look used."""
    config = {"tasks": [{"name": "r", "topics": "ikat2024", "nuggets": __file__, "judge": "minilm", "formats":
                         ["trec-rag-jsonl"], "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}], "teams": []}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"tasks\[0\]\.llm: read by judge: llm alone; this task's judge is 'minilm'"):
        load_serve_config(tmp_path / "c.yaml")


def _moved(path: Path) -> str:
    """The same bytes under another name."""
    moved = path.with_name(f"moved-{path.name}")
    moved.write_bytes(path.read_bytes())
    return str(moved)


def _other(path: Path) -> str:
    other = path.with_name(f"other-{path.name}")
    other.write_text(path.read_text() + "\n")
    return str(other)


@pytest.mark.parametrize(("judge", "edit", "reason"), [
    ("llm", lambda task, _: task.update(vital_grade=2), "vital_grade"),
    ("llm", lambda task, _: task["llm"].update(model="another-model"), "judge"),
    ("llm", lambda task, files: task["llm"].update(prompt=_other(files["prompt"])), "judge"),
    ("llm", lambda task, files: task["llm"].update(prompt=_moved(files["prompt"])), None),
    ("llm", lambda task, _: task["llm"].update(base_url="http://127.0.0.2:9/v1"), None),  # the same model elsewhere
    ("file", lambda task, files: task.update(judge=f"file:{_other(files['assignments'])}"), "judge"),
    ("file", lambda task, files: task.update(judge=f"file:{_moved(files['assignments'])}"), None),
    ("file", lambda task, files: task.update(judge=f"assignments:{files['assignments']}"), None),  # file:'s name
    ("file", lambda task, _: task.update(nuggets_format="nuggetizer-jsonl"), None),  # the content's own format
], ids=["vital_grade", "model", "prompt", "prompt-moved", "base_url", "assignments", "assignments-moved",
        "assignments-named", "nuggets_format-the-content-s"])
def test_responses_are_scored_again_when_what_scores_them_changes_not_where_it_lies(tmp_path, judge, edit, reason):
    """A start scores again responses scored otherwise (service._stale): by another vital grade,
    llm model or prompt, or other recorded assignments; not after a file moved with the same
    bytes (a `file:` judge was recorded with its path), nor for another address of the model."""
    files = {"prompt": tmp_path / "prompt.txt", "assignments": tmp_path / "assignments.jsonl"}
    files["prompt"].write_text("Does the response state the nugget? {nugget} {response}\n")
    files["assignments"].write_text(json.dumps({"qid": "0_1", "run_id": "r", "nuggets": []}) + "\n")
    llm = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "prompt": str(files["prompt"])}
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"],
            **({"judge": "llm", "llm": llm} if judge == "llm" else {"judge": f"file:{files['assignments']}"})}
    row = _scored_row(tmp_path, task)
    edit(task, files)
    assert _stale(row, _runtime(tmp_path, task)) == (f"the task's {reason} changed" if reason else None)


def test_naming_the_bank_s_own_format_or_no_longer_naming_it_scores_no_response_again(tmp_path):
    """Dropping `nuggets_format: cone-rag-json` from a CONE-RAG bank's task, and putting it back,
    each scored every response again ('the task's nuggets_format changed'), the bank read alike;
    a format the content is not told as (a plug-in's reading the same file) still does."""
    from harness.responses.nuggets import BANKS

    (tmp_path / "assignments.jsonl").write_text(json.dumps({"qid": "0_1", "run_id": "r", "nuggets": []}) + "\n")
    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"],
            "judge": f"file:{tmp_path / 'assignments.jsonl'}", "nuggets_format": "nuggetizer-jsonl"}
    named = _scored_row(tmp_path, task)
    del task["nuggets_format"]
    assert _stale(named, _runtime(tmp_path, task)) is None
    told = _scored_row(tmp_path, task)
    task["nuggets_format"] = "nuggetizer-jsonl"
    assert _stale(told, _runtime(tmp_path, task)) is None
    with BANKS.using({"same-reading": BANKS.get("nuggetizer-jsonl")}):
        task["nuggets_format"] = "same-reading"
        assert _stale(told, _runtime(tmp_path, task)) == "the task's nuggets_format changed"


def test_responses_judged_with_the_shipped_prompt_are_scored_again_when_a_newer_harness_rewords_it(tmp_path,
                                                                                                   monkeypatch):
    """An llm judge without a prompt of its own was recorded by its model alone: the shipped
    support prompt, reworded by an upgrade, changed its answers unnoticed."""
    from harness.responses import judges

    task = {"name": "r", "topics": "ikat2024", "nuggets": str(write_nuggets(tmp_path)), "formats": ["trec-rag-jsonl"],
            "judge": "llm", "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}
    row = _scored_row(tmp_path, task)
    reworded = tmp_path / "nugget_support.txt"
    reworded.write_text(judges.TEMPLATES["nuggets"].read_text(encoding="utf-8") + "\n", encoding="utf-8")
    monkeypatch.setitem(judges.TEMPLATES, "nuggets", reworded)  # the shipped prompt, as a newer harness ships it
    assert _stale(row, _runtime(tmp_path, task)) == "the task's judge changed"


def _runtime(tmp_path: Path, task: dict):
    """The runtime of a board serving `task` alone, as a start reads its config."""
    from harness.serve.responses import ResponseTaskRuntime

    return ResponseTaskRuntime(load_serve_config(_config(tmp_path, task)).tasks["r"])


def _config(tmp_path: Path, task: dict) -> Path:
    """The config of a board serving `task` alone."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "database": f"sqlite:///{tmp_path / 'board.db'}", "storage": str(tmp_path / "files"), "tasks": [task],
        "teams": [{"name": "team0", "token_sha256": sha256_hex(team_token("team0"))}]}))
    return tmp_path / "c.yaml"


def _scored_row(tmp_path: Path, task: dict):
    """A submission scored by `task` as it is now: not stale under it."""
    from harness.serve.store import Submission

    runtime = _runtime(tmp_path, task)
    row = Submission(means=dict.fromkeys(runtime.config.measures, 0.5), scored_with=runtime.scored_with)
    assert _stale(row, runtime) is None
    return row


@pytest.mark.slow
@pytest.mark.reference
def test_a_response_boards_depth_breakdown_is_the_one_harness_responses_eval_gives(tmp_path, capsys):
    """Two CONE-RAG runs, the human nuggets, labels drawn at random: the board's means by turn
    depth are `harness responses eval`'s to the last bit (both take nuggetizer's mean of a group),
    but for the deep depths of few judged turns, which the public plot pools into one point."""
    from harness.cli import main
    from harness.responses.readers import read_responses
    from tests.test_responses import cone_rag

    bank = cone_rag("human_resources", "gold_nuggets_human.json")
    nuggets = {turn: list(record) for turn, record in json.loads(bank.read_text()).items()}
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))[:2]
    files = [rag_run(tmp_path / f"{run.name}.jsonl", run.name, {t: r.text for t, r in run.responses.items()})
             for run in runs]
    draw = random.Random(17)
    assignments = tmp_path / "assignments.jsonl"
    assignments.write_text("".join(json.dumps({"qid": turn, "run_id": run.name, "nuggets": [
        {"id": nugget, "assignment": draw.choice(["support", "partial_support", "not_support"])}
        for nugget in nuggets[turn]]}) + "\n" for run in runs for turn in run.responses if nuggets.get(turn)))
    with open_board(tmp_path, bank, assignments=assignments) as (client, _):
        for team, path in enumerate(files):
            assert submit(client, path, f"team{team}").status_code == 202
        assert len(scored_board(client, 2)["rows"]) == 2
    depth = Service(load_serve_config(tmp_path / "leaderboard.yaml")).board("responses")["depth"]  # the page's plot
    assert main(["responses", "eval", *map(str, files), "--nuggets", str(bank), "--judge", f"file:{assignments}",
                 "--format", "json"]) == 0
    [expected] = [b for b in json.loads(capsys.readouterr().out)["breakdowns"]
                  if (b["name"], b["measure"]) == (depth.name, depth.measure)]
    run = {label: label.split("/", 1)[1].split(" (")[0] for label in depth.means}  # team/run (id): run
    by_depth = {group["group"]: group for group in expected["groups"]}
    alone = [g for g in depth.groups if g.first == g.last]
    assert [{"group": g.first, "queries": depth.counts[g], **{run[label]: means[g] for label, means in
                                                             depth.means.items()}} for g in alone] == \
        [by_depth[g.first] for g in alone]
    assert all(depth.counts[g] == sum(by_depth[d]["queries"] for d in range(g.first, g.last + 1) if d in by_depth)
               for g in depth.groups if g.first != g.last)
    assert depth.measure == "all" and alone and len(depth.groups) > len(alone) and depth.unassigned == expected["unassigned"] == 0


def test_a_refusal_at_scoring_names_the_line_and_turn_it_has_and_no_other():
    """An iKAT JSON response has a turn and no line: 'turn 12_1', not 'line None, turn 12_1'."""
    from harness.serve.tasks import Message, Refused

    def said(line, turn):
        return str(Refused([Message("error", "assignments", "differs", "f.json", line, turn)]))

    assert said(None, "12_1") == "[assignments] turn 12_1: differs"
    assert said(3, "12_1") == "[assignments] line 3, turn 12_1: differs"
    assert said(None, None) == "[assignments] differs"
