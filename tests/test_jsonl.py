"""harness.jsonl's sniff: one JSON document or JSON Lines, said once for every reader that
takes either (iKAT submissions, responses, nugget banks)."""

from __future__ import annotations

import json
import re

import pytest

from harness import jsonl
from harness.errors import InputError


def test_json_lines_are_told_by_their_first_non_blank_line():
    assert jsonl.first_line(["", "  ", '{"qid": 1}\n', "{"]) == ('{"qid": 1}\n', {"qid": 1})
    assert jsonl.document('{"qid": 1}\n{"qid": 2}\n', "bank.jsonl") is None  # not one document: JSON Lines, by its first line


def test_a_first_line_that_is_not_json_comes_with_its_error_and_no_line_gives_none():
    line, problem = jsonl.first_line(['{"turns": [\n', "]}"])  # one document over several lines
    assert line == '{"turns": [\n' and isinstance(problem, json.JSONDecodeError)
    assert jsonl.first_line(["\n", " "]) == ("", None)


@pytest.mark.parametrize("text, where, problem", [
    ('{"id": "' + "7" * 5000 + '", "score": 0.' + "7" * 5000 + ',\n "n": ' + "7" * 5000 + "}", (2, 7),
     "an integer of 5000 digits, more than Python's limit (4300)"),  # not the string's digits, nor the float's
    ('{"turns":\n ' + "[" * 5000 + "]" * 5000 + "}", (2, 5001), "nested 5001 levels deep, more than Python's recursion"),
])
def test_json_python_cannot_hold_is_a_decode_error_placed_where_it_is(text, where, problem):
    """An integer longer than int_max_str_digits, or nesting past the recursion limit, parses
    but not into Python: said as a syntax error is, at its line and column (not a ValueError
    or RecursionError that every reader would let through as a traceback)."""
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonl.loads(text)
    assert (raised.value.lineno, raised.value.colno) == where and raised.value.msg.startswith(problem)


def test_a_json_line_python_cannot_hold_is_an_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"id": 1}\n{"id": ' + "7" * 5000 + "}\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: invalid JSON: an integer of 5000 digits.*"
                                         r"\(column 8\)$"):
        list(jsonl.read(path))
