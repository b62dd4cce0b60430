"""Program mutations of a module's functions, as text splices at AST positions (SWE-smith's kinds of bug).

Each mutation changes one spot of one function and nothing else: the source is edited at the byte offsets the
AST gives (``col_offset`` counts UTF-8 bytes), so the rest of the file (comments, quotes, layout) stays as it
was and the gold patch is the smallest diff. The kinds:

- ``arith``: a binary operator swapped (``+``/``-``, ``*``/``/``, ``//``/``/``, ``%``/``//``, ``<<``/``>>``, ``&``/``|``);
- ``compare``: a comparison swapped (``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``, ``is``/``is not``);
- ``bool``: ``and``/``or``;
- ``off_by_one``: an integer literal ``n`` as ``n + 1`` or ``n - 1`` (bounds, indices, counts);
- ``negate``: the condition of an ``if``/``while``/conditional expression negated (or its ``not`` removed);
- ``return``: ``return X`` as ``return None``, or a tuple returned as its first value;
- ``swap_args``: a call's first two positional arguments swapped.

Every site of a module is listed in source order (``sites``); the miner picks among them with a seeded RNG, so
the same seed gives the same mutations, and runs one only if ``changes_the_program``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"), ast.FloorDiv: ("//", "/"),
         ast.Mod: ("%", "//"), ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&")}
COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"), ast.Eq: ("==", "!="),
           ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"), ast.Is: ("is", "is not"),
           ast.IsNot: ("is not", "is")}
KINDS = ("arith", "compare", "bool", "off_by_one", "negate", "return", "swap_args")


@dataclass(frozen=True)
class Mutation:
    kind: str
    function: str      # qualified name: Class.method, outer.inner
    def_line: int      # the line of the function's first decorator or its def (the code object's co_firstlineno)
    line: int          # the first line changed
    start: int         # byte offsets of the replaced span in the file
    end: int
    new: bytes         # what replaces it
    old: bytes

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.line}:{self.start}:{self.new.decode(errors='replace')}"

    def apply(self, source: bytes) -> bytes:
        assert source[self.start:self.end] == self.old, "the mutation was listed on another version of the file"
        return source[:self.start] + self.new + source[self.end:]


class _Offsets:
    def __init__(self, source: bytes):
        self.source = source
        self.starts = [0]
        for i, b in enumerate(source):
            if b == 0x0A:
                self.starts.append(i + 1)

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def start(self, node: ast.AST) -> int:
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.at(node.end_lineno, node.end_col_offset)


def _token_in_gap(off: _Offsets, left: ast.AST, right: ast.AST, token: str) -> tuple[int, int] | None:
    """The span of the operator ``token`` between two operands (the gap holds only it, spaces, brackets, line breaks)."""
    a, b = off.end(left), off.start(right)
    gap = off.source[a:b].decode("utf-8", errors="replace")
    words = r"\s+".join(map(re.escape, token.split()))
    pattern = rf"(?<![\w=<>!/*]){words}(?![\w=<>/*])" if token[0].isalpha() or len(token) == 1 else rf"(?<![=<>!/*]){words}(?![=<>/*])"
    found = [m for m in re.finditer(pattern, gap)]
    if len(found) != 1 or "#" in gap:
        return None
    return a + len(gap[:found[0].start()].encode()), a + len(gap[:found[0].end()].encode())


def _is_docstring(node: ast.AST, parents: dict) -> bool:
    parent = parents.get(node)
    return isinstance(parent, ast.Expr) and isinstance(parents.get(parent), (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))


def sites(source: bytes) -> list[Mutation]:
    """Every mutation of the module's functions, in source order. SyntaxError if it does not parse."""
    tree = ast.parse(source)
    off = _Offsets(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[Mutation] = []

    def visit(node: ast.AST, scope: list[str], owner: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):  # its body only: defaults and decorators run at import
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), [*scope, child.name], child)
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], owner)
            else:
                if owner is not None and not isinstance(child, (ast.Lambda,)):
                    for m in _at(child, off, parents):
                        line = min([owner.lineno, *(d.lineno for d in owner.decorator_list)])
                        found.append(Mutation(m[0], ".".join(scope), line, off.source.count(b"\n", 0, m[1]) + 1, m[1], m[2],
                                              m[3].encode(), source[m[1]:m[2]]))
                visit(child, scope, owner)

    visit(tree, [], None)
    found.sort(key=lambda m: (m.start, m.kind, m.new))
    return found


def changes_the_program(m: Mutation, source: bytes) -> bool:
    """The mutated module parses and differs from the original as a program (checked when a mutation is picked:
    parsing a large module once per site would take minutes)."""
    try:
        return ast.dump(ast.parse(m.apply(source))) != ast.dump(ast.parse(source))
    except SyntaxError:
        return False


def _text(off: _Offsets, node: ast.AST) -> str:
    return off.source[off.start(node):off.end(node)].decode()


def _at(node: ast.AST, off: _Offsets, parents: dict) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, replacement) for the mutations of this node alone (its children are visited apart)."""
    out: list[tuple[str, int, int, str]] = []
    if isinstance(node, ast.BinOp) and type(node.op) in ARITH:
        old, new = ARITH[type(node.op)]
        if (span := _token_in_gap(off, node.left, node.right, old)) and not _is_string_format(node):
            out.append(("arith", *span, new))
    elif isinstance(node, ast.Compare):
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            old, new = COMPARE[type(op)]
            if span := _token_in_gap(off, left, right, old):
                out.append(("compare", *span, new))
            left = right
    elif isinstance(node, ast.BoolOp) and len(node.values) >= 2:
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        if span := _token_in_gap(off, node.values[0], node.values[1], old):
            out.append(("bool", *span, new))
    elif (isinstance(node, ast.Constant) and type(node.value) is int and not _is_docstring(node, parents)
          and _text(off, node).isdigit() and node.value < 1 << 16):
        out.append(("off_by_one", off.start(node), off.end(node), str(node.value + 1)))
        if node.value > 0:
            out.append(("off_by_one", off.start(node), off.end(node), str(node.value - 1)))
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            out.append(("negate", off.start(test), off.end(test), f"({_text(off, test.operand)})"))
        elif "\n" not in _text(off, test):
            out.append(("negate", off.start(test), off.end(test), f"not ({_text(off, test)})"))
    elif isinstance(node, ast.Return) and node.value is not None:
        value = node.value
        if isinstance(value, ast.Tuple) and value.elts and not isinstance(value.elts[0], ast.Starred) and "\n" not in _text(off, value):
            out.append(("return", off.start(value), off.end(value), _text(off, value.elts[0])))
        elif not (isinstance(value, ast.Constant) and value.value is None) and "\n" not in _text(off, value):
            out.append(("return", off.start(value), off.end(value), "None"))
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
        a, b = node.args[0], node.args[1]
        ta, tb = _text(off, a), _text(off, b)
        if ta != tb and off.end(a) <= off.start(b) and "\n" not in ta + tb:
            between = off.source[off.end(a):off.start(b)].decode()
            out.append(("swap_args", off.start(a), off.end(b), tb + between + ta))
    return out


def _is_string_format(node: ast.BinOp) -> bool:
    """``"..." % args`` is formatting, not arithmetic."""
    return isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(node.left, "value", ""), str)
