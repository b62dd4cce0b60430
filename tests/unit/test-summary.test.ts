// scripts/test-summary.mjs ends `make test`: CI and people read only the last screen, so a failing run must
// name its failing tests and the log to read there, and the closing line CI reads must stay last. Fed small
// reports of the shape vitest's JSON reporter and pytest's --junitxml write, the script is run as make test
// runs it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '../..');
const SCRIPT = path.join(ROOT, 'scripts/test-summary.mjs');
const LAST_SCREEN = 40;

interface FakeTest {
  name: string;
  failure?: string;
}

function vitestJson(files: Record<string, FakeTest[]>, extra: Partial<{ numPendingTests: number }> = {}) {
  const all = Object.values(files).flat();
  const failed = all.filter((t) => t.failure !== undefined).length;
  return JSON.stringify({
    numTotalTests: all.length,
    numPassedTests: all.length - failed,
    numFailedTests: failed,
    numPendingTests: extra.numPendingTests ?? 0,
    numTodoTests: 0,
    startTime: 1_000_000,
    success: failed === 0,
    testResults: Object.entries(files).map(([file, tests]) => ({
      name: path.join(ROOT, file),
      status: tests.some((t) => t.failure !== undefined) ? 'failed' : 'passed',
      message: '',
      startTime: 1_000_000,
      endTime: 1_012_500,
      assertionResults: tests.map((t) => ({
        fullName: `suite ${t.name}`,
        title: t.name,
        status: t.failure === undefined ? 'passed' : 'failed',
        failureMessages: t.failure === undefined ? [] : [`${t.failure}\n    at ${file}:12:3\n    at /x/node_modules/vitest/dist/runner.js:1:1`],
      })),
    })),
  });
}

function pytestXml(tests: FakeTest[], skipped = 0): string {
  const failed = tests.filter((t) => t.failure !== undefined).length;
  const cases = tests
    .map((t) =>
      t.failure === undefined
        ? `<testcase classname="tests.test_config" name="${t.name}" time="0.001" />`
        : `<testcase classname="tests.test_config" name="${t.name}" time="0.001"><failure message="${t.failure.replace(/\n/g, '&#10;')}">trace</failure></testcase>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="${failed}" skipped="${skipped}" tests="${tests.length + skipped}" time="3.21">${cases}</testsuite></testsuites>`;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Writes the reports into a fresh directory and runs the summary there; its output lines and exit code. */
function summarize(reports: { vitest?: string; pytest?: string }, env: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-summary-'));
  dirs.push(dir);
  if (reports.vitest !== undefined) writeFileSync(path.join(dir, 'vitest.json'), reports.vitest);
  if (reports.pytest !== undefined) writeFileSync(path.join(dir, 'pytest.xml'), reports.pytest);
  writeFileSync(path.join(dir, 'vitest.log'), 'the vitest output\n');
  writeFileSync(path.join(dir, 'pytest.log'), 'the pytest output\n');
  const r = spawnSync(process.execPath, [SCRIPT, dir], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, VITEST_STATUS: '0', PYTEST_STATUS: '0', ...env } });
  const lines = r.stdout.trimEnd().split('\n');
  return { dir: path.relative(ROOT, dir), lines, last: lines.slice(-LAST_SCREEN).join('\n'), status: r.status, stderr: r.stderr };
}

const passing = (n: number, prefix = 't'): FakeTest[] => Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}` }));

describe('the make test summary', () => {
  it('a green run: one line per suite, then the closing line CI reads, last', () => {
    const r = summarize({ vitest: vitestJson({ 'tests/unit/a.test.ts': passing(3) }, { numPendingTests: 1 }), pytest: pytestXml(passing(4), 2) });
    expect(r.status).toBe(0);
    expect(r.lines.slice(-3)).toEqual([
      `vitest: 3 passed | 0 failed | 1 skipped | 12.5 s | log: ${r.dir}/vitest.log`,
      `pytest: 4 passed | 0 failed | 2 skipped | 3.2 s | log: ${r.dir}/pytest.log`,
      'tests: 7 passed, 0 failed, 3 skipped',
    ]);
    expect(r.lines.join('\n')).not.toContain('FAILED');
    // The closing line is the only one of its form, so a reader that greps for it finds that one.
    expect(r.lines.filter((l) => /\d+ passed, \d+ failed/.test(l))).toEqual(['tests: 7 passed, 0 failed, 3 skipped']);
  });

  it('one failure in each suite: the last 40 lines name both and the log to read', () => {
    const vitest = vitestJson({
      'tests/unit/a.test.ts': [...passing(2), { name: 'adds up', failure: 'AssertionError: expected 3 to be 4' }],
      'tests/unit/b.test.ts': passing(5),
    });
    const pytest = pytestXml([...passing(3), { name: 'test_unknown_key', failure: 'AssertionError: an unknown key\nassert 1 == 2' }]);
    const r = summarize({ vitest, pytest }, { VITEST_STATUS: '1', PYTEST_STATUS: '1' });
    expect(r.status).toBe(1);
    expect(r.last).toContain('FAILED tests/unit/a.test.ts > suite adds up: AssertionError: expected 3 to be 4');
    expect(r.last).toContain(`vitest failures, details in ${r.dir}/vitest.log`);
    expect(r.last).toContain('FAILED python-engines tests.test_config::test_unknown_key: AssertionError: an unknown key');
    expect(r.last).toContain(`pytest failures, details in ${r.dir}/pytest.log`);
    expect(r.lines.at(-1)).toBe('tests: 10 passed, 2 failed, 0 skipped');
    expect(r.lines.join('\n')).not.toContain('node_modules'); // stack frames of the runner are left out
  });

  it('many failures: still every suite and the log on the last screen, the rest counted', () => {
    const failing = Array.from({ length: 35 }, (_, i) => ({ name: `broken ${i}`, failure: `Error: number ${i}\nline two\nline three` }));
    const r = summarize({ vitest: vitestJson({ 'tests/unit/a.test.ts': failing }), pytest: pytestXml([{ name: 'test_x', failure: 'boom' }]) }, { VITEST_STATUS: '1', PYTEST_STATUS: '1' });
    expect(r.last).toContain('FAILED tests/unit/a.test.ts > suite broken 0: Error: number 0');
    expect(r.last).toContain(`… and 15 more, named in ${r.dir}/vitest.log`);
    expect(r.last).toContain('FAILED python-engines tests.test_config::test_x: boom');
    expect(r.last).toContain(`pytest failures, details in ${r.dir}/pytest.log`);
    expect(r.lines.at(-1)).toBe('tests: 0 passed, 36 failed, 0 skipped');
  });

  it('a missing report or a suite that failed outside its tests counts as a failure, named', () => {
    const r = summarize({ vitest: vitestJson({ 'tests/unit/a.test.ts': passing(2) }) }, { VITEST_STATUS: '1' });
    expect(r.status).toBe(1);
    expect(r.last).toContain('FAILED vitest exited 1 with no failed test');
    expect(r.last).toContain(`FAILED pytest: no report (${r.dir}/pytest.xml): pytest did not finish`);
    expect(r.lines.at(-1)).toBe('tests: 2 passed, 2 failed, 0 skipped');
  });

  it('a pytest run that exits non-zero with every test passed (e.g. an error at collection teardown) fails', () => {
    const r = summarize({ vitest: vitestJson({ 'tests/unit/a.test.ts': passing(1) }), pytest: pytestXml(passing(2)) }, { PYTEST_STATUS: '3' });
    expect(r.status).toBe(1);
    expect(r.last).toContain('FAILED pytest exited 3 with no failed test');
  });
});
