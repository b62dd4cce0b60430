/**
 * W1 (env-level async rollout vs lockstep) and W7 (orchestration scale) on
 * the real system: one-step runs of the latency_sim env, each beside the DES
 * of the very same latencies (same seed and dataset size, so the same env
 * seeds; see des/env-latencies.ts).
 */
import path from 'node:path';
import { desW1 } from '../des/w1-env-async';
import { w1Cells, w1DesOptions, w1RunConfig, w7DesOptions, w7RunConfig, type W1Cell } from './configs';
import { workersFor, type W1LiveOptions, type W7LiveOptions } from './options';
import { activitiesPerTrajectory, overhead, rolloutMakespan, versus } from './report';
import type { BenchStack, RunOutcome } from './runner';
import { byWorkflowType, orchestrationDelay, type OrchestrationDelay } from './orchestration-delay';
import { allFailedGroups } from '../../workflows/run-totals';

export interface BenchContext {
  stack: BenchStack;
  /** Suffix that makes this invocation's run ids unique. */
  stamp: string;
  /** Called with each cell's report as soon as it is measured. */
  emit: (cell: object) => void;
}

/** What a report keeps of a run: enough to see how it went, not its whole status. */
export function runRecord(r: RunOutcome) {
  return {
    run_id: r.run_id,
    ok: r.ok,
    ...(r.error ? { error: r.error } : {}),
    wall_s: r.wall_s,
    load1_before: r.load1_before,
    load1_after: r.load1_after,
    cpu_s: r.cpu_s,
    failed_groups: r.status ? allFailedGroups(r.status.totals) : null,
    logged: r.logged,
  };
}

const makespanOf = (r: RunOutcome) => (r.ok ? rolloutMakespan(r.metrics) : undefined);

export async function benchW1(o: W1LiveOptions, ctx: BenchContext): Promise<object[]> {
  const cells = [];
  for (const cell of w1Cells(o)) {
    const des = desW1(w1DesOptions(o, cell));
    const variants = w1Variants(o);
    const outcomes: W1Runs[] = [];
    for (const v of variants) {
      const runs: W1Runs = {};
      outcomes.push(runs);
      for (const mode of o.modes) {
        const suffix = `${v.durability === 'off' ? '-nodurability' : ''}${v.store === 's3' ? '-s3' : ''}`;
        const runId = `w1-b${cell.batch}-m${cell.mean_s}-s${cell.std_s}-${mode}${suffix}-${ctx.stamp}`;
        runs[mode] = await ctx.stack.run(`w1-${mode}`, w1RunConfig(o, cell, mode, runDir(ctx, runId), v.durability, v.store), runId, o.run_timeout_s, workersFor(o, cell.batch));
      }
    }
    const [base, runs] = [variants[0]!, outcomes[0]!];
    // A variant's runs, or undefined when it was not asked for (outcomes[-1]).
    const runsOf = (v: W1Variant) => outcomes[variants.findIndex((w) => w.durability === v.durability && w.store === v.store)];
    const offRuns = base.durability === 'on' ? runsOf({ durability: 'off', store: base.store }) : undefined;
    const s3Runs = base.store === 'dir' ? runsOf({ durability: base.durability, store: 's3' }) : undefined;
    const report = {
      ...w1Report(o, cell, des.modes.lockstep!.makespan_s, des.modes.env_async!.makespan_s, runs),
      ...(offRuns ? { durability_cost: variantCost(runs, offRuns, ['on', 'off']) } : {}),
      ...(s3Runs ? { store_cost: variantCost(runs, s3Runs, ['dir', 's3']) } : {}),
      worker_processes: workersFor(o, cell.batch),
    };
    ctx.emit(report);
    cells.push(report);
  }
  return cells;
}

type W1Runs = Partial<Record<'lockstep' | 'env_async', RunOutcome>>;
interface W1Variant {
  durability: 'on' | 'off';
  store: 'dir' | 's3';
}

/**
 * The runs of a W1 cell: the first durability and store listed (the
 * baseline), then each other durability at the baseline's store and each
 * other store at the baseline's durability, so each cost compares two runs
 * that differ in one thing only.
 */
export function w1Variants(o: Pick<W1LiveOptions, 'durability' | 'stores'>): W1Variant[] {
  const [durability, store] = [o.durability[0]!, o.stores[0]!];
  return [{ durability, store }, ...o.durability.slice(1).map((d) => ({ durability: d, store })), ...o.stores.slice(1).map((st) => ({ durability, store: st }))];
}

/**
 * What a variant costs per mode: the rollout makespan of the baseline's runs
 * and of the variant's, variant/baseline − 1, and the variant's runs. For the
 * durability additions (on against off) the target is at most 3 %; for the
 * object store (s3 against dir) at most 10 %.
 */
function variantCost(base: W1Runs, variant: W1Runs, [baseName, variantName]: [string, string]) {
  return Object.fromEntries(
    Object.entries(variant).map(([mode, run]) => {
      const [baseS, variantS] = [base[mode as keyof W1Runs], run].map((r) => (r ? makespanOf(r) : undefined));
      const cost = baseS !== undefined && variantS !== undefined ? Math.round((variantS / baseS - 1) * 1000) / 1000 : null;
      return [mode, { [`makespan_${baseName}_s`]: baseS ?? null, [`makespan_${variantName}_s`]: variantS ?? null, cost, [`run_${variantName}`]: runRecord(run) }];
    }),
  );
}

/** One W1 cell: both makespans, both speedups, the overheads, and the time scale that made them. */
export function w1Report(o: Pick<W1LiveOptions, 'turns' | 'time_scale' | 'llm_s'>, cell: W1Cell, desLockstepS: number, desAsyncS: number, runs: Partial<Record<'lockstep' | 'env_async', RunOutcome>>) {
  const base = runs.lockstep && makespanOf(runs.lockstep);
  const flash = runs.env_async && makespanOf(runs.env_async);
  return {
    workload: 'w1',
    batch: cell.batch,
    mean_s: cell.mean_s,
    std_s: cell.std_s,
    turns: o.turns,
    time_scale: o.time_scale,
    env_step_mean_s: cell.mean_s * o.time_scale,
    llm_s_per_turn: o.llm_s * o.time_scale,
    // speedup_vs_des is the speedup target (within ±10 %), overhead the orchestration one.
    ...versus({ measuredS: base ?? null, desS: desLockstepS }, { measuredS: flash ?? null, desS: desAsyncS }),
    rollflow_activities_per_s: flash !== undefined ? round((cell.batch * activitiesPerTrajectory(o.turns)) / flash) : null,
    runs: Object.fromEntries(Object.entries(runs).map(([mode, r]) => [mode, runRecord(r)])),
  };
}

export async function benchW7(o: W7LiveOptions, ctx: BenchContext): Promise<object[]> {
  const cells = [];
  let broken: string | undefined;
  for (const n of o.in_flight) {
    if (broken) {
      // A larger size only fails the same way, later.
      const skipped = { workload: 'w7', in_flight: n, skipped: `not run: ${broken}` };
      ctx.emit(skipped);
      cells.push(skipped);
      continue;
    }
    const des = desW1(w7DesOptions(o, n)).modes.env_async!.makespan_s;
    const runId = `w7-n${n}-${ctx.stamp}`;
    const workers = workersFor(o, n);
    const run = await ctx.stack.run('w7', w7RunConfig(o, n, runDir(ctx, runId)), runId, o.run_timeout_s, workers);
    const report = { ...w7Report(o, n, des, run), worker_processes: workers, orchestration: run.ok ? await w7OrchestrationDelay(ctx, runId, o.trajectory_workflows) : null };
    if (!run.ok) broken = `in_flight ${n} failed (${run.error})`;
    ctx.emit(report);
    cells.push(report);
  }
  return cells;
}

/** Where the run's time beyond the DES went (orchestration-delay.ts); what could not be read is said, not fatal to the bench. */
async function w7OrchestrationDelay(ctx: BenchContext, runId: string, trajectoryWorkflows: boolean): Promise<OrchestrationDelay | { error: string } | null> {
  try {
    // One listing of the run's workflows; a group's history only where it ran its trajectories (byWorkflowType).
    const { run, trajectory } = byWorkflowType(await ctx.stack.histories(runId, ['run', trajectoryWorkflows ? 'trajectory' : 'group']));
    return orchestrationDelay(run, trajectory);
  } catch (e) {
    return { error: `reading the run's histories: ${(e as Error).message}` };
  }
}

export function w7Report(o: Pick<W7LiveOptions, 'turns' | 'time_scale' | 'mean_s' | 'std_s' | 'llm_s' | 'group_size' | 'max_overhead'>, n: number, desS: number, run: RunOutcome) {
  const measured = makespanOf(run);
  const ov = measured !== undefined ? overhead(measured, desS) : null;
  const failedGroups = run.status ? allFailedGroups(run.status.totals) : 0;
  return {
    workload: 'w7',
    in_flight: n,
    group_size: o.group_size,
    turns: o.turns,
    mean_s: o.mean_s,
    std_s: o.std_s,
    time_scale: o.time_scale,
    env_step_mean_s: o.mean_s * o.time_scale,
    des_makespan_s: desS,
    makespan_s: measured ?? null,
    overhead: ov,
    trajectories_per_s: measured !== undefined ? round(n / measured) : null,
    activities_per_s: measured !== undefined ? round((n * activitiesPerTrajectory(o.turns)) / measured) : null,
    sustained: run.ok && failedGroups === 0 && ov !== null && ov <= o.max_overhead,
    errors: { run: run.error ?? null, failed_groups: failedGroups, server_logged: run.logged.server, worker_logged: run.logged.worker },
    run: runRecord(run),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;
/** One run dir for all runs of an invocation: the worker's sample store follows it, so a per-run dir would restart the worker each run. */
const runDir = (ctx: BenchContext, _runId: string) => path.join(ctx.stack.dir, 'runs');
