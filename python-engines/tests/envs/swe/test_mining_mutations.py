"""The miner's mutation operators and their seeded order, on a small module made here."""
import ast
import subprocess

from rollflow_engines.envs.swe.mining.mine import gold_patch, ordered
from rollflow_engines.envs.swe.mining.mutations import KINDS, changes_the_program, sites

MODULE = b'''"""A module: its docstring's 12 is never mutated."""
LIMIT = 10  # module level: not in a function, never mutated


def window(items, size=2):
    """Sliding windows of 3."""
    if size <= 0 or not items:
        return []
    out = []
    for i in range(len(items) - size + 1):
        out.append(tuple(items[i:i + size]))  # a comment with + and < in it
    return out


class Box:
    def split(self, text, sep):
        head, _, tail = text.partition(sep)
        while head == "x" and tail:
            head = tail[0] * 2
        return head, tail

    def ratio(self, a, b):
        return a / b if b != 0 else None

    def parts(self, a, b):
        return divmod(a, b)
'''


def test_every_kind_is_found_in_functions_only():
    found = sites(MODULE)
    assert {m.kind for m in found} == set(KINDS)
    lines = MODULE.split(b"\n")
    for m in found:
        assert lines[m.line - 1].startswith(b" "), f"{m} is outside a function"
        assert b'"""' not in lines[m.line - 1], f"{m} is in a docstring"
    assert {m.function for m in found} == {"window", "Box.split", "Box.ratio", "Box.parts"}


def test_each_mutation_changes_one_spot_and_keeps_the_rest_byte_for_byte():
    for m in sites(MODULE):
        mutated = m.apply(MODULE)
        assert mutated != MODULE and changes_the_program(m, MODULE)
        ast.parse(mutated)  # still Python
        assert mutated[:m.start] == MODULE[:m.start] and mutated[m.start + len(m.new):] == MODULE[m.end:]
    by = {(m.kind, m.old, m.new) for m in sites(MODULE)}
    assert ("compare", b"<=", b"<") in by and ("compare", b"==", b"!=") in by and ("compare", b"!=", b"==") in by
    assert ("arith", b"-", b"+") in by and ("arith", b"*", b"/") in by and ("arith", b"/", b"*") in by
    assert ("bool", b"or", b"and") in by and ("bool", b"and", b"or") in by
    assert ("off_by_one", b"0", b"1") in by and ("off_by_one", b"1", b"0") in by and ("off_by_one", b"2", b"3") in by
    assert ("negate", b'head == "x" and tail', b'not (head == "x" and tail)') in by
    assert ("return", b"out", b"None") in by and ("return", b"head, tail", b"head") in by
    assert ("swap_args", b"a, b", b"b, a") in by and sum(m.kind == "swap_args" for m in sites(MODULE)) == 1  # divmod's; a / b is no call
    assert not any(m.kind == "off_by_one" and m.old in (b"10", b"12", b"3") for m in sites(MODULE))


def test_a_mutation_that_does_not_change_the_program_is_refused():
    source = b"def f(x):\n    return (x)\n"
    (m,) = [m for m in sites(source) if m.kind == "return"]
    same = type(m)(m.kind, m.function, m.def_line, m.line, m.start, m.end, b"x", m.old)
    broken = type(m)(m.kind, m.function, m.def_line, m.line, m.start, m.end, b"x +", m.old)
    assert changes_the_program(m, source) and not changes_the_program(same, source) and not changes_the_program(broken, source)


def test_the_def_line_is_the_code_objects_first_line():
    code = compile(MODULE, "m.py", "exec")
    firsts = {c.co_name: c.co_firstlineno for c in code.co_consts if hasattr(c, "co_firstlineno")}
    assert {m.def_line for m in sites(MODULE) if m.function == "window"} == {firsts["window"]}


def test_the_order_is_seeded_takes_the_kinds_in_turn_and_repeats():
    candidates = [("m.py", m) for m in sites(MODULE)]
    first = ordered(candidates, 0, "proj")
    assert [m.key for _, m in first] == [m.key for _, m in ordered(candidates, 0, "proj")]
    assert [m.key for _, m in first] != [m.key for _, m in ordered(candidates, 1, "proj")]
    assert sorted(m.key for _, m in first) == sorted(m.key for _, m in candidates)
    assert len({m.kind for _, m in first[:len(KINDS)]}) == len(KINDS)  # one of each kind before any second


def _applies(tmp_path, before: bytes, patch: str) -> bytes:
    (tmp_path / "m.py").write_bytes(before)
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=patch.encode(), check=True)
    return (tmp_path / "m.py").read_bytes()


def test_the_gold_patch_is_one_small_hunk_even_among_near_copies(tmp_path):
    block = b"".join(b"def f%d(x):\n    y = x + 1\n    return y\n\n\n" % i for i in range(80))
    original = block + b"def g(x):\n    return x < 3\n" + block
    (m,) = [m for m in sites(original) if m.kind == "compare"]
    mutated = m.apply(original)
    patch = gold_patch("m.py", mutated, original)
    assert [line for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == ["-    return x <= 3", "+    return x < 3"]
    assert _applies(tmp_path, mutated, patch) == original
    no_newline = block + b"def g(x):\n    return x < 3"  # the changed line is the last, with no newline at the end
    last = [m for m in sites(no_newline) if m.kind == "compare"][0]
    assert _applies(tmp_path, last.apply(no_newline), gold_patch("m.py", last.apply(no_newline), no_newline)) == no_newline
