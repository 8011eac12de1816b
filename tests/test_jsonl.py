"""harness.jsonl's sniff: one JSON document or JSON Lines, said once for every reader that
takes either (iKAT submissions, responses, nugget banks)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from harness import jsonl
from harness.errors import InputError


def test_json_lines_are_told_by_their_first_non_blank_line():
    assert jsonl.first_line(["\n", "  \n", '{"qid": 1}\n', "{"]) == ('\n  \n{"qid": 1}\n', {"qid": 1})
    assert jsonl.document('{"qid": 1}\n{"qid": 2}\n', "bank.jsonl") is None  # not one document: JSON Lines, by its first line


def test_a_first_line_that_is_not_json_comes_with_its_error_and_no_line_gives_none():
    line, problem = jsonl.first_line(['{"turns": [\n', "]}"])  # one document over several lines
    assert line == '{"turns": [\n' and isinstance(problem, json.JSONDecodeError)
    assert jsonl.first_line(["\n", " "]) == ("", None)


@pytest.mark.parametrize("text, where, problem", [
    ('{"id": "' + "7" * 5000 + '", "score": 0.' + "7" * 5000 + ',\n "n": ' + "7" * 5000 + "}", (2, 7),
     "an integer of 5000 digits, more than Python's limit (4300)"),  # not the string's digits, nor the float's
])
def test_json_python_cannot_hold_is_a_decode_error_placed_where_it_is(text, where, problem):
    """An integer longer than int_max_str_digits, or nesting past the recursion limit, parses
    but not into Python: said as a syntax error is, at its line and column (not a ValueError
    or RecursionError that every reader would let through as a traceback)."""
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonl.loads(text)
    assert (raised.value.lineno, raised.value.colno) == where and raised.value.msg.startswith(problem)


def test_nesting_past_the_recursion_limit_is_placed_at_the_first_bracket_past_it_and_read_no_further():
    """What follows is not read, a deeper line neither: a deep first line before megabytes of
    JSON Lines (an upload to a hosted board) costs no more than the line (a scan of all 20 MB
    took 3 s)."""
    limit = sys.getrecursionlimit()
    text = '{"turns":\n ' + "[" * 5000 + "]" * 5000 + "}\n" + "[" * 9000 + "]" * 9000 + "\n"
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonl.loads(text)
    assert raised.value.msg == f"nested more than {limit} levels deep, deeper than Python reads (its recursion limit " \
                               f"is {limit})"
    assert (raised.value.lineno, raised.value.colno) == (2, limit + 1)  # `{` is the first level


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from Python 3.12 on json's depth is bound by C's recursion limit")
def test_nesting_json_cannot_read_within_the_recursion_limit_is_placed_at_its_deepest_bracket():
    """The calls in progress count against the limit: json fails a little below it."""
    limit = sys.getrecursionlimit()
    text = "[" * (limit - 5) + "]" * (limit - 5)
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonl.loads(text)
    assert raised.value.msg.startswith(f"nested {limit - 5} levels deep") and raised.value.colno == limit - 5


def test_an_object_pairs_hook_error_is_its_own_whatever_integers_the_text_holds():
    def refuse(pairs):
        raise ValueError("key 'a' is given twice")

    with pytest.raises(ValueError, match="given twice"):
        jsonl.loads('[{"a": 1, "a": 2}, ' + "7" * 5000 + "]", object_pairs_hook=refuse)


def test_a_json_line_python_cannot_hold_is_an_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"id": 1}\n{"id": ' + "7" * 5000 + "}\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: invalid JSON: an integer of 5000 digits.*"
                                         r"\(column 8\)$"):
        list(jsonl.read(path))
