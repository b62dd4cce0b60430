/**
 * Hand-made records of a clean run for the chaos invariant tests: 3 steps of
 * 2 groups of 2 (positions 0-5), one group filtered (6), one dropped as stale
 * (7), one cancelled at the end (8); a trainer log of one lineage, Temporal
 * histories that agree with it.
 */
import type { Expectations, GroupExecution, RunRecords, TrainerLogLine } from '../../../src/chaos/invariants';
import { uidsSha256 } from '../../../src/chaos/trainer-invariants';
import { groupUid, sampleUid } from '../../../src/core';

export const G = 2;
export const e: Expectations = { maxSteps: 3, samplesPerStep: 2 * G, groupSize: G, maxStaleness: 1, stalePolicy: 'drop' };

export const group = (position: number, over: Partial<GroupExecution> = {}): GroupExecution => {
  const uid = groupUid({ epoch: 0, position });
  return { workflowId: `r/${uid}`, uid, status: 'COMPLETED', closedAfterRun: false, cancelRequested: false, result: { accepted: true }, ...over };
};
export const uidsOf = (...positions: number[]) => positions.flatMap((p) => Array.from({ length: G }, (_, i) => sampleUid(groupUid({ epoch: 0, position: p }), i)));
export const batchUids = (step: number) => uidsOf(2 * step, 2 * step + 1);

export const stepLine = (step: number, lineage = 'A', over: Partial<Extract<TrainerLogLine, { kind: 'step' }>> = {}): TrainerLogLine => ({ kind: 'step', step, versionAfter: step + 1, uidsSha256: uidsSha256(batchUids(step)), lineage, recovered: false, ...over });

export function cleanRun(): RunRecords {
  return {
    runId: 'r',
    outcome: 'COMPLETED',
    final: { step: 3, version: 3, buffered: 0, running: G, totals: { dispatchedGroups: 9, filteredGroups: 1, failedGroups: 0, droppedSamples: G, restartedSamples: 0 } },
    metrics: [0, 1, 2].map((step) => ({ step, version: step + 1, wall_s: 2 * (step + 1) })),
    batches: [0, 1, 2].map((step) => ({ step, uids: batchUids(step), oldestTokenVersion: batchUids(step).map(() => Math.max(0, step - 1)) })),
    sampleUids: uidsOf(0, 1, 2, 3, 4, 5, 6, 7),
    groups: [
      ...[0, 1, 2, 3, 4, 5].map((p) => group(p)),
      group(6, { result: { accepted: false } }),
      group(7),
      group(8, { closedAfterRun: true, cancelRequested: true, result: { accepted: false, error: 'cancelled' } }),
    ],
    trainerLog: { file: 'steps.jsonl', unreadableLines: 0, lines: [{ kind: 'reset', version: 0, lineage: 'A' }, { kind: 'save', version: 0, lineage: 'A' }, stepLine(0), stepLine(1), stepLine(2)] },
    trainSteps: [0, 1, 2].map((step) => ({ workflowId: `r/train-${step}`, step, status: 'COMPLETED', trainScheduled: 1, trainCompleted: 1, trainAttempts: 1, trainInputStep: step, trainResult: { step, version: step + 1, replayed: false }, batchUids: batchUids(step) })),
    trainStepStarts: ['r/train-0', 'r/train-1', 'r/train-2'],
  };
}
