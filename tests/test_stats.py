"""Paired tests, corrections, effect sizes and intervals, checked on numbers worked by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from harness.report import stats
from harness.report.stats import Resampling

# Three queries, run a vs run b: differences d = (1, 2, 3), mean 2, sd 1, se 1/sqrt(3).
A = np.array([3.0, 5.0, 7.0])
B = np.array([2.0, 3.0, 4.0])


def test_paired_t_gives_the_hand_computed_p_value():
    # t = 2 / (1/sqrt 3) = sqrt 12 with 2 degrees of freedom. Student's t with 2 df has the
    # closed-form CDF F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so the two-sided
    # p = 1 - t / sqrt(2 + t^2) = 1 - sqrt(12/14) = 0.0741799...
    assert stats.TESTS.get("paired-t")(A, B, Resampling()) == pytest.approx(1 - math.sqrt(6 / 7), abs=1e-12)


def test_paired_t_on_identical_runs_is_p_one():
    assert stats.TESTS.get("paired-t")(A, A, Resampling()) == 1.0


@pytest.mark.parametrize("test", ["paired-t", "permutation", "bootstrap"])
def test_one_pair_is_no_evidence_of_a_difference_in_any_test(test):
    """scipy's t-test gave nan on one query, and the bootstrap p = 0: 'significant' on one query."""
    assert stats.TESTS.get(test)(A[:1], B[:1], Resampling(resamples=100)) == 1.0


@pytest.mark.parametrize("test, p", [("paired-t", 0.0), ("permutation", 0.25), ("bootstrap", 1 / 1001)])
def test_every_query_differing_by_the_same_amount_gives_the_tests_own_p_without_a_warning(test, p):
    """0.6 - 0.5, 0.7 - 0.6, 0.8 - 0.7 are equal but for float noise: no spread, so t is infinite
    (p = 0); the bootstrap's re-centred means never reach 0.1 (p = 1/1001, the observed sample
    alone); 2 of the 8 sign flips reach it (p = 2/8). scipy's t-test printed a 'Precision loss'
    warning and p = 1e-31."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stats.TESTS.get(test)(np.array([.6, .7, .8]), np.array([.5, .6, .7]),
                                     Resampling(resamples=1000)) == p


@pytest.mark.parametrize("test", ["paired-t", "permutation", "bootstrap"])
def test_differences_of_float_noise_only_are_no_difference(test):
    """0.3 vs 0.1 + 0.2 differs by 5.6e-17: a tie (as in win/tie/loss), p = 1, not a t-test on noise."""
    a, b = np.array([.3, .3, .5]), np.array([.1 + .2, .3, .5])
    assert stats.TESTS.get(test)(a, b, Resampling(resamples=100)) == 1.0


def test_permutation_test_is_exact_when_resamples_cover_all_sign_flips():
    # 2^3 = 8 ways to swap pairs; |mean| >= 2 only for all-plus and all-minus: p = 2/8.
    assert stats.TESTS.get("permutation")(A, B, Resampling(resamples=1000, seed=1)) == pytest.approx(0.25)


def test_permutation_test_memory_does_not_grow_with_the_resamples():
    """`--resamples 2000000` on 5 runs of 158 queries was killed by the kernel after taking 22 GB."""
    import tracemalloc

    rng = np.random.default_rng(1)
    a = rng.random(100)
    b = a + rng.normal(0, 0.05, 100)
    tracemalloc.start()
    try:
        stats.permutation(a, b, Resampling(100_000, seed=42))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, f"{peak / 1e6:.0f} MB"


def test_bootstrap_test_is_reproducible_with_a_seed():
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    test = stats.TESTS.get("bootstrap")
    assert test(a, b, Resampling(2000, 7)) == test(a, b, Resampling(2000, 7))
    assert test(a, a, Resampling(200, 7)) == 1.0
    assert test(a + 0.5, a, Resampling(2000, 7)) == 1 / 2001  # no resample is as extreme: only the observed


def test_bootstrap_p_counts_the_observed_sample_as_scipys_permutation_test_does():
    """p = (1 + resamples as extreme) / (1 + resamples), never 0: a bare share was 0 whenever no resample
    reached the observed mean, and Holm kept 0 over any family (11 of 24 CAsT comparisons 'significant'
    at 100 resamples, none under the permutation test)."""
    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    settings = Resampling(500, 3)
    d = a - b
    centred = d - d.mean()
    draw = np.random.default_rng(settings.seed)
    means = centred[draw.integers(0, len(d), size=(500, len(d)))].mean(axis=1)
    extreme = int(np.count_nonzero(np.abs(means) >= abs(d.mean()) - 1e-12))
    assert stats.TESTS.get("bootstrap")(a, b, settings) == (extreme + 1) / 501
    assert stats.CORRECTIONS.get("holm")([stats.TESTS.get("bootstrap")(a + 1, a, Resampling(100))] * 24)[0] > 0.05


def test_bootstrap_and_t_agree_on_a_clear_difference():
    rng = np.random.default_rng(3)
    base = rng.random(200)
    better = np.clip(base + rng.normal(0.05, 0.1, 200), 0, 1)
    p_t = stats.TESTS.get("paired-t")(better, base, Resampling())
    p_boot = stats.TESTS.get("bootstrap")(better, base, Resampling(5000, 1))
    assert p_t < 0.001 and p_boot < 0.001


P_VALUES = [0.01, 0.04, 0.03, 0.005]


def test_bonferroni_multiplies_by_family_size_and_caps_at_one():
    assert stats.CORRECTIONS.get("bonferroni")(P_VALUES) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert stats.CORRECTIONS.get("bonferroni")([0.3, 0.5]) == [0.6, 1.0]


def test_holm_steps_down_and_stays_monotone():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> raised to 0.06
    assert stats.CORRECTIONS.get("holm")(P_VALUES) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_no_correction_keeps_p_values():
    assert stats.CORRECTIONS.get("none")(P_VALUES) == P_VALUES


def test_cohens_d_is_mean_difference_over_sd_of_differences():
    assert stats.cohens_d_paired(A, B) == pytest.approx(2.0)
    assert stats.cohens_d_paired(A, A) == 0.0


@pytest.mark.parametrize("a, b", [(A[:1], B[:1]), (A[:1], A[:1]), (np.array([.6, .7, .8]), np.array([.5, .6, .7]))])
def test_cohens_d_without_a_spread_of_differences_is_undefined_not_infinite(a, b):
    """One pair, or every pair differing by the same amount (0.1 but for float noise): sd 0, d was +-inf."""
    assert math.isnan(stats.cohens_d_paired(a, b))


def test_mean_ci_is_the_t_interval():
    # t(0.975, 2 df) = (2p - 1) / sqrt(2p(1-p)) at p = 0.975 = 4.302653; se = 1/sqrt(3)
    half_width = 0.95 / math.sqrt(2 * 0.975 * 0.025) / math.sqrt(3)
    low, high = stats.mean_ci(A - B)
    assert (low, high) == pytest.approx((2 - half_width, 2 + half_width))


def test_mean_ci_of_one_value_is_undefined_not_a_point():
    """One value has no spread to estimate an interval from: it was (mean, mean), zero width."""
    assert all(math.isnan(bound) for bound in stats.mean_ci(np.array([0.7])))
    assert stats.mean_ci(np.array([0.7, 0.7])) == (0.7, 0.7)  # no spread among several: a point


@pytest.mark.parametrize("test, resamples, pairs, least", [
    ("bootstrap", 99, 20, 1 / 100),
    ("permutation", 99, 20, 2 / 100),  # two-sided: twice the smaller one-sided p, each at least 1/(R + 1)
    ("permutation", 10_000, 5, 2 / 32),  # exact: the observed signs and their flip, of 2**5, whatever R is
])
def test_the_smallest_p_a_resampled_test_gives_is_least_p(test, resamples, pairs, least):
    """What the too-few-resamples warning takes as the floor is what the test gives on a difference no
    resample reaches (the permutation test's is twice the bootstrap's: it was taken as 1/(R + 1))."""
    a = np.arange(pairs) / pairs
    assert stats.least_p(test, resamples, pairs) == least
    assert stats.TESTS.get(test)(a + 10, a + np.arange(pairs) * 1e-3, Resampling(resamples, 1)) == pytest.approx(least)


def test_win_tie_loss_counts_each_query_once():
    assert stats.win_tie_loss(np.array([1.0, 0.5, 0.2, 0.3]), np.array([0.5, 0.5, 0.4, 0.3])) == (1, 2, 1)


def test_unknown_test_names_the_known_ones():
    with pytest.raises(Exception, match="bootstrap, paired-t, permutation"):
        stats.TESTS.get("wilcoxon")


def test_a_mean_adds_the_queries_one_by_one_as_trec_eval_does():
    """P@20 of 8 queries: trec_eval prints 0.2937; numpy's pairwise mean and Python 3.12's
    compensated sum() give 0.29375, printed 0.2938."""
    values = np.array([0, .25, .15, .3, .35, .1, .4, .8])
    assert f"{stats.running_mean(values):.4f}" == "0.2937"


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_corrections_equal_statsmodels_multipletests(method):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 24):
        for family in (rng.uniform(size=size), rng.choice([0.01, 0.2, 0.2, 0.9, 1.0], size=size)):  # ties, p near 1
            expected = multipletests(family, method=method)[1]
            assert stats.CORRECTIONS.get(method)(list(family)) == pytest.approx(list(expected), abs=1e-12)
