// One line per Temporal SDK log entry, for tests/setup.ts: the SDK's default prints each entry's metadata over many
// lines, an error with its whole stack.
import type { LogEntry } from '@temporalio/worker';

export const SDK_LOG_FILE = 'temporal-sdk.log';
const MAX_LINE = 600;
// Opaque or repeated on every entry of a test's worker: they name nothing a reader needs.
const SKIPPED = new Set(['taskToken', 'sdkComponent', 'namespace', 'workflowRunId', 'runId', 'taskQueue']);

function value(v: unknown): string {
  if (v instanceof Error) return `${v.name}: ${v.message.split('\n')[0]}`;
  if (typeof v === 'string') return /\s/.test(v) ? JSON.stringify(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  try {
    return JSON.stringify(v, (_k, inner: unknown) => (inner instanceof Error ? `${inner.name}: ${inner.message}` : inner));
  } catch {
    return String(v);
  }
}

/** `<time> <LEVEL> [<where>] <message> key=value …`, on one line, at most 600 characters. */
export function formatSdkEntry(entry: LogEntry, where: string): string {
  const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  const meta = Object.entries(entry.meta ?? {})
    .filter(([k]) => !SKIPPED.has(k))
    .map(([k, v]) => `${k}=${value(v)}`);
  const line = [time, entry.level, `[${where}]`, entry.message.split('\n')[0], ...meta].join(' ').replace(/\s*\n\s*/g, ' ');
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line;
}
