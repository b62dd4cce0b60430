#!/usr/bin/env bash
# Runs every test suite (vitest: unit + integration against real Temporal dev
# servers; pytest: python-engines), even when one fails, then prints one
# closing line with the totals of both.
set -uo pipefail
cd "$(dirname "$0")/.."
reports=.state/test-reports
rm -rf "$reports"; mkdir -p "$reports"

status=0
node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json="$reports/vitest.json" 2>&1 | tee "$reports/vitest.log"
vitest_status=${PIPESTATUS[0]}
[ "$vitest_status" -eq 0 ] || status=1
(cd python-engines && ../.venv/bin/python -m pytest --junitxml="../$reports/pytest.xml") || status=1
VITEST_STATUS=$vitest_status node scripts/test-summary.mjs "$reports" || status=1
exit $status
