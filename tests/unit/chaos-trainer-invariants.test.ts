// The chaos invariants on the trainer's own step log, Temporal's histories
// and the env server's action log, each shown to fail on hand-made records
// (tests/unit/helpers/chaos-records.ts builds the clean run they break).
import { describe, expect, it } from 'vitest';
import { checkRun, type RunRecords } from '../../src/chaos';
import type { TrainerLogLine } from '../../src/chaos/invariants';
import { uidsSha256 } from '../../src/chaos/trainer-invariants';
import { batchUids, cleanRun, e, stepLine } from './helpers/chaos-records';

const failed = (r: RunRecords) => checkRun(r, e).checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
const names = (r: RunRecords) => checkRun(r, e).checks.filter((c) => !c.ok).map((c) => c.name);
const withLog = (lines: TrainerLogLine[]) => {
  const r = cleanRun();
  r.trainerLog = { file: 'steps.jsonl', unreadableLines: 0, lines };
  return r;
};

/** Lineage A trains steps 0 and 1 (saved at v0 and v1) and dies; B loads v1 (parent A), re-applies step 1 (recovered) and trains step 2. */
const restored = (over: { marked?: boolean; savedAt?: number } = {}): TrainerLogLine[] => [
  { kind: 'reset', version: 0, lineage: 'A' },
  { kind: 'save', version: 0, lineage: 'A' },
  stepLine(0, 'A'),
  { kind: 'save', version: over.savedAt ?? 1, lineage: 'A' },
  stepLine(1, 'A'), // lost with the process: the state B loads is v1
  { kind: 'load', version: 1, lineage: 'B', parent: 'A' },
  stepLine(1, 'B', { recovered: over.marked ?? true }),
  stepLine(2, 'B'),
];

describe('chaos invariants: the trainer\'s step log', () => {
  it('a step re-applied after a restore (a new lineage from a saved state, marked recovered) passes', () => {
    expect(failed(withLog(restored()))).toEqual([]);
    expect(checkRun(withLog(restored()), e).checks.find((c) => c.name.startsWith('trainer: each step'))?.detail).toBe('3 steps over 2 lineages');
  });

  it('a step applied twice to one lineage fails, though the workflow recorded it once', () => {
    const r = withLog([{ kind: 'reset', version: 0, lineage: 'A' }, stepLine(0), stepLine(1), stepLine(1, 'A', { recovered: true }), stepLine(2)]);
    expect(failed(r)).toEqual([
      'trainer: each step applied once to the final weights, in order: position 2: step 1 → v2, position 3: step 2 → v3, 4 steps, 3 expected',
      "trainer: version = max_steps = the workflow's: trainer: 4 steps on its final lineage, version 3; workflow: version 3; max_steps 3",
      'trainer: no step applied twice to one lineage: step 1 in lineage A',
      'store ↔ trainer: each batch file applied once to the final weights, on its own uids: batch file of step 1 applied 2× to the final weights',
    ]);
  });

  it('a re-application the trainer did not mark as recovered fails, and so does a load of a state its parent never saved', () => {
    expect(failed(withLog(restored({ marked: false })))).toEqual(['trainer: re-applications marked recovered, and only those: step 1 (lineage B) re-applied unmarked']);
    expect(failed(withLog(restored({ savedAt: 2 })))).toEqual(['trainer: each step applied once to the final weights, in order: lineage A never saved the version 1 its successor loaded']);
  });

  it('a skipped step fails: the final weights never took it, though a lost lineage did', () => {
    // B loads v2 from A, which saved v2 but only after step 0: the chain lacks step 1.
    const r = withLog([{ kind: 'reset', version: 0, lineage: 'A' }, stepLine(0), { kind: 'save', version: 2, lineage: 'A' }, stepLine(1, 'C'), { kind: 'load', version: 2, lineage: 'B', parent: 'A' }, stepLine(2, 'B')]);
    expect(names(r)).toContain('trainer: each step applied once to the final weights, in order');
  });

  it('the trainer\'s version is its own count, compared with the workflow\'s: one step short fails though the workflow says 3', () => {
    const r = withLog([{ kind: 'reset', version: 0, lineage: 'A' }, stepLine(0), stepLine(1)]);
    expect(failed(r)).toEqual(expect.arrayContaining(["trainer: version = max_steps = the workflow's: trainer: 2 steps on its final lineage, version 2; workflow: version 3; max_steps 3"]));
  });

  it('a step trained on other uids than its batch file fails', () => {
    const r = cleanRun();
    r.trainerLog = withLog([{ kind: 'reset', version: 0, lineage: 'A' }, stepLine(0), stepLine(1, 'A', { uidsSha256: uidsSha256(batchUids(2)) }), stepLine(2)]).trainerLog;
    expect(names(r)).toEqual(['store ↔ trainer: each batch file applied once to the final weights, on its own uids', 'Temporal ↔ trainer ↔ store: each step\'s version and batch agree']);
  });

  it('no step log, or a lineage of unknown origin, fails every trainer check', () => {
    const r = cleanRun();
    r.trainerLog = { why: 'no such file' };
    expect(names(r).filter((n) => n.startsWith('trainer:')).length).toBe(4);
    expect(failed(withLog([stepLine(0), stepLine(1), stepLine(2)]))).toEqual(['trainer: each step applied once to the final weights, in order: lineage A has no reset or load line: where its weights came from is unknown']);
  });
});

describe('chaos invariants: Temporal histories', () => {
  it('a trainStep child started twice by the run fails', () => {
    const r = cleanRun();
    r.trainStepStarts.push('r/train-1');
    expect(failed(r)).toEqual(["Temporal: the run started each step's trainStep once: r/train-1 started 2×"]);
  });

  it('a runTrainStep activity scheduled twice, or answering another step, fails', () => {
    const twice = cleanRun();
    twice.trainSteps[1]!.trainScheduled = 2;
    expect(failed(twice)).toEqual(["Temporal: each step's runTrainStep completed once, for its step: r/train-1: runTrainStep scheduled 2×, completed 1×"]);
    const other = cleanRun();
    other.trainSteps[2]!.trainResult = { step: 1, version: 2, replayed: true };
    expect(names(other)).toEqual(["Temporal: each step's runTrainStep completed once, for its step", "Temporal ↔ trainer ↔ store: each step's version and batch agree"]);
  });

  it('a batch in the history other than the one the trainer took and the store holds fails', () => {
    const r = cleanRun();
    r.trainSteps[0]!.batchUids = batchUids(1);
    expect(failed(r)).toEqual(["Temporal ↔ trainer ↔ store: each step's version and batch agree: r/train-0: its batch differs from the store's file, r/train-0: the trainer logged v1 on another batch; the history says v1"]);
    // The same samples in the order the workflow chose them agree: writeBatch writes them in the canonical uid order.
    const chosenOrder = cleanRun();
    chosenOrder.trainSteps[0]!.batchUids = [...batchUids(0)].reverse();
    expect(failed(chosenOrder)).toEqual([]);
  });

  it('a retried attempt is fine: one activity, several attempts', () => {
    const r = cleanRun();
    r.trainSteps[1]!.trainAttempts = 3;
    expect(failed(r)).toEqual([]);
  });
});

describe('chaos invariants: the env server\'s action log', () => {
  it('a (session, index) applied twice fails, and says whether the actions differed', () => {
    const r = cleanRun();
    r.envActions = { file: 'actions.jsonl', unreadableLines: 0, lines: [{ session: 's1', index: 0, actionSha256: 'a' }, { session: 's1', index: 1, actionSha256: 'b' }, { session: 's2', index: 0, actionSha256: 'a' }] };
    expect(failed(r)).toEqual([]);
    r.envActions.lines.push({ session: 's1', index: 1, actionSha256: 'c' });
    expect(failed(r)).toEqual(['env: no (session, index) applied twice: s1#1 ×2 (different actions)']);
  });
});
