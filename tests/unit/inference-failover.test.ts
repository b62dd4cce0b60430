/**
 * Failover, version catch-up, health probing and heartbeated partial tokens,
 * end to end through the bridge and the generate activities, against fake
 * inference servers (tests/unit/helpers/fake-inference.ts) that die mid-stream
 * and come back with their launch weights. The activities run in the SDK's
 * MockActivityEnvironment, which records their heartbeats.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '../helpers/mock-activity';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps';
import type { GenerationProgress } from '../../src/activities/generation';
import { rolloutActivities, type TrajectoryContext } from '../../src/activities/rollout';
import { trainingActivities } from '../../src/activities/training';
import { LatestWeights } from '../../src/activities/weights';
import { EngineUnavailableError, EnvClient, HealthProber, InferenceClient, InferencePool, InferenceRouter, TrainerClient } from '../../src/gpu-bridge';
import { DirectorySampleStore } from '../../src/store';
import { weightsKey } from '../../src/core';
import { CHAT_PROMPT, CONTINUATION, FakeInference } from './helpers/fake-inference';
import { createLogger } from '../../src/logging';
import { RunTrackers } from '../../src/trackers';

const RUN = 'run-1';
const sampling = { max_tokens: 8, temperature: 1, top_p: 1, seed: 5 };
/** The fake's tokens after a prompt of `length`: 1000 + position. */
const tokensAfter = (length: number, n: number) => Array.from({ length: n }, (_, k) => 1000 + length + k);

let servers: FakeInference[];
let storeDir: string;
let deps: ActivityDeps;

function depsFor(urls: string[]): ActivityDeps {
  const store = new DirectorySampleStore(storeDir);
  const pool = new InferencePool(urls);
  const inference = new Map(urls.map((u) => [u, new InferenceClient(u)]));
  const weights = new LatestWeights(store);
  const router = new InferenceRouter(pool, inference, () => weights.current());
  return { store, pool, inference, router, prober: new HealthProber(pool, router), weights, env: new EnvClient('http://127.0.0.1:1'), trainer: new TrainerClient('http://127.0.0.1:1'), maxResultBytes: 1 << 20, heartbeatPartialTokens: true, trackers: new RunTrackers(createLogger('test')) };
}

/** Runs an activity with heartbeat details from a previous attempt (if any), recording its heartbeats. */
async function runActivity<T>(fn: () => Promise<T>, heartbeatDetails?: unknown): Promise<{ result: T; beats: GenerationProgress[] }> {
  const env = new MockActivityEnvironment({ heartbeatDetails });
  const beats: GenerationProgress[] = [];
  env.on('heartbeat', (d: GenerationProgress | undefined) => d && beats.push(structuredClone(d)));
  return { result: await env.run(fn), beats };
}

beforeEach(async () => {
  servers = await Promise.all([new FakeInference().start(), new FakeInference().start()]);
  storeDir = await mkdtemp(path.join(tmpdir(), 'rollflow-failover-'));
  deps = depsFor(servers.map((s) => s.url));
});

afterEach(async () => {
  await deps.prober.stop();
  await Promise.all(servers.map((s) => s.close()));
  await rm(storeDir, { recursive: true, force: true });
});

const generatePaths = (s: FakeInference) => s.paths().filter((p) => p.startsWith('/v1/') && p !== '/v1/chat/continuation');

describe('failover', () => {
  it('continues a generation whose server died mid-stream on the other server, from the tokens it had', async () => {
    const rollout = rolloutActivities(deps);
    const first = deps.pool.acquire('traj'); // pin the trajectory, then make its server the one that dies
    first.release();
    const [dying, other] = first.url === servers[0]!.url ? [servers[0]!, servers[1]!] : [servers[1]!, servers[0]!];
    dying.dieAfter = 3;

    const { result } = await runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/t.json`, observation: 'q', turn: 0, sampling, affinity: 'traj', runId: RUN }));

    expect(result).toMatchObject({ tokens: 8, finish_reason: 'length', failovers: 1, aborts: 0 });
    const ctx = await deps.store.get<TrajectoryContext>(`${RUN}/trajectories/t.json`);
    expect(ctx.prompt_ids).toEqual(CHAT_PROMPT);
    expect(ctx.response_ids).toEqual(tokensAfter(CHAT_PROMPT.length, 8)); // nothing lost, nothing twice
    expect(ctx.version_spans).toEqual([{ version: 0, start: 0, end: 8 }]);
    // The dead server got the chat; the survivor continued from prompt + 3 tokens with the remaining 5.
    expect(generatePaths(dying)).toEqual(['/v1/chat/completions']);
    const continued = other.requests.find((r) => r.path === '/v1/completions')!.body;
    expect([continued.prompt, continued.max_tokens]).toEqual([[...CHAT_PROMPT, ...tokensAfter(3, 3)], 5]);
    expect(deps.pool.isDown(dying.url)).toBe(true);
    expect(deps.pool.acquire('traj').url).toBe(other.url); // affinity moved
  });

  it('every generate call carries the run\'s sampling, top_k included, the continuation too', async () => {
    const rollout = rolloutActivities(deps);
    const first = deps.pool.acquire('k');
    first.release();
    const dying = servers.find((s) => s.url === first.url)!;
    dying.dieAfter = 3;
    await runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/k.json`, observation: 'q', turn: 0, sampling: { ...sampling, temperature: 0.7, top_p: 0.9, top_k: 5 }, affinity: 'k', runId: RUN }));
    const asked = servers.flatMap((s) => s.requests).filter((r) => ['/v1/chat/completions', '/v1/completions'].includes(r.path));
    expect(asked.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/completions']);
    for (const r of asked) expect([r.body.temperature, r.body.top_p, r.body.top_k]).toEqual([0.7, 0.9, 5]);
  });

  it('a group request continues each choice elsewhere', async () => {
    const rollout = rolloutActivities(deps);
    const pinned = deps.pool.acquire('g');
    pinned.release();
    const dying = servers.find((s) => s.url === pinned.url)!;
    dying.dieAfter = 2; // after 2 tokens of each choice
    const keys = [`${RUN}/trajectories/a.json`, `${RUN}/trajectories/b.json`];
    const { result } = await runActivity(() => rollout.generateGroupTurn({ contextKeys: keys, observation: 'q', sampling, affinity: 'g', runId: RUN }));
    expect(result.map((t) => [t.tokens, t.failovers])).toEqual([
      [8, 1],
      [8, 1],
    ]);
    for (const key of keys) expect((await deps.store.get<TrajectoryContext>(key)).response_ids).toEqual(tokensAfter(CHAT_PROMPT.length, 8));
  });

  it('with every server down, the attempt fails retryably (not as the model) and names the servers', async () => {
    servers.forEach((s) => s.kill());
    const rollout = rolloutActivities(deps);
    const attempt = runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/t.json`, observation: 'q', turn: 0, sampling, affinity: 'traj', runId: RUN }));
    const error = await attempt.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect((error as Error).message).toMatch(/every inference server is marked down/);
    expect(servers.every((s) => deps.pool.isDown(s.url))).toBe(true);
  });
});

describe('heartbeated partial tokens', () => {
  it('heartbeats the prompt and the tokens so far, and a retried attempt continues from them, not from the prompt', async () => {
    const rollout = rolloutActivities(deps);
    // Attempt 1 died (with its worker) after 3 tokens; this is what it heartbeated.
    const recorded: GenerationProgress = { prompt: CHAT_PROMPT, choices: [{ token_ids: tokensAfter(3, 3), logprobs: [-1, -1, -1], version_spans: [{ version: 0, start: 0, end: 3 }], text: '', aborts: 0, failovers: 0, calls: 0 }] };
    const { result, beats } = await runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/t.json`, observation: "q", turn: 0, sampling, affinity: "traj", runId: RUN }), structuredClone(recorded));

    expect(result.tokens).toBe(8);
    const asked = servers.flatMap((s) => s.requests).filter((r) => r.path.startsWith('/v1/'));
    expect(asked.map((r) => [r.path, r.body.prompt, r.body.max_tokens])).toEqual([['/v1/completions', [...CHAT_PROMPT, ...tokensAfter(3, 3)], 5]]);
    expect((await deps.store.get<TrajectoryContext>(`${RUN}/trajectories/t.json`)).response_ids).toEqual(tokensAfter(3, 8));
    // Done within the beat interval: no beat, so the server keeps what attempt 1 beat (tests/unit/heartbeat.test.ts: the beats themselves).
    expect(beats).toEqual([]);
  });

  it('with heartbeat_partial_tokens off, beats carry nothing and a retried attempt starts over from the prompt', async () => {
    const rollout = rolloutActivities({ ...deps, heartbeatPartialTokens: false });
    const recorded: GenerationProgress = { prompt: CHAT_PROMPT, choices: [{ token_ids: tokensAfter(3, 3), logprobs: [-1, -1, -1], version_spans: [{ version: 0, start: 0, end: 3 }], text: '', aborts: 0, failovers: 0, calls: 0 }] };
    const { result, beats } = await runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/t.json`, observation: 'q', turn: 0, sampling, affinity: 'traj', runId: RUN }), structuredClone(recorded));

    expect(result.tokens).toBe(8);
    expect(beats).toEqual([]); // every beat was sent, empty (runActivity keeps only beats with details)
    const asked = servers.flatMap((s) => s.requests).filter((r) => r.path.startsWith('/v1/'));
    expect(asked.map((r) => [r.path, r.body.max_tokens])).toEqual([['/v1/chat/completions', 8]]); // from the prompt, the whole budget
  });

  it("a later turn's retry after the turn was stored returns it instead of appending it twice", async () => {
    const rollout = rolloutActivities(deps);
    const key = `${RUN}/trajectories/t.json`;
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: 'q', turn: 0, sampling, affinity: 'traj' }));
    const turn1 = { contextKey: key, observation: 'next', turn: 1, sampling, affinity: 'traj' };
    const { result: first } = await runActivity(() => rollout.generateTurn(turn1));
    const stored = await deps.store.get<TrajectoryContext>(key);
    const requests = servers.reduce((n, s) => n + s.requests.length, 0);
    const { result: retried } = await runActivity(() => rollout.generateTurn(turn1));
    expect(retried).toEqual(first);
    expect(await deps.store.get<TrajectoryContext>(key)).toEqual(stored);
    expect(servers.reduce((n, s) => n + s.requests.length, 0)).toBe(requests); // nothing asked
    expect(stored.response_ids).toHaveLength(8 + CONTINUATION.length + 8);
  });
});

describe('version catch-up', () => {
  it('a server behind the run refuses (409), is brought to the latest weights, that server only, and serves', async () => {
    await deps.store.put(weightsKey(RUN), { version: 3, path: '/weights/v3' });
    const rollout = rolloutActivities(deps);
    const pinned = deps.pool.acquire('traj');
    pinned.release();
    // The trajectory's server restarted and serves its launch weights (0); the other one is synced.
    const behind = servers.find((s) => s.url === pinned.url)!;
    const synced = servers.find((s) => s !== behind)!;
    synced.version = 3;
    const { result } = await runActivity(() => rollout.generateTurn({ contextKey: `${RUN}/trajectories/t.json`, observation: 'q', turn: 0, sampling, affinity: 'traj', runId: RUN }));

    expect(result.versions).toEqual([3]);
    expect(behind.paths()).toEqual(['/v1/chat/completions', '/state', '/pause', '/update_weights', '/resume', '/v1/chat/completions']);
    expect(behind.requests[0]!.body.min_version).toBe(3);
    expect(behind.requests.find((r) => r.path === '/update_weights')!.body).toEqual({ path: '/weights/v3', version: 3 });
    expect(synced.requests).toEqual([]);
  });

  it('syncWeights does not stall on a dead server: it syncs the rest, marks it down and records the weights', async () => {
    servers[1]!.kill();
    const training = trainingActivities(deps);
    const { result } = await runActivity(() => training.syncWeights({ path: '/weights/v1', version: 1, partialRollout: true, runId: RUN }));
    expect(result.aborted).toBe(0);
    expect(servers[0]!.version).toBe(1);
    expect(servers[0]!.paths()).toEqual(['/health', '/pause', '/update_weights', '/resume']);
    expect(deps.pool.isDown(servers[1]!.url)).toBe(true);
    expect(await deps.store.get(weightsKey(RUN))).toEqual({ version: 1, path: '/weights/v1' });

    // The next sync skips the server marked down.
    await runActivity(() => training.syncWeights({ path: '/weights/v2', version: 2, partialRollout: true, runId: RUN }));
    expect(servers[0]!.version).toBe(2);
  });

  it('syncWeights does not stall on a server that accepts connections but never answers (cut off, hung): it is left out and marked down', async () => {
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s)); // accepts, reads, answers nothing: a partition's far side
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const withSilent = depsFor([servers[0]!.url, silentUrl]);
    try {
      const { result } = await runActivity(() => trainingActivities(withSilent).syncWeights({ path: '/weights/v1', version: 1, partialRollout: true, runId: RUN }));
      expect(result.aborted).toBe(0);
      expect(servers[0]!.version).toBe(1);
      expect(withSilent.pool.isDown(silentUrl)).toBe(true);
      expect(held.length).toBeGreaterThan(0); // it was asked (its /health), and never paused
    } finally {
      held.forEach((s) => s.destroy());
      silent.close();
      await withSilent.prober.stop();
    }
  });
});

describe('HealthProber', () => {
  it('marks a server up only once it answers and holds the latest weights', async () => {
    const [up, down] = servers as [FakeInference, FakeInference];
    await deps.weights.write(RUN, { version: 4, path: '/weights/v4' });
    down.kill();
    deps.pool.markDown(down.url);

    await deps.prober.probeOnce(); // not answering: stays down
    expect(deps.pool.isDown(down.url)).toBe(true);

    await down.restart(); // back, with its launch weights
    await deps.prober.probeOnce();
    expect(deps.pool.isDown(down.url)).toBe(false);
    expect(down.version).toBe(4);
    expect(down.paths()).toEqual(['/health', '/state', '/pause', '/update_weights', '/resume']);
    expect(up.requests).toEqual([]); // only down servers are probed
  });

  it('a server that answers but cannot be brought to the latest weights stays down (and is not left paused)', async () => {
    const [, down] = servers as [FakeInference, FakeInference];
    await deps.weights.write(RUN, { version: 4, path: '/weights/v4' });
    deps.pool.markDown(down.url);
    down.missingWeights = true;
    await deps.prober.probeOnce();
    expect(down.paths()).toEqual(['/health', '/state', '/pause', '/update_weights', '/resume']);
    expect([deps.pool.isDown(down.url), down.paused, down.version]).toEqual([true, false, 0]);
  });
});

describe('chat-message prompts (EnvReset.messages)', () => {
  const SYSTEM = { role: 'system', content: 'Answer with a number.' };
  const chatBodies = () => servers.flatMap((s) => s.requests).filter((r) => r.path === '/v1/chat/completions').map((r) => r.body.messages);

  it('turn 0 sends the env\'s messages in place of one user message; a later turn adds only its observation', async () => {
    const rollout = rolloutActivities(deps);
    const key = `${RUN}/trajectories/m.json`;
    const messages = [SYSTEM, { role: 'user', content: '1+1=' }];
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: 'system: Answer with a number.\n\nuser: 1+1=', messages, turn: 0, sampling, affinity: 'm', runId: RUN }));
    expect(chatBodies()).toEqual([messages]);
    // Turn 1 carries messages too (a workflow passes them for turn 0 only), and they are not sent again.
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: 'next', messages, turn: 1, sampling, affinity: 'm', runId: RUN }));
    const continued = servers.flatMap((s) => s.requests).find((r) => r.path === '/v1/chat/continuation')!.body;
    expect(continued.messages).toEqual([{ role: 'user', content: 'next' }]);
    expect((await deps.store.get<TrajectoryContext>(key)).messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
  });

  it('a leading tools message (swe_lite with actions: tool_calls) is sent at turn 0 and leads every continuation\'s history', async () => {
    const rollout = rolloutActivities(deps);
    const key = `${RUN}/trajectories/tools.json`;
    const messages = [{ role: 'tools', content: '[{"type": "function", "function": {"name": "submit", "parameters": {}}}]' }, { role: 'user', content: 'Fix it.' }];
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: 'Fix it.', messages, turn: 0, sampling, affinity: 't', runId: RUN }));
    expect(chatBodies()).toEqual([messages]);
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: '[exit 0]', turn: 1, sampling, affinity: 't', runId: RUN }));
    const continued = servers.flatMap((s) => s.requests).find((r) => r.path === '/v1/chat/continuation')!.body;
    expect((continued.history as unknown[]).slice(0, 2)).toEqual(messages); // the server renders the tools from here on every turn
    // The observation is the result of the model's call: a tool message, which the chat template renders as one.
    expect(continued.messages).toEqual([{ role: 'tool', content: '[exit 0]' }]);
    await runActivity(() => rollout.generateTurn({ contextKey: key, observation: '[exit 1]', turn: 2, sampling, affinity: 't', runId: RUN }));
    expect((await deps.store.get<TrajectoryContext>(key)).messages.map((m) => m.role)).toEqual(['tools', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  });

  it('a group request sends them once for every choice, and each choice\'s context starts with them', async () => {
    const rollout = rolloutActivities(deps);
    const keys = [`${RUN}/trajectories/ga.json`, `${RUN}/trajectories/gb.json`];
    const messages = [SYSTEM, { role: 'user', content: '2+2=' }];
    await runActivity(() => rollout.generateGroupTurn({ contextKeys: keys, observation: 'rendered', messages, sampling, affinity: 'gm', runId: RUN }));
    expect(chatBodies()).toEqual([messages]);
    for (const key of keys) expect((await deps.store.get<TrajectoryContext>(key)).messages.slice(0, 2)).toEqual(messages);
  });

  it('without messages, the observation is the one user message, as before', async () => {
    const rollout = rolloutActivities(deps);
    await runActivity(() => rollout.generateGroupTurn({ contextKeys: [`${RUN}/trajectories/p.json`], observation: 'plain', sampling, affinity: 'p', runId: RUN }));
    expect(chatBodies()).toEqual([[{ role: 'user', content: 'plain' }]]);
  });
});
