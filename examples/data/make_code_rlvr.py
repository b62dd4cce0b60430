"""Writes code-rlvr.jsonl: small code-RL problems for the code_exec verifier, 20 tasks x 2 seeded test sets.

Each row is {"id", "prompt", "answer", "domain": "code"}; ``answer`` is code_exec's reference, a JSON
object {"style": "stdio" | "call", "tests": [...], "fn_name"?}. Expected outputs are computed here by
running each task's reference solution, so the file is right by construction, and the same seed always
writes the same file. Run from the repo root:

    .venv/bin/python examples/data/make_code_rlvr.py      # rewrites examples/data/code-rlvr.jsonl
"""
from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

OUT = Path(__file__).with_name("code-rlvr.jsonl")
SEED = 13
VARIANTS = 2
TESTS_PER_ROW = 4
ASK = "Reply with the complete program in one ```python code block."


@dataclass(frozen=True)
class Task:
    name: str
    style: str                      # "stdio" or "call"
    statement: str
    solution: str                   # the reference solution, Python source
    draw: Callable[[random.Random], Any]  # one test's input: stdin text (stdio) or an argument list (call)
    fn_name: str | None = None


def ints(rng: random.Random, n: int, lo: int = -50, hi: int = 50) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def word(rng: random.Random, lo: int = 1, hi: int = 8) -> str:
    return "".join(rng.choice("abcdeiou") for _ in range(rng.randint(lo, hi)))


TASKS = [
    Task("sum-two", "stdio", "Read two integers a and b on one line and print a + b.",
         "a, b = map(int, input().split())\nprint(a + b)\n", lambda r: "%d %d\n" % tuple(ints(r, 2, -1000, 1000))),
    Task("max-of-list", "stdio", "The first line holds n, the second n integers. Print the largest.",
         "input()\nprint(max(map(int, input().split())))\n",
         lambda r: (lambda xs: f"{len(xs)}\n{' '.join(map(str, xs))}\n")(ints(r, r.randint(1, 8)))),
    Task("reverse-line", "stdio", "Read one line of text and print it reversed.",
         "print(input()[::-1])\n", lambda r: word(r, 1, 12) + "\n"),
    Task("count-vowels", "stdio", "Read one word and print how many of its letters are vowels (a, e, i, o, u).",
         "print(sum(c in 'aeiou' for c in input().strip()))\n", lambda r: word(r) + "\n"),
    Task("fizzbuzz", "stdio", "Read n and print the numbers 1..n, one per line, with multiples of 3 replaced by Fizz, "
         "of 5 by Buzz and of both by FizzBuzz.",
         "n = int(input())\nfor i in range(1, n + 1):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)\n",
         lambda r: f"{r.randint(1, 20)}\n"),
    Task("factorial", "stdio", "Read n (0 <= n <= 20) and print n!.",
         "import math\nprint(math.factorial(int(input())))\n", lambda r: f"{r.randint(0, 20)}\n"),
    Task("is-prime", "stdio", "Read n (n >= 1) and print YES if it is prime, else NO.",
         "n = int(input())\nprint('YES' if n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1)) else 'NO')\n",
         lambda r: f"{r.randint(1, 200)}\n"),
    Task("sort-numbers", "stdio", "Read a line of integers and print them sorted ascending, space-separated.",
         "print(*sorted(map(int, input().split())))\n", lambda r: " ".join(map(str, ints(r, r.randint(1, 8)))) + "\n"),
    Task("sum-lines", "stdio", "The first line holds n; each of the next n lines holds one integer. Print their sum.",
         "n = int(input())\nprint(sum(int(input()) for _ in range(n)))\n",
         lambda r: (lambda xs: f"{len(xs)}\n" + "".join(f"{x}\n" for x in xs))(ints(r, r.randint(1, 6)))),
    Task("digit-sum", "stdio", "Read a non-negative integer and print the sum of its digits.",
         "print(sum(map(int, input().strip())))\n", lambda r: f"{r.randint(0, 10 ** 9)}\n"),
    Task("add", "call", "Write a function add(a, b) that returns a + b.",
         "def add(a, b):\n    return a + b\n", lambda r: ints(r, 2, -1000, 1000), "add"),
    Task("is-palindrome", "call", "Write a function is_palindrome(s) that returns True if the string s reads the same backwards, else False.",
         "def is_palindrome(s):\n    return s == s[::-1]\n",
         lambda r: [r.choice([lambda w: w + w[::-1], lambda w: w])(word(r))], "is_palindrome"),
    Task("fib", "call", "Write a function fib(n) that returns the n-th Fibonacci number (fib(0) = 0, fib(1) = 1).",
         "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
         lambda r: [r.randint(0, 40)], "fib"),
    Task("gcd", "call", "Write a function gcd(a, b) that returns the greatest common divisor of two positive integers.",
         "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n", lambda r: ints(r, 2, 1, 500), "gcd"),
    Task("dedupe", "call", "Write a function dedupe(xs) that returns the list xs without repeated items, keeping first occurrences in order.",
         "def dedupe(xs):\n    seen = set()\n    return [x for x in xs if not (x in seen or seen.add(x))]\n",
         lambda r: [ints(r, r.randint(0, 10), 0, 5)], "dedupe"),
    Task("word-count", "call", "Write a function word_count(text) that returns a dict mapping each space-separated word of text to how often it occurs.",
         "def word_count(text):\n    counts = {}\n    for w in text.split():\n        counts[w] = counts.get(w, 0) + 1\n    return counts\n",
         lambda r: [" ".join(r.choice(["a", "to", "be", "or", "not"]) for _ in range(r.randint(0, 8)))], "word_count"),
    Task("mean", "call", "Write a function mean(xs) that returns the arithmetic mean of a non-empty list of numbers as a float.",
         "def mean(xs):\n    return sum(xs) / len(xs)\n", lambda r: [ints(r, r.randint(1, 7))], "mean"),
    Task("two-sum", "call", "Write a function two_sum(nums, target) that returns the indices [i, j] (i < j) of the first pair, "
         "in order of j then i, whose values add up to target, or [] if there is none.",
         "def two_sum(nums, target):\n    for j in range(len(nums)):\n        for i in range(j):\n            if nums[i] + nums[j] == target:\n"
         "                return [i, j]\n    return []\n",
         lambda r: [ints(r, r.randint(2, 6), 0, 9), r.randint(0, 18)], "two_sum"),
    Task("flatten", "call", "Write a function flatten(xss) that returns the items of a list of lists in one list, in order.",
         "def flatten(xss):\n    return [x for xs in xss for x in xs]\n",
         lambda r: [[ints(r, r.randint(0, 3), 0, 9) for _ in range(r.randint(0, 4))]], "flatten"),
    Task("caesar", "call", "Write a function caesar(s, k) that shifts each lowercase letter of s by k places in the alphabet "
         "(wrapping around) and leaves other characters alone.",
         "def caesar(s, k):\n    return ''.join(chr((ord(c) - 97 + k) % 26 + 97) if 'a' <= c <= 'z' else c for c in s)\n",
         lambda r: [word(r, 1, 10) + r.choice(["", " !", "-x"]), r.randint(0, 30)], "caesar"),
]


def run_stdio(solution: str, stdin: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            exec(compile(solution, "<solution>", "exec"), {"__name__": "__main__"})
        finally:
            sys.stdin = old
    return out.getvalue()


def run_call(solution: str, fn_name: str, args: list[Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(solution, "<solution>", "exec"), namespace)
    return json.loads(json.dumps(namespace[fn_name](*args)))


def prompt(task: Task, example: dict[str, Any]) -> str:
    if task.style == "stdio":
        return (f"{task.statement} Read from standard input and write to standard output. {ASK}\n\n"
                f"Example input:\n{example['input']}Example output:\n{example['output']}")
    call = f"{task.fn_name}({', '.join(json.dumps(a) for a in example['args'])})"
    return f"{task.statement} {ASK}\n\nExample: {call} returns {json.dumps(example['expected'])}."


def rows() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    out = []
    for variant in range(VARIANTS):
        for task in TASKS:
            tests = []
            for _ in range(TESTS_PER_ROW):
                given = task.draw(rng)
                if task.style == "stdio":
                    tests.append({"input": given, "output": run_stdio(task.solution, given)})
                else:
                    assert task.fn_name is not None
                    tests.append({"args": given, "expected": run_call(task.solution, task.fn_name, given)})
            reference = {"style": task.style, "tests": tests, **({"fn_name": task.fn_name} if task.fn_name else {})}
            out.append({"id": f"{task.name}-{variant}", "prompt": prompt(task, tests[0]), "answer": json.dumps(reference), "domain": "code"})
    return out


def render() -> str:
    return "".join(json.dumps(row) + "\n" for row in rows())


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {len(rows())} rows to {OUT}")
