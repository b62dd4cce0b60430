// Adds up vitest's JSON report and pytest's JUnit XML into one closing line:
// "tests: N passed, N failed, N skipped". A missing report counts as a failure.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const totals = { passed: 0, failed: 0, skipped: 0 };

const vitestFile = path.join(dir, 'vitest.json');
if (existsSync(vitestFile)) {
  const v = JSON.parse(readFileSync(vitestFile, 'utf8'));
  totals.passed += v.numPassedTests;
  totals.failed += v.numFailedTests + (v.numFailedTestSuites ?? 0);
  totals.skipped += v.numPendingTests + v.numTodoTests;
} else totals.failed += 1;

const pytestFile = path.join(dir, 'pytest.xml');
if (existsSync(pytestFile)) {
  const xml = readFileSync(pytestFile, 'utf8');
  const suite = /<testsuite\b[^>]*>/.exec(xml)?.[0] ?? '';
  const attr = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const failed = attr('failures') + attr('errors');
  totals.failed += failed;
  totals.skipped += attr('skipped');
  totals.passed += attr('tests') - failed - attr('skipped');
} else totals.failed += 1;

console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed === 0 && totals.passed > 0 ? 0 : 1);
