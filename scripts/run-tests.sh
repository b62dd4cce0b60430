#!/usr/bin/env bash
# Runs every test suite (vitest: unit + integration against real Temporal dev
# servers; pytest: python-engines), even when one fails, then prints the
# summary (scripts/test-summary.mjs): the failing tests by name and the log to
# read, one line per suite, and the closing line with the totals of both.
# Each suite's log and report stay in .state/test-reports/: vitest.log,
# vitest.json, temporal-sdk.log (the Temporal SDK's warnings, tests/setup.ts),
# pytest.log, pytest.xml.
#
#   scripts/run-tests.sh                                   every suite
#   scripts/run-tests.sh tests/unit -- tests/test_config.py   a subset: vitest's filters, then pytest's
set -uo pipefail
cd "$(dirname "$0")/.."
reports=$(realpath -m "${ROLLFLOW_TEST_REPORTS:-.state/test-reports}")
export ROLLFLOW_TEST_REPORTS=$reports
rm -rf "$reports"; mkdir -p "$reports"

vitest_args=(); pytest_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; pytest_args=("$@"); break; fi
  vitest_args+=("$1"); shift
done

# --silent=passed-only: what a test prints shows only when it fails.
node_modules/.bin/vitest run --silent=passed-only --reporter=default --reporter=json --outputFile.json="$reports/vitest.json" "${vitest_args[@]}" 2>&1 | tee "$reports/vitest.log"
vitest_status=${PIPESTATUS[0]}
# -q: a line of dots per file instead of a header per file; failures keep their tracebacks (in pytest.log too).
# -n 2 --dist loadfile (pytest-xdist): two processes, each taking whole files, so a file's fixtures are built once;
# most tests wait on sandboxes and servers, so two halve the suite's time on 2 cores (about 9.5 to 4.8 minutes).
(cd python-engines && ../.venv/bin/python -m pytest -q -n 2 --dist loadfile --junitxml="$reports/pytest.xml" "${pytest_args[@]}") 2>&1 | tee "$reports/pytest.log"
pytest_status=${PIPESTATUS[0]}
echo
VITEST_STATUS=$vitest_status PYTEST_STATUS=$pytest_status node scripts/test-summary.mjs "$reports"
