// Reads the reports scripts/run-tests.sh leaves in a directory (vitest.json, pytest.xml, the logs beside them)
// and prints the end of `make test`: first each failure's message head, then, on the last screen, the failing
// tests by name under their suite's log, one line per suite, and the closing line CI reads:
// "tests: N passed, N failed, N skipped". A missing report counts as a failure, and so does a suite that exited
// non-zero with no failed test (an error outside any test).
//   node scripts/test-summary.mjs <dir>     (VITEST_STATUS / PYTEST_STATUS: the suites' exit codes)
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const NAMED_AT_MOST = 20; // failing tests named on the last screen; the rest are counted
const DETAILED_AT_MOST = 10; // failures whose message head is printed above it
const DETAIL_LINES = 12;

const plain = (text) => String(text ?? '').replace(/\x1b\[[0-9;]*m/g, '');
const head = (text, lines = DETAIL_LINES) =>
  plain(text)
    .split('\n')
    .filter((l) => !/^\s+at .*node_modules/.test(l))
    .slice(0, lines)
    .join('\n');
const firstLine = (text) => plain(text).split('\n').find((l) => l.trim() !== '')?.trim().slice(0, 160) ?? '';
const seconds = (s) => (s >= 90 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`);
const xmlText = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&#10;/g, '\n').replace(/&amp;/g, '&');

/**
 * One suite's outcome: counts, its failures ({ name, message }) and its log. `fill` reads the suite's report into it;
 * a missing report, or a non-zero exit with no failed test, is a failure of its own (`exitMessage` says where to look).
 */
function suiteFrom(name, dir, report, status, cwd, fill, exitMessage = () => 'see its log') {
  const suite = { name, log: path.join(dir, `${name}.log`), passed: 0, failed: 0, skipped: 0, failures: [] };
  const file = path.join(dir, report);
  if (!existsSync(file)) {
    suite.failed = 1;
    suite.failures.push({ name, message: `no report (${path.relative(cwd, file)}): ${name} did not finish` });
    return suite;
  }
  fill(suite, readFileSync(file, 'utf8'));
  if (status !== 0 && suite.failures.length === 0) {
    suite.failed += 1;
    suite.failures.push({ name: `${name} exited ${status} with no failed test`, message: exitMessage(suite) });
  }
  return suite;
}

function vitestSuite(dir, status, cwd) {
  return suiteFrom('vitest', dir, 'vitest.json', status, cwd, (suite, json) => {
    const v = JSON.parse(json);
    suite.passed = v.numPassedTests;
    suite.failed = v.numFailedTests;
    suite.skipped = v.numPendingTests + v.numTodoTests;
    const ends = (v.testResults ?? []).map((f) => f.endTime).filter(Number.isFinite);
    if (Number.isFinite(v.startTime) && ends.length > 0) suite.seconds = (Math.max(...ends) - v.startTime) / 1000;
    for (const f of v.testResults ?? []) {
      const name = path.relative(cwd, f.name);
      const failedTests = (f.assertionResults ?? []).filter((t) => t.status === 'failed');
      for (const t of failedTests) suite.failures.push({ name: `${name} > ${t.fullName}`, message: (t.failureMessages ?? []).join('\n') });
      // A file fails with no failed test when a hook fails it (its tests then show as skipped).
      if (f.status === 'failed' && failedTests.length === 0) {
        suite.failed += 1;
        suite.failures.push({ name, message: f.message || 'failed outside its tests' });
      }
    }
  }, (suite) => {
    // An error thrown outside any test (an unhandled rejection) fails vitest's exit code but not its JSON report;
    // its text is in vitest's own output, kept in vitest.log.
    const text = existsSync(suite.log) ? plain(readFileSync(suite.log, 'utf8')) : '';
    const at = text.search(/Unhandled (Error|Rejection)/);
    return at >= 0 ? text.slice(at) : 'see its log';
  });
}

function pytestSuite(dir, status, cwd) {
  return suiteFrom('pytest', dir, 'pytest.xml', status, cwd, (suite, xml) => {
    const tag = /<testsuite\b[^>]*>/.exec(xml)?.[0] ?? '';
    const attr = (name) => Number(new RegExp(`\\b${name}="([\\d.]+)"`).exec(tag)?.[1] ?? 0);
    const failed = attr('failures') + attr('errors');
    suite.failed = failed;
    suite.skipped = attr('skipped');
    suite.passed = attr('tests') - failed - attr('skipped');
    if (/\btime="/.test(tag)) suite.seconds = attr('time');
    for (const [, tc, kind] of xml.matchAll(/<testcase\b([^>]*)>\s*<(failure|error)\b/g)) {
      const a = (name) => xmlText(new RegExp(`\\b${name}="([^"]*)"`).exec(tc)?.[1] ?? '');
      const rest = xml.slice(xml.indexOf(tc));
      const message = xmlText(new RegExp(`<${kind}\\b[^>]*\\bmessage="([^"]*)"`).exec(rest)?.[1] ?? kind);
      suite.failures.push({ name: `python-engines ${a('classname')}::${a('name')}`, message });
    }
  });
}

/** The lines to print, and whether every suite passed. */
export function summarize(dir, { vitestStatus = 0, pytestStatus = 0, cwd = process.cwd() } = {}) {
  const suites = [vitestSuite(dir, vitestStatus, cwd), pytestSuite(dir, pytestStatus, cwd)];
  const rel = (p) => path.relative(cwd, p);
  const lines = [];
  const failures = suites.flatMap((s) => s.failures.map((f) => ({ ...f, suite: s })));

  // Above the last screen: the head of each failure's message (vitest printed its errors long before).
  for (const f of failures.slice(0, DETAILED_AT_MOST)) lines.push(`FAILED ${f.name}`, head(f.message), '');
  if (failures.length > DETAILED_AT_MOST) lines.push(`(${failures.length - DETAILED_AT_MOST} more failures: their messages are in the logs)`, '');

  // The last screen.
  lines.push('─'.repeat(72));
  const sdkLog = path.join(dir, 'temporal-sdk.log');
  for (const s of suites.filter((x) => x.failures.length > 0)) {
    lines.push(`${s.name} failures, details in ${rel(s.log)}${s.name === 'vitest' && existsSync(sdkLog) ? ` (Temporal SDK warnings: ${rel(sdkLog)})` : ''}:`);
    for (const f of s.failures.slice(0, NAMED_AT_MOST)) lines.push(`  FAILED ${f.name}: ${firstLine(f.message)}`);
    if (s.failures.length > NAMED_AT_MOST) lines.push(`  … and ${s.failures.length - NAMED_AT_MOST} more, named in ${rel(s.log)}`);
  }
  for (const s of suites) {
    // Not "N passed, N failed": that form is the closing line's alone, for whatever reads it from the log.
    const time = s.seconds === undefined ? '' : ` | ${seconds(s.seconds)}`;
    lines.push(`${s.name}: ${s.passed} passed | ${s.failed} failed | ${s.skipped} skipped${time} | log: ${rel(s.log)}`);
  }
  const total = (k) => suites.reduce((n, s) => n + s[k], 0);
  lines.push(`tests: ${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped`);
  return { lines, ok: total('failed') === 0 && total('passed') > 0 };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node scripts/test-summary.mjs <reports dir>');
    process.exit(2);
  }
  const { lines, ok } = summarize(dir, { vitestStatus: Number(process.env.VITEST_STATUS ?? 0), pytestStatus: Number(process.env.PYTEST_STATUS ?? 0) });
  console.log(lines.join('\n'));
  process.exit(ok ? 0 : 1);
}
