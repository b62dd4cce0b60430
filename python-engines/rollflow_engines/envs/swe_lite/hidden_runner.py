"""Runs SWE-lite's hidden tests inside the grading sandbox (written there read-only; never imported by the server).

    python -I RUNNER NONCE GRADING_DIR REPO_DIR RESULTS_FILE

``-I`` keeps the interpreter's own path: no script directory, no working directory, no PYTHON*
variables, no user site. The repository is appended to ``sys.path`` after the standard library and
site-packages, so no file of the model's can stand in for ``pytest``, its plugins or anything they
import; only the task's package comes from it. pytest runs with a fixed configuration (``-c``), no
conftest, no plugin of the environment, and writes its JUnit report to RESULTS_FILE.

The first line printed is ``rollflow-grading-started NONCE``, before any code of the repository is
imported: a grading whose output lacks it never started (an infrastructure failure), whatever the
model's code did afterwards.
"""
import os
import sys


def main() -> int:
    nonce, grading_dir, repo, results = sys.argv[1:5]
    print(f"rollflow-grading-started {nonce}", flush=True)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.path.append(repo)
    import pytest

    return int(pytest.main(["-c", f"{grading_dir}/pytest.ini", "--rootdir", grading_dir, "--noconftest", "-p", "no:cacheprovider",
                            "--import-mode=importlib", "-q", "-o", "junit_family=xunit1", "--junitxml", results, f"{grading_dir}/tests"]))


if __name__ == "__main__":
    sys.exit(main())
