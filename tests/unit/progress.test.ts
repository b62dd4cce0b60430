import { describe, expect, it } from 'vitest';
import { barLine, cancelledNote, progressSink, stepLine } from '../../src/launch/progress';
import type { RunStatus } from '../../src/workflows/run';

const status = (step: number, extra: Partial<RunStatus> = {}): RunStatus =>
  ({ runId: 'r', step, maxSteps: 10, version: step, running: 6, samplesInSystem: 8, maxSamplesInSystem: 16, suspended: false, staleness: { mean: 0.5, max: 1 }, totals: { lastRewardMean: 0.25 }, ...extra }) as unknown as RunStatus;

describe('run progress (launch/progress.ts)', () => {
  it('a pipe gets one plain line per step, never the same step twice', () => {
    const lines: string[] = [];
    const sink = progressSink((l) => lines.push(l), false);
    sink.update(status(0));
    sink.update(status(0));
    sink.update(status(1, { lastValidation: { steps: 1, rewardMean: 0.5 } }));
    expect(lines).toEqual([
      'step 0/10  version 0  reward   -    staleness max 1  in flight 6  in system 8/16',
      'step 1/10  version 1  reward 0.250  val reward 0.500 (after 1 steps)  staleness max 1  in flight 6  in system 8/16',
    ]);
    expect(stepLine(status(3))).toBe(lines[1]!.replace('step 1/10  version 1', 'step 3/10  version 3').replace('  val reward 0.500 (after 1 steps)', ''));
  });

  it('a terminal gets a bar with an ETA from the pace so far, the validation reward, staleness and what is in flight', () => {
    const t0 = 1_000_000;
    expect(barLine(status(2), 2, t0, t0)).toBe('[#####-------------------] 2/10  ETA –  reward 0.250  staleness 1  in flight 6');
    // 2 steps in 60 s: 6 left take 180 s.
    expect(barLine(status(4, { lastValidation: { steps: 4, rewardMean: 0.75 } }), 2, t0, t0 + 60_000)).toBe('[##########--------------] 4/10  ETA 3m00s  reward 0.250  val 0.750  staleness 1  in flight 6');
    expect(barLine(status(10, { suspended: true }), 2, t0, t0 + 60_000)).toBe('[########################] 10/10  ETA –  reward 0.250  staleness 1  in flight 6  SUSPENDED');
  });

  it('a cancelled run\'s last line says whether a checkpoint was saved: none before the first step', () => {
    expect(cancelledNote({ atStep: 3, groupsInFlight: 2 })).toBe('cancelled after step 3: a checkpoint was saved, 2 workflows still generating were cancelled');
    expect(cancelledNote({ atStep: 0, groupsInFlight: 4 })).toBe('cancelled after step 0: nothing was trained, so no checkpoint, 4 workflows still generating were cancelled');
  });
});
