// Trainer states against a real sim trainer process, through the training activities (in the SDK's
// MockActivityEnvironment; the stack-level run with Temporal is tests/integration/trainer-recovery.test.ts):
// a trainer AHEAD of the workflow (what a Temporal rollback leaves) is brought back to the workflow's step and
// trains the workflow's batch there, and a restarted trainer whose newest state is corrupt falls back to the
// previous one and replays the stored batches.
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import type { ActivityDeps } from '../../src/activities/deps';
import { trainingActivities } from '../../src/activities/training';
import type { TrainerBinding } from '../../src/activities/trainer-recovery';
import { batchKey, REPLAYED_STEPS, SKIPPED_STATES } from '../../src/core';
import { TrainerClient } from '../../src/gpu-bridge';
import { DirectorySampleStore } from '../../src/store';
import { TestEngine } from './helpers/engine';

let engine: TestEngine;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rollflow-trainer-states-'));
  engine = await TestEngine.start('trainer', ['--backend', 'sim', '--option', `export_dir=${path.join(root, 'exports')}`]);
});
afterAll(() => engine?.stop());

/** A group of two samples whose uids carry `tag`: batches with different tags are different batches. */
const batch = (tag: string) => [0, 1].map((i) => ({ uid: `${tag}-${i}`, group_id: tag, prompt_ids: [1, 10, 11], response_ids: [12, 13], old_logprobs: [-1, -1], reward: i }));

function setUp(runId: string) {
  const store = new DirectorySampleStore(path.join(root, 'samples'));
  const deps = { store, trainer: new TrainerClient(engine.url) } as unknown as ActivityDeps;
  const b: TrainerBinding = { runId, stateDir: path.join(root, runId, 'trainer-state'), saveEverySteps: 2, options: {} as TrainerBinding['options'] };
  const act = trainingActivities(deps);
  const run = <T>(fn: () => Promise<T>): Promise<T> => new MockActivityEnvironment().run(fn) as Promise<T>;
  const step = async (s: number, tag: string) => {
    await store.putLines(batchKey(runId, s), batch(tag)); // as writeBatch does before each train step
    return run(() => act.runTrainStep({ step: s, batchPath: store.locate(batchKey(runId, s)), options: b.options, binding: b }));
  };
  return { b, act, run, step, status: () => deps.trainer.status() };
}

describe('trainer states', () => {
  it('a trainer ahead of the workflow (at version n+2, asked step n) ends at n+1, trained on the workflow batch', async () => {
    const { act, run, step, status, b } = setUp('ahead');
    await run(() => act.initTrainer({ binding: b }));
    for (let s = 0; s < 4; s++) await step(s, `old-${s}`); // the trainer at 4: steps 2 and 3 the workflow lost
    const again = await step(2, 'new-2'); // the rolled-back workflow takes a new batch for step 2
    expect([again.step, again.version, again.replayed]).toEqual([2, 3, false]);
    expect(again.metrics[REPLAYED_STEPS]).toBeUndefined(); // the saved v2 was loaded: nothing to replay
    expect((await status()).version).toBe(3);
    // The same step on the workflow's batch is now the recorded one (trained on it); on the lost batch it is not.
    expect((await step(2, 'new-2')).replayed).toBe(true);
    expect(readdirSync(b.stateDir).filter((n) => /^v\d+$/.test(n)).sort()).toEqual(['v2']); // the lost lineage's v4 is gone (v0 was pruned)
  });

  it('a restarted trainer whose newest state is corrupt falls back to the previous one and replays the batches since', async () => {
    const { act, run, step, status, b } = setUp('corrupt');
    await engine.restart(); // free of the first test's run
    await run(() => act.initTrainer({ binding: b }));
    for (let s = 0; s < 5; s++) await step(s, `c-${s}`); // states v2 and v4 (v0 pruned)
    expect(readdirSync(b.stateDir).filter((n) => /^v\d+$/.test(n)).sort()).toEqual(['v2', 'v4']);
    writeFileSync(path.join(b.stateDir, 'v4', 'sim_state.json'), '{"seed": 99}'); // a damaged file
    await engine.restart(); // holds no run, launch weights
    const next = await step(5, 'c-5');
    expect([next.version, next.metrics[REPLAYED_STEPS], next.metrics[SKIPPED_STATES]]).toEqual([6, 3, 1]); // v2 + steps 2, 3, 4
    expect((await status()).version).toBe(6);
    expect(readdirSync(b.stateDir).sort()).toEqual(['origin-launch-weights', 'recovery.jsonl', 'v2', 'v4.corrupt', 'v6']);
  });
});
