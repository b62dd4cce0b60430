/**
 * W2 (redundant env rollout, ROLL Flash Fig. 10) on the real system: one
 * synchronous step of env groups whose steps may be fail-slow or fail-stop,
 * once with exactly the groups the batch needs and once with more or larger
 * groups, of which the step takes the first to complete.
 *
 * The latency_sim env draws every step latency, fail-slow and fail-stop with
 * the function the DES calls, keyed by the same (env seed, member, turn), and
 * a failed group's slot goes to the next prompt in both; so the DES of each
 * mode is the zero-overhead schedule of exactly what its run met, and the
 * groups started and failed can be checked against it.
 */
import path from 'node:path';
import { desW2, desW2Grid } from '../des/w2-redundant-rollout';
import type { DesModeResult } from '../des/result';
import { w2RunConfig } from './configs';
import { w2DesOptions, workersFor, type W2LiveOptions, type W2Mode } from './options';
import { modeMakespan, versus } from './report';
import { runRecord, type BenchContext } from './rollout-bench';
import type { RunOutcome } from './runner';
import { allFailedGroups } from '../../workflows/run-totals';

export async function benchW2(o: W2LiveOptions, ctx: BenchContext): Promise<object[]> {
  const runs: Partial<Record<W2Mode, RunOutcome>> = {};
  for (const mode of o.modes) {
    const [groups, size] = mode === 'exact' ? [o.baseline_env_groups, o.baseline_group_size] : [o.num_env_groups, o.group_size];
    const runId = `w2-${groups}x${size}-${mode}-${ctx.stamp}`;
    runs[mode] = await ctx.stack.run(`w2-${mode}`, w2RunConfig(o, mode, path.join(ctx.stack.dir, 'runs')), runId, o.run_timeout_s, workersFor(o, groups * size));
  }
  const report = { ...w2Report(o, runs, desW2(w2DesOptions(o)).modes), des_grid: desGrid(o) };
  ctx.emit(report);
  return [report];
}

/** Fig. 10's heatmap on these options: the DES speedup of each num_env_groups × group_size over the exact baseline. */
export function desGrid(o: W2LiveOptions) {
  return desW2Grid(w2DesOptions(o)).map((r) => ({ num_env_groups: r.modes.redundant!.num_env_groups, group_size: r.modes.redundant!.group_size, speedup: r.speedup }));
}

function modeReport(run: RunOutcome | undefined, des: DesModeResult) {
  const totals = run?.status?.totals;
  return {
    num_env_groups: des.num_env_groups,
    group_size: des.group_size,
    ...modeMakespan(run, des.makespan_s),
    groups_started: totals?.dispatchedGroups ?? null,
    des_groups_started: des.groups_started,
    groups_failed: totals ? allFailedGroups(totals) : null,
    des_groups_failed: des.groups_failed,
    des_groups_needed: des.groups_needed,
    run: run ? runRecord(run) : null,
  };
}

export function w2Report(o: W2LiveOptions, runs: Partial<Record<W2Mode, RunOutcome>>, des: Record<string, DesModeResult>) {
  const modes = Object.fromEntries(o.modes.map((m) => [m, modeReport(runs[m], des[m]!)])) as Partial<Record<W2Mode, ReturnType<typeof modeReport>>>;
  return {
    workload: 'w2',
    batch: o.batch,
    baseline: `${o.baseline_env_groups}×${o.baseline_group_size}`,
    redundant: `${o.num_env_groups}×${o.group_size}`,
    turns: o.turns,
    mean_s: o.mean_s,
    std_s: o.std_s,
    p_slow: o.p_slow,
    slow_factor: o.slow_factor,
    p_stop: o.p_stop,
    timeout_s: o.timeout_s,
    latency_keying: o.latency_keying,
    time_scale: o.time_scale,
    env_step_mean_s: o.mean_s * o.time_scale,
    ...versus({ measuredS: modes.exact?.makespan_s ?? null, desS: des.exact!.makespan_s }, { measuredS: modes.redundant?.makespan_s ?? null, desS: des.redundant!.makespan_s }),
    modes,
  };
}
