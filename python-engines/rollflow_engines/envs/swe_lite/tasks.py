"""SWE-lite tasks: small Python repositories with one planted bug, generated in code.

A task id is ``t<tier>-<index>`` (``t1-007``): the tier picks the kind of bug, the index picks one
of the tier's bug families and, through a seeded generator, its names and constants. The same id
always gives the same task (``SplitMix64``, no Python ``random``).

- tier 1: one module; the tested function has a wrong operator or bound.
- tier 2: two modules; the tested function is right, a helper it calls in the other module is not.
- tier 3: a class whose fix takes two edits, or a missing check of several lines.

Each task carries its issue text, the repository (``files``), its hidden tests split as in
SWE-bench (FAIL_TO_PASS fail on the planted bug and pass once it is fixed; PASS_TO_PASS pass on
both) and the fix as data: ``(path, old, new)`` replacements, each ``old`` occurring exactly once.
The scripted policy and the task checks use the fix; the agent never sees it, nor the tests.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..rng import SplitMix64

TASKS_PER_TIER = 20
TIERS = (1, 2, 3)
_ID = re.compile(r"t([123])-(\d{3})")


@dataclass(frozen=True)
class Task:
    id: str
    tier: int
    issue: str
    files: dict[str, str]
    fail_to_pass: str  # a test module's source: its tests fail on the planted bug
    pass_to_pass: str  # a test module's source: its tests pass before and after the fix
    fix: tuple[tuple[str, str, str], ...]

    def fixed_files(self) -> dict[str, str]:
        files = dict(self.files)
        for path, old, new in self.fix:
            assert files[path].count(old) == 1, (self.id, path, old)
            files[path] = files[path].replace(old, new)
        return files


class _Draw:
    def __init__(self, seed: int):
        self.rng = SplitMix64(seed)

    def int(self, lo: int, hi: int) -> int:
        return lo + self.rng.below(hi - lo + 1)

    def pick(self, options: tuple[str, ...]) -> str:
        return options[self.rng.below(len(options))]


_NOUNS = ("ledger", "meter", "tally", "gauge", "scale", "board", "batch", "store")
_VERBS = ("total", "measure", "count", "weigh", "score", "rank")
_LETTERS = "aeiorstn"

# ---- tier 1: one module, a wrong operator or bound in the tested function


def _t1_sum(d: _Draw, pkg: str) -> tuple:
    k, fn = d.int(2, 9), f"{d.pick(_VERBS)}_upto"
    src = f'''def {fn}(n):
    """The sum of {k}*i for i from 1 to n, inclusive."""
    return sum({k} * i for i in range(1, n))


def double(x):
    return 2 * x
'''
    f2p = f"from {pkg}.core import {fn}\n\n\ndef test_small():\n    assert {fn}(3) == {k * 6}\n\n\ndef test_one():\n    assert {fn}(1) == {k}\n"
    p2p = f"from {pkg}.core import {fn}, double\n\n\ndef test_zero():\n    assert {fn}(0) == 0\n\n\ndef test_double():\n    assert double(21) == 42\n"
    issue = f"`{fn}(3)` in {pkg}/core.py returns {k * 3} but the sum of {k}*i for i = 1..3 is {k * 6}."
    return src, f2p, p2p, issue, ("    return sum({k} * i for i in range(1, n))".format(k=k), "    return sum({k} * i for i in range(1, n + 1))".format(k=k))


def _t1_affine(d: _Draw, pkg: str) -> tuple:
    a, b, fn = d.int(2, 9), d.int(1, 20), f"{d.pick(_VERBS)}_affine"
    src = f'''def {fn}(x):
    """{a}*x + {b}."""
    return x * {a} - {b}


def negate(x):
    return -x
'''
    f2p = f"from {pkg}.core import {fn}\n\n\ndef test_at_two():\n    assert {fn}(2) == {2 * a + b}\n\n\ndef test_at_zero():\n    assert {fn}(0) == {b}\n"
    p2p = f"from {pkg}.core import negate\n\n\ndef test_negate():\n    assert negate(5) == -5\n"
    issue = f"`{fn}(0)` in {pkg}/core.py should be {b} ({a}*x + {b}) but returns {-b}."
    return src, f2p, p2p, issue, (f"    return x * {a} - {b}", f"    return x * {a} + {b}")


def _t1_largest(d: _Draw, pkg: str) -> tuple:
    fn = f"largest_{d.pick(_NOUNS)}"
    xs = [d.int(1, 50) for _ in range(5)]
    src = f'''def {fn}(xs):
    """The largest item of a non-empty list."""
    best = xs[0]
    for x in xs[1:]:
        if x < best:
            best = x
    return best


def first(xs):
    return xs[0]
'''
    f2p = f"from {pkg}.core import {fn}\n\n\ndef test_list():\n    assert {fn}({xs}) == {max(xs)}\n\n\ndef test_rising():\n    assert {fn}([1, 2, 3]) == 3\n"
    p2p = f"from {pkg}.core import {fn}, first\n\n\ndef test_single():\n    assert {fn}([7]) == 7\n\n\ndef test_first():\n    assert first([4, 5]) == 4\n"
    issue = f"`{fn}([1, 2, 3])` in {pkg}/core.py returns 1, not 3."
    return src, f2p, p2p, issue, ("        if x < best:", "        if x > best:")


def _t1_multiple(d: _Draw, pkg: str) -> tuple:
    m, fn = d.int(3, 9), f"is_{d.pick(_NOUNS)}_step"
    src = f'''def {fn}(n):
    """True when n is a multiple of {m}."""
    return n % {m} == 1


def halve(n):
    return n // 2
'''
    f2p = f"from {pkg}.core import {fn}\n\n\ndef test_multiple():\n    assert {fn}({m * 4})\n\n\ndef test_not_multiple():\n    assert not {fn}({m * 4 + 1})\n"
    p2p = f"from {pkg}.core import {fn}, halve\n\n\ndef test_other():\n    assert not {fn}({m * 4 + 2})\n\n\ndef test_halve():\n    assert halve(9) == 4\n"
    issue = f"`{fn}({m * 4})` in {pkg}/core.py is False, but {m * 4} is a multiple of {m}."
    return src, f2p, p2p, issue, (f"    return n % {m} == 1", f"    return n % {m} == 0")


def _t1_count(d: _Draw, pkg: str) -> tuple:
    c, fn = d.pick(tuple(_LETTERS)), f"count_{d.pick(_NOUNS)}_marks"
    word = c * 3 + "xyz" + c
    src = f'''def {fn}(text):
    """How many times {c!r} occurs in text (lower case only)."""
    return text.count({c.upper()!r})


def shout(text):
    return text.upper()
'''
    f2p = f"from {pkg}.core import {fn}\n\n\ndef test_counts():\n    assert {fn}({word!r}) == 4\n"
    p2p = f"from {pkg}.core import {fn}, shout\n\n\ndef test_none():\n    assert {fn}('xyz') == 0\n\n\ndef test_shout():\n    assert shout('ab') == 'AB'\n"
    issue = f"`{fn}({word!r})` in {pkg}/core.py returns 0, not 4."
    return src, f2p, p2p, issue, (f"    return text.count({c.upper()!r})", f"    return text.count({c!r})")


def _tier1(d: _Draw, family: Callable, pkg: str) -> tuple:
    src, f2p, p2p, issue, (old, new) = family(d, pkg)
    return {f"{pkg}/__init__.py": "", f"{pkg}/core.py": src}, f2p, p2p, issue, ((f"{pkg}/core.py", old, new),)


# ---- tier 2: the tested function is right; a helper in another module is not


def _t2_rate(d: _Draw, pkg: str) -> tuple:
    pct = d.pick(("10", "20", "25", "50"))
    util = '''def rate(pct):
    """A percentage as a fraction: rate(25) == 0.25."""
    return pct / 10


def add(a, b):
    return a + b
'''
    core = f'''from .util import rate


def discounted(total, pct):
    """total less pct percent."""
    return round(total * (1 - rate(pct)), 2)
'''
    expected = round(200 * (1 - int(pct) / 100), 2)
    f2p = f"from {pkg}.core import discounted\n\n\ndef test_discount():\n    assert discounted(200, {pct}) == {expected}\n"
    p2p = f"from {pkg}.core import discounted\nfrom {pkg}.util import add\n\n\ndef test_no_discount():\n    assert discounted(80, 0) == 80\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    issue = f"`discounted(200, {pct})` in {pkg}/core.py gives {round(200 * (1 - int(pct) / 10), 2)}, expected {expected}."
    return util, core, f2p, p2p, issue, ("    return pct / 10", "    return pct / 100")


def _t2_clamp(d: _Draw, pkg: str) -> tuple:
    limit = d.int(5, 40)
    util = '''def clamp(x, lo, hi):
    """x, moved into [lo, hi]."""
    return min(lo, max(x, hi))


def between(x, lo, hi):
    return lo <= x <= hi
'''
    core = f'''from .util import clamp


def order_quantity(n):
    """n, at least 1 and at most {limit}."""
    return clamp(n, 1, {limit})
'''
    f2p = f"from {pkg}.core import order_quantity\n\n\ndef test_inside():\n    assert order_quantity(3) == 3\n\n\ndef test_above():\n    assert order_quantity({limit + 10}) == {limit}\n"
    p2p = f"from {pkg}.util import between\n\n\ndef test_between():\n    assert between(2, 1, 3)\n"
    issue = f"`order_quantity(3)` in {pkg}/core.py returns 1; quantities between 1 and {limit} should pass through."
    return util, core, f2p, p2p, issue, ("    return min(lo, max(x, hi))", "    return max(lo, min(x, hi))")


def _t2_cents(d: _Draw, pkg: str) -> tuple:
    n = int(d.pick(("3", "6", "7", "9")))  # 10 / n has a second decimal, so rounding to one shows
    util = '''def to_cents(x):
    """x rounded to whole cents."""
    return round(x, 1)


def twice(x):
    return x * 2
'''
    core = f'''from .util import to_cents


def unit_price(total):
    """The price of one of {n} items."""
    return to_cents(total / {n})
'''
    f2p = f"from {pkg}.core import unit_price\n\n\ndef test_cents():\n    assert unit_price(10) == {round(10 / n, 2)}\n"
    p2p = f"from {pkg}.core import unit_price\nfrom {pkg}.util import twice\n\n\ndef test_exact():\n    assert unit_price({n * 3}) == 3\n\n\ndef test_twice():\n    assert twice(4) == 8\n"
    issue = f"`unit_price(10)` in {pkg}/core.py returns {round(10 / n, 1)}, not {round(10 / n, 2)}: prices are in cents."
    return util, core, f2p, p2p, issue, ("    return round(x, 1)", "    return round(x, 2)")


def _t2_words(d: _Draw, pkg: str) -> tuple:
    items = [d.pick(_NOUNS) for _ in range(d.int(3, 5))]
    util = '''def words(text):
    """The whitespace-separated words of text."""
    return text.split(",")


def first_word(text):
    return text.strip().partition(" ")[0]
'''
    core = '''from .util import words


def count_items(text):
    """How many items a space-separated list names."""
    return len(words(text))
'''
    listed = " ".join(items)
    f2p = f"from {pkg}.core import count_items\n\n\ndef test_count():\n    assert count_items({listed!r}) == {len(items)}\n"
    p2p = f"from {pkg}.util import first_word\n\n\ndef test_first_word():\n    assert first_word(' a b') == 'a'\n"
    issue = f"`count_items({listed!r})` in {pkg}/core.py returns 1, not {len(items)}."
    return util, core, f2p, p2p, issue, ('    return text.split(",")', "    return text.split()")


def _tier2(d: _Draw, family: Callable, pkg: str) -> tuple:
    util, core, f2p, p2p, issue, (old, new) = family(d, pkg)
    files = {f"{pkg}/__init__.py": "", f"{pkg}/util.py": util, f"{pkg}/core.py": core}
    return files, f2p, p2p, issue, ((f"{pkg}/util.py", old, new),)


# ---- tier 3: classes; two edits, or a missing check of several lines


def _t3_stack(d: _Draw, pkg: str) -> tuple:
    cls = d.pick(("Pile", "Stack", "Heap", "Tower"))
    src = f'''class {cls}:
    """Last in, first out."""

    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop(0)

    def peek(self):
        return self.items[0]

    def __len__(self):
        return len(self.items)
'''
    f2p = f"from {pkg}.core import {cls}\n\n\ndef _filled():\n    s = {cls}()\n    for x in (1, 2, 3):\n        s.push(x)\n    return s\n\n\ndef test_pop():\n    assert _filled().pop() == 3\n\n\ndef test_peek():\n    assert _filled().peek() == 3\n"
    p2p = f"from {pkg}.core import {cls}\n\n\ndef test_len():\n    s = {cls}()\n    s.push(1)\n    assert len(s) == 1\n"
    issue = f"{cls} in {pkg}/core.py is meant to be last in, first out, but pop() and peek() give the oldest item."
    fix = ((f"{pkg}/core.py", "        return self.items.pop(0)", "        return self.items.pop()"),
           (f"{pkg}/core.py", "        return self.items[0]", "        return self.items[-1]"))
    return src, f2p, p2p, issue, fix


def _t3_inventory(d: _Draw, pkg: str) -> tuple:
    cls, item = d.pick(("Inventory", "Stockroom", "Pantry")), d.pick(_NOUNS)
    src = f'''class {cls}:
    def __init__(self):
        self.counts = {{}}

    def add(self, item, n):
        self.counts[item] = self.counts.get(item, 0) + n

    def remove(self, item, n):
        """Take n of item out; ValueError when there are fewer than n."""
        self.counts[item] = self.counts.get(item, 0) - n

    def count(self, item):
        return self.counts.get(item, 0)
'''
    f2p = (f"import pytest\n\nfrom {pkg}.core import {cls}\n\n\ndef test_too_many():\n    inv = {cls}()\n    inv.add({item!r}, 2)\n"
           f"    with pytest.raises(ValueError):\n        inv.remove({item!r}, 3)\n    assert inv.count({item!r}) == 2\n")
    p2p = f"from {pkg}.core import {cls}\n\n\ndef test_remove():\n    inv = {cls}()\n    inv.add({item!r}, 5)\n    inv.remove({item!r}, 2)\n    assert inv.count({item!r}) == 3\n"
    issue = f"{cls}.remove in {pkg}/core.py lets counts go negative: removing 3 of 2 should raise ValueError and change nothing."
    old = "        self.counts[item] = self.counts.get(item, 0) - n\n"
    new = "        if self.counts.get(item, 0) < n:\n            raise ValueError(f\"only {self.counts.get(item, 0)} of {item}\")\n        self.counts[item] -= n\n"
    return src, f2p, p2p, issue, ((f"{pkg}/core.py", old, new),)


def _t3_mean(d: _Draw, pkg: str) -> tuple:
    cls = d.pick(("RunningMean", "Average", "MeanTracker"))
    xs = [d.int(1, 9) for _ in range(3)]
    src = f'''class {cls}:
    def __init__(self):
        self.total = 0
        self.n = 0

    def add(self, x):
        self.total += x

    def mean(self):
        return self.total // max(self.n, 1)
'''
    f2p = f"from {pkg}.core import {cls}\n\n\ndef test_mean():\n    m = {cls}()\n    for x in {xs}:\n        m.add(x)\n    assert abs(m.mean() - {sum(xs) / 3!r}) < 1e-9\n"
    p2p = f"from {pkg}.core import {cls}\n\n\ndef test_empty():\n    assert {cls}().mean() == 0\n"
    issue = f"{cls}.mean in {pkg}/core.py is wrong: after adding {xs} it should be {sum(xs) / 3:.4g}."
    fix = ((f"{pkg}/core.py", "        self.total += x\n", "        self.total += x\n        self.n += 1\n"),
           (f"{pkg}/core.py", "        return self.total // max(self.n, 1)", "        return self.total / max(self.n, 1)"))
    return src, f2p, p2p, issue, fix


def _tier3(d: _Draw, family: Callable, pkg: str) -> tuple:
    src, f2p, p2p, issue, fix = family(d, pkg)
    return {f"{pkg}/__init__.py": "", f"{pkg}/core.py": src}, f2p, p2p, issue, fix


_FAMILIES: dict[int, tuple[Callable, tuple[Callable, ...]]] = {
    1: (_tier1, (_t1_sum, _t1_affine, _t1_largest, _t1_multiple, _t1_count)),
    2: (_tier2, (_t2_rate, _t2_clamp, _t2_cents, _t2_words)),
    3: (_tier3, (_t3_stack, _t3_inventory, _t3_mean)),
}


def task_ids(tier: int | None = None) -> list[str]:
    tiers = TIERS if tier is None else (tier,)
    return [f"t{t}-{i:03d}" for t in tiers for i in range(TASKS_PER_TIER)]


def generate_task(task_id: str) -> Task:
    """The task of ``task_id``; ValueError naming the expected form for an unknown id."""
    m = _ID.fullmatch(task_id)
    if not m or int(m[2]) >= TASKS_PER_TIER:
        raise ValueError(f"unknown SWE-lite task {task_id!r}: expected t1-000 … t{TIERS[-1]}-{TASKS_PER_TIER - 1:03d}")
    tier, index = int(m[1]), int(m[2])
    build, families = _FAMILIES[tier]
    draw = _Draw(tier * 1_000_003 + index)
    pkg = f"{draw.pick(_NOUNS)}_{draw.pick(('kit', 'lib', 'core', 'tools'))}"
    files, f2p, p2p, issue, fix = build(draw, families[index % len(families)], pkg)
    return Task(id=task_id, tier=tier, issue=issue, files=files, fail_to_pass=f2p, pass_to_pass=p2p, fix=fix)


def task_for_seed(seed: int, tiers: tuple[int, ...] = TIERS) -> Task:
    """The task an env seed stands for: the seed walks the chosen tiers' tasks in order."""
    ids = [i for t in tiers for i in task_ids(t)]
    return generate_task(ids[seed % len(ids)])
