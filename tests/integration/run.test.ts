// Training runs end to end on a real dev server with sim engines, started by
// the CLI: admission control and staleness as recorded by the run, exactly
// once across continue-as-new, partial rollout across weight syncs, and a
// worker killed with SIGKILL mid-run. Every check reads what the run recorded
// (batch files the trainer read, the run's status), never elapsed time.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchDir, batchKey, checkpointDir, childWorkflowId, epochOrder, groupWorkflowId, lockstepWorkflowId, METRIC, runDataDir } from '../../src/core';
import { trajectoryOfSummary } from '../../src/workflows/metadata';
import { cancelRun, type run, status as statusQuery } from '../../src/workflows/run';
import { groupPassesStdFilter, responseLength, responseSolved } from '../../src/envs/draws';
import { stepLatency } from '../../src/envs/latency';
import { dispatchIndex } from '../../src/bench/live';
import { freePort, readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';

const G = 4;
const B = 2 * G; // 2 groups of 4
let server: TestDevServer;
let config: string;
let client: Client;
let inferenceUrl: string;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

interface Summary {
  run_id: string;
  steps: number;
  samples_consumed: number;
  unique_uids_consumed: number;
  max_staleness: number;
  partial_ratio: number;
  max_partial_span: number;
  peak_samples_in_system: number;
  dropped: number;
}

function runJson(runId: string, ...sets: string[]): Summary {
  const r = rollflow('run', config, '--json', '--run-id', runId, ...sets.flatMap((s) => ['--set', s]));
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Summary;
}

/**
 * Starts a run of more steps than it can reach, lets it train a step, and suspends it with the CLI. A run of a
 * few steps could end in the second the suspend command takes to start (one did, in CI, once turns got cheaper).
 */
async function suspendedMidRun(runId: string) {
  expect(rollflow('run', config, '--run-id', runId, '--set', 'async_generation_ratio=1', '--set', `max_steps=${UNREACHED_STEPS}`).status).toBe(0);
  const handle = client.workflow.getHandle<typeof run>(runId);
  await until(async () => ((await handle.query(statusQuery)).step >= 1 ? true : undefined), 'step 1 trained');
  expect(rollflow('suspend', runId, '--config', config).status).toBe(0);
  const stalled = await until(async () => {
    const st = await handle.query(statusQuery);
    return st.suspended && st.enginesPaused && !st.training ? st : undefined;
  }, 'suspended: engines paused, no train step');
  expect(stalled.step).toBeLessThan(UNREACHED_STEPS);
  return { handle, stalled };
}

/** After resume: the run trains on past the step it was suspended at, then ends on cancel with its servers unpaused. */
async function cancelledAfterProgress(handle: WorkflowHandle<typeof run>, suspendedAt: number): Promise<void> {
  await until(async () => ((await handle.query(statusQuery)).step > suspendedAt ? true : undefined), 'a step trained after resume');
  await handle.signal(cancelRun);
  const final = await handle.result();
  expect([final.suspended, final.enginesPaused, final.cancelled?.atStep]).toEqual([false, false, final.step]);
  expect(final.step).toBeGreaterThan(suspendedAt);
  expect(((await (await fetch(`${inferenceUrl}/state`)).json()) as { paused: boolean }).paused).toBe(false);
}

/** More steps than a test waits for: runs that must still be going when a command reaches them are cancelled instead. */
const UNREACHED_STEPS = 1000;

interface BatchSample {
  uid: string;
  prompt_ids: number[];
  loss_mask: number[];
  response_ids: number[];
  old_logprobs: number[];
  reward: number;
  version_spans: { version: number; start: number; end: number }[];
}

/** A run's own directory: its metrics, validation records and checkpoints. */
const runFiles = (runId: string) => runDataDir(path.join(server.stateDir, 'run'), runId);

function batches(runId: string): BatchSample[][] {
  const dir = path.join(server.stateDir, 'run', 'samples', batchDir(runId));
  return readdirSync(dir)
    .sort()
    .map((f) => readJsonl<BatchSample>(path.join(dir, f)));
}

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  inferenceUrl = `http://127.0.0.1:${inference}`;
  ({ config, client } = await server.upStack(
    `
exp_name: run-test
run_dir: ${server.stateDir}/run
max_steps: 5
rollout_batch_size: 2
num_return_sequences_in_group: 4
dataset_size: 64
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 64 }
  lake: { env_type: frozen_lake, max_steps: 3, max_tokens_per_step: 16, env_config: { max_turns: 3 } }
  slow: { env_type: latency_sim, max_steps: 3, max_tokens_per_step: 8, env_config: { turns: 3, mean_s: 0.05, std_s: 0.05 } }
  flaky: { env_type: latency_sim, max_steps: 3, max_tokens_per_step: 8, env_config: { turns: 3, mean_s: 0.05, std_s: 0.02, p_stop: 0.2, timeout_s: 0.3, fail_stop: fail } }
  solver:
    env_type: latency_sim
    max_steps: 1
    max_tokens_per_step: 64
    env_config: { turns: 1, mean_s: 0, std_s: 0, draw_seed: 3, response: { mean_tokens: 24, sigma_prompt: 0.5, sigma_sample: 0.5, max_tokens: 64 }, solve: { p_easy: 0.3, p_hard: 0.3 } }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [arith] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: run-test }
engines:
  # long-tailed response lengths and a real decode cost, so generations overlap training and weight syncs
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.02, c1: 0.0005, length: { dist: lognormal, mean: 32, sigma: 0.8 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "http://127.0.0.1:${env}" }
`,
  ));
});

afterAll(() => server?.downStack(config, client));

describe('training runs', () => {
  it('α = 0 is exactly synchronous: every sample of batch n was generated by version n alone', () => {
    const s = runJson('sync', 'async_generation_ratio=0');
    expect([s.steps, s.samples_consumed, s.unique_uids_consumed]).toEqual([5, 5 * B, 5 * B]);
    expect([s.max_staleness, s.partial_ratio, s.peak_samples_in_system]).toEqual([0, 0, B]);
    batches('sync').forEach((batch, step) => {
      for (const sample of batch) expect(sample.version_spans.map((v) => v.version)).toEqual([step]);
    });
    // synchronous: nothing generates while a batch trains and syncs, so rollout is idle part of every step
    const mine = readJsonl<Record<string, number | string>>(path.join(runFiles('sync'), 'metrics.jsonl'));
    expect(new Set(mine.map((m) => m.run_id))).toEqual(new Set(['sync']));
    expect(mine.map((m) => m.step)).toEqual([0, 1, 2, 3, 4]);
    for (const m of mine) {
      expect(m[METRIC.rolloutIdle]).toBeGreaterThan(0);
      expect(m[METRIC.rolloutIdle]).toBeLessThanOrEqual(1);
    }
  });

  it('α = 2 with drop: staleness never above 2, never more than 3B in the system', () => {
    const s = runJson('async2', 'async_generation_ratio=2', 'stale_policy=drop');
    expect(s.unique_uids_consumed).toBe(5 * B);
    expect(s.max_staleness).toBeLessThanOrEqual(2);
    expect(s.peak_samples_in_system).toBeLessThanOrEqual(3 * B);
    expect(s.peak_samples_in_system).toBeGreaterThan(B); // generation really ran ahead of training
  });

  it('α = 0.5 (fractional) is bounded by floor(1.5·B) and staleness 1', () => {
    const s = runJson('async05', 'async_generation_ratio=0.5');
    expect(s.unique_uids_consumed).toBe(5 * B);
    expect(s.max_staleness).toBeLessThanOrEqual(1);
    expect(s.peak_samples_in_system).toBeLessThanOrEqual(Math.floor(1.5 * B));
  });

  it('max_additional_running_prompts admits that many groups beyond (1 + α)·B; those left running at a step end are stale', () => {
    const s = runJson('extra-prompts', 'async_generation_ratio=0', 'max_additional_running_prompts=1', 'stale_policy=accept');
    expect(s.unique_uids_consumed).toBe(5 * B);
    expect(s.peak_samples_in_system).toBe(B + G);
    expect(s.max_staleness).toBeLessThanOrEqual(1);
  });

  it('group_filter std on latency_sim draws (W3): the sim generates the drawn lengths, rewards are the drawn verdicts, the last step starts its spare prompts', async () => {
    const sets = ['train_env_manager.tags=[solver]', 'group_filter=std', 'max_steps=1', 'async_generation_ratio=0', 'max_additional_running_prompts=2', 'is_num_return_sequences_expand=true', 'seed=3'];
    const s = runJson('filter', ...sets);
    expect(s.unique_uids_consumed).toBe(B);
    const order = epochOrder(64, 3, 0);
    const lengthModel = { mean: 24, sigma_prompt: 0.5, sigma_sample: 0.5, max: 64 };
    const solve = { p_easy: 0.3, p_hard: 0.3 };
    const trained = new Map<number, boolean[]>();
    for (const sample of batches('filter')[0]!) {
      const { group, member } = dispatchIndex(sample.uid, 64);
      const index = order[group]!;
      expect(sample.response_ids.length).toBe(responseLength(lengthModel, 3, index, member));
      expect(sample.reward).toBe(responseSolved(solve, 3, index, member) ? 1 : 0);
      trained.set(index, [...(trained.get(index) ?? []), sample.reward === 1]);
    }
    expect(trained.size).toBe(B / G);
    for (const solved of trained.values()) expect(groupPassesStdFilter(solved)).toBe(true);
    // One step, yet B/G + 2 groups went out at once: the filter's spares (before, the last step capped them at B).
    expect(s.peak_samples_in_system).toBe(B + 2 * G);
    const { totals } = await client.workflow.getHandle('filter').query(statusQuery);
    expect(totals.filteredGroups + totals.failedGroups + B / G).toBeLessThanOrEqual(totals.dispatchedGroups);
    expect(totals.failedGroups).toBe(0);
  });

  it('an env that sets each sample its own length needs prompt replication: one request of n fails its groups with the fix named', () => {
    const r = rollflow('run', config, '--json', '--run-id', 'one-request-per-sample', ...['train_env_manager.tags=[solver]', 'is_num_return_sequences_expand=false', 'max_steps=1'].flatMap((x) => ['--set', x]));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('asks each sample for its own generation settings; set is_num_return_sequences_expand: true');
  });

  it('redundant env groups (W2): 3 groups run, the step takes the first 2 to complete; a fail-stopped group frees its slot', async () => {
    // A seed whose first prompt's env fail-stops within its 3 turns (members share the env seed, so the whole group fails).
    const model = { mean_s: 0.05, std_s: 0.02, p_slow: 0, slow_factor: 5, p_stop: 0.2 };
    const failsAt = (seed: number, position: number) => [0, 1, 2].some((turn) => stepLatency(model, epochOrder(64, seed, 0)[position]!, turn) === Infinity);
    const seed = Array.from({ length: 100 }, (_, i) => i).find((i) => failsAt(i, 0))!;
    const s = runJson('redundant', 'train_env_manager={num_env_groups: 3, group_size: 4, trajectories_per_step: 8, tags: [flaky]}', 'max_failed_group_ratio=1', 'max_steps=1', 'async_generation_ratio=0', `seed=${seed}`);
    expect(s.unique_uids_consumed).toBe(B);
    expect(s.peak_samples_in_system).toBe(3 * G); // the redundant group ran beside the two the step needs
    const trained = new Set(batches('redundant')[0]!.map((x) => dispatchIndex(x.uid, 64).group));
    expect(trained.size).toBe(2);
    expect(trained.has(0)).toBe(false);
    for (const position of trained) expect(failsAt(seed, position)).toBe(false);
    const { totals } = await client.workflow.getHandle('redundant').query(statusQuery);
    // An env that gave up (EnvGaveUpError) is an infrastructure failure, never the model's.
    expect([totals.failedGroups, totals.infraFailedGroups]).toEqual([0, expect.any(Number)]);
    expect(totals.infraFailedGroups).toBeGreaterThanOrEqual(1);
    // The failed group reports why, not the wrapper's "Child Workflow execution failed".
    const first = (await client.workflow.getHandle('redundant/e0-p0').result()) as { error?: string; infra?: boolean };
    expect(first.error).toMatch(/^latency_sim: fail-stop at turn \d, no answer in 0\.3 s$/);
    expect(first.infra).toBe(true);
  });

  it('generate_opt_level 0 dispatches in waves: a burst starts only when every group started before it has reported', async () => {
    // From the run's own history, in order: group reports (groupDone signals) and group starts (child
    // initiated; a burst's starts are the commands of one workflow task, recorded after its completion).
    const burstsStartingWithGroupsOut = async (runId: string) => {
      const { events } = await client.workflow.getHandle(runId).fetchHistory();
      let [started, reported, inBurst, early] = [0, 0, false, 0];
      for (const e of events ?? []) {
        if (e.workflowTaskCompletedEventAttributes) inBurst = false;
        else if (e.workflowExecutionSignaledEventAttributes?.signalName === 'groupDone') reported++;
        else if (e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name === 'group') {
          if (!inBurst && reported < started) early++;
          inBurst = true;
          started++;
        }
      }
      return { started, early };
    };
    // Episodes of 3 env steps of 2 s each, so a group outlives a train step and weight sync by far (seconds even on a
    // loaded machine): after step 1 the queue refills while the groups started after step 0 are still out.
    const sets = ['async_generation_ratio=1', 'max_steps=4', 'train_env_manager.tags=[slow]', 'custom_envs.slow.env_config={turns: 3, mean_s: 2, std_s: 0}'];
    runJson('waves', ...sets, 'generate_opt_level=0');
    const waves = await burstsStartingWithGroupsOut('waves');
    expect(waves.started).toBeGreaterThanOrEqual(4 * (B / G));
    expect(waves.early).toBe(0);
    // The queue (generate_opt_level 1) refills as soon as a step frees room, with groups still out: the check tells them apart.
    runJson('queue', ...sets, 'generate_opt_level=1');
    expect((await burstsStartingWithGroupsOut('queue')).early).toBeGreaterThan(0);
  });

  it('exactly once over 10 steps with continue-as-new every 3 steps', async () => {
    const s = runJson('exactly-once', 'async_generation_ratio=1', 'max_steps=10', 'steps_per_workflow_run=3');
    expect([s.steps, s.samples_consumed, s.unique_uids_consumed]).toEqual([10, 10 * B, 10 * B]);
    const executions = [];
    for await (const e of client.workflow.list({ query: `WorkflowId = 'exactly-once'` })) executions.push(e.status.name);
    expect(executions.filter((x) => x === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(3);
    // wall_s counts from the run's start across executions: it never falls back at a continue-as-new
    const metrics = readJsonl<{ run_id: string; step: number; wall_s: number }>(path.join(runFiles('exactly-once'), 'metrics.jsonl'));
    const walls = metrics.sort((a, b) => a.step - b.step).map((m) => m.wall_s);
    expect(walls).toHaveLength(10);
    walls.slice(1).forEach((w, i) => expect(w).toBeGreaterThanOrEqual(walls[i]!));
  });

  it('partial rollout: generations cut by a weight sync continue under the new weights', () => {
    const s = runJson('partial', 'async_generation_ratio=1', 'partial_rollout=true', 'max_steps=6');
    expect(s.partial_ratio).toBeGreaterThan(0);
    expect(s.max_partial_span).toBeGreaterThanOrEqual(2);
    for (const sample of batches('partial').flat()) {
      // spans tile the response exactly, versions ascending, one logprob per token
      let at = 0;
      for (const span of sample.version_spans) {
        expect(span.start).toBe(at);
        at = span.end;
      }
      expect(at).toBe(sample.response_ids.length);
      expect(sample.old_logprobs).toHaveLength(sample.response_ids.length);
      const versions = sample.version_spans.map((v) => v.version);
      expect([...versions].sort((a, b) => a - b)).toEqual(versions);
    }
  });

  it('multi-turn episodes keep token ids end to end, env tokens masked out of the loss; each turn is one activity', async () => {
    const s = runJson('lake', 'train_env_manager.tags=[lake]', 'max_steps=2', 'async_generation_ratio=0');
    expect(s.unique_uids_consumed).toBe(2 * B);
    // env_calls auto in a trajectory workflow: a turn's generation and env step are one activity (three turns here),
    // the reset and the sample write local activities (markers).
    const history = await client.workflow.getHandle(childWorkflowId(groupWorkflowId('lake', { epoch: 0, position: 0 }), 's', 0)).fetchHistory();
    const scheduled = history.events!.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));
    expect(scheduled).toEqual(['playTurn', 'playTurn', 'playTurn']);
    expect(history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(2);
    for (const sample of batches('lake').flat()) {
      const generated = sample.version_spans.reduce((n, v) => n + v.end - v.start, 0);
      expect(sample.loss_mask.filter((m) => m === 1)).toHaveLength(generated);
      expect(sample.loss_mask).toContain(0); // the env's turns sit between the generated ones
      sample.loss_mask.forEach((m, i) => m === 0 && expect(sample.old_logprobs[i]).toBe(0));
      // three turns: three generated stretches separated by env tokens
      const stretches = sample.loss_mask.filter((m, i) => m === 1 && sample.loss_mask[i - 1] !== 1).length;
      expect(stretches).toBe(3);
    }
  });

  it('env_calls: local runs a trajectory\'s env and store calls as local activities; generation stays an activity', async () => {
    const s = runJson('lake-local', 'train_env_manager.tags=[lake]', 'custom_envs.lake.env_calls=local', 'max_steps=1', 'async_generation_ratio=0');
    expect(s.unique_uids_consumed).toBe(B);
    const history = await client.workflow.getHandle(childWorkflowId(groupWorkflowId('lake-local', { epoch: 0, position: 0 }), 's', 0)).fetchHistory();
    const scheduled = history.events!.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));
    expect(scheduled).toEqual(['generateTurn', 'generateTurn', 'generateTurn']);
    // reset, three steps and the sample write
    expect(history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(5);
    expect(batches('lake-local').flat()).toHaveLength(B);
  });

  it('resumes from a checkpoint: consumed prompts are skipped, the step count continues without a jump or repeat', () => {
    runJson('ckpt-a', 'async_generation_ratio=1', 'max_steps=4', 'save_steps=2');
    const checkpoint = checkpointDir(runFiles('ckpt-a'), 2);
    const manifest = JSON.parse(readFileSync(path.join(checkpoint, 'manifest.json'), 'utf8')) as { step: number; version: number; run_id: string };
    expect(manifest).toMatchObject({ step: 2, version: 2, run_id: 'ckpt-a' });

    const r = rollflow('run', config, '--json', '--run-id', 'ckpt-b', '--resume-from', checkpoint, '--set', 'async_generation_ratio=1', '--set', 'max_steps=4', '--set', 'save_steps=2');
    expect(r.status, r.stderr).toBe(0);
    const b = JSON.parse(r.stdout.trim().split('\n').pop()!) as Summary;
    expect([b.steps, b.samples_consumed, b.unique_uids_consumed]).toEqual([4, 2 * B, 2 * B]);
    const dir = path.join(server.stateDir, 'run', 'samples', batchDir('ckpt-b'));
    expect(readdirSync(dir).sort()).toEqual([batchKey('ckpt-b', 2), batchKey('ckpt-b', 3)].map((k) => path.basename(k))); // steps 2 and 3: no jump, no repeat
    const consumedBefore = new Set(batches('ckpt-a').slice(0, 2).flat().map((x) => x.uid));
    expect(batches('ckpt-b').flat().filter((x) => consumedBefore.has(x.uid))).toEqual([]);

    const bad = rollflow('run', config, '--resume-from', checkpoint, '--set', 'seed=99');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("seed: got 99; 42, the checkpoint's seed");
  });

  it('suspend freezes the run (no dispatch, no train step, inference servers paused); resume lets it go on', async () => {
    const { handle, stalled } = await suspendedMidRun('suspended');
    const engine = (await (await fetch(`${inferenceUrl}/state`)).json()) as { paused: boolean; pause_mode: string };
    expect([engine.paused, engine.pause_mode]).toEqual([true, 'keep']);
    expect((await handle.query(statusQuery)).step).toBe(stalled.step); // nothing trained while suspended
    expect(rollflow('resume', 'suspended', '--config', config).status).toBe(0);
    await cancelledAfterProgress(handle, stalled.step);
  });

  it('the syncWeights update loads external weights between steps (the run suspended); a bad path is refused and the run goes on', async () => {
    const { handle, stalled } = await suspendedMidRun('operator-sync');
    // The sim backend loads no tensors, but only a directory the sim trainer's /export_weights could have written.
    const weights = path.join(server.stateDir, 'external-weights');
    mkdirSync(weights, { recursive: true });
    writeFileSync(path.join(weights, 'rollflow_export.json'), JSON.stringify({ backend: 'sim', vocab_size: null, version: 0 }));
    const ok = rollflow('sync-weights', 'operator-sync', weights, '--config', config);
    expect(ok.status, ok.stderr).toBe(0);
    const reply = JSON.parse(ok.stdout.trim()) as { version: number; aborted: number };
    expect(reply.version).toBeGreaterThanOrEqual(1);
    const bad = rollflow('sync-weights', 'operator-sync', path.join(server.stateDir, 'no-such-weights'), '--config', config);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('does not exist');
    expect(rollflow('resume', 'operator-sync', '--config', config).status).toBe(0);
    await cancelledAfterProgress(handle, stalled.step);
  });

  it('lockstep rollout: every turn of the batch waits for the slowest env (recorded in the workflow history)', async () => {
    const s = runJson('lockstep', 'rollout_mode=lockstep', 'train_env_manager.tags=[slow]', 'max_steps=2', 'async_generation_ratio=0');
    expect([s.steps, s.unique_uids_consumed]).toEqual([2, 2 * B]);
    for (const position of [0, 2]) {
      const history = await client.workflow.getHandle(lockstepWorkflowId('lockstep', { epoch: 0, position })).fetchHistory();
      const scheduledAt = new Map<string, { name: string; at: number }>();
      const completedAt = new Map<string, number>();
      history.events!.forEach((e, at) => {
        if (e.activityTaskScheduledEventAttributes) scheduledAt.set(String(e.eventId), { name: e.activityTaskScheduledEventAttributes.activityType!.name!, at });
        if (e.activityTaskCompletedEventAttributes) completedAt.set(String(e.activityTaskCompletedEventAttributes.scheduledEventId), at);
      });
      // Consecutive schedules of one activity type form a phase; a phase starts only after the previous one completed entirely.
      const phases: { name: string; ids: string[] }[] = [];
      for (const [id, { name }] of scheduledAt) {
        if (phases.at(-1)?.name === name) phases.at(-1)!.ids.push(id); else phases.push({ name, ids: [id] });
      }
      expect(phases.map((p) => `${p.name}×${p.ids.length}`)).toEqual(['envReset×8', ...Array(3).fill(['generateTurn×8', 'envStep×8']).flat(), 'finishTrajectory×8']);
      for (let k = 1; k < phases.length; k++) {
        const lastDone = Math.max(...phases[k - 1]!.ids.map((id) => completedAt.get(id)!));
        const firstStart = Math.min(...phases[k]!.ids.map((id) => scheduledAt.get(id)!.at));
        expect(firstStart).toBeGreaterThan(lastDone);
      }
    }
  });

  it('prompt replication off: a group\'s samples come from one n = G request, partial rollout included', async () => {
    const s = runJson('one-request', 'is_num_return_sequences_expand=false', 'async_generation_ratio=1', 'max_steps=4');
    expect([s.steps, s.unique_uids_consumed]).toEqual([4, 4 * B]);
    const history = await client.workflow.getHandle('one-request/e0-p0').fetchHistory();
    const scheduled = history.events!.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));
    expect(scheduled.filter((n) => n === 'generateGroupTurn')).toHaveLength(1);
    expect(scheduled.filter((n) => n === 'generateTurn')).toHaveLength(0);
    expect(history.events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toHaveLength(0);
    // The G env resets, G env steps and G sample writes ran as local activities: markers, not activity tasks.
    expect(scheduled.filter((n) => n !== 'generateGroupTurn')).toEqual([]);
    expect(history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(3 * G);
    for (const sample of batches('one-request').flat()) {
      expect(sample.old_logprobs).toHaveLength(sample.response_ids.length);
      expect(sample.version_spans.at(-1)!.end).toBe(sample.response_ids.length);
    }
  });

  it('validates before training, every eval_steps and at the end, on prompts it never trains on', () => {
    runJson('validated', 'max_steps=3', 'eval_steps=2', 'val_env_manager={num_env_groups: 2, group_size: 2, tags: [arith]}');
    const records = readJsonl<Record<string, number | string>>(path.join(runFiles('validated'), 'validation.jsonl'));
    expect(records.map((r) => [r.step, r.version, r['val/samples']])).toEqual([[0, 0, 4], [2, 2, 4], [3, 3, 4]]);
    expect(batches('validated').flat().filter((x) => x.uid.startsWith('val'))).toEqual([]);
  });

  it('a file dataset: malformed rows are reported, counted and skipped; the valid rows are the dataset', async () => {
    const file = path.join(server.stateDir, 'tiny.jsonl');
    writeFileSync(file, ['{"prompt": "1+1=", "answer": "2"}', '{"prompt": "2+2=", "answer": 4}', 'not json', '{"prompt": "3+3="}', '{"prompt": "5+5=", "answer": "10", "domain": "math"}', ''].join('\n'));
    const r = rollflow('run', config, '--wait', '--run-id', 'dataset', '--set', 'max_steps=2', '--set', 'async_generation_ratio=0', '--set', 'train_env_manager.tags=[ds]',
      '--set', `custom_envs.ds={env_type: dataset, max_steps: 1, max_tokens_per_step: 8, env_config: {path: "${file}", verifier: exact_match}}`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('dataset: 3 rows, 2 malformed rows skipped (1 not_json, 1 missing_field; line 3: not JSON');
    expect(r.stdout).toContain('line 4: needs string fields "prompt" and "answer"');
    const final = (await client.workflow.getHandle('dataset').result()) as { datasetSize: number; step: number };
    expect([final.datasetSize, final.step]).toEqual([3, 2]);
  });

  it('several env tags per run: each step holds the groups of each tag as num_groups_partition says', () => {
    const s = runJson('two-envs', 'train_env_manager.tags=[arith,lake]', 'train_env_manager.num_groups_partition=[1,1]', 'max_steps=2', 'async_generation_ratio=0');
    expect(s.unique_uids_consumed).toBe(2 * B);
    for (const batch of batches('two-envs')) {
      const multiTurn = batch.filter((x) => x.loss_mask.includes(0)); // frozen_lake: env tokens between turns
      expect([multiTurn.length, batch.length - multiTurn.length]).toEqual([4, 4]);
    }
  });

  it('survives kill -9 of the worker mid-run: the supervisor starts a new worker that finishes it, nothing lost or repeated', async () => {
    const started = rollflow('run', config, '--run-id', 'killed', '--set', 'async_generation_ratio=1', '--set', 'max_steps=8');
    expect(started.status, started.stderr).toBe(0);
    const handle = client.workflow.getHandle('killed');
    await until(async () => ((await handle.query(statusQuery)).step >= 2 ? true : undefined));
    const pidFile = path.join(server.stateDir, 'pids', 'worker-run-test.pid');
    const killed = readPid(pidFile);
    process.kill(killed, 'SIGKILL'); // nobody restarts it but the stack's supervisor
    const final = await handle.result();
    expect(readPid(pidFile)).not.toBe(killed);
    expect(JSON.parse(readFileSync(path.join(server.stateDir, 'pids', 'supervisor-run-test.json'), 'utf8')).parts['worker-run-test']).toMatchObject({ restarts: 1, reason: 'exited' });
    expect(final.step).toBe(8);
    const uids = batches('killed').flat().map((x) => x.uid);
    expect(uids).toHaveLength(8 * B);
    expect(new Set(uids).size).toBe(8 * B);
  });

  it('trajectory_workflows false: multi-turn episodes run in their group\'s workflow, and a worker killed mid-run loses nothing', async () => {
    const started = rollflow('run', config, '--run-id', 'in-group', ...['train_env_manager.tags=[lake]', 'trajectory_workflows=false', 'async_generation_ratio=1', 'max_steps=6'].flatMap((s) => ['--set', s]));
    expect(started.status, started.stderr).toBe(0);
    const handle = client.workflow.getHandle('in-group');
    await until(async () => ((await handle.query(statusQuery)).step >= 2 ? true : undefined));
    const pidFile = path.join(server.stateDir, 'pids', 'worker-run-test.pid');
    const killed = readPid(pidFile);
    process.kill(killed, 'SIGKILL');
    const final = await handle.result();
    expect(readPid(pidFile)).not.toBe(killed);
    expect(final.step).toBe(6);
    const samples = batches('in-group').flat();
    expect(samples).toHaveLength(6 * B);
    expect(new Set(samples.map((x) => x.uid)).size).toBe(6 * B);
    for (const sample of samples) expect(sample.loss_mask.filter((m) => m === 1)).toHaveLength(sample.version_spans.reduce((n, v) => n + v.end - v.start, 0));
    // The group's own history holds its members' turns, each named by its uid; it started no trajectory workflow.
    const history = (await client.workflow.getHandle(groupWorkflowId('in-group', { epoch: 0, position: 0 })).fetchHistory()).events!;
    expect(history.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toHaveLength(0);
    const turns = history.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'playTurn');
    const members = new Set(turns.map((e) => trajectoryOfSummary(defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!))));
    expect([...members].sort()).toEqual(['e0-p0-s0', 'e0-p0-s1', 'e0-p0-s2', 'e0-p0-s3']);
  });
});
