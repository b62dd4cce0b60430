/**
 * W5 (async vs sync training, ROLL Flash Prop. 1–2) on the real system: one
 * run per async ratio α on a sim inference server with K_gen batch slots and
 * a sim trainer sleeping B·μ_train/(βK) per step. Beside each run:
 *
 * - the DES of the same α on the response lengths that run really generated
 *   (read from the batch files the trainer read), so overhead compares like
 *   with like; a generation cut by a weight sync continues with a redrawn
 *   length, so each α's own lengths are used;
 * - Prop. 1–2 bounds (des/async-bounds.ts) with μ_gen and L_gen of the same
 *   lengths: a bound on a step's time is a floor on samples/s.
 */
import path from 'node:path';
import { endToEndBounds, generationBounds, queueCompletionBound } from '../des/async-bounds';
import { asyncTrainingSchedule } from '../des/w5-async-training';
import { w5Pools, w5RunConfig, w5TrainStepS } from './configs';
import { workersFor, type W5LiveOptions } from './options';
import { overhead, dispatchIndex, summarizeSteps, speedup } from './report';
import { runRecord, type BenchContext } from './rollout-bench';
import { trainedTokens, type RunOutcome } from './runner';

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;

/** Generation seconds of each trained sample, by dispatch index and member, from its token count. */
export function genSecondsTable(tokens: Map<string, number>, o: Pick<W5LiveOptions, 's_per_token' | 'time_scale' | 'dataset_size'>): (group: number, member: number) => number {
  const table = new Map<string, number>();
  for (const [uid, n] of tokens) {
    const { group, member } = dispatchIndex(uid, o.dataset_size);
    table.set(`${group}/${member}`, n * o.s_per_token * o.time_scale);
  }
  return (group, member) => {
    const s = table.get(`${group}/${member}`);
    if (s === undefined) throw new RangeError(`no trained sample for group ${group} member ${member}`);
    return s;
  };
}

/** The zero-overhead schedule of one α on given generation times, and the Prop. 1–2 bounds for it. */
export function w5Des(o: W5LiveOptions, alpha: number, genSecondsOf: (group: number, member: number) => number) {
  const pools = w5Pools(o);
  const trainStepS = w5TrainStepS(o);
  const s = asyncTrainingSchedule({ samplesPerStep: o.batch, groupSize: o.group_size, alpha, steps: o.steps, genWorkers: pools.gen, trainStepS }, genSecondsOf);
  const input = { workers: o.workers, samplesPerStep: o.batch, alpha, muGen: s.mu_gen_s, lGen: s.l_gen_s, beta: pools.train / o.workers, muTrain: o.train_s_per_sample * o.time_scale, reuse: 1 };
  const prop2 = endToEndBounds(input);
  // α = 0 on split pools is neither of Prop. 2's settings: Prop. 1 eq. 4 on the generation pool, then the train step (as desW5).
  const stepBound = alpha === 0 ? queueCompletionBound(o.batch, pools.gen, s.mu_gen_s, s.l_gen_s) + trainStepS : prop2.async_step_s;
  return {
    makespan_s: r4(s.makespan_s),
    samples_per_s: r4(s.samples_per_s),
    trainer_idle_ratio: r4(s.trainer_idle_ratio),
    rollout_idle_ratio: r4(s.rollout_idle_ratio),
    mu_gen_s: r4(s.mu_gen_s),
    l_gen_s: r4(s.l_gen_s),
    bound_step_s: r4(stepBound),
    bound_min_samples_per_s: r4(o.batch / stepBound),
    prop1_per_sample_s: r4(alpha === 0 ? generationBounds(input).sync_per_sample_s : generationBounds(input).async_per_sample_s),
    prop2_sync_step_s: r4(prop2.sync_step_s),
    prop2_optimal_beta: r4(prop2.optimal_beta),
    prop2_max_speedup_alpha_infinite: r4(prop2.max_speedup_alpha_infinite),
  };
}

export async function benchW5(o: W5LiveOptions, ctx: BenchContext): Promise<object[]> {
  const alphas = [...new Set([0, ...o.alphas])].sort((a, b) => a - b);
  const rows: ReturnType<typeof w5Row>[] = [];
  for (const alpha of alphas) {
    const runId = `w5-a${alpha}-${ctx.stamp}`;
    const run = await ctx.stack.run('w5', w5RunConfig(o, alpha, path.join(ctx.stack.dir, 'runs')), runId, o.run_timeout_s, workersFor(o, (1 + alpha) * o.batch));
    const row = w5Row(o, alpha, run, rows[0]);
    ctx.emit(row);
    rows.push(row);
  }
  return rows;
}

/** One α: measured totals, the DES on the same lengths, the bounds; speedups over the α = 0 row. */
export function w5Row(o: W5LiveOptions, alpha: number, run: RunOutcome, sync: { samples_per_s: number | null; des: { samples_per_s: number } | null } | undefined) {
  const complete = run.ok && run.metrics.length === o.steps;
  const measured = complete ? summarizeSteps(run.metrics) : undefined;
  const des = complete ? w5Des(o, alpha, genSecondsTable(trainedTokens(run.store_dir, run.run_id), o)) : undefined;
  return {
    workload: 'w5',
    alpha,
    batch: o.batch,
    steps: o.steps,
    time_scale: o.time_scale,
    gen_workers: w5Pools(o).gen,
    train_step_s: r4(w5TrainStepS(o)),
    baseline: 'alpha=0',
    rollflow: `alpha=${alpha}`,
    makespan_s: measured?.makespan_s ?? null,
    samples_per_s: measured?.samples_per_s ?? null,
    measured_speedup: measured && sync?.samples_per_s ? speedup(measured.samples_per_s, sync.samples_per_s) : alpha === 0 && measured ? 1 : null,
    des_speedup: des && sync?.des ? speedup(des.samples_per_s, sync.des.samples_per_s) : alpha === 0 && des ? 1 : null,
    overhead: measured && des ? overhead(measured.makespan_s, des.makespan_s) : null,
    trainer_idle_ratio: measured?.trainer_idle_ratio ?? null,
    rollout_idle_ratio: measured?.rollout_idle_ratio ?? null,
    sync_s: measured?.sync_s ?? null,
    staleness_max: measured?.staleness_max ?? null,
    des: des ?? null,
    run: runRecord(run),
  };
}
