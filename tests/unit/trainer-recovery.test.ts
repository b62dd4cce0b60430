// The trainer-recovery decision: where to start (the trainer's own weights, or which saved states, newest
// first), and the fallback when the trainer refuses a state as checkpoint_corrupt: the next older one, then the
// launch weights if the run began at them, else a clear TrainerRecoveryError. The trainer here is a stub that
// records its calls; tests/integration/trainer-states.test.ts runs the same against a real trainer.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import type { ActivityDeps } from '../../src/activities/deps';
import { bringTrainerTo, markLaunchOrigin, recoveryStart, type TrainerBinding } from '../../src/activities/trainer-recovery';
import { EngineRejectedError, TrainerRecoveryError } from '../../src/gpu-bridge';
import { DirectorySampleStore } from '../../src/store';
import { batchKey } from '../../src/core';

describe('recoveryStart', () => {
  it.each([
    ['a trainer of this run at or below the version replays from its own weights', { run_id: 'r', version: 3 }, 5, { replayFrom: 3 }],
    ['a restarted trainer loads saved states at or below the version, newest first', { run_id: null, version: 0 }, 5, { load: [3, 0] }],
    ['a trainer ahead of the run loads the same (never the run forward)', { run_id: 'r', version: 8 }, 5, { load: [3, 0] }],
    ['a trainer ahead by exactly the asked state loads that one first', { run_id: 'r', version: 8 }, 6, { load: [6, 3, 0] }],
  ])('%s', (_, state, version, expected) => {
    expect(recoveryStart(state, 'r', version, [0, 3, 6])).toEqual(expected);
  });
});

/** A trainer that refuses the states in `corrupt` as checkpoint_corrupt and records every call. */
function stubTrainer(initial: { run_id: string | null; version: number }, corrupt: string[]) {
  const calls: string[] = [];
  let state = { ...initial, busy_step: null, backend: 'sim' };
  const trainer = {
    baseUrl: 'http://stub',
    status: async () => state,
    load: async (req: { path: string; run_id?: string }) => {
      const name = path.basename(req.path);
      calls.push(`load ${name}`);
      if (corrupt.includes(name)) throw new EngineRejectedError(`stub: HTTP 400 path: ${req.path}/sim_state.json does not match its checksum`, 400, 'checkpoint_corrupt');
      state = { ...state, run_id: req.run_id ?? null, version: Number(name.slice(1)) };
      return { path: req.path, version: state.version };
    },
    reset: async (req: { run_id?: string }) => {
      calls.push('reset');
      state = { ...state, run_id: req.run_id ?? null, version: 0 };
      return { version: 0 };
    },
    trainStep: async (req: { step: number }) => {
      calls.push(`train ${req.step}`);
      state = { ...state, version: req.step + 1 };
      return { step: req.step, version: req.step + 1, metrics: {}, replayed: false };
    },
  };
  return { trainer, calls };
}

async function setUp(saved: number[], corrupt: string[], trainer: { run_id: string | null; version: number }, launchOrigin = false) {
  const root = mkdtempSync(path.join(tmpdir(), 'rollflow-recovery-'));
  const store = new DirectorySampleStore(path.join(root, 'samples'));
  const b: TrainerBinding = { runId: 'r', stateDir: path.join(root, 'trainer-state'), saveEverySteps: 3, options: {} as TrainerBinding['options'] };
  for (const v of saved) {
    mkdirSync(path.join(b.stateDir, `v${v}`), { recursive: true });
    writeFileSync(path.join(b.stateDir, `v${v}`, 'rollflow_checkpoint.json'), '{}');
  }
  if (launchOrigin) await markLaunchOrigin({ store }, b);
  mkdirSync(path.dirname(store.locate(batchKey('r', 0))), { recursive: true });
  for (let s = 0; s < 10; s++) writeFileSync(store.locate(batchKey('r', s)), '{}\n');
  const stub = stubTrainer(trainer, corrupt);
  const deps = { trainer: stub.trainer, store } as unknown as ActivityDeps;
  const bring = (version: number): ReturnType<typeof bringTrainerTo> => new MockActivityEnvironment().run(() => bringTrainerTo(deps, b, version, new AbortController().signal));
  return { b, calls: stub.calls, bring };
}

describe('bringTrainerTo', () => {
  it('passes over a corrupt newest state, moves it aside, records why, and replays from the previous good one', async () => {
    const { b, calls, bring } = await setUp([3, 6], ['v6'], { run_id: null, version: 0 });
    const { replayedSteps, skipped } = await bring(8);
    expect(calls).toEqual(['load v6', 'load v3', 'train 3', 'train 4', 'train 5', 'train 6', 'train 7']);
    expect([replayedSteps, skipped.map((s) => s.version)]).toEqual([5, [6]]);
    expect(readdirSync(b.stateDir).sort()).toEqual(['recovery.jsonl', 'v3', 'v6.corrupt']);
    const record = JSON.parse(readFileSync(path.join(b.stateDir, 'recovery.jsonl'), 'utf8')) as Record<string, unknown>;
    expect(record).toMatchObject({ run_id: 'r', version: 6, skipped: 'corrupt', reason: expect.stringContaining('does not match its checksum') });
  });

  it('with every state corrupt, a run that began at the launch weights starts from them and replays every batch', async () => {
    const { calls, bring } = await setUp([0, 3], ['v0', 'v3'], { run_id: null, version: 0 }, true);
    expect((await bring(4)).replayedSteps).toBe(4);
    expect(calls).toEqual(['load v3', 'load v0', 'reset', 'train 0', 'train 1', 'train 2', 'train 3']);
  });

  it('with every state corrupt and no launch origin, fails naming the corrupt states', async () => {
    const { bring } = await setUp([3], ['v3'], { run_id: null, version: 0 });
    const err = await bring(4).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrainerRecoveryError);
    expect((err as Error).message).toContain('every saved trainer state at or below version 4 is corrupt (v3)');
  });

  it('brings a trainer ahead of the run back to its version, and drops the states of the lineage the run lost', async () => {
    const { b, calls, bring } = await setUp([3, 6, 9], [], { run_id: 'r', version: 9 });
    await bring(5);
    expect(calls).toEqual(['load v3', 'train 3', 'train 4']);
    expect(readdirSync(b.stateDir).sort()).toEqual(['v3']);
    expect(existsSync(path.join(b.stateDir, 'v6'))).toBe(false);
  });

  it('any other refusal of a load is not taken for corruption', async () => {
    const { b } = await setUp([3], [], { run_id: null, version: 0 });
    const deps = { trainer: { status: async () => ({ run_id: null, version: 0 }), load: async () => Promise.reject(new EngineRejectedError('HTTP 400 path: written by the torch backend', 400)) } } as unknown as ActivityDeps;
    const err = await new MockActivityEnvironment().run(() => bringTrainerTo(deps, b, 4, new AbortController().signal)).catch((e: unknown) => e);
    expect((err as Error).message).toContain('torch backend');
    expect(readdirSync(b.stateDir)).toEqual(['v3']); // not moved aside
  });
});
