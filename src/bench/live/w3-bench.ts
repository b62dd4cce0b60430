/**
 * W3 (queue scheduling with dynamic filtering, ROLL Flash Fig. 7) on the real
 * system: one synchronous step that needs P groups passing the std filter,
 * run in waves (batch) and as a queue, with and without spare prompts.
 *
 * Every response's length and reward come from the DES's own draws (the
 * latency_sim env sets them; see w3RunConfig), so the DES of each mode
 * schedules exactly the responses the run generates: the overhead compares
 * like with like, and the counts of prompts started and groups filtered can
 * be checked against it.
 */
import path from 'node:path';
import { desW3 } from '../des/w3-queue-scheduling';
import type { DesModeResult } from '../des/result';
import { w3RunConfig } from './configs';
import { w3DesOptions, workersFor, type W3LiveOptions, type W3Mode } from './options';
import { dispatchRamp, modeMakespan, versus, type DispatchRamp } from './report';
import { runRecord, type BenchContext } from './rollout-bench';
import type { RunOutcome } from './runner';

export async function benchW3(o: W3LiveOptions, ctx: BenchContext): Promise<object[]> {
  const runs: Partial<Record<W3Mode, RunOutcome>> = {};
  const ramps: Partial<Record<W3Mode, DispatchRamp | null>> = {};
  for (const mode of o.modes) {
    const runId = `w3-p${o.prompts}-k${o.k}-${mode}-${ctx.stamp}`;
    const inFlight = (o.prompts + (mode === 'queue' ? o.max_additional_running_prompts : 0)) * o.k;
    runs[mode] = await ctx.stack.run(`w3-${mode}`, w3RunConfig(o, mode, path.join(ctx.stack.dir, 'runs')), runId, o.run_timeout_s, workersFor(o, inFlight));
    ramps[mode] = dispatchRamp(await ctx.stack.generateScheduledAt(runId).catch(() => []));
  }
  const report = { ...w3Report(o, runs, desW3(w3DesOptions(o)).modes), dispatch_ramp: ramps };
  ctx.emit(report);
  return [report];
}

/** One mode's run beside its DES: makespans, overhead, and what each started and filtered. */
function modeReport(run: RunOutcome | undefined, des: DesModeResult) {
  const totals = run?.status?.totals;
  return {
    ...modeMakespan(run, des.makespan_s),
    prompts_started: totals?.dispatchedGroups ?? null,
    des_prompts_started: des.prompts_started,
    groups_filtered: totals?.filteredGroups ?? null,
    des_groups_filtered: des.groups_filtered,
    ...(des.rounds !== undefined ? { des_rounds: des.rounds } : {}),
    run: run ? runRecord(run) : null,
  };
}

export function w3Report(o: W3LiveOptions, runs: Partial<Record<W3Mode, RunOutcome>>, des: Record<string, DesModeResult>) {
  const modes = Object.fromEntries(o.modes.map((m) => [m, modeReport(runs[m], des[m]!)])) as Partial<Record<W3Mode, ReturnType<typeof modeReport>>>;
  const makespans = (m: W3Mode) => ({ measuredS: modes[m]?.makespan_s ?? null, desS: des[m]!.makespan_s });
  const noAdditional = versus(makespans('batch'), makespans('queue_no_additional'));
  return {
    workload: 'w3',
    prompts: o.prompts,
    k: o.k,
    max_additional_running_prompts: o.max_additional_running_prompts,
    servers: o.servers,
    max_batch: o.max_batch,
    c0_s: o.c0_s,
    c1_s: o.c1_s,
    time_scale: o.time_scale,
    ...versus(makespans('batch'), makespans('queue')),
    /** Queue without spare prompts against the batch baseline (Fig. 7's middle bar). */
    no_additional: { measured_speedup: noAdditional.measured_speedup, des_speedup: noAdditional.des_speedup },
    modes,
  };
}
