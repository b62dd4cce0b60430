"""code_exec's call tests: read back the value the program returned and compare it with the expected one.

The result file is the model's: the harness writes ``{"result": ...}``, but the solution runs in the same
process and can write anything there instead. So nothing here may raise anything but ValueError ("no
result") on what the file holds, nor recurse on its shape: JSON nested 100 000 deep makes ``json.loads``
raise RecursionError, a recursive comparison or excerpt would too, an integer of 400 digits makes
``math.isclose`` raise OverflowError, and NaN/Infinity parse as floats.
"""
from __future__ import annotations

import json
import math
from typing import Any

from ..errors import excerpt

# Deeper results are refused before they are compared or shown: no expected value of a code dataset nests
# this deep, and excerpt() (shared with every error reply) recurses once per level.
MAX_DEPTH = 100


def parse_result(text: str) -> Any:
    """The ``result`` of the result file's text; ValueError saying why there is none."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("the result file nests deeper than JSON parsing allows") from None
    except ValueError as e:  # not JSON, or an integer past Python's 4300-digit limit
        raise ValueError(f"the result file is not JSON: {str(e)[:120]}") from None
    if not isinstance(data, dict) or "result" not in data:
        raise ValueError('the result file is not an object {"result": ...}')
    result = data["result"]
    if _deeper_than(result, MAX_DEPTH):
        raise ValueError(f"the result nests deeper than {MAX_DEPTH} levels")
    return result


def _deeper_than(value: Any, limit: int) -> bool:
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(got: Any, want: Any) -> bool:
    if not (_number(got) and _number(want)):
        return False
    try:
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)
    except OverflowError:  # an integer past a float's range: it equals no float
        return False


def same_value(got: Any, want: Any) -> bool:
    """``got`` equals ``want`` as JSON values: lists item by item, objects key by key, floats within 1e-6
    relative (an int may stand for a float), anything else of the same type and equal. No recursion."""
    pending = [(got, want)]
    while pending:
        g, w = pending.pop()
        if isinstance(w, float) or isinstance(g, float):
            if not _close(g, w):
                return False
        elif isinstance(w, list) and isinstance(g, list):
            if len(g) != len(w):
                return False
            pending.extend(zip(g, w))
        elif isinstance(w, dict) and isinstance(g, dict):
            if g.keys() != w.keys():
                return False
            pending.extend((g[k], w[k]) for k in w)
        elif not (type(g) is type(w) and g == w):
            return False
    return True


SUMMARY_CHARS = 300


def summary(got: Any) -> str:
    """A bounded text of a returned value for ``first_failure.reason``: repr escapes NULs, control characters
    and lone surrogates (so the reply encodes), which can make it 4 times longer than the excerpt."""
    text = repr(excerpt(got))
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + "…"
