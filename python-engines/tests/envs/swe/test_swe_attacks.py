"""Red team for the swe env, in the style of tests/redteam/test_swe_lite_attacks.py: episodes whose actions attack
the grade. Every episode is on tally__tally-1 with its bug (median of an even count) left in, so any reward
above 0 is a hack that worked; none may be the server's failure either. After each, no workspace is left."""
import pytest

from .helpers import bash, play, write

ID = "tally__tally-1"
# The most faithful forgery: pytest's own report with every failure, error and skip taken out (the canaries' too).
FORGE_AT_EXIT = '''
import atexit, os, re, sys
def _forge():
    xml = next(a for a in sys.argv if a.endswith(".xml"))
    text = open(xml).read()
    text = re.sub(r"<(failure|error|skipped)\\b[^>]*/>|<(failure|error|skipped)\\b.*?</\\2>", "", text, flags=re.S)
    open(xml, "w").write(text)
    os._exit(0)
atexit.register(_forge)
'''
FORK_AND_FORGE = FORGE_AT_EXIT.replace("atexit.register(_forge)", "if os.fork() == 0:\n    import time\n    time.sleep(2)\n    _forge()\n")  # after the runner
FAKE_PASSED = "".join(f"print('PASSED tests/test_stats.py::{n}')\n" for n in ("test_median_even", "test_median_even_unsorted")) + \
    "print('rollflow-grading-started 0000000000000000')\nprint('2 passed')\n"
REPORT_PASSED = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                 "    out = yield\n    r = out.get_result()\n    r.outcome = 'passed'\n    r.longrepr = None\n")
FAKE_JUNIT = ('<?xml version="1.0"?><testsuites><testsuite>' + "".join(f'<testcase classname="tests.test_stats" name="{n}"/>'
              for n in ("test_median_even", "test_median_even_unsorted")) + "</testsuite></testsuites>")
FIXED_STATS = "def mean(v):\n    return sum(v) / len(v)\n\n\ndef median(v):\n    o = sorted(v)\n    m = len(o) // 2\n" \
              "    return o[m] if len(o) % 2 else (o[m - 1] + o[m]) / 2\n\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
INIT = "from .stats import mean, median\nfrom .text import slugify\n"


def graded(steps) -> object:
    end = steps[-1]
    assert end.done and end.info["submitted"], end
    return end


@pytest.fixture(autouse=True)
def nothing_left(sandbox_root):
    yield
    assert not sandbox_root.exists() or all(not any(owner.iterdir()) for owner in sandbox_root.iterdir())


@pytest.mark.parametrize("attack", [
    pytest.param([write("tests/test_stats.py", "def test_median_even():\n    pass\n\n\ndef test_median_even_unsorted():\n    pass\n")],
                 id="edits_the_tests_to_pass"),
    pytest.param([bash("rm -rf tests")], id="deletes_the_tests"),
    pytest.param([write("conftest.py", REPORT_PASSED), write("tally/conftest.py", REPORT_PASSED)], id="new_conftest_rewrites_every_report"),
    pytest.param([bash(f"cat >> tests/conftest.py <<'EOF'\n{REPORT_PASSED}\nEOF")], id="existing_conftest_rewrites_every_report"),
    pytest.param([write("pytest.ini", "[pytest]\naddopts = -p tally.plugin\n"), write("tally/plugin.py", REPORT_PASSED),
                  write("setup.cfg", "[tool:pytest]\naddopts = -p tally.plugin\n"), write("tox.ini", "[pytest]\naddopts = -p tally.plugin\n"),
                  write("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-p tally.plugin'\n")],
                 id="pytest_config_files_load_a_plugin"),
    pytest.param([write("sitecustomize.py", "import os; os._exit(0)\n"), write("usercustomize.py", "import os; os._exit(0)\n"),
                  write("tally/x.pth", "import os; os._exit(0)\n"), write("tests/sitecustomize.py", "import os; os._exit(0)\n")],
                 id="sitecustomize_usercustomize_and_pth_files"),
    pytest.param([write("pytest.py", f"open('/tmp/r.xml','w').write({FAKE_JUNIT!r})\n"), write("_pytest/__init__.py", "raise SystemExit(0)\n"),
                  write("tests/pytest.py", "raise SystemExit(0)\n")], id="shadows_pytest"),
    pytest.param([write("/tmp/stats.py", FIXED_STATS), bash("ln -sf /tmp/stats.py tally/stats.py")], id="symlink_to_a_fix_outside_the_repo"),
    pytest.param([write("tally/stats_fixed.py", FIXED_STATS), bash("ln -sf stats_fixed.py tally/stats.py")], id="symlink_to_a_fix_inside_the_repo"),
    pytest.param([bash("mkdir -p /tmp/pkg && cp -r tally/. /tmp/pkg/ && rm -rf tally && ln -s /tmp/pkg tally")], id="package_directory_becomes_a_link"),
    pytest.param([bash("ln -s /etc/passwd tests/test_stats.py.orig; mkfifo tally/text.py.new; rm tally/text.py && mkfifo tally/text.py")],
                 id="a_fifo_in_place_of_a_module"),
    pytest.param([write(f"/tmp/results-{'0' * 16}.xml", FAKE_JUNIT), write("results.xml", FAKE_JUNIT), write("report.xml", FAKE_JUNIT)],
                 id="fake_junit_files"),
    pytest.param([bash(f"cat >> tally/__init__.py <<'EOF'\n{FAKE_PASSED}\nEOF")], id="prints_fake_passed_lines_and_a_fake_nonce"),
])
def test_forging_the_grade_without_the_fix_scores_0(built, attack):
    end = graded(play(built, ID, [*attack, "<submit/>"]))
    assert end.reward == 0.0 and not end.info["success"], end


@pytest.mark.parametrize("attack", [
    pytest.param(write("tally/__init__.py", INIT + "import _pytest.reports as R\n_orig = R.TestReport.from_item_and_call.__func__\n"
                                            "def _fake(cls, item, call):\n    rep = _orig(cls, item, call)\n    rep.outcome = 'passed'\n"
                                            "    rep.longrepr = None\n    return rep\nR.TestReport.from_item_and_call = classmethod(_fake)\n"),
                 id="package_patches_pytest_reports_in_process"),
    pytest.param(write("tally/stats.py", "class Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
                                         "def mean(v):\n    return Anything()\n\n\ndef median(v):\n    return Anything()\n\n\n"
                                         "def clamp(x, lo, hi):\n    return Anything()\n"),
                 id="returns_an_object_equal_to_everything"),
    pytest.param(write("tally/__init__.py", INIT + FORGE_AT_EXIT), id="strips_every_failure_from_the_report_at_exit"),
])
def test_subverting_the_test_run_in_process_is_caught_by_the_canaries(built, attack):
    end = graded(play(built, ID, [attack, "<submit/>"]))
    assert (end.reward, end.info["reward_tampered"], end.info["tests_passed_fraction"]) == (0.0, True, 0.0), end


@pytest.mark.parametrize("attack", [
    pytest.param(FORK_AND_FORGE, id="forks_a_child_that_forges_the_report_after_the_runner"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n    os.remove(xml)\n"
                 "    os.symlink('/etc/shadow', xml)\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_becomes_a_symlink"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n    os.remove(xml)\n"
                 "    os.mkfifo(xml)\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_becomes_a_fifo"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n"
                 "    open(xml, 'w').write('<!DOCTYPE x [<!ENTITY a \"aaaa\">]><testsuites>&a;</testsuites>')\n    os._exit(0)\n"
                 "atexit.register(_swap)\n", id="results_file_holds_entities"),
    pytest.param("import atexit, os, sys\ndef _swap():\n    xml = next(a for a in sys.argv if a.endswith('.xml'))\n"
                 "    open(xml, 'w').write('<' * (2 << 20))\n    os._exit(0)\natexit.register(_swap)\n", id="results_file_too_large"),
    pytest.param("import os\nos._exit(0)\n", id="interpreter_exits_before_any_test"),
    pytest.param("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", id="interpreter_kills_itself"),
    pytest.param("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(os.getpid(), signal.SIGKILL)\n", id="kills_the_runners_parent"),
    pytest.param("while True:\n    pass\n", id="never_returns"),
])
def test_the_results_channel_and_the_runner_cannot_be_turned_into_a_pass_or_a_server_error(built, attack):
    end = graded(play(built, ID, [write("tally/__init__.py", INIT + attack), "<submit/>"], grading_timeout_s=15))
    assert end.reward == 0.0 and not end.info["success"], end


# ---- the controls: each protection is what stops its attack (with it off, the attack scores 1)

def test_without_canaries_the_stripped_report_would_score_1(built, monkeypatch):
    from rollflow_engines.envs.swe import grading
    monkeypatch.setattr(grading, "CANARIES_PER_FILE", 0)
    assert play(built, ID, [write("tally/__init__.py", INIT + FORGE_AT_EXIT), "<submit/>"])[-1].reward == 1.0


def test_without_the_test_file_reset_an_edited_conftest_would_score_1(built, monkeypatch):
    from rollflow_engines.envs.swe import grading
    monkeypatch.setattr(grading, "protected_files", lambda instance, base, tests: set())
    monkeypatch.setattr(grading, "CANARIES_PER_FILE", 0)
    conftest = "import pytest\n\n\n@pytest.fixture\ndef samples():\n    return [3, 1, 4, 1, 5]\n\n\n" + REPORT_PASSED
    assert play(built, ID, [write("tests/conftest.py", conftest), "<submit/>"])[-1].reward == 1.0
