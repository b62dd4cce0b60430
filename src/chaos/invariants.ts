/**
 * The invariants a run must keep whatever was killed under it, checked on
 * its records (src/chaos/records.ts reads them): pure, so each can be shown
 * to fail on hand-made records. Each compares records of different writers
 * or reads one that the property could falsify: a check of a workflow counter
 * against itself, or of a record deduplicated before it is read, proves
 * nothing. The trainer's step log: trainer-invariants.ts; Temporal's
 * histories and the env action log: history-invariants.ts.
 */
import { sampleUid } from '../core';
import type { StalePolicy } from '../workflows/run-admission';
import { envActionCheck, historyChecks } from './history-invariants';
import type { Check, RunRecords } from './record-types';
import { trainerChecks } from './trainer-invariants';

export type { Check, GroupExecution, RunRecords, TrainerLogLine, TrainStepExecution } from './record-types';

export interface Expectations {
  maxSteps: number;
  samplesPerStep: number;
  groupSize: number;
  /** ⌈α⌉, the staleness bound. */
  maxStaleness: number;
  stalePolicy: StalePolicy;
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

/**
 * metrics.jsonl, every line as written. appendMetrics looks for the (run, step)
 * record before appending, so a repeat here is not a step trained twice (the
 * trainer's log and the histories show that): it is that write's idempotency
 * failing, e.g. a retry racing an attempt that was stopped, not dead. A step
 * missing means the run went on without recording it.
 */
function metricsCheck(r: RunRecords, e: Expectations): Check {
  const steps = r.metrics.map((m) => m.step);
  const twice = repeated(steps).map(([s, n]) => `step ${s} ×${n}`);
  const missing = range(e.maxSteps).filter((s) => !steps.includes(s));
  const beyond = steps.filter((s) => s < 0 || s >= e.maxSteps);
  const wrong = [...twice, ...(missing.length ? [`missing steps ${list(missing)}`] : []), ...(beyond.length ? [`outside 0..${e.maxSteps - 1}: ${list(beyond)}`] : [])];
  return { name: 'metrics.jsonl: one line per step (the idempotent write)', ok: wrong.length === 0, detail: wrong.length ? wrong.join('; ') : `${steps.length} lines, steps 0..${e.maxSteps - 1}` };
}

/**
 * The sample store's inventory after the run. A batch file is named by its
 * step, so the files cannot repeat a step; what can go wrong is a file
 * missing or unreadable, a file past max_steps, a trained sample without its
 * sample file, or one uid in two batch files (a group trained twice).
 */
function storeChecks(r: RunRecords, e: Expectations): Check[] {
  const steps = r.batches.map((b) => b.step);
  const missing = range(e.maxSteps).filter((s) => !steps.includes(s));
  const wrongFiles = [...(missing.length ? [`missing steps ${list(missing)}`] : []), ...steps.filter((s) => s >= e.maxSteps).map((s) => `step ${s} past max_steps`), ...r.batches.flatMap((b) => (b.unreadable ? [`step ${b.step}: ${b.unreadable}`] : []))];
  const uids = r.batches.flatMap((b) => b.uids);
  const twice = repeated(uids);
  const expected = e.maxSteps * e.samplesPerStep;
  const stored = new Set(r.sampleUids);
  const orphans = uids.filter((u) => !stored.has(u));
  return [
    { name: 'store: one readable batch file per step', ok: wrongFiles.length === 0, detail: wrongFiles.length ? wrongFiles.join('; ') : `${steps.length} files, steps 0..${e.maxSteps - 1}` },
    { name: 'store: no sample uid trained twice across batch files', ok: twice.length === 0 && uids.length === expected, detail: twice.length ? `in more than one place: ${list(twice.map(([u, n]) => `${u} ×${n}`))}` : `${uids.length} trained, ${expected} expected` },
    { name: 'store: every trained uid has its sample file', ok: orphans.length === 0, detail: orphans.length ? `no sample file: ${list(orphans)}` : `${stored.size} sample files` },
  ];
}

/**
 * Staleness of every trained token, from the batch files: the step minus the
 * oldest weight version that generated a token of the sample (its
 * version_spans). It replaces the run's dispatch staleness (metrics.jsonl),
 * which the run computes over the buffer after its stale filter dropped what
 * was over the bound, so it could not exceed the bound. A sample that records
 * no versions, or spans that leave a trained token out, fails: its staleness
 * is unknown.
 */
function stalenessCheck(r: RunRecords, e: Expectations): Check {
  const name = 'staleness within the bound (every trained token, batch files)';
  const unknown = r.batches.flatMap((b) => b.oldestTokenVersion.flatMap((v, i) => (v === undefined ? [b.uids[i]] : [])));
  const per = r.batches.flatMap((b) => b.oldestTokenVersion.flatMap((v) => (v === undefined || v === null ? [] : [{ step: b.step, staleness: b.step - v }])));
  const max = Math.max(0, ...per.map((x) => x.staleness));
  if (unknown.length) return { name, ok: false, detail: `no versions covering every token: ${list(unknown)}` };
  if (e.stalePolicy === 'accept') return { name, ok: true, detail: `stale_policy accept trains stale samples: not bounded (max ${max})` };
  const over = [...new Set(per.filter((x) => x.staleness > e.maxStaleness).map((x) => `step ${x.step}: ${x.staleness}`))];
  return { name, ok: over.length === 0, detail: over.length ? `above ${e.maxStaleness}: ${list(over)}` : `max ${max} ≤ ${e.maxStaleness}` };
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

/** Nothing the run wrote is half-written: what a kill mid-write or a full disk must not leave (durable writes: temp, fsync, rename; appends cut back). */
function tornFilesCheck(r: RunRecords): Check {
  const name = 'files: none half-written (the run\'s JSON and JSON-lines files parse)';
  if (r.tornFiles === undefined) return { name, ok: true, detail: 'not read' };
  return { name, ok: r.tornFiles.length === 0, detail: r.tornFiles.length ? `do not parse: ${list(r.tornFiles)}` : 'every file parses' };
}

/** Each saved trainer state the harness damaged (a corrupt fault) was passed over by the trainer's recovery, by recovery.jsonl. */
/**
 * Every damaged state a recovery could have loaded was passed over. A state of the run's last version (max_steps)
 * damaged as the run ended is exempt: a recovery runs before a train step, and no step follows the last.
 */
export function corruptionCheck(corrupted: readonly number[], r: Pick<RunRecords, 'skippedStates'>, maxSteps: number): Check {
  const skipped = new Set((r.skippedStates ?? []).map((s) => s.version));
  const needed = corrupted.filter((v) => v < maxSteps);
  const missed = needed.filter((v) => !skipped.has(v));
  const last = corrupted.length > needed.length ? `; v${maxSteps} damaged after the last step, which no recovery needed` : '';
  return { name: 'trainer recovery: every damaged state passed over (recovery.jsonl)', ok: missed.length === 0, detail: missed.length ? `never passed over: ${list(missed.map((v) => `v${v}`))}` : `${needed.length} damaged, passed over: ${list([...skipped].map((v) => `v${v}`))}${last}` };
}

export function checkRun(r: RunRecords, e: Expectations): { ok: boolean; checks: Check[]; accounting: GroupAccounting } {
  const completed: Check = { name: 'run completed', ok: r.outcome === 'COMPLETED' && r.final?.step === e.maxSteps, detail: `${r.outcome}${r.final ? `, ${r.final.step} of ${e.maxSteps} steps` : ''}` };
  const { accounting, checks: groupChecks } = accountGroups(r, e);
  const checks = [completed, metricsCheck(r, e), ...trainerChecks(r, e.maxSteps), ...storeChecks(r, e), stalenessCheck(r, e), tornFilesCheck(r), ...historyChecks(r, e.maxSteps), envActionCheck(r), ...groupChecks];
  return { ok: checks.every((c) => c.ok), checks, accounting };
}
