"""What pytest's summary says of skipped tests: each reason once, with how many tests it skipped."""

from __future__ import annotations

import pytest

from tests.conftest import extra, shared_path

pytest_plugins = ["pytester"]


def test_a_reason_tests_in_several_places_skip_for_is_one_line_with_their_count(pytester):
    """A skipif mark is reported at its test's line, so one missing extra took a line per test."""
    pytester.makeconftest("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    pytester.makepyfile(
        test_a="import pytest\n\ngone = pytest.mark.skipif(True, reason='needs what is gone')\n\n\n"
               "@gone\ndef test_one():\n    pass\n\n\n@gone\ndef test_two():\n    pass\n\n\n"
               "def test_own():\n    pytest.skip('a reason of its own')\n",
        test_b="import pytest\n\n\n@pytest.mark.skipif(True, reason='needs what is gone')\n"
               "def test_three():\n    pass\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.re_match_lines([r"^SKIPPED \[3\] \.: needs what is gone$",
                                  r"^SKIPPED \[1\] test_a\.py:\d+: a reason of its own$"])
    assert len([line for line in result.outlines if line.startswith("SKIPPED")]) == 2


def test_every_test_needing_an_absent_shared_folder_skips_for_one_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_SHARED", str(tmp_path / "absent"))
    reasons = set()
    for relative in ("reference/trec_eval", "data/ikat/2024/cone-rag"):
        with pytest.raises(pytest.skip.Exception) as skipped:
            shared_path(relative)
        reasons.add(skipped.value.msg)
    assert reasons == {"reference comparison skipped: ../shared is absent (set HARNESS_SHARED to the shared folder)"}


def test_a_file_missing_from_the_shared_folder_is_named():
    with pytest.raises(pytest.skip.Exception, match=r"^reference comparison skipped: ../shared/no/such/file is absent"):
        shared_path("no/such/file")


def test_each_module_of_a_missing_extra_skips_for_the_extra():
    reasons = set()
    for module in ("no_such_module_of_the_extra", "another_missing_module"):
        with pytest.raises(pytest.skip.Exception) as skipped:
            extra(module, "serve")
        reasons.add(skipped.value.msg)
    assert reasons == {"the serve extra is not installed (pip install -e '.[serve]')"}
