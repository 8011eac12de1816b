"""`harness arena` on the CRSArena-Dial votes: Elo (as the dataset's own analysis computes it),
Bradley-Terry with bootstrap intervals, win rates, satisfaction and its correlation."""

from __future__ import annotations

import csv
import io
import json
import math
import random

import pytest
from scipy import stats as scipy_stats

from harness.cli import main
from harness.errors import InputError
from harness.paths import data_root
from harness.report import arena as arena_lib
from harness.topics import load
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

VOTES = data_root() / "crsarena"
OPEN, CLOSED = VOTES / "votes_open.csv", VOTES / "votes_closed.csv"

# The CRSArena-Dial analysis (iai-group/crsarena-dial, DataAnalysis.md: initial 1000, K 16,
# votes in file order, "global" = open then closed), rounded as published.
PUBLISHED_ELO = {
    "open": {"chatgpt_opendialkg": 1056, "barcor_redial": 1052, "chatgpt_redial": 1036, "kbrd_redial": 1027,
             "unicrs_redial": 991, "unicrs_opendialkg": 974, "barcor_opendialkg": 968, "kbrd_opendialkg": 966,
             "crbcrs_redial": 930},
    "closed": {"chatgpt_redial": 1085, "chatgpt_opendialkg": 1066, "barcor_redial": 1044,
               "barcor_opendialkg": 1008, "kbrd_redial": 985, "crbcrs_redial": 964, "unicrs_opendialkg": 953,
               "unicrs_redial": 952, "kbrd_opendialkg": 942},
    "global": {"chatgpt_opendialkg": 1102, "chatgpt_redial": 1102, "barcor_redial": 1077, "kbrd_redial": 994,
               "barcor_opendialkg": 988, "unicrs_redial": 950, "unicrs_opendialkg": 937, "crbcrs_redial": 930,
               "kbrd_opendialkg": 920},
}


@pytest.fixture(scope="module")
def votes():
    open_votes, closed_votes = arena_lib.read_votes(OPEN), arena_lib.read_votes(CLOSED)
    return {"open": open_votes, "closed": closed_votes, "global": open_votes + closed_votes}


def test_vote_files_hold_81_open_and_104_closed_votes(votes):
    assert (len(votes["open"]), len(votes["closed"])) == (81, 104)
    assert len(arena_lib.systems_of(votes["global"])) == 9


def test_elo_matches_a_hand_computation_on_the_first_votes(votes):
    # open votes 1-3: kbrd_redial vs kbrd_opendialkg: tie, kbrd_redial, kbrd_redial.
    # 1: both 1000, expected 1/2, score 1/2: no change.
    # 2: expected 1/2, win: 1000 + 16 * 1/2 = 1008, loser 992.
    # 3: expected 1 / (1 + 10^(-16/400)) = 0.5230097, win: 1008 + 16 * 0.4769903 = 1015.63184
    first = votes["open"][:3]
    assert [(v.first, v.second, v.winner) for v in first] == [
        ("kbrd_redial", "kbrd_opendialkg", None),
        ("kbrd_redial", "kbrd_opendialkg", "kbrd_redial"),
        ("kbrd_redial", "kbrd_opendialkg", "kbrd_redial"),
    ]
    assert arena_lib.elo(first[:2]) == {"kbrd_redial": 1008.0, "kbrd_opendialkg": 992.0}
    ratings = arena_lib.elo(first)
    assert ratings["kbrd_redial"] == pytest.approx(1015.63184, abs=1e-4)
    assert ratings["kbrd_opendialkg"] == pytest.approx(984.36816, abs=1e-4)


@pytest.mark.parametrize("setting", ["open", "closed", "global"])
def test_elo_reproduces_the_published_crsarena_ratings(votes, setting):
    assert {s: round(r) for s, r in arena_lib.elo(votes[setting]).items()} == PUBLISHED_ELO[setting]


def test_elo_settings_are_configurable(votes):
    k32 = arena_lib.elo(votes["open"][:2], arena_lib.EloSettings(initial=1500, k=32))
    assert k32 == {"kbrd_redial": 1516.0, "kbrd_opendialkg": 1484.0}


@pytest.mark.parametrize("setting", ["open", "closed", "global"])
def test_bradley_terry_ranks_broadly_as_elo_does(votes, setting):
    bt = arena_lib.bradley_terry(votes[setting])
    elo = arena_lib.elo(votes[setting])
    systems = sorted(bt)
    assert sum(bt.values()) / len(bt) == pytest.approx(1000)  # centred on the initial rating
    assert scipy_stats.spearmanr([bt[s] for s in systems], [elo[s] for s in systems]).statistic > 0.6
    top_two = sorted(bt, key=bt.get, reverse=True)[:2]
    assert set(top_two) <= {"chatgpt_redial", "chatgpt_opendialkg", "barcor_redial"}


def test_bradley_terry_ignores_vote_order_unlike_elo(votes):
    shuffled = list(votes["global"])
    random.Random(0).shuffle(shuffled)
    assert arena_lib.bradley_terry(shuffled) == pytest.approx(arena_lib.bradley_terry(votes["global"]), abs=1e-4)
    assert arena_lib.elo(shuffled) != pytest.approx(arena_lib.elo(votes["global"]), abs=1)


def test_bradley_terry_is_the_likelihood_maximum(votes):
    # with l2 = 0 and ties dropped, each system's expected wins equal its observed wins
    closed = [v for v in votes["global"] if v.winner is not None]
    bt = arena_lib.bradley_terry(votes["global"], ties="drop", l2=0.0)
    for system in ("chatgpt_redial", "barcor_redial", "crbcrs_redial"):
        mine = [v for v in closed if system in (v.first, v.second)]
        other = [v.second if v.first == system else v.first for v in mine]
        expected = sum(1 / (1 + 10 ** ((bt[o] - bt[system]) / 400)) for o in other)
        assert expected == pytest.approx(sum(v.winner == system for v in mine), abs=1e-3)


def test_bootstrap_intervals_are_seeded_and_ordered(votes):
    a = arena_lib.bootstrap_bt(votes["closed"], resamples=100, seed=5)
    assert a == arena_lib.bootstrap_bt(votes["closed"], resamples=100, seed=5)
    assert all(low < high for low, high in a.values())


def test_win_rates_are_complementary(votes):
    rates = arena_lib.win_rates(votes["global"])
    for (a, b), rate in rates.rate.items():
        assert rate + rates.rate[b, a] == pytest.approx(1.0)
    assert rates.games["kbrd_redial", "kbrd_opendialkg"] == rates.games["kbrd_opendialkg", "kbrd_redial"]


def test_satisfaction_correlates_with_elo_as_published():
    # CRSArena-Dial analysis: combined satisfaction vs global Elo, Spearman 0.917
    satisfied = arena_lib.satisfaction(load("crsarena").conversations)
    assert satisfied["chatgpt_redial"] == pytest.approx(24 / 53)
    assert satisfied["kbrd_opendialkg"] == pytest.approx(1 / 59)
    elo = arena_lib.elo(arena_lib.read_votes(OPEN) + arena_lib.read_votes(CLOSED))
    correlation = arena_lib.correlation("Elo", elo, satisfied)
    assert round(correlation.spearman, 3) == 0.917
    assert 0 < correlation.kendall < 1 and correlation.spearman_p < 0.01


def test_malformed_vote_names_file_and_line(tmp_path):
    bad = tmp_path / "votes.csv"
    bad.write_text('session_id,user_id,crs1,crs2,vote,feedback\n1,u,a,b,a,"two\nlines"\n2,u,a,b,c,\n')
    with pytest.raises(InputError, match=r"votes.csv:4: vote 'c' is neither 'a', 'b' nor 'tie'"):
        arena_lib.read_votes(bad)


def test_an_unclosed_quote_running_past_the_csv_field_limit_names_file_and_line(tmp_path, capsys):
    """The csv module's own error (a field over 131072 characters) is one line, not a traceback."""
    bad = tmp_path / "votes.csv"
    bad.write_text('session_id,user_id,crs1,crs2,vote,feedback\n1,u,a,b,a,ok\n2,u,a,b,a,"no end\n'
                   + "more feedback\n" * 10_000)
    assert main(["arena", "--votes", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harness arena: error: {bad}:3: not CSV (field larger than field limit")
    assert "Traceback" not in err


def test_a_dialogue_file_holding_no_dialogue_is_an_error_naming_it(tmp_path, capsys):
    """`[]` added nothing to the ratings, without a word."""
    empty = tmp_path / "dialogues_open.json"
    empty.write_text("[]\n")
    assert main(["arena", "--votes", str(OPEN), "--dialogues", str(empty), "--bootstrap", "10"]) == 2
    assert capsys.readouterr().err == (f"harness arena: error: {empty}: expected a JSON list of dialogues, found an "
                                       "empty list\n")


def test_vote_file_without_vote_column_is_rejected(tmp_path):
    bad = tmp_path / "votes.csv"
    bad.write_text("session_id,user_id,crs1,crs2\n1,u,a,b\n")
    with pytest.raises(InputError, match=r"votes.csv:1: header lacks column\(s\) vote"):
        arena_lib.read_votes(bad)


def test_cli_json_processes_vote_files_in_the_order_given(capsys):
    assert main(["arena", "--votes", str(OPEN), "--votes", str(CLOSED), "--format", "json",
                 "--bootstrap", "50", "--seed", "1"]) == 0
    systems = json.loads(capsys.readouterr().out)
    assert round(systems["kbrd_opendialkg"]["elo"]) == 920  # global = open then closed
    assert set(systems["chatgpt_redial"]) == {"elo", "bt", "ci_low", "ci_high", "votes"}
    assert sum(s["votes"] for s in systems.values()) == 2 * 185
    main(["arena", "--votes", str(CLOSED), "--votes", str(OPEN), "--format", "json", "--bootstrap", "50"])
    reversed_order = json.loads(capsys.readouterr().out)
    assert {s: round(r["elo"]) for s, r in reversed_order.items()} != PUBLISHED_ELO["global"]


def test_cli_table_ranks_systems_and_reports_satisfaction(capsys):
    main(["arena", "--votes", str(OPEN), "--votes", str(CLOSED), "--bootstrap", "50",
          "--dialogues", str(VOTES / "crs_arena_dial_open.json"), "--dialogues", str(VOTES / "crs_arena_dial_closed.json")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["rank", "system", "Elo"]
    assert lines[1].split()[:3] == ["1", "chatgpt_redial", "1102"]
    assert any(line.split()[:3] == ["Elo", "9", "0.917"] for line in lines)


def test_several_files_may_follow_one_option_as_when_it_is_repeated(capsys):
    dialogues = [str(VOTES / "crs_arena_dial_open.json"), str(VOTES / "crs_arena_dial_closed.json")]
    common = ["--format", "json", "--bootstrap", "20"]
    assert main(["arena", "--votes", str(OPEN), str(CLOSED), "--dialogues", *dialogues, *common]) == 0
    together = capsys.readouterr().out
    assert main(["arena", "--votes", str(OPEN), "--votes", str(CLOSED),
                 "--dialogues", dialogues[0], "--dialogues", dialogues[1], *common]) == 0
    assert together == capsys.readouterr().out


def test_cli_csv_has_the_json_ratings_one_row_per_system_ranked(capsys):
    common = ["arena", "--votes", str(OPEN), "--bootstrap", "20",
              "--dialogues", str(VOTES / "crs_arena_dial_open.json")]
    assert main([*common, "--format", "json"]) == 0
    systems = json.loads(capsys.readouterr().out)
    assert main([*common, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["system"] for row in rows] == list(systems)
    assert [row["rank"] for row in rows] == [str(rank) for rank in range(1, len(systems) + 1)]
    values = {row["system"]: {c: float(v) for c, v in row.items() if c not in ("rank", "system")} for row in rows}
    assert values == systems


def test_cli_writes_what_the_output_suffix_names(tmp_path, capsys):
    assert main(["arena", "--votes", str(OPEN), "--bootstrap", "20", "--output", str(tmp_path / "ratings.csv")]) == 0
    assert (tmp_path / "ratings.csv").read_text().startswith("rank,system,elo,bt,ci_low,ci_high,votes\n")
    assert main(["arena", "--votes", str(OPEN), "--bootstrap", "20", "--output", str(tmp_path / "ratings.txt")]) == 0
    assert (tmp_path / "ratings.txt").read_text().split()[:3] == ["rank", "system", "Elo"]
    assert main(["arena", "--votes", str(OPEN), "--output", str(tmp_path / "ratings.pdf")]) == 2
    assert ".pdf names no format this command writes" in capsys.readouterr().err
    assert not (tmp_path / "ratings.pdf").exists()


@pytest.mark.parametrize("command", [["arena", "--votes"], ["compare", "--qrels", str(CAST2021_QRELS),
                                                             str(CAST2021_DOC_RUNS[0]), "--arena-votes"]])
def test_a_vote_file_given_twice_is_refused_as_a_run_given_twice(tmp_path, capsys, command):
    """`--votes v.csv v.csv` counted every vote twice: other ratings and a narrower interval, rc 0."""
    assert main([*command, str(OPEN), str(VOTES / ".." / "crsarena" / OPEN.name)]) == 2
    assert capsys.readouterr().err.endswith(f"error: {VOTES / '..' / 'crsarena' / OPEN.name} is given twice\n")


def test_votes_repeated_by_a_copy_or_pasted_rows_are_warned_of_and_counted(tmp_path, capsys):
    """A copy of a vote file, or its rows pasted again, repeat (session_id, user_id, crs1, crs2, vote), which
    no two of the shipped 185 votes share: said once, naming the first repeat and the row it repeats."""
    copy = tmp_path / "copy.csv"
    copy.write_bytes(OPEN.read_bytes())
    assert main(["arena", "--votes", str(OPEN), str(copy), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"warning: 81 votes repeat an earlier vote's session_id, user_id, systems and vote (the first: "
                   f"{copy}:2, as {OPEN}:2), and are counted again: is a file given under two names, or are rows "
                   "pasted twice?\n")
    assert sum(s["votes"] for s in json.loads(out).values()) == 2 * 2 * 81
    lines = OPEN.read_text().splitlines(keepends=True)
    pasted = tmp_path / "pasted.csv"
    pasted.write_text("".join(lines + lines[1:4]))
    assert main(["arena", "--votes", str(pasted), str(CLOSED), "--format", "json"]) == 0
    assert capsys.readouterr().err.startswith(f"warning: 3 votes repeat an earlier vote's session_id, user_id, "
                                              f"systems and vote (the first: {pasted}:83, as {pasted}:2)")


def test_a_vote_file_pasted_with_its_header_again_names_the_line_and_the_likely_cause(tmp_path, capsys):
    lines = OPEN.read_text().splitlines(keepends=True)
    pasted = tmp_path / "dup.csv"
    pasted.write_text("".join(lines + lines))
    assert main(["arena", "--votes", str(pasted)]) == 2
    assert capsys.readouterr().err == (f"harness arena: error: {pasted}:{len(lines) + 1}: the header again: were two "
                                       "vote files pasted together? give each as its own --votes file\n")


def test_equal_rows_without_session_or_user_are_not_repeats():
    """With no session_id or user_id recorded, two equal rows may be two people's votes."""
    votes = [arena_lib.Vote("a", "b", "a"), arena_lib.Vote("a", "b", "a")]
    assert arena_lib.repeated_votes(votes) == []
    assert arena_lib.repeated_votes([arena_lib.Vote("a", "b", "a", "s", "u")] * 2) != []


def test_a_k_factor_beyond_the_elo_scale_is_a_usage_error_and_elo_itself_does_not_overflow(capsys):
    """`--k 100000` ended in an OverflowError traceback (10 ** (rating gap / 400) past the largest float)."""
    with pytest.raises(SystemExit):
        main(["arena", "--votes", str(OPEN), "--k", "100000"])
    assert capsys.readouterr().err.startswith(
        "harness arena: error: argument --k: must be a number above 0 and at most 400, not '100000'")
    ratings = arena_lib.elo(arena_lib.read_votes(OPEN), arena_lib.EloSettings(k=100_000))
    assert all(math.isfinite(r) for r in ratings.values())


def test_too_few_bootstrap_resamples_are_warned_of(capsys):
    """`--bootstrap 1` printed a zero-width '95% CI' away from the Bradley-Terry rating, without a word."""
    assert main(["arena", "--votes", str(OPEN), "--bootstrap", "1", "--format", "csv"]) == 0
    assert capsys.readouterr().err == (
        "warning: 1 bootstrap resample: a 95% percentile interval wants 1000 or more (Efron & Tibshirani 1993); "
        "from fewer than 40 its 2.5% tails hold no resample, and it may not even hold the rating\n")
    assert main(["arena", "--votes", str(OPEN), "--format", "csv"]) == 0
    assert capsys.readouterr().err == ""


DIALOGUES = [str(VOTES / "crs_arena_dial_open.json"), str(VOTES / "crs_arena_dial_closed.json")]


def test_systems_whose_names_differ_only_in_case_are_warned_of_and_rated_apart(tmp_path, capsys):
    """One file's `KBRD_redial` for the other's `kbrd_redial` made a tenth system, each rated on its
    share of the 40 votes, without a word: said, naming the pair, and not merged."""
    closed = tmp_path / "votes_closed.csv"
    closed.write_text(CLOSED.read_text().replace("kbrd_redial", "KBRD_redial"))
    assert main(["arena", "--votes", str(OPEN), str(closed), "--format", "json", "--bootstrap", "20"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[:-1] == ["warning: systems that differ only in case: KBRD_redial / kbrd_redial: names are "
                                     "compared exactly, so they are rated as different systems"]  # then --bootstrap's
    systems = json.loads(out)
    assert (systems["kbrd_redial"]["votes"], systems["KBRD_redial"]["votes"]) == (13, 27)


def test_a_blank_satisfaction_leaves_its_column_right_aligned_as_numbers_are(tmp_path, capsys):
    """A system without dialogues has a blank cell: the others' rates stay aligned to the right."""
    mine = tmp_path / "votes_mine.csv"
    mine.write_text("session_id,user_id,crs1,crs2,vote\ns1,u1,mycrs,chatgpt_redial,mycrs\n")
    assert main(["arena", "--votes", str(OPEN), str(CLOSED), str(mine), "--dialogues", *DIALOGUES, "--bootstrap", "20",
                 "--format", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ratings = {line.split()[1]: line for line in lines[1:lines.index("")]}
    assert ratings["chatgpt_redial"].endswith("  45.3%")  # right-aligned under "satisfied", no trailing blanks
    assert len(ratings["chatgpt_redial"]) == len(ratings["mycrs"]) == len(lines[0])


def test_voted_systems_without_dialogues_are_named_with_the_systems_the_correlation_uses(tmp_path, capsys):
    """A voted system no --dialogues file holds had a blank satisfaction and left the correlation,
    which then used 9 of 10 systems, without a word."""
    mine = tmp_path / "votes_mine.csv"
    mine.write_text("session_id,user_id,crs1,crs2,vote\ns1,u1,mycrs,chatgpt_redial,mycrs\n")
    common = ["arena", "--votes", str(OPEN), str(CLOSED), str(mine), "--bootstrap", "20"]
    assert main([*common, "--dialogues", *DIALOGUES]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[:-1] == ["warning: no dialogues in --dialogues for: mycrs; its satisfaction is blank and "
                                     "the correlation uses 9 of 10 systems"]  # then --bootstrap's
    assert any(line.split()[:2] == ["Elo", "9"] for line in out.splitlines())
    assert main(common) == 0
    assert len(capsys.readouterr().err.splitlines()) == 1  # no dialogues given, no satisfaction: --bootstrap's alone


def test_each_win_rate_shows_the_votes_of_its_pair(capsys):
    """A 1.00 from one vote read as a 1.00 from fifteen: each cell has the pair's votes beside it
    (ties included, each half a win); the machine formats keep the numbers apart."""
    common = ["arena", "--votes", str(OPEN), str(CLOSED), "--bootstrap", "20"]
    assert main([*common, "--format", "md"]) == 0
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 chatgpt_redial")
            or line.startswith("| 4 kbrd_redial")}
    assert rows["1 chatgpt_redial"][2] == "1.00 (1)"  # one vote over barcor_redial
    assert rows["4 kbrd_redial"][6] == "0.50 (2)"  # two ties with unicrs_opendialkg
    rates = arena_lib.win_rates(votes=arena_lib.read_votes(OPEN) + arena_lib.read_votes(CLOSED))
    assert sum(rates.games.values()) == 2 * 185


@pytest.mark.parametrize("ties, says", [
    ("half", "votes: every vote a system is in, ties included (185 votes, 72 ties), as Bradley-Terry counted them."),
    ("drop", "votes: every vote a system is in, ties included; Bradley-Terry used the 113 decisive votes of 185 "
             "(72 ties dropped)."),
])
def test_the_footer_says_which_votes_the_votes_column_and_bradley_terry_count(capsys, ties, says):
    """Under --ties drop the votes column kept the ties (46 for chatgpt_redial) while Bradley-Terry
    used fewer, and nothing said which count was shown."""
    assert main(["arena", "--votes", str(OPEN), str(CLOSED), "--bootstrap", "20", "--ties", ties]) == 0
    out = capsys.readouterr().out
    assert says in out
    assert out.splitlines()[1].split()[:2] == ["1", "chatgpt_redial"] and out.splitlines()[1].split()[-1] == "46"
