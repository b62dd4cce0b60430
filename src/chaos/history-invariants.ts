/**
 * Invariants on Temporal's histories of the run's trainStep workflows and of
 * the run's own executions, against the trainer's step log and the store's
 * batch files; and on the env server's action log. Pure.
 */
import { compareSampleUids } from '../core';
import type { Check, RunRecords } from './record-types';
import { finalLineageSteps, uidsSha256 } from './trainer-invariants';

const list = (xs: readonly unknown[], most = 8) => (xs.length > most ? `${xs.slice(0, most).join(', ')}, … (${xs.length})` : xs.join(', '));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const result = (name: string, wrong: string[], fine: string): Check => ({ name, ok: wrong.length === 0, detail: wrong.length ? list(wrong) : fine });

export function historyChecks(r: RunRecords, maxSteps: number): Check[] {
  const checks: Check[] = [];
  // The run's executions started each trainStep child once (a second start of step s would train it again, or fail).
  const starts = new Map<string, number>();
  for (const id of r.trainStepStarts) starts.set(id, (starts.get(id) ?? 0) + 1);
  const startsWrong = [...starts].filter(([, n]) => n > 1).map(([id, n]) => `${id} started ${n}×`);
  if (starts.size !== maxSteps) startsWrong.push(`${starts.size} trainStep children started, ${maxSteps} expected`);
  checks.push(result('Temporal: the run started each step\'s trainStep once', startsWrong, `${starts.size} trainStep children`));

  // One completed trainStep execution per step, whose runTrainStep activity completed once, for that step.
  const byStep = new Map<number, RunRecords['trainSteps']>();
  for (const t of r.trainSteps) byStep.set(t.step, [...(byStep.get(t.step) ?? []), t]);
  const once: string[] = [];
  for (const s of range(maxSteps)) {
    const execs = byStep.get(s) ?? [];
    if (execs.length !== 1) once.push(`step ${s}: ${execs.length} executions`);
    for (const t of execs) {
      if (t.status !== 'COMPLETED') once.push(`${t.workflowId}: ${t.status}`);
      if (t.trainScheduled !== 1 || t.trainCompleted !== 1) once.push(`${t.workflowId}: runTrainStep scheduled ${t.trainScheduled}×, completed ${t.trainCompleted}×`);
      if (t.trainInputStep !== s || (t.trainResult && (t.trainResult.step !== s || t.trainResult.version !== s + 1))) once.push(`${t.workflowId}: asked step ${t.trainInputStep}, got ${t.trainResult ? `step ${t.trainResult.step} v${t.trainResult.version}` : 'no result'}`);
    }
  }
  for (const [s] of byStep) if (s < 0 || s >= maxSteps) once.push(`step ${s} outside 0..${maxSteps - 1}`);
  const retried = r.trainSteps.filter((t) => t.trainAttempts > 1).length;
  checks.push(result('Temporal: each step\'s runTrainStep completed once, for its step', once, `${r.trainSteps.length} trainStep executions; ${retried} needed more than one attempt`));

  // What Temporal says each step trained (version, batch) is what the trainer logged for its final weights and what the store holds.
  const log = r.trainerLog;
  const chain = 'lines' in log ? finalLineageSteps(log.lines).steps : [];
  const files = new Map(r.batches.filter((b) => !b.unreadable).map((b) => [b.step, uidsSha256(b.uids)]));
  const agree: string[] = 'lines' in log ? [] : [`no trainer step log: ${log.why}`];
  for (const t of r.trainSteps) {
    const logged = chain.find((l) => l.step === t.step);
    // The workflow chooses the samples; writeBatch writes them in the canonical uid order (bit-identical batch files).
    const chosen = t.batchUids ? uidsSha256([...t.batchUids].sort(compareSampleUids)) : undefined;
    if (!chosen) agree.push(`${t.workflowId}: no writeBatch input in its history`);
    else if (chosen !== files.get(t.step)) agree.push(`${t.workflowId}: its batch differs from the store's file`);
    if (!logged) agree.push(`${t.workflowId}: the trainer's final weights never took step ${t.step}`);
    else if (logged.uidsSha256 !== chosen || logged.versionAfter !== t.trainResult?.version) agree.push(`${t.workflowId}: the trainer logged v${logged.versionAfter} on ${logged.uidsSha256 === chosen ? 'the same' : 'another'} batch; the history says v${t.trainResult?.version}`);
  }
  checks.push(result('Temporal ↔ trainer ↔ store: each step\'s version and batch agree', agree, `${r.trainSteps.length} steps`));
  return checks;
}

/** Each env step (session, index) applied once by the env server; a retry must get the recorded result, not a second application. */
export function envActionCheck(r: Pick<RunRecords, 'envActions'>): Check {
  const name = 'env: no (session, index) applied twice';
  const a = r.envActions;
  if (!a) return { name, ok: true, detail: 'not checked: the env server keeps no action log (env option action_log)' };
  const seen = new Map<string, string[]>();
  for (const l of a.lines) {
    const key = `${l.session}#${l.index}`;
    seen.set(key, [...(seen.get(key) ?? []), l.actionSha256]);
  }
  const twice = [...seen].filter(([, hashes]) => hashes.length > 1).map(([key, hashes]) => `${key} ×${hashes.length}${new Set(hashes).size > 1 ? ' (different actions)' : ''}`);
  if (a.unreadableLines) twice.push(`${a.unreadableLines} unreadable lines in ${a.file}`);
  return result(name, twice, `${a.lines.length} actions in ${new Set(a.lines.map((l) => l.session)).size} sessions`);
}
