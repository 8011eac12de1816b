"""Paired significance tests, multiple-testing corrections, effect sizes and intervals.

Conventions (stated once here; the report legend repeats them):

- Every test is two-sided on the per-query differences `a - b` of two runs scored on the
  same queries (a query a run misses scores 0 there, so the pairs are always complete).
- `paired-t`: Student's paired t-test (scipy.stats.ttest_rel).
- `permutation`: randomisation test that swaps each pair's two scores with probability
  1/2 (scipy.stats.permutation_test, permutation_type="samples", statistic: mean
  difference); exact when 2**n <= resamples.
- `bootstrap`: the shift-method bootstrap test (Sakai 2006; Efron & Tibshirani 1993,
  16.4): resample the differences re-centred to mean 0, p = (1 + resampled means at least as
  far from 0 as the observed mean) / (1 + resamples): the observed sample counts as one of
  them, as scipy's permutation_test counts it, so p is never 0 (a bare share was 0 whenever
  no resample reached the observed mean, and Holm kept that 0 whatever the family's size).
- Randomised tests take a seed and a number of resamples, so a report is reproducible.
- Fewer than two pairs, or no difference at all (every |a - b| within TIE_TOLERANCE, float
  noise): every test gives p = 1. Every pair differing by the same amount (within
  TIE_TOLERANCE) leaves no spread: the t statistic is infinite, so paired-t gives p = 0 (scipy
  computed it from float noise and warned of precision loss). One pair has no
  spread to test against (scipy's t-test returns nan, and the bootstrap's re-centred sample
  of one is 0, which made any difference on one query 'significant').
- Effect size: Cohen's d for paired samples (d_z = mean difference / sd of differences);
  undefined (nan) on one pair, or when every pair differs by the same nonzero amount (sd 0),
  where it was +-inf; runs that never differ have d = 0.
- Intervals: t-based confidence intervals (scipy), for a run's mean and for a mean
  difference.
- Corrections act on the whole family of p-values they are given at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.evaluate import added_in_order
from harness.errors import HarnessError
from harness.registry import Registry, number_problem

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 42
SEED_MAX = 2**32 - 1  # numpy's random seeds: 0 to this
TIE_TOLERANCE = 1e-9  # |a - b| below this is a tie in win/tie/loss counts


@dataclass(frozen=True)
class Resampling:
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    @classmethod
    def of(cls, resamples: int | None = None, seed: int | None = None) -> Resampling:
        """The Python API's resamples= and seed= (None: the default), checked as `harness compare`'s
        flags check them (number_in): harness.compare and harness.responses.compare take them alike."""
        for name, value, problem in (
                ("resamples", resamples, resamples is not None and number_problem(resamples, 1, math.inf, whole=True)),
                ("seed", seed, seed is not None and number_problem(seed, 0, SEED_MAX, whole=True))):
            if problem:
                raise HarnessError(f"{name} {problem}, not {value!r}")
        return cls(DEFAULT_RESAMPLES if resamples is None else resamples, DEFAULT_SEED if seed is None else seed)


PairedTest = Callable[[np.ndarray, np.ndarray, Resampling], float]
TESTS: Registry[PairedTest] = Registry("significance test")


def _differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired samples need equal 1-d shapes, got {a.shape} and {b.shape}")
    return a - b


def _untestable(d: np.ndarray) -> bool:
    """No test can show a difference: fewer than two pairs, or none differs (p = 1)."""
    return len(d) < 2 or bool(np.all(np.abs(d) <= TIE_TOLERANCE))


def _no_spread(d: np.ndarray) -> bool:
    """Every pair differs by the same amount, up to float noise: the spread is 0, not noise."""
    return float(np.ptp(d)) <= TIE_TOLERANCE


@TESTS.register("paired-t")
def paired_t(a: np.ndarray, b: np.ndarray, settings: Resampling) -> float:
    """Student's paired t-test on the per-query differences (scipy's ttest_rel)."""
    d = _differences(a, b)
    if _untestable(d):
        return 1.0  # scipy returns nan (0/0, or no degrees of freedom); there is no evidence of a difference
    if _no_spread(d):
        return 0.0  # t = mean / (0 / sqrt(n)) is infinite
    from scipy import stats as scipy_stats  # here: importing scipy.stats takes 2 s, a --help none

    return float(scipy_stats.ttest_rel(a, b).pvalue)


@TESTS.register("permutation")
def permutation(a: np.ndarray, b: np.ndarray, settings: Resampling) -> float:
    """Paired permutation test: each query's two scores swapped, in --resamples random ways or all (scipy)."""
    if _untestable(_differences(a, b)):
        return 1.0
    from scipy import stats as scipy_stats

    result = scipy_stats.permutation_test(
        (np.asarray(a, float), np.asarray(b, float)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=settings.resamples,
        batch=1000,  # memory O(batch x queries), not O(resamples x queries): 2e6 resamples took 22 GB
        alternative="two-sided",
        rng=np.random.default_rng(settings.seed),
    )
    return float(min(1.0, result.pvalue))


@TESTS.register("bootstrap")
def bootstrap(a: np.ndarray, b: np.ndarray, settings: Resampling) -> float:
    """Paired bootstrap test: the per-query differences, centred, resampled with replacement --resamples times."""
    d = _differences(a, b)
    if _untestable(d):
        return 1.0
    observed = abs(d.mean())
    centred = d - d.mean()
    rng = np.random.default_rng(settings.seed)
    # resample in blocks so that 10^5 resamples of 10^3 queries stay within memory
    extreme = 0
    remaining = settings.resamples
    while remaining:
        block = min(remaining, 1000)
        means = centred[rng.integers(0, len(d), size=(block, len(d)))].mean(axis=1)
        extreme += int(np.count_nonzero(np.abs(means) >= observed - 1e-12))
        remaining -= block
    return (extreme + 1) / (settings.resamples + 1)


def least_p_fraction(test: str, resamples: int, pairs: int) -> tuple[int, int]:
    """The smallest p `test` can give on `pairs` pairs, as (numerator, denominator), which the
    too-few-resamples warning prints ((0, 1): paired-t, which is not resampled). A resampled
    one-sided p counts the observed sample as one of the resamples: at least 1 / (resamples + 1),
    the bootstrap's floor. The permutation test's two-sided p is twice the smaller one-sided p
    (scipy.stats.permutation_test), and is exact where the 2**pairs sign flips are no more than the
    resamples: 2 / min(resamples + 1, 2**pairs), which no more resamples lower."""
    if test == "bootstrap":
        return 1, resamples + 1
    if test == "permutation":
        return 2, min(resamples + 1, 2**pairs)
    return 0, 1


def least_p(test: str, resamples: int, pairs: int) -> float:
    """least_p_fraction as a number."""
    numerator, denominator = least_p_fraction(test, resamples, pairs)
    return numerator / denominator


Correction = Callable[[Sequence[float]], list[float]]
CORRECTIONS: Registry[Correction] = Registry("multiple-testing correction")


@CORRECTIONS.register("none")
def no_correction(p_values: Sequence[float]) -> list[float]:
    """The p-values as each test gave them, uncorrected."""
    return [float(p) for p in p_values]


@CORRECTIONS.register("bonferroni")
def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni: each p-value times the number of comparisons (capped at 1)."""
    m = len(p_values)
    return [min(1.0, float(p) * m) for p in p_values]


@CORRECTIONS.register("holm")
def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1)."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * float(p_values[index])))
        adjusted[index] = running
    return adjusted


def cohens_d_paired(a: np.ndarray, b: np.ndarray) -> float:
    """d_z: mean difference over the standard deviation of differences; 0 when no pair differs,
    nan (undefined, shown n/a) with one pair or differences without spread: no sd to scale by."""
    d = _differences(a, b)
    if len(d) < 2:
        return math.nan
    if _untestable(d):
        return 0.0
    if _no_spread(d):
        return math.nan
    return float(d.mean() / d.std(ddof=1))


def running_mean(values: np.ndarray) -> float:
    """The mean as trec_eval takes its `all` value (and `harness eval` its means): the values
    added one by one in query order (`added_in_order`), then divided; numpy's pairwise sum
    differs in the last bit, which shows in the 4th decimal where a mean falls on a half."""
    return added_in_order(np.asarray(values, dtype=float).tolist()) / len(values) if len(values) else math.nan


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """t-based confidence interval of a mean; no spread gives a point, a single value none (nan,
    shown n/a): it has no spread to estimate one from (it was a point, of zero width)."""
    values = np.asarray(values, dtype=float)
    mean = running_mean(values)
    if len(values) < 2:
        return math.nan, math.nan
    if values.std() == 0:
        return mean, mean
    from scipy import stats as scipy_stats

    low, high = scipy_stats.t.interval(
        confidence, len(values) - 1, loc=mean, scale=scipy_stats.sem(values)
    )
    return float(low), float(high)


def win_tie_loss(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    d = _differences(a, b)
    wins = int(np.count_nonzero(d > TIE_TOLERANCE))
    losses = int(np.count_nonzero(d < -TIE_TOLERANCE))
    return wins, len(d) - wins - losses, losses
