"""What makes the miner deterministic on any machine (issue 25): which test files a mutant runs comes from
projects.json's pinned costs, never from a measured baseline; a mutant's limit is CPU time, which load does not
inflate; failure messages lose their memory addresses."""
import sys
import time

from rollflow_engines.envs.swe.mining import statement
from rollflow_engines.envs.swe.mining.projects import load
from rollflow_engines.envs.swe.mining.quick_files import MAX_FILE_SECONDS, files_to_run, unpriced
from rollflow_engines.envs.swe.mining.testrun import run_tests

PRICES = {"t/test_a.py": 0.1, "t/test_b.py": 7.4, "t/test_c.py": 7.1, "t/test_d.py": 1.06, "t/test_slow.py": 75.0}


def test_the_files_come_from_the_pinned_prices_only():
    callers = ["t/test_a.py::x", "t/test_slow.py::y", "t/test_unpriced.py::z", "t/test_a.py::w"]
    assert files_to_run(callers, PRICES) == ["t/test_a.py"]  # over the limit alone, or not priced: never run
    # 7.4 + 7.1 = 14.5 fits; 14.5 + 1.06 does not, so that function is not mutated
    assert files_to_run(["t/test_b.py::1", "t/test_c.py::2"], PRICES) == ["t/test_b.py", "t/test_c.py"]
    assert files_to_run(["t/test_b.py::1", "t/test_c.py::2", "t/test_d.py::3"], PRICES) == []
    assert files_to_run(["t/test_slow.py::1"], PRICES) == [] and files_to_run([], PRICES) == []
    assert unpriced(["t/test_a.py", "t/test_new.py"], PRICES) == ["t/test_new.py"]


def test_a_baseline_measured_on_another_machine_cannot_change_the_choice():
    # The rule takes no measured seconds at all: here the same callers against wildly different measurements
    # (a machine 100x slower, or one where the slow file is instant) go through the same pinned table.
    callers = ["t/test_b.py::1", "t/test_c.py::2", "t/test_slow.py::3"]
    for measured in ({f: s * 100 for f, s in PRICES.items()}, {f: 0.0 for f in PRICES}):
        assert measured != PRICES
        assert files_to_run(callers, PRICES) == ["t/test_b.py", "t/test_c.py"]


def test_every_pinned_project_prices_its_test_files():
    projects, _ = load()
    assert projects and all(p.test_seconds for p in projects)
    pyparsing = dict(next(p for p in projects if p.name == "pyparsing").test_seconds)
    assert pyparsing["tests/test_unit.py"] > MAX_FILE_SECONDS  # the file the limit is for: never run by a mutant


def test_a_busy_loop_is_stopped_by_its_cpu_time_not_the_wall_clock(tmp_path):
    (tmp_path / "test_spin.py").write_text("def test_spin():\n    while True:\n        pass\n")
    started = time.monotonic()
    run = run_tests(tmp_path, sys.executable, ["test_spin.py"], timeout_s=120, cpu_s=2)
    assert run.timed_out and time.monotonic() - started < 60  # killed at 2 CPU seconds, long before the wall limit
    assert not any(p.name.startswith("core") for p in tmp_path.iterdir())  # no core file left in the repository
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    assert not run_tests(tmp_path, sys.executable, ["test_ok.py"], timeout_s=120, cpu_s=2).timed_out


def test_memory_addresses_leave_the_statement():
    one = statement.write("p", "p/m.py", "f", ["assert <p.m.Box object at 0x7f3a2b1c4d50> == 3"], 1)
    two = statement.write("p", "p/m.py", "f", ["assert <p.m.Box object at 0x7fee00112233> == 3"], 1)
    assert one == two and "0x7f" not in one
