// The Temporal SDK's logs in tests. Many tests make activities and workflows fail on purpose (the workflow
// tier's failing envs, cancelled runs), and the SDK logs each such failure as a WARN with a stack: thousands of
// lines that read like real errors. So, for workers running inside the test process:
//   - every entry at WARN and above, the SDK core's own (forwarded) included, goes to one file,
//     `$ROLLFLOW_TEST_REPORTS/temporal-sdk.log` (`.state/test-reports/` by default), one line each, named by test;
//   - a test that fails prints its own entries (the last 40, one line each) after its error;
//   - an ERROR entry is always printed at once, one line: nothing the SDK thinks is an error is hidden.
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, afterEach, beforeEach } from 'vitest';
import { formatSdkEntry, SDK_LOG_FILE } from './helpers/sdk-log';

const reports = path.resolve(path.join(__dirname, '..'), process.env.ROLLFLOW_TEST_REPORTS ?? '.state/test-reports');
const logFile = path.join(reports, SDK_LOG_FILE);
const SHOWN_PER_FAILED_TEST = 40;

const ROOT = path.join(__dirname, '..');
const rel = (file: string) => path.relative(ROOT, file);
let current = '(the test file\'s set-up)';
let entries: string[] = [];
let dropped = 0;

function record(entry: LogEntry): void {
  const line = formatSdkEntry(entry, current);
  try {
    mkdirSync(reports, { recursive: true });
    appendFileSync(logFile, `${line}\n`);
  } catch {
    // A log that cannot be written must not fail a test; the entry is still kept for a failing test below.
  }
  if (entries.length >= 200) {
    entries.shift();
    dropped += 1;
  }
  entries.push(line);
  if (entry.level === 'ERROR') process.stderr.write(`${line}\n`);
}

Runtime.install({
  logger: new DefaultLogger('WARN', record),
  // The core's own logs (e.g. "Activity not found on completion" after a cancellation) reach the logger above
  // instead of stderr.
  telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) } },
});

beforeEach((ctx) => {
  current = `${rel(ctx.task.file.filepath)} > ${ctx.task.name}`;
  entries = [];
  dropped = 0;
});

function printEntries(what: string): void {
  if (entries.length === 0) return;
  const shown = entries.slice(-SHOWN_PER_FAILED_TEST);
  const skipped = dropped + entries.length - shown.length;
  console.error(
    [`Temporal SDK warnings during ${what} (${skipped > 0 ? `last ${shown.length}; ` : ''}all in ${path.relative(process.cwd(), logFile)}):`, ...shown].join('\n'),
  );
}

afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') printEntries('this failed test');
  current = `${rel(ctx.task.file.filepath)} (after ${ctx.task.name})`;
  entries = [];
  dropped = 0;
});

// A failing beforeAll/afterAll fails the file without a failed test: show what the SDK said meanwhile.
// vitest passes the suite second, and requires an object pattern first.
afterAll(({}, suite) => {
  if (suite.result?.state === 'fail') printEntries(`${rel(suite.file.filepath)}'s set-up or tear-down`);
});
