/**
 * W8 on the real system: one step of B SWE-lite episodes (real repositories, real sandboxed commands and
 * hidden-test grading on the env server; the sim backend's scripted swe_oracle policy at its latency per
 * byte) in lockstep and in env_async. The DES is fed by what the env_async run met: each trajectory's
 * activity execution times, read from its workflow history (des/w8-measured.ts). After the runs: what was
 * left behind (workspaces, sandbox processes, open sessions), the env steps' latencies by action, and the
 * sandbox's own cost (bench/engines/sandbox_bench.py).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { RunConfigInput } from '../../configs';
import { ROOT } from '../../paths';
import { envServerPid, sandboxProcessesUnder } from '../../stack/sandbox-processes';
import { envAsyncMakespan, lockstepMakespan, type TrajectoryTimes } from '../des/w8-measured';
import { stackSection } from './configs';
import type { W8LiveOptions } from './options';
import { distribution, executions, type Execution } from './history-times';
import { rolloutMakespan, versus } from './report';
import { runRecord, type BenchContext } from './rollout-bench';
import type { RunOutcome } from './runner';
import { saturation, throughput, uptimeLoad, w8Workload } from './w8-swe';

const sandboxRoot = (ctx: BenchContext) => path.join(ctx.stack.dir, 'sandboxes');

export function w8RunConfig(o: W8LiveOptions, mode: 'lockstep' | 'env_async', runDir: string, sandboxes: string): RunConfigInput {
  const B = o.groups * o.group_size;
  const { env, policy, datasetSize, maxTokens } = w8Workload(o);
  const stack = stackSection(o, {
    inference: { max_batch: Math.max(64, B), sim: { c0: o.seconds_per_token, c1: 0, policy } },
    trainer: { sim_seconds_per_sample: 0 },
  });
  return {
    exp_name: 'bench-w8',
    seed: o.seed,
    max_steps: 1,
    async_generation_ratio: 0,
    stale_policy: 'accept',
    dataset_size: datasetSize,
    run_dir: runDir,
    rollout_mode: mode,
    train_env_manager: { num_env_groups: o.groups, group_size: o.group_size, tags: ['swe'] },
    custom_envs: { swe: { ...env, max_steps: o.max_turns, max_tokens_per_step: maxTokens, env_calls: 'activity' } },
    actor_infer: { generating_args: { max_new_tokens: maxTokens } },
    ...stack,
    engines: { ...stack.engines, env: { ...stack.engines!.env!, options: { sandbox_root: sandboxes, snapshot_dir: path.join(sandboxes, '..', 'snapshots') } } },
  };
}

/** A trajectory workflow's activities as the DES's row: reset, (generate, env step) per turn, sample write. */
export function trajectoryTimes(execs: readonly Execution[]): TrajectoryTimes {
  const of = (type: string) => execs.filter((x) => x.type === type).map((x) => x.seconds);
  const gens = of('generateTurn');
  const envs = of('envStep');
  return { reset_s: of('envReset')[0] ?? 0, turns: gens.map((gen_s, k) => ({ gen_s, env_s: envs[k] ?? 0 })), finish_s: of('finishTrajectory')[0] ?? 0 };
}

const TOOL_CALL = /<tool_call>([\s\S]*?)<\/tool_call>/g;

/** What an env step's action was: its XML tag, or with tool calls the tool's name (edit is replace's kind, so the
 * two protocols' tables line up); else invalid. A label, not the env's parse: as an unclosed `<bash>ls` counts as
 * bash, a call is read only as far as one well-formed JSON call to a known tool with an object of arguments, so
 * one that lacks an argument counts under its tool (the env refuses it as invalid, cheaply). */
export function actionKind(action: string): string {
  if (action.includes('<tool_call>')) {
    const calls = [...action.matchAll(TOOL_CALL)];
    if (calls.length !== 1 || action.split('<tool_call>').length !== 2) return 'invalid';
    try {
      const call = JSON.parse(calls[0]![1]!) as { name?: unknown; arguments?: unknown };
      const kinds: Record<string, string> = { bash: 'bash', view: 'view', edit: 'replace', submit: 'submit' };
      const ok = typeof call.name === 'string' && Object.hasOwn(kinds, call.name) && typeof call.arguments === 'object' && call.arguments !== null && !Array.isArray(call.arguments);
      return ok ? kinds[call.name as string]! : 'invalid';
    } catch {
      return 'invalid';
    }
  }
  const tags = ['bash', 'view', 'replace', 'submit'].filter((t) => action.includes(`<${t}`));
  return tags.length === 1 ? tags[0]! : 'invalid';
}

/** Workspaces under the env server's sandbox root and the live sandbox processes of the server at `envUrl`: both must be 0 after a run. */
function leftBehind(root: string, envUrl: string) {
  const workspaces = existsSync(root) ? readdirSync(root).flatMap((owner) => readdirSync(path.join(root, owner))).length : 0;
  return { workspaces, sandbox_processes: sandboxProcessesUnder(envServerPid(envUrl)).length };
}

function sandboxCost(runs: number): object | null {
  if (runs === 0) return null;
  const r = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(ROOT, 'bench/engines/sandbox_bench.py'), '--runs', String(runs)], { encoding: 'utf8' });
  return r.status === 0 ? (JSON.parse(r.stdout) as object) : { error: r.stderr.trim().split('\n').slice(-3).join(' ') };
}

export async function benchW8(o: W8LiveOptions, ctx: BenchContext): Promise<object[]> {
  if (!o.modes.includes('env_async')) throw new RangeError('w8: the DES is fed by the env_async run\'s latencies: modes must include env_async');
  const runs: Partial<Record<'lockstep' | 'env_async', RunOutcome>> = {};
  const left: Record<string, ReturnType<typeof leftBehind>> = {};
  let table: TrajectoryTimes[] = [];
  let envSteps: Execution[] = [];
  const B = o.groups * o.group_size;
  for (const mode of o.modes) {
    const runId = `w8-b${B}-${mode}-${ctx.stamp}`;
    const config = w8RunConfig(o, mode, path.join(ctx.stack.dir, 'runs'), sandboxRoot(ctx));
    const run = await ctx.stack.run(`w8-${mode}`, config, runId, o.run_timeout_s);
    runs[mode] = run;
    left[mode] = leftBehind(sandboxRoot(ctx), config.engines!.env!.url!);
    if (mode === 'env_async' && run.ok) {
      const histories = (await ctx.stack.histories(runId, ['trajectory'])).map(executions);
      table = histories.map(trajectoryTimes);
      envSteps = histories.flat().filter((x) => x.type === 'envStep');
    }
  }
  const measured = (r?: RunOutcome) => (r?.ok ? rolloutMakespan(r.metrics) : null);
  const byKind = new Map<string, number[]>();
  for (const x of envSteps) {
    const kind = actionKind(String((x.input as { action?: unknown }).action ?? ''));
    byKind.set(kind, [...(byKind.get(kind) ?? []), x.seconds]);
  }
  const rewardOf = (r?: RunOutcome) => r?.metrics.find((m) => m.step === 0)?.['rollout/reward_mean'] ?? null;
  const cell = {
    workload: 'w8',
    env: o.env,
    ...(o.env === 'swe' ? { instances: o.instances, split: o.split ?? null, dataset_size: w8Workload(o).datasetSize } : {}),
    episodes: B,
    groups: o.groups,
    group_size: o.group_size,
    tiers: o.tiers,
    max_turns: o.max_turns,
    actions: o.actions,
    policy: { solve_prob: o.solve_prob, solve_after_turns: o.solve_after_turns, flail_turns: o.flail_turns, seconds_per_token: o.seconds_per_token },
    des_fed_by: table.length ? `the env_async run's ${table.length} trajectories` : null,
    ...versus({ measuredS: measured(runs.lockstep), desS: lockstepMakespan(table) }, { measuredS: measured(runs.env_async), desS: envAsyncMakespan(table) }),
    turns: distribution(table.map((t) => t.turns.length), ''),
    generate_s: distribution(table.flatMap((t) => t.turns.map((x) => x.gen_s))),
    env_step_s: { all: distribution(envSteps.map((x) => x.seconds)), ...Object.fromEntries([...byKind].map(([k, v]) => [k, distribution(v)])) },
    reward_mean: Object.fromEntries(Object.entries(runs).map(([mode, r]) => [mode, rewardOf(r)])),
    throughput: Object.fromEntries(Object.entries(runs).map(([mode, r]) => [mode, throughput(B, measured(r))])),
    // An episode's reset: its sandbox workspace opened, the repository put into it (and for swe the test patch applied).
    sandbox_start_s: distribution(table.map((t) => t.reset_s)),
    grading_s: distribution(byKind.get('submit') ?? []),
    uptime_after_runs: uptimeLoad(),
    left_behind: left,
    sandbox_cost: sandboxCost(o.sandbox_runs),
    runs: Object.fromEntries(Object.entries(runs).map(([mode, r]) => [mode, runRecord(r)])),
    ...(await inFlightSweep(o, ctx, (r) => ({ makespan_s: measured(r), reward_mean: rewardOf(r) }))),
  };
  ctx.emit(cell);
  return [cell];
}

/** env_async runs of N one-episode groups for each N of `o.in_flight`: episodes per minute against episodes (hence
 * sandboxes) in flight, the load before each, and the size where throughput stopped growing. */
async function inFlightSweep(o: W8LiveOptions, ctx: BenchContext, outcome: (r: RunOutcome) => { makespan_s: number | null; reward_mean: unknown }) {
  if (o.in_flight.length === 0) return {};
  const points = [];
  for (const n of o.in_flight) {
    const runId = `w8-inflight${n}-${ctx.stamp}`;
    const config = w8RunConfig({ ...o, groups: n, group_size: 1 }, 'env_async', path.join(ctx.stack.dir, 'runs'), sandboxRoot(ctx));
    const uptime = uptimeLoad();
    const run = await ctx.stack.run(`w8-inflight-${n}`, config, runId, o.run_timeout_s);
    const { makespan_s, reward_mean } = outcome(run);
    points.push({ in_flight: n, makespan_s, ...throughput(n, makespan_s), reward_mean, uptime_before: uptime, left_behind: leftBehind(sandboxRoot(ctx), config.engines!.env!.url!), run: runRecord(run) });
  }
  return { in_flight_sweep: points, throughput_stops_growing_at: saturation(points) };
}
