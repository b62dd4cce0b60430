/**
 * Invariants on the trainer's own record, its step log (python-engines
 * roles/trainer/step_log.py), against the batch files and the workflow's
 * result. Pure.
 *
 * The log holds every train step the trainer applied, including those a
 * restarted trainer re-applied to weights restored from a saved state. Those
 * are legitimate: they rebuild weights the crash lost. What must hold is that
 * the weights the run ended with, its final lineage, went through each step
 * once. The final lineage is the lineage of the log's last line; a lineage
 * that began with a load continues its parent (the lineage that saved that
 * state) at the loaded version, so following the loads back to a reset gives
 * the history of the final weights, segment by segment.
 */
import { createHash } from 'node:crypto';
import type { Check, RunRecords, TrainerLogLine } from './record-types';

type StepLine = Extract<TrainerLogLine, { kind: 'step' }>;

/** The trainer's fingerprint of a batch (batch_read.py batch_fingerprint): sha256 of its uids, one a line. */
export const uidsSha256 = (uids: readonly string[]): string => createHash('sha256').update(uids.join('\n')).digest('hex');

const list = (xs: readonly unknown[], most = 8) => (xs.length > most ? `${xs.slice(0, most).join(', ')}, … (${xs.length})` : xs.join(', '));

/** The step lines the final weights went through, oldest first, and what breaks the chain of lineages back to a reset. */
export function finalLineageSteps(lines: readonly TrainerLogLine[]): { steps: StepLine[]; problems: string[] } {
  const last = lines.at(-1);
  if (!last) return { steps: [], problems: ['the log holds no line of this run'] };
  const segments: StepLine[][] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  let lineage: string | null | undefined = last.lineage;
  let upTo = Infinity; // the version the child lineage loaded: this lineage's steps after it are not in the final weights
  while (lineage) {
    if (seen.has(lineage)) {
      problems.push(`lineage ${lineage} loads from itself`);
      break;
    }
    seen.add(lineage);
    const mine = lines.filter((l) => l.lineage === lineage);
    const start = mine.find((l): l is Exclude<TrainerLogLine, StepLine> => l.kind === 'reset' || l.kind === 'load');
    if (upTo !== Infinity && !mine.some((l) => l.kind === 'save' && l.version === upTo)) problems.push(`lineage ${lineage} never saved the version ${upTo} its successor loaded`);
    segments.unshift(mine.filter((l): l is StepLine => l.kind === 'step' && l.versionAfter <= upTo));
    if (!start) {
      problems.push(`lineage ${lineage} has no reset or load line: where its weights came from is unknown`);
      break;
    }
    if (start.kind === 'reset') break;
    if (!start.parent) problems.push(`lineage ${lineage} loaded version ${start.version} from a state that names no lineage`);
    upTo = start.version;
    lineage = start.parent;
  }
  return { steps: segments.flat(), problems };
}

export function trainerChecks(r: RunRecords, maxSteps: number): Check[] {
  const log = r.trainerLog;
  const names = ['trainer: each step applied once to the final weights, in order', 'trainer: version = max_steps = the workflow\'s', 'trainer: no step applied twice to one lineage', 'trainer: re-applications marked recovered, and only those', 'store ↔ trainer: each batch file applied once to the final weights, on its own uids'];
  if (!('lines' in log)) return names.map((name) => ({ name, ok: false, detail: `no trainer step log: ${log.why}` }));
  const torn = log.unreadableLines ? [`${log.unreadableLines} unreadable lines in ${log.file}`] : [];
  const { steps: chain, problems } = finalLineageSteps(log.lines);
  const checks: Check[] = [];

  // 1. The final weights went through steps 0..max_steps-1, each once, in order, each raising the version by one.
  const order = chain.flatMap((l, i) => (l.step !== i || l.versionAfter !== i + 1 ? [`position ${i}: step ${l.step} → v${l.versionAfter}`] : []));
  const wrong = [...problems, ...torn, ...order, ...(chain.length !== maxSteps ? [`${chain.length} steps, ${maxSteps} expected`] : [])];
  checks.push({ name: names[0]!, ok: wrong.length === 0, detail: wrong.length ? list(wrong) : `${chain.length} steps over ${new Set(chain.map((l) => l.lineage)).size} lineages` });

  // 2. The trainer's count, not the workflow's counter compared with itself.
  const trainerVersion = chain.at(-1)?.versionAfter ?? 0;
  const workflowVersion = r.final?.version;
  const versionOk = trainerVersion === maxSteps && chain.length === maxSteps && workflowVersion === trainerVersion;
  checks.push({ name: names[1]!, ok: versionOk, detail: `trainer: ${chain.length} steps on its final lineage, version ${trainerVersion}; workflow: ${workflowVersion === undefined ? 'no final status' : `version ${workflowVersion}`}; max_steps ${maxSteps}` });

  // 3. Within one lineage a step can only be applied once: the trainer's exactly-once rule (step = version).
  const twice: string[] = [];
  const byLineage = new Map<string, number[]>();
  for (const l of log.lines) if (l.kind === 'step') byLineage.set(l.lineage, [...(byLineage.get(l.lineage) ?? []), l.step]);
  for (const [lineage, steps] of byLineage) for (const s of new Set(steps.filter((s, i) => steps.indexOf(s) !== i))) twice.push(`step ${s} in lineage ${lineage}`);
  checks.push({ name: names[2]!, ok: twice.length === 0, detail: twice.length ? list(twice) : `${[...byLineage.values()].reduce((n, s) => n + s.length, 0)} step lines in ${byLineage.size} lineages` });

  // 4. The trainer marks a step it has logged before as recovered: a replay after a load. Unmarked re-applications
  // mean the log lost lines; marked first applications mean it holds lines of steps this checker never saw.
  const applied = new Set<number>();
  const unmarked: string[] = [];
  let recovered = 0;
  for (const l of log.lines) {
    if (l.kind !== 'step') continue;
    if (applied.has(l.step) !== l.recovered) unmarked.push(`step ${l.step} (lineage ${l.lineage}) ${l.recovered ? 'marked recovered on its first application' : 're-applied unmarked'}`);
    if (l.recovered) recovered++;
    applied.add(l.step);
  }
  checks.push({ name: names[3]!, ok: unmarked.length === 0, detail: unmarked.length ? list(unmarked) : `${recovered} re-applied after a restore` });

  // 5. The batch each step trained on is the store's file for that step, and the final weights took each file once.
  const fileHash = new Map(r.batches.filter((b) => !b.unreadable).map((b) => [b.step, uidsSha256(b.uids)]));
  const mismatch: string[] = [];
  for (const l of log.lines) if (l.kind === 'step' && fileHash.get(l.step) !== l.uidsSha256) mismatch.push(`step ${l.step} (lineage ${l.lineage}): ${fileHash.has(l.step) ? 'other uids than its batch file' : 'no readable batch file'}`);
  for (const [step] of fileHash) {
    const n = chain.filter((l) => l.step === step).length;
    if (n !== 1) mismatch.push(`batch file of step ${step} applied ${n}× to the final weights`);
  }
  checks.push({ name: names[4]!, ok: mismatch.length === 0, detail: mismatch.length ? list(mismatch) : `${fileHash.size} batch files, each once` });
  return checks;
}
