"""Runs an SWE instance's test files inside the grading sandbox (written there read-only; never imported by the server).

    python -I RUNNER NONCE GRADING_DIR REPO_DIR RESULTS_FILE

``GRADING_DIR/files.json`` lists the test files to run (those of FAIL_TO_PASS and PASS_TO_PASS, canaries
appended to them), relative to the repository. ``-I`` keeps the interpreter's own path: no script
directory, no working directory, no PYTHON* variables, no user site. The repository is appended to
``sys.path`` after the standard library and site-packages, so no file of it can stand in for ``pytest`` or
anything pytest imports; pytest's default import mode then puts each test file's root directory first, as
in the repository's own runs. pytest runs with a fixed configuration (``-c``; the repository's ini files are
not read), no plugin of the environment, and the repository's conftest.py files (the grading wrote those
from the base repository and the test_patch, never from the agent's workspace). It writes a JUnit report to
RESULTS_FILE. Whole files run, not node ids: an id the agent's code made uncollectable fails on its own
instead of stopping the run, and SWE-bench's own harness runs files too.

The first line printed is ``rollflow-grading-started NONCE``, before any code of the repository is
imported: a grading whose output lacks it never started (an infrastructure failure).
"""
import json
import os
import sys


def main() -> int:
    nonce, grading_dir, repo, results = sys.argv[1:5]
    print(f"rollflow-grading-started {nonce}", flush=True)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with open(f"{grading_dir}/files.json", encoding="utf-8") as f:
        files = json.load(f)
    os.chdir(repo)
    sys.path.append(repo)
    import pytest

    # --confcutdir: with -c, pytest would stop looking for conftest.py at the ini file's directory (outside the repository).
    return int(pytest.main(["-c", f"{grading_dir}/pytest.ini", "--rootdir", repo, "--confcutdir", repo, "-p", "no:cacheprovider",
                            "-q", "-o", "junit_family=xunit1", "--junitxml", results, "--", *files]))


if __name__ == "__main__":
    sys.exit(main())
