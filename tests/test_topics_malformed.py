"""A malformed topic file is an InputError naming the file, the record and what was expected.

Each test writes a broken copy of a real file into a shadow data folder (every other file
linked to the real one) and points HARNESS_DATA at it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.paths import data_root
from harness.topics import load


@pytest.fixture
def shadow(tmp_path, monkeypatch):
    """shadow(relative) -> (real file, path to write its broken copy to)."""

    def make(relative: str) -> tuple[Path, Path]:
        parts = Path(relative).parts
        source, target = data_root(), tmp_path / "data"
        for depth, part in enumerate(parts):
            target.mkdir(parents=True, exist_ok=True)
            for entry in source.iterdir():
                if entry.name != part and not (target / entry.name).exists():
                    (target / entry.name).symlink_to(entry)
            source, target = source / part, target / part
        monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "data"))
        return source, target

    return make


def _edit_json(shadow, relative, edit) -> Path:
    real, broken = shadow(relative)
    value = json.loads(real.read_text(encoding="utf-8"))
    edit(value)
    broken.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return broken


def _edit_jsonl_record(shadow, relative, index, edit) -> Path:
    """The file with its `index`-th line's record changed by `edit`."""
    real, broken = shadow(relative)
    lines = real.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[index])
    edit(record)
    lines[index] = json.dumps(record)
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return broken


def test_missing_field_names_file_and_record(shadow):
    def drop(topics):
        del topics[0]["turns"][2]["utterance"]

    path = _edit_json(shadow, "ikat/2023/data/2023_test_topics.json", drop)
    with pytest.raises(InputError) as caught:
        load("ikat2023")
    assert caught.value.path == str(path)
    assert "(record topic 9-1, turn 3): missing field 'utterance'" in str(caught.value)


def test_wrong_type_names_the_expected_type(shadow):
    def retype(topics):
        topics[3]["turns"][0]["turn_id"] = "one"

    _edit_json(shadow, "ikat/2024/data/2024_test_topics.json", retype)
    with pytest.raises(InputError, match=r"2024_test_topics.json \(record topic 3, turn 0\): "
                                         r"field 'turn_id' should be an integer, found a string"):
        load("ikat2024")


def test_truncated_json_names_the_line(shadow):
    real, broken = shadow("ikat/2025/data/2025_test_topics.json")
    text = real.read_text(encoding="utf-8")
    broken.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(InputError, match=r"2025_test_topics.json:\d+: invalid JSON"):
        load("ikat2025")


def test_unknown_ptkb_provenance_is_refused(shadow):
    def point_nowhere(topics):
        topics[0]["turns"][0]["ptkb_provenance"] = [99]

    _edit_json(shadow, "ikat/2023/data/2023_train_topics.json", point_nowhere)
    with pytest.raises(InputError, match="record topic 1-1, turn 1.*ptkb_provenance 99 is not a statement id"):
        load("ikat2023:train")


def test_truncated_jsonl_line_names_its_line(shadow):
    real, broken = shadow("pragmaticqa/val.jsonl")
    lines = real.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4][:100] + "\n"
    broken.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=r"val.jsonl:5: invalid JSON"):
        load("pragmaticqa")


def test_wrong_type_in_a_jsonl_record(shadow):
    def no_list(record):
        record["context"] = "not a list"

    _edit_jsonl_record(shadow, "opendialkg/ievalm/test_data_processed.jsonl", 2, no_list)
    with pytest.raises(InputError, match=r"test_data_processed.jsonl:3 \(record dialog 11, turn 3\): "
                                         r"field 'context' should be a list, found a string"):
        load("opendialkg")


def test_companion_file_missing_a_turn(shadow):
    def drop_turn(topics):
        del topics[0]["turn"][1]

    _edit_json(shadow, "cast/2020/2020_automatic_evaluation_topics_v1.0.json", drop_turn)
    with pytest.raises(InputError, match="2020_automatic_evaluation_topics_v1.0.json: turn 81_2 of "
                                         "2020_manual_evaluation_topics_v1.0.json is missing"):
        load("cast2020")


def test_tsv_line_without_tab(shadow):
    real, broken = shadow("cast/2019/data/evaluation/evaluation_topics_annotated_resolved_v1.0.tsv")
    lines = real.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3].replace("\t", " ")
    broken.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=r"resolved_v1.0.tsv:4: expected 'qid<TAB>utterance'"):
        load("cast2019")


def test_tree_parent_must_exist(shadow):
    def orphan(topics):
        topics[0]["turn"][1]["parent"] = "9-9"

    _edit_json(shadow, "cast/2022/2022_evaluation_topics_tree_v1.0.json", orphan)
    with pytest.raises(InputError, match=r"record topic 132, turn 1-2\): parent '9-9' is not a turn"):
        load("cast2022")


def test_unknown_intent_type(shadow):
    def shopping(record):
        record["CoSRec-Curated_1"][0]["intents"][0]["type"] = "shopping"

    _edit_jsonl_record(shadow, "cosrec/dataset/curated/intents.jsonl", 0, shopping)
    with pytest.raises(InputError, match=r"intents.jsonl:1 \(record CoSRec-Curated_1, intent CoSRec-Curated_1_0_0\): "
                                         r"intent type should be one of"):
        load("cosrec-curated")
