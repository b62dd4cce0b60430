"""code_exec's server-side handling of model-made values: the result file's text, the comparison, the
extraction of the program. Whatever the model makes is "no result" (ValueError) or a wrong answer, never
another exception, and nothing takes time quadratic in the reply's length."""
import json
import math
import re
import threading

import pytest
from hypothesis import given, settings, strategies as st

from rollflow_engines.rewards.code_exec import extract_code
from rollflow_engines.rewards.code_exec_compare import MAX_DEPTH, parse_result, same_value, summary

HANG_GUARD_S = 120
# The regex code_exec used to extract with: the reference for what extraction means (quadratic, so only on short text).
OLD_BLOCK = re.compile(r"```(?:python3?|py)[^\n]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def finishes(fn, *args):
    """fn(*args), run in a thread; the deadline only guards against a hang (a quadratic scan of a megabyte)."""
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", fn(*args)), daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert "value" in out, f"{fn.__name__} did not finish within {HANG_GUARD_S} s"
    return out["value"]


@pytest.mark.parametrize("text, why", [
    ("", "not JSON"),
    ("not json", "not JSON"),
    ('{"result": "\x00"}', "not JSON"),  # a raw control character in a JSON string
    ("\ufffd\ufffd", "not JSON"),  # invalid UTF-8, as read back with errors="replace"
    ('{"result": ' + "1" * 5000 + "}", "not JSON"),  # past Python's 4300-digit integer limit
    ("[" * 100_000 + "]" * 100_000, "deeper than JSON parsing allows"),
    ('{"result": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}", f"deeper than {MAX_DEPTH} levels"),
    ('{"result": ' + '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1) + "}", f"deeper than {MAX_DEPTH} levels"),
    ("[5]", "not an object"),
    ('{"answer": 5}', "not an object"),
    ("5", "not an object"),
])
def test_a_result_file_without_a_result_is_a_value_error(text, why):
    with pytest.raises(ValueError, match=why):
        parse_result(text)


def test_results_at_the_depth_cap_and_non_finite_numbers_parse():
    deep = '{"result": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    assert isinstance(parse_result(deep), list)
    assert math.isnan(parse_result('{"result": NaN}')) and parse_result('{"result": -Infinity}') == -math.inf
    assert parse_result('{"result": "\\ud800"}') == "\ud800"


@pytest.mark.parametrize("got, want, same", [
    (3, 3, True), (0.1 + 0.2, 0.3, True), (3, 3.0, True), ([1, [2, {"a": 0.5}]], [1, [2, {"a": 0.5}]], True),
    (True, 1, False), (1, True, False), (True, 1.0, False), (1.0, True, False), ("3", 3, False), (None, 0, False),
    (10 ** 400, 0.5, False), (0.5, 10 ** 400, False), (10 ** 400, 10 ** 400, True), (-(10 ** 400), math.inf, False),
    (math.nan, math.nan, False), (math.nan, 5, False), (math.inf, math.inf, True), (math.inf, 1e308, False),
    ([1, 2], [1, 2, 3], False), ({"a": 1}, {"b": 1}, False), ({"a": 1}, [1], False), ("\ud800", "x", False),
])
def test_same_value(got, want, same):
    assert same_value(got, want) is same


@pytest.mark.parametrize("got", ["\x00" * 1000, "\ud800" * 1000, ["\x1b"] * 1000, {"\x00" * 300: 1}, 10 ** 1000])
def test_the_summary_of_a_returned_value_is_bounded_and_encodable(got):
    text = summary(got)
    assert len(text) <= 301
    text.encode("utf-8")


def test_same_value_does_not_recurse():
    deep_got, deep_want = [], []
    for _ in range(50_000):
        deep_got, deep_want = [deep_got], [deep_want]
    assert same_value(deep_got, deep_want) is True
    assert same_value(deep_got, [[[[1]]]]) is False


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(got=json_values, want=json_values)
def test_same_value_and_summary_never_raise(got, want):
    assert isinstance(same_value(got, want), bool)
    text = summary(got)
    assert isinstance(text, str) and len(text) <= 400
    json.dumps({"reason": text}, allow_nan=False).encode("utf-8")  # what the reply's info must survive


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["```python\n", "```py x\n", "```PYTHON3", "```", "\n", "print(1)", "`", "py", " "]), max_size=30).map("".join))
def test_extraction_matches_the_old_regex(text):
    blocks = OLD_BLOCK.findall(text)
    assert extract_code(text) == ((blocks[-1], "block") if blocks else (text, "whole_text"))


@pytest.mark.parametrize("text", [
    "```py" * 200_000,  # openings without a newline: the old regex rescanned the line from each
    "```python\n" + "x" * 1_000_000,  # an opening never closed
    "```python x" * 100_000 + "\n" + "y" * 100_000,
])
def test_extraction_of_a_megabyte_is_linear(text):
    assert finishes(extract_code, text) == (text, "whole_text")


def test_the_last_of_many_blocks_is_extracted():
    text = "```python\nprint(0)\n```\n" * 40_000 + "```py\nprint(1)\n```"
    assert finishes(extract_code, text) == ("print(1)\n", "block")
