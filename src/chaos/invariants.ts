/**
 * The invariants a run must keep whatever was killed under it, checked on
 * the run's own records (src/chaos/records.ts reads them): pure, so each can
 * be shown to fail on hand-made records.
 */
import { sampleUid } from '../core';
import type { StalePolicy } from '../workflows/run-admission';

/** One execution of a group workflow of the run, as Temporal recorded it. */
export interface GroupExecution {
  workflowId: string;
  /** The group's uid (e<epoch>-p<position>); a restarted (stale) group has several executions. */
  uid: string;
  /** Temporal's execution status: COMPLETED, CANCELLED, RUNNING, TERMINATED, FAILED, TIMED_OUT, … */
  status: string;
  /** Closed after the run did (or still open): it was in flight when the run ended. */
  closedAfterRun: boolean;
  /** Its history holds a cancel request (the run cancels the groups in flight when it ends). */
  cancelRequested: boolean;
  /** The group's result, for a completed execution. */
  result?: { accepted: boolean; error?: string };
}

export interface RunRecords {
  runId: string;
  /** The run workflow's final status (COMPLETED, FAILED, …), or why it could not be read. */
  outcome: string;
  /** What the run returned. */
  final?: {
    step: number;
    version: number;
    /** Samples accepted but not trained when it ended, and samples of the groups still in flight. */
    buffered: number;
    running: number;
    totals: { dispatchedGroups: number; filteredGroups: number; failedGroups: number; droppedSamples: number; restartedSamples: number };
  };
  /** <run_dir>/<run id>/metrics.jsonl, this run's records in file order. */
  metrics: { step: number; version: number; wall_s: number; stalenessMax: number }[];
  /**
   * The batch files the trainer read: step, sample uids, and the oldest weight
   * version that generated a token of any of its samples (version_spans): a
   * server restarted with its launch weights shows up there, not in the run's
   * dispatch staleness.
   */
  batches: { step: number; uids: string[]; oldestTokenVersion: number }[];
  groups: GroupExecution[];
}

export interface Expectations {
  maxSteps: number;
  samplesPerStep: number;
  groupSize: number;
  /** ⌈α⌉, the staleness bound. */
  maxStaleness: number;
  stalePolicy: StalePolicy;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/** Where every dispatched group went; `vanished` names the executions nothing explains. */
export interface GroupAccounting {
  dispatched: number;
  executions: number;
  consumed: number;
  filtered: number;
  failed: number;
  /** Accepted, never trained, closed before the run: dropped or restarted as stale, or buffered at the end. */
  staleOrBuffered: number;
  /** In flight when the run ended: cancelled, or finished after it. */
  endedWithRun: number;
  vanished: string[];
}

const CLOSED_OK = new Set(['COMPLETED', 'CANCELLED', 'CANCELED']);

/** The values that occur more than once, each with its count. */
function repeated<T>(xs: readonly T[]): [T, number][] {
  const counts = new Map<T, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const list = (xs: readonly unknown[], most = 8) => (xs.length > most ? `${xs.slice(0, most).join(', ')}, … (${xs.length})` : xs.join(', '));

function stepChecks(r: RunRecords, e: Expectations): Check[] {
  const checks: Check[] = [];
  for (const [what, steps] of [['metrics records', r.metrics.map((m) => m.step)], ['batch files', r.batches.map((b) => b.step)]] as const) {
    const twice = repeated(steps);
    const missing = range(e.maxSteps).filter((s) => !steps.includes(s));
    const beyond = steps.filter((s) => s < 0 || s >= e.maxSteps);
    checks.push({ name: `${what}: no step repeated`, ok: twice.length === 0, detail: twice.length ? `repeated: ${list(twice.map(([s, n]) => `step ${s} ×${n}`))}` : `${steps.length} records` });
    checks.push({ name: `${what}: no step skipped`, ok: missing.length === 0 && beyond.length === 0, detail: missing.length || beyond.length ? `missing steps ${list(missing)}${beyond.length ? `; outside 0..${e.maxSteps - 1}: ${list(beyond)}` : ''}` : `steps 0..${e.maxSteps - 1}` });
  }
  return checks;
}

function versionCheck(r: RunRecords): Check {
  const wrong = r.metrics.filter((m) => m.version !== m.step + 1).map((m) => `step ${m.step} trained version ${m.version}`);
  if (r.final && r.final.version !== r.final.step) wrong.unshift(`final version ${r.final.version} after ${r.final.step} steps`);
  return { name: 'trained version = step count', ok: wrong.length === 0 && r.final !== undefined, detail: r.final ? (wrong.length ? list(wrong) : `version ${r.final.version} after ${r.final.step} steps`) : 'no final status' };
}

function uidCheck(r: RunRecords, e: Expectations): Check {
  const uids = r.batches.flatMap((b) => b.uids);
  const twice = repeated(uids);
  const expected = e.maxSteps * e.samplesPerStep;
  const ok = twice.length === 0 && uids.length === expected;
  const detail = twice.length ? `consumed more than once: ${list(twice.map(([u, n]) => `${u} ×${n}`))}` : `${uids.length} consumed, ${expected} expected`;
  return { name: 'every consumed uid unique', ok, detail };
}

/** Dispatch staleness (the run's metrics) and token staleness (the batch files' version spans) within ⌈α⌉, unless stale samples are accepted. */
function stalenessChecks(r: RunRecords, e: Expectations): Check[] {
  const sources = [
    ['staleness within the bound (dispatch, metrics)', r.metrics.map((m) => ({ step: m.step, staleness: m.stalenessMax }))],
    ['staleness within the bound (oldest token, batch files)', r.batches.map((b) => ({ step: b.step, staleness: b.step - b.oldestTokenVersion }))],
  ] as const;
  return sources.map(([name, steps]) => {
    const max = Math.max(0, ...steps.map((x) => x.staleness));
    if (e.stalePolicy === 'accept') return { name, ok: true, detail: `stale_policy accept trains stale samples: not bounded (max ${max})` };
    const over = steps.filter((x) => x.staleness > e.maxStaleness).map((x) => `step ${x.step}: ${x.staleness}`);
    return { name, ok: over.length === 0, detail: over.length ? `above ${e.maxStaleness}: ${list(over)}` : `max ${max} ≤ ${e.maxStaleness}` };
  });
}

/**
 * Every group execution is consumed (its samples in a batch file), filtered,
 * failed, accepted but not trained (stale or left in the buffer), or in
 * flight when the run ended; the counts must agree with the run's totals.
 */
export function accountGroups(r: RunRecords, e: Expectations): { accounting: GroupAccounting; checks: Check[] } {
  const consumedUids = new Set(r.batches.flatMap((b) => b.uids));
  const a: GroupAccounting = { dispatched: r.final?.totals.dispatchedGroups ?? 0, executions: r.groups.length, consumed: 0, filtered: 0, failed: 0, staleOrBuffered: 0, endedWithRun: 0, vanished: [] };
  const partly: string[] = [];
  const consumedGroups = new Set<string>();
  for (const g of r.groups) {
    const members = range(e.groupSize).filter((i) => consumedUids.has(sampleUid(g.uid, i))).length;
    if (members > 0 && !consumedGroups.has(g.uid)) {
      consumedGroups.add(g.uid);
      a.consumed++;
      if (members !== e.groupSize || g.status !== 'COMPLETED' || !g.result?.accepted) partly.push(`${g.workflowId} (${members}/${e.groupSize} consumed, ${g.status})`);
    } else if (!CLOSED_OK.has(g.status)) a.vanished.push(`${g.workflowId}: ${g.status}`);
    else if (g.closedAfterRun || g.cancelRequested) a.endedWithRun++;
    else if (g.result?.error !== undefined) a.failed++;
    else if (g.result && !g.result.accepted) a.filtered++;
    else if (g.result?.accepted) a.staleOrBuffered++;
    else a.vanished.push(`${g.workflowId}: ${g.status} without a result`);
  }
  const t = r.final?.totals;
  const G = e.groupSize;
  const checks: Check[] = [];
  if (!r.final || !t) return { accounting: a, checks: [{ name: 'every dispatched group accounted for', ok: false, detail: 'no final status: the run totals are unknown' }] };
  const agree = (name: string, seen: number, expected: number, from: string) => checks.push({ name, ok: seen === expected, detail: `${seen} seen, ${expected} by ${from}` });
  agree('groups: one execution per dispatch', a.executions, t.dispatchedGroups, 'the run totals (dispatchedGroups)');
  agree('groups: consumed', a.consumed, (e.maxSteps * e.samplesPerStep) / G, 'max_steps × B / G');
  agree('groups: filtered', a.filtered, t.filteredGroups, 'the run totals (filteredGroups)');
  agree('groups: failed', a.failed, t.failedGroups, 'the run totals (failedGroups)');
  agree('groups: stale or left buffered', a.staleOrBuffered, (t.droppedSamples + t.restartedSamples + r.final.buffered) / G, 'the run totals (dropped + restarted + buffered at the end) / G');
  agree('groups: in flight at the end', a.endedWithRun, r.final.running / G, 'the final status (running / G)');
  checks.push({ name: 'groups: none vanished', ok: a.vanished.length === 0 && partly.length === 0, detail: a.vanished.length || partly.length ? list([...a.vanished, ...partly]) : `${a.executions} executions accounted for` });
  return { accounting: a, checks };
}

export function checkRun(r: RunRecords, e: Expectations): { ok: boolean; checks: Check[]; accounting: GroupAccounting } {
  const completed: Check = { name: 'run completed', ok: r.outcome === 'COMPLETED' && r.final?.step === e.maxSteps, detail: `${r.outcome}${r.final ? `, ${r.final.step} of ${e.maxSteps} steps` : ''}` };
  const { accounting, checks: groupChecks } = accountGroups(r, e);
  const checks = [completed, ...stepChecks(r, e), versionCheck(r), uidCheck(r, e), ...stalenessChecks(r, e), ...groupChecks];
  return { ok: checks.every((c) => c.ok), checks, accounting };
}
