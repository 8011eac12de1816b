"""Arena ratings from pairwise votes: online Elo, Bradley-Terry, win rates, satisfaction.

Conventions, by default those of the CRSArena-Dial analysis (iai-group/crsarena-dial,
DataAnalysis.md): every system starts at 1000, K = 16, base 10, scale 400, votes are
applied in file order (several files one after the other: the "global" ranking is the
open votes followed by the closed ones), and a tie scores 1/2 for each side.

Bradley-Terry: P(i beats j) = 1 / (1 + exp(b_j - b_i)), fitted by maximum likelihood over
all votes at once (order-free), a tie counting as half a win for each side (or dropped,
`ties="drop"`). A small ridge penalty (`l2`, on the log-strengths) keeps a system that
never won finite; `l2=0` is plain maximum likelihood. Strengths are reported on the Elo
scale (mean 1000, 400 points = a factor 10 in odds), and their confidence intervals are
percentiles of a bootstrap over votes (fixed seed).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import HarnessError, InputError, counted, open_input
from harness.topics.crsarena import ArenaConversation

VOTE_COLUMNS = ("session_id", "user_id", "crs1", "crs2", "vote")
TIE = "tie"


@dataclass(frozen=True)
class Vote:
    first: str
    second: str
    winner: str | None  # None: a tie
    session_id: str = ""
    user_id: str = ""
    where: str = field(default="", compare=False)  # 'file:line' it was read from, for messages

    def key(self) -> tuple[str, ...] | None:
        """What makes a vote this one and no other (session, user, systems and vote), or None
        where no session or user is recorded: then two equal rows may be two people's votes."""
        if not self.session_id and not self.user_id:
            return None
        return self.session_id, self.user_id, self.first, self.second, self.winner or TIE

    def score(self, tie_score: float = 0.5) -> float:
        """The first system's score: 1 win, 0 loss, `tie_score` tie."""
        if self.winner is None:
            return tie_score
        return 1.0 if self.winner == self.first else 0.0


def read_votes(path: str | Path) -> list[Vote]:
    """A CRSArena vote file (CSV with a header naming at least VOTE_COLUMNS), in file order."""
    path = Path(path)
    votes = []
    with open_input(path, newline="") as handle:
        reader = csv.DictReader(handle)
        start = 1
        try:  # csv.Error: a field past the csv module's size limit (an unclosed quote runs on to the end)
            missing = [c for c in VOTE_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(path, f"header lacks column(s) {', '.join(missing)}; expected "
                                       f"{','.join(VOTE_COLUMNS)}", line=1)
            start = reader.line_num + 1
            for row in reader:
                if None in row or any(row[c] is None for c in VOTE_COLUMNS):
                    raise InputError(path, f"expected {len(reader.fieldnames)} comma-separated fields", line=start)
                if [row[c] for c in reader.fieldnames] == reader.fieldnames:  # files pasted together
                    raise InputError(path, "the header again: were two vote files pasted together? give each "
                                           "as its own --votes file", line=start)
                first, second, vote = row["crs1"].strip(), row["crs2"].strip(), row["vote"].strip()
                if not first or not second or first == second:
                    raise InputError(path, f"expected two different systems, found {first!r} and {second!r}",
                                     line=start)
                if vote not in (first, second, TIE):
                    raise InputError(path, f"vote {vote!r} is neither {first!r}, {second!r} nor {TIE!r}", line=start)
                votes.append(Vote(first, second, None if vote == TIE else vote, row["session_id"], row["user_id"],
                                  f"{path}:{start}"))
                start = reader.line_num + 1
        except csv.Error as error:
            raise InputError(path, f"not CSV ({error}): is a quote (\") left unclosed?", line=start) from None
    if not votes:
        raise InputError(path, "no votes: only a header")
    return votes


def repeated_votes(votes: Iterable[Vote]) -> list[tuple[Vote, Vote]]:
    """(vote, the earlier one it repeats) for each vote whose Vote.key an earlier vote has: the
    rows of a file given twice (under two names) or pasted twice, which count the votes again."""
    first: dict[tuple[str, ...], Vote] = {}
    repeats = []
    for vote in votes:
        if (key := vote.key()) is not None:
            if key in first:
                repeats.append((vote, first[key]))
            else:
                first[key] = vote
    return repeats


def systems_of(votes: Iterable[Vote]) -> list[str]:
    return sorted({s for v in votes for s in (v.first, v.second)})


def name_warnings(votes: Sequence[Vote], conversations: Sequence[ArenaConversation]) -> list[str]:
    """What the ratings do not show of the systems' names: two spelled alike but for case (one
    file's `KBRD_redial`, another's `kbrd_redial`), each rated on its share of the votes, and, given
    dialogues, voted systems without any, whose satisfaction is blank and which the correlation
    leaves out. Said, not mended: names are compared exactly, as run ids are."""
    voted, with_dialogues = systems_of(votes), {c.system for c in conversations}
    spellings: dict[str, set[str]] = {}
    for system in {*voted, *with_dialogues}:
        spellings.setdefault(system.casefold(), set()).add(system)
    warnings = []
    if pairs := sorted(" / ".join(sorted(names)) for names in spellings.values() if len(names) > 1):
        warnings.append(f"systems that differ only in case: {', '.join(pairs)}: names are compared exactly, so "
                        "they are rated as different systems")
    if with_dialogues and (without := [s for s in voted if s not in with_dialogues]):
        warnings.append(f"no dialogues in --dialogues for: {', '.join(without)}; "
                        f"{'its' if len(without) == 1 else 'their'} satisfaction is blank and the correlation uses "
                        f"{len(voted) - len(without)} of {counted(len(voted), 'system')}")
    return warnings


@dataclass(frozen=True)
class EloSettings:
    initial: float = 1000.0
    k: float = 16.0
    base: float = 10.0
    scale: float = 400.0
    tie_score: float = 0.5


def elo(votes: Sequence[Vote], settings: EloSettings = EloSettings()) -> dict[str, float]:
    """Online Elo: both expectations from the ratings before the vote, then both updated."""
    ratings: dict[str, float] = {}
    for vote in votes:
        ra = ratings.setdefault(vote.first, settings.initial)
        rb = ratings.setdefault(vote.second, settings.initial)
        try:
            expected_a = 1 / (1 + settings.base ** ((rb - ra) / settings.scale))
        except OverflowError:  # base ** x past the largest float (a huge K): the expectation is 0 to any precision
            expected_a = 0.0
        score_a = vote.score(settings.tie_score)
        ratings[vote.first] = ra + settings.k * (score_a - expected_a)
        ratings[vote.second] = rb + settings.k * ((1 - score_a) - (1 - expected_a))
    return ratings


TIE_CONVENTIONS = {"half": 0.5, "drop": None}
BT_L2 = 0.01  # ridge on the log-strengths: finite ratings for a system that never won


def _bt_counts(votes: Sequence[Vote], index: dict[str, int], ties: str) -> np.ndarray:
    """wins[i, j]: (fractional) wins of system i over system j."""
    if ties not in TIE_CONVENTIONS:
        raise HarnessError(f"unknown tie convention {ties!r}; known: {', '.join(TIE_CONVENTIONS)}")
    tie_score = TIE_CONVENTIONS[ties]
    wins = np.zeros((len(index), len(index)))
    for vote in votes:
        if vote.winner is None and tie_score is None:
            continue
        a, b = index[vote.first], index[vote.second]
        score = vote.score(tie_score or 0.0)
        wins[a, b] += score
        wins[b, a] += 1 - score
    return wins


def _bt_fit(wins: np.ndarray, l2: float) -> np.ndarray:
    """Log-strengths (mean 0) maximising the penalised Bradley-Terry likelihood.

    The objective is convex with an analytic Hessian, so a trust-region Newton method
    converges in a few steps (quasi-Newton L-BFGS-B is ~10x slower here).
    """
    n = len(wins)
    games = wins + wins.T

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        diff = beta[:, None] - beta[None, :]
        # -log P(i beats j) = log(1 + exp(b_j - b_i)), computed stably
        nll = float(np.sum(wins * np.logaddexp(0.0, -diff))) + 0.5 * l2 * float(beta @ beta)
        p = 1 / (1 + np.exp(-diff))  # P(i beats j)
        return nll, -(wins - games * p).sum(axis=1) + l2 * beta

    def hessian(beta: np.ndarray) -> np.ndarray:
        p = 1 / (1 + np.exp(-(beta[:, None] - beta[None, :])))
        weight = games * p * (1 - p)
        return np.diag(weight.sum(axis=1) + l2) - weight

    from scipy import optimize  # here, not at import: scipy takes seconds, a --help none

    result = optimize.minimize(objective, np.zeros(n), jac=True, hess=hessian, method="trust-exact",
                               options={"gtol": 1e-9})
    if not np.all(np.isfinite(result.x)):
        raise HarnessError(f"Bradley-Terry fit did not converge: {result.message}")
    return result.x - result.x.mean()


def bradley_terry(
    votes: Sequence[Vote],
    *,
    ties: str = "half",
    l2: float = BT_L2,
    settings: EloSettings = EloSettings(),
    systems: Sequence[str] | None = None,
) -> dict[str, float]:
    """Bradley-Terry strengths on the Elo scale: initial + scale * log_base(odds vs average)."""
    systems = list(systems) if systems is not None else systems_of(votes)
    index = {s: i for i, s in enumerate(systems)}
    beta = _bt_fit(_bt_counts(votes, index, ties), l2)
    to_elo = settings.scale / math.log(settings.base)
    return {s: float(settings.initial + to_elo * beta[index[s]]) for s in systems}


def bootstrap_bt(
    votes: Sequence[Vote],
    *,
    resamples: int = 1000,
    seed: int = 42,
    confidence: float = 0.95,
    ties: str = "half",
    l2: float = BT_L2,
    settings: EloSettings = EloSettings(),
) -> dict[str, tuple[float, float]]:
    """Percentile intervals of BT ratings over `resamples` resamplings of the votes."""
    systems = systems_of(votes)
    index = {s: i for i, s in enumerate(systems)}
    rng = np.random.default_rng(seed)
    to_elo = settings.scale / math.log(settings.base)
    samples = np.empty((resamples, len(systems)))
    for r in range(resamples):
        drawn = [votes[i] for i in rng.integers(0, len(votes), size=len(votes))]
        samples[r] = settings.initial + to_elo * _bt_fit(_bt_counts(drawn, index, ties), l2)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail], axis=0)
    return {s: (float(low[i]), float(high[i])) for s, i in index.items()}


@dataclass(frozen=True)
class WinRates:
    systems: list[str]
    games: dict[tuple[str, str], int]  # votes of the pair (ties included), stored both ways: a rate's weight
    rate: dict[tuple[str, str], float]  # (a, b): a's wins over b + half its ties, per game


def win_rates(votes: Sequence[Vote]) -> WinRates:
    systems = systems_of(votes)
    index = {s: i for i, s in enumerate(systems)}
    wins = _bt_counts(votes, index, "half")
    games = wins + wins.T
    return WinRates(
        systems,
        {(a, b): int(round(games[index[a], index[b]])) for a in systems for b in systems if games[index[a], index[b]]},
        {(a, b): float(wins[index[a], index[b]] / games[index[a], index[b]])
         for a in systems for b in systems if games[index[a], index[b]]},
    )


def satisfaction(conversations: Iterable[ArenaConversation], satisfied: str = "satisfied") -> dict[str, float]:
    """Share of each system's dialogues whose user reported being satisfied."""
    counts: dict[str, list[int]] = {}
    for conversation in conversations:
        tally = counts.setdefault(conversation.system, [0, 0])
        tally[0] += conversation.sentiment == satisfied
        tally[1] += 1
    return {system: good / total for system, (good, total) in sorted(counts.items())}


@dataclass(frozen=True)
class Correlation:
    rating: str
    systems: int
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float


def correlation(rating_name: str, ratings: dict[str, float], other: dict[str, float]) -> Correlation:
    shared = sorted(set(ratings) & set(other))
    if len(shared) < 3:
        raise HarnessError(f"correlating {rating_name} needs at least 3 systems in common, found {len(shared)}")
    x, y = [ratings[s] for s in shared], [other[s] for s in shared]
    from scipy import stats as scipy_stats

    rho = scipy_stats.spearmanr(x, y)
    tau = scipy_stats.kendalltau(x, y)
    return Correlation(rating_name, len(shared), float(rho.statistic), float(rho.pvalue),
                       float(tau.statistic), float(tau.pvalue))


@dataclass(frozen=True)
class SystemRating:
    system: str
    elo: float
    bt: float
    ci_low: float
    ci_high: float
    votes: int
    satisfaction: float | None = None


@dataclass
class Arena:
    """Everything `harness arena` reports, systems ranked by Elo (the CRSArena convention)."""

    ratings: list[SystemRating]
    win_rates: WinRates
    settings: EloSettings
    ties: str
    l2: float
    resamples: int
    seed: int
    votes: int  # all the votes, ties included
    tie_votes: int
    sources: list[str] = field(default_factory=list)
    correlations: list[Correlation] = field(default_factory=list)

    def legend(self) -> str:
        """How each number was counted; under ties="drop" the votes column (ties included) is not
        what Bradley-Terry used, so the footer says both."""
        ties = counted(self.tie_votes, "tie")
        used = (f"; Bradley-Terry used the {self.votes - self.tie_votes} decisive votes of {self.votes} ({ties} "
                "dropped)" if self.ties == "drop" else f" ({self.votes} votes, {ties}), as Bradley-Terry counted them")
        return (
            f"Elo: online, initial {self.settings.initial:g}, K {self.settings.k:g}, votes in the order of "
            f"{' then '.join(self.sources) or 'the input'}, tie = half a win. Bradley-Terry: maximum "
            f"likelihood (ties {'as half wins' if self.ties == 'half' else 'dropped'}, ridge {self.l2:g} on "
            "log-strengths), Elo scale, "
            f"95% percentile intervals from {self.resamples} bootstrap resamples of the votes (seed {self.seed}). "
            f"votes: every vote a system is in, ties included{used}. Win rate: the row system's wins over the "
            "column system, a tie half a win, per vote of the pair (their number in brackets)."
        )


def arena(
    votes: Sequence[Vote],
    *,
    conversations: Iterable[ArenaConversation] = (),
    settings: EloSettings = EloSettings(),
    ties: str = "half",
    l2: float = BT_L2,
    resamples: int = 1000,
    seed: int = 42,
    sources: Sequence[str] = (),
) -> Arena:
    elo_ratings = elo(votes, settings)
    bt = bradley_terry(votes, ties=ties, l2=l2, settings=settings)
    intervals = bootstrap_bt(votes, resamples=resamples, seed=seed, ties=ties, l2=l2, settings=settings)
    counts = {s: sum(s in (v.first, v.second) for v in votes) for s in bt}
    satisfied = satisfaction(conversations)
    ranked = sorted(bt, key=lambda s: (-elo_ratings[s], -bt[s], s))
    ratings = [
        SystemRating(s, elo_ratings[s], bt[s], *intervals[s], counts[s], satisfied.get(s)) for s in ranked
    ]
    correlations = (
        [correlation("Elo", elo_ratings, satisfied), correlation("Bradley-Terry", bt, satisfied)]
        if satisfied else []
    )
    return Arena(ratings, win_rates(votes), settings, ties, l2, resamples, seed, len(votes),
                 sum(v.winner is None for v in votes), list(sources), correlations)
