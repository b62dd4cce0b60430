// The TypeScript env adapter against a real python-engines env server:
// episodes, invalid actions, bad config, and a server restart mid-episode:
// the adapter reports the lost session and rebuilds it by replaying the
// recorded actions (the envStep activity does so under on_env_loss replay); from
// the start when the episode's snapshot is refused as damaged.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipMiddleByte } from '../../src/chaos/file-faults';
import { EngineRejectedError, EnvClient } from '../../src/gpu-bridge';
import { pythonEnv, type PythonEnvState } from '../../src/envs';
import { EnvSessionLostError } from '../../src/envs/errors';
import { TestEngine } from './helpers/engine';

let engine: TestEngine;
beforeAll(async () => {
  engine = await TestEngine.start('env');
});
afterAll(() => engine?.stop());

const lake = () => pythonEnv(new EnvClient(engine.url), 'frozen_lake');
// A fixed 4x4 map (no holes on the path) so the optimal actions are known.
const config = { desc: ['SFFF', 'FFFF', 'FFFF', 'FFFG'], max_turns: 10 };

describe('python env adapter', () => {
  it('plays frozen_lake to the goal', async () => {
    const env = lake();
    const c = env.parseConfig(config);
    let { state } = await env.reset(c, 1);
    let last;
    for (const action of ['Right', 'Right', 'Right', 'Down', 'Down', 'Down']) {
      last = await env.step(c, state, action);
      state = last.state;
    }
    expect(last).toMatchObject({ reward: 1, done: true, info: { success: true } });
    expect(state.actions).toHaveLength(6);
  });

  it('treats an unparsable action as an invalid action, not an error', async () => {
    const env = lake();
    const c = env.parseConfig(config);
    const { state } = await env.reset(c, 1);
    const r = await env.step(c, state, 'I would like to jump over the hole');
    expect(r.info.invalid_action).toBe(true);
    expect(r.done).toBe(false);
  });

  it('rejects a bad env config naming the key, as a non-retryable error', async () => {
    const env = lake();
    const err = await env.reset(env.parseConfig({ map_sise: 4 }), 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineRejectedError);
    expect((err as EngineRejectedError).message).toContain('config.map_sise');
  });

  it('reports a session lost to a server restart, and rebuilds it by replaying the actions', async () => {
    const env = lake();
    const c = env.parseConfig(config);
    const reset = await env.reset(c, 1);
    expect(reset.onLoss).toBe('replay'); // frozen_lake's declaration, reported by the server
    let state: PythonEnvState = reset.state;
    for (const action of ['Right', 'Right', 'Right']) state = (await env.step(c, state, action)).state;
    const before = state.session;

    await engine.restart(); // every session on the server is gone

    const lost = await env.step(c, state, 'Down').catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(EnvSessionLostError);
    expect((lost as Error).message).toContain(before);
    state = await env.rebuild!(c, state);
    let last;
    for (const action of ['Down', 'Down', 'Down']) {
      last = await env.step(c, state, action);
      state = last.state;
    }
    expect(state.session).not.toBe(before);
    expect(last).toMatchObject({ reward: 1, done: true, info: { success: true } });
  });

  it('rebuilds an episode whose snapshot the server refuses as damaged from its start, each action applied once', async () => {
    const snapshots = mkdtempSync(path.join(tmpdir(), 'rollflow-env-snapshots-'));
    const server = await TestEngine.start('env', ['--option', `snapshot_dir=${snapshots}`]);
    try {
      const env = pythonEnv(new EnvClient(server.url), 'swe_lite');
      const c = env.parseConfig({ task: 't1-000' });
      let state: PythonEnvState = (await env.reset(c, 0)).state;
      state = (await env.step(c, state, '<bash>echo ran >> runs.log</bash>')).state;
      expect(state.snapshot?.actions).toBe(1);
      flipMiddleByte(path.join(snapshots, state.snapshot!.id)); // the server refuses it: snapshot_corrupt
      await server.restart(); // the session and its workspace are gone
      state = await env.rebuild!(c, state);
      const r = await env.step(c, state, '<bash>cat runs.log</bash>');
      expect(r.observation).toBe('[exit 0]\nran\n'); // the first command replayed once on a fresh workspace
    } finally {
      server.stop();
    }
  });
});
