// Adds up vitest's JSON report and pytest's JUnit XML into one closing line:
// "tests: N passed, N failed, N skipped". A missing report counts as a failure.
// Each failure's name and the head of its message are printed just above that
// line: CI shows only the end of the log, and vitest prints its errors early.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const totals = { passed: 0, failed: 0, skipped: 0 };
const failures = [];
const plain = (text) => String(text ?? '').replace(/\x1b\[[0-9;]*m/g, '');
const head = (text, lines = 20) =>
  plain(text)
    .split('\n')
    .filter((l) => !/^\s+at .*node_modules/.test(l))
    .slice(0, lines)
    .join('\n');

const vitestFile = path.join(dir, 'vitest.json');
if (existsSync(vitestFile)) {
  const v = JSON.parse(readFileSync(vitestFile, 'utf8'));
  totals.passed += v.numPassedTests;
  totals.failed += v.numFailedTests;
  totals.skipped += v.numPendingTests + v.numTodoTests;
  for (const file of v.testResults ?? []) {
    const name = path.relative(process.cwd(), file.name);
    const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failedTests) failures.push(`${name} > ${t.fullName}: ${head(t.failureMessages?.join('\n'))}`);
    // A file fails with no failed test when a hook fails it (its tests then show as skipped).
    if (file.status === 'failed' && failedTests.length === 0) {
      totals.failed += 1;
      failures.push(`${name}: ${head(file.message || 'failed outside its tests')}`);
    }
  }
  // An error thrown outside any test (an unhandled rejection) fails vitest's exit code but not
  // its JSON report; its text is in vitest's own output, kept in vitest.log.
  if (Number(process.env.VITEST_STATUS ?? 0) !== 0 && failures.length === 0) {
    totals.failed += 1;
    const log = path.join(dir, 'vitest.log');
    const text = existsSync(log) ? plain(readFileSync(log, 'utf8')) : '';
    const at = text.search(/Unhandled (Error|Rejection)/);
    failures.push(`vitest exited ${process.env.VITEST_STATUS} with no failed test: ${at >= 0 ? head(text.slice(at), 30) : 'see its output above'}`);
  }
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
  for (const [, tc] of xml.matchAll(/<testcase\b([^>]*)>\s*<(?:failure|error)\b/g)) {
    const a = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(tc)?.[1] ?? '';
    failures.push(`python-engines ${a('classname')}::${a('name')}`);
  }
} else totals.failed += 1;

for (const f of failures) console.log(`FAILED ${f}\n`);

console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed === 0 && totals.passed > 0 ? 0 : 1);
