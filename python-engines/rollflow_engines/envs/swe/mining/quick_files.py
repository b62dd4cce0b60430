"""Which test files a mutant runs, decided from pinned numbers only, never from a clock (issue 25: the miner is
deterministic from its seed on any machine, under any load).

A project's ``test_seconds`` in projects.json are what each test file took in the reference baseline (the run that
mined the published dataset), pinned beside the sdist. The rule is the one that run applied to its measured
times: a file priced over MAX_FILE_SECONDS alone is never run (pyparsing's test_unit.py, 75 s), and a function
whose remaining files together cost more is not mutated (attrs: test_make.py and test_funcs.py, 7 s each, plus
any third file). A file the table does not price is never run: the table is also the list of files a task may use.
Re-measuring on another machine changes nothing; only editing projects.json does (and that changes the cache key).
"""
from __future__ import annotations

MAX_FILE_SECONDS = 15.0   # the grading runs these files too: keep a task's grading quick


def files_to_run(callers: list[str], test_seconds: dict[str, float]) -> list[str]:
    """The files of ``callers`` (node ids) a mutant runs, sorted; [] when none is priced within the limit or the
    chosen files together cost more than it."""
    files = sorted({f for t in callers if (f := t.split("::", 1)[0]) in test_seconds and test_seconds[f] <= MAX_FILE_SECONDS})
    return files if sum(test_seconds[f] for f in files) <= MAX_FILE_SECONDS else []


def unpriced(baseline_files: list[str], test_seconds: dict[str, float]) -> list[str]:
    """Baseline test files the table does not price (a project added without pinning its costs; never run)."""
    return [f for f in baseline_files if f not in test_seconds]
