"""harness.jsonl's sniff: one JSON document or JSON Lines, said once for every reader that
takes either (iKAT submissions, responses, nugget banks)."""

from __future__ import annotations

import json

from harness import jsonl


def test_json_lines_are_told_by_their_first_non_blank_line():
    assert jsonl.first_line(["", "  ", '{"qid": 1}\n', "{"]) == ('{"qid": 1}\n', {"qid": 1})
    assert jsonl.document('{"qid": 1}\n{"qid": 2}\n') is None  # not one document: JSON Lines, by its first line


def test_a_first_line_that_is_not_json_comes_with_its_error_and_no_line_gives_none():
    line, problem = jsonl.first_line(['{"turns": [\n', "]}"])  # one document over several lines
    assert line == '{"turns": [\n' and isinstance(problem, json.JSONDecodeError)
    assert jsonl.first_line(["\n", " "]) == ("", None)
