"""One factory makes every judge a command or the API names (harness.judge.make): through the
registry, `JUDGES.get(name)` with its declared parameters, each command's syntax a translation
into them."""

from __future__ import annotations

import argparse

import pytest

from harness.errors import HarnessError
from harness.judge.base import JUDGES, first_maker
from harness.judge.scales import SUPPORT_0_2
from harness.responses.judges import make_judge


class Thresholds:
    """A judge answering nothing, keeping the thresholds it was made with."""

    name, scale = "thresholds", SUPPORT_0_2

    def __init__(self, support: float = 0.7, partial: float = 0.5) -> None:
        self.support, self.partial = support, partial

    def judge(self, items, progress=False):
        return []

    def provenance(self):
        return {}


def relevance_judge(judge: str, **options: str):
    """`harness judge --judge JUDGE [OPTIONS]`'s judge."""
    from harness.judge.cli_judge import add_arguments, make_judge as made

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    given = [part for key, value in options.items() for part in (f"--{key.replace('_', '-')}", value)]
    return made(parser.parse_args(["a.run", "--topics", "t", "--output", "o.qrels", "--judge", judge, *given]))


def test_a_judge_is_made_through_the_registry_with_the_command_s_syntax_read_into_its_parameters():
    """`minilm:SUPPORT,PARTIAL` is `harness responses`' syntax for minilm's `support` and `partial`:
    whatever answers to the name `minilm` in the registry is called with them."""
    with JUDGES.using({"minilm": Thresholds}):
        judge = make_judge("minilm:0.8,0.6")
    assert isinstance(judge, Thresholds) and (judge.support, judge.partial) == (0.8, 0.6)


def test_the_api_sets_a_judge_s_declared_parameters_by_name(tmp_path):
    """minilm declares model and cache_dir: the API's settings reach them (the spec's syntax
    reads the thresholds only), where they were dropped without a word."""
    judge = make_judge("minilm:0.8,0.6", model=str(tmp_path / "model"), cache_dir=tmp_path)
    assert (judge.support, judge.model, judge._cache_dir) == (0.8, str(tmp_path / "model"), tmp_path)


def test_a_setting_the_judge_does_not_declare_is_an_error_naming_it(tmp_path):
    with pytest.raises(HarnessError, match=r"^judge minilm\.prompt: unknown parameter of judge 'minilm'; known: "
                                           r"batch_size, cache_dir, chunk_pairs, model, partial, support$"):
        make_judge("minilm", prompt=tmp_path / "prompt.txt")
    with pytest.raises(HarnessError, match=r"^threshold= is not an option of the llm judge; its options: "
                                           r"api_key_env, base_url, cache_dir, concurrency, model, prompt, retries, "
                                           r"timeout$"):
        make_judge("llm", model="m", base_url="http://127.0.0.1:9/v1", threshold=0.5)


@pytest.mark.parametrize("door", ["harness judge", "harness responses"])
def test_a_text_after_the_llm_judge_s_name_is_an_error_not_ignored(monkeypatch, door):
    """`llm:qwen` was read as `llm` (harness responses), or refused as a judge of support (harness judge)."""
    monkeypatch.setenv("HARNESS_LLM_MODEL", "m")
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(HarnessError, match=r"^llm takes no argument, not 'qwen': its model, base URL, prompt"):
        relevance_judge("llm:qwen") if door == "harness judge" else make_judge("llm:qwen")


def test_harness_judge_s_file_judge_takes_its_labels_from_labels_not_from_its_name():
    with pytest.raises(HarnessError, match=r"^--judge file:x\.qrels: the file judge's labels are --labels FILE"):
        relevance_judge("file:x.qrels")


@pytest.mark.parametrize("door, known", [
    ("harness judge", "llm, file, python:MODULE:ATTR[:ARG]"),
    ("harness responses", "minilm[:SUPPORT,PARTIAL], assignments:PATH (or file:PATH), llm, python:MODULE:ATTR[:ARG]"),
])
def test_an_unknown_judge_lists_the_judges_its_command_takes(door, known):
    with pytest.raises(HarnessError) as error:
        relevance_judge("lmm") if door == "harness judge" else make_judge("lmm")
    assert str(error.value) == f"unknown judge 'lmm'; nearest: llm; known: {known}"


def test_the_first_maker_of_labels_recorded_from_a_file_is_found_down_the_sidecars():
    llm = {"judge": "llm", "model": "m", "matches_file": True}
    again = {"judge": "file", "matches_file": True, "source_provenance": {"judge": "file", "matches_file": False,
                                                                          "source_provenance": llm}}
    assert first_maker(again) == {**llm, "matches_file": False}  # a file on the way changed
    assert first_maker(llm) is llm
