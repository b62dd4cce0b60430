/**
 * W4 (prompt replication, ROLL Flash Fig. 8) on the real system: one
 * synchronous step of P prompts × n responses on K sim inference servers,
 * once with a prompt's n responses as one request (the baseline) and once
 * replicated into n requests that the bridge's router spreads.
 *
 * The sim draws response lengths itself, so beside each run the DES schedules
 * the lengths that run really generated (read from the batch the trainer
 * read): the overhead compares like with like. The two modes draw different
 * per-response lengths (their sampling seeds differ; the per-prompt factors
 * are the same), so the report also gives the DES of both modes on the
 * baseline's lengths alone.
 */
import path from 'node:path';
import { promptReplicationSchedule, w4ServerModel } from '../des/w4-prompt-replication';
import { epochOrder } from '../../core';
import { w4RunConfig } from './configs';
import { workersFor, type W4LiveOptions } from './options';
import { dispatchRamp, overhead, dispatchIndex, rolloutMakespan, speedup, type DispatchRamp } from './report';
import { runRecord, type BenchContext } from './rollout-bench';
import { trainedTokens, type RunOutcome } from './runner';

export type W4Mode = 'n_per_request' | 'replicated';

/** lengths[p][j]: response tokens of member j of the p-th dispatched prompt, from a run's trained samples. */
export function lengthsByPrompt(tokens: Map<string, number>, o: Pick<W4LiveOptions, 'prompts' | 'n' | 'dataset_size'>): number[][] {
  const lengths = Array.from({ length: o.prompts }, () => new Array<number>(o.n).fill(0));
  for (const [uid, count] of tokens) {
    const { group, member } = dispatchIndex(uid, o.dataset_size);
    if (group >= o.prompts || member >= o.n) throw new RangeError(`sample ${uid} is outside ${o.prompts} prompts × ${o.n}`);
    lengths[group]![member] = count;
  }
  const missing = lengths.flatMap((row, p) => row.flatMap((l, j) => (l === 0 ? [`${p}/${j}`] : [])));
  if (missing.length > 0) throw new RangeError(`no trained sample for ${missing.length} of ${o.prompts * o.n} (prompt/member ${missing.slice(0, 3).join(', ')}…)`);
  return lengths;
}

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The DES makespan of one mode when the requests reach the servers in other
 * orders: the live run's order is whatever order its workflows happened to
 * send them in, and which prompts share a server decides the n-per-request
 * makespan. `orders` seeded shuffles of the prompts (and of the responses of
 * the replicated mode).
 */
export function desOrderRange(o: W4LiveOptions, lengths: number[][], mode: W4Mode, orders = 100): { min_s: number; max_s: number } {
  let min = Infinity;
  let max = 0;
  for (let k = 0; k < orders; k++) {
    const shuffled = epochOrder(lengths.length, o.seed, k).map((p) => lengths[p]!);
    const s = promptReplicationSchedule(w4ServerModel(o), mode === 'replicated' ? shuffleResponses(shuffled, o.seed + k) : shuffled, mode === 'replicated').makespan_s;
    min = Math.min(min, s);
    max = Math.max(max, s);
  }
  return { min_s: r3(min), max_s: r3(max) };
}

/** The responses of all prompts in a seeded order, one per row (replicated requests are independent). */
function shuffleResponses(lengths: number[][], seed: number): number[][] {
  const flat = lengths.flat();
  return epochOrder(flat.length, seed, 0).map((i) => [flat[i]!]);
}

/** The zero-overhead schedule of one mode on given lengths. */
function desOf(o: W4LiveOptions, lengths: number[][], mode: W4Mode) {
  const s = promptReplicationSchedule(w4ServerModel(o), lengths, mode === 'replicated');
  return { makespan_s: r3(s.makespan_s), utilization: r3(s.utilization) };
}

export async function benchW4(o: W4LiveOptions, ctx: BenchContext): Promise<object[]> {
  const runs: Partial<Record<W4Mode, RunOutcome>> = {};
  const ramps: Partial<Record<W4Mode, DispatchRamp | null>> = {};
  for (const mode of o.modes) {
    const runId = `w4-p${o.prompts}-n${o.n}-k${o.servers}-${mode}-${ctx.stamp}`;
    const runDir = path.join(ctx.stack.dir, 'runs');
    runs[mode] = await ctx.stack.run(`w4-${mode}`, w4RunConfig(o, mode === 'replicated', runDir), runId, o.run_timeout_s, workersFor(o, o.prompts * o.n));
    ramps[mode] = dispatchRamp(await ctx.stack.generateScheduledAt(runId).catch(() => []));
  }
  const lengths = Object.fromEntries(
    Object.entries(runs).flatMap(([mode, r]) => (r.ok ? [[mode, lengthsByPrompt(trainedTokens(r.store_dir, r.run_id), o)]] : [])),
  ) as Partial<Record<W4Mode, number[][]>>;
  const report = { ...w4Report(o, runs, lengths), dispatch_ramp: ramps };
  ctx.emit(report);
  return [report];
}

/** Both makespans, both speedups and the overheads; every DES on lengths a run really generated. */
export function w4Report(o: W4LiveOptions, runs: Partial<Record<W4Mode, RunOutcome>>, lengths: Partial<Record<W4Mode, number[][]>>) {
  const measured = (mode: W4Mode) => (runs[mode]?.ok ? rolloutMakespan(runs[mode].metrics) : undefined);
  const des = (mode: W4Mode) => (lengths[mode] ? desOf(o, lengths[mode], mode) : undefined);
  const base = measured('n_per_request');
  const flash = measured('replicated');
  const desBase = des('n_per_request');
  const desFlash = des('replicated');
  const sameLengths = lengths.n_per_request && {
    n_per_request_s: desOf(o, lengths.n_per_request, 'n_per_request').makespan_s,
    replicated_s: desOf(o, lengths.n_per_request, 'replicated').makespan_s,
  };
  const measuredSpeedup = base !== undefined && flash !== undefined ? speedup(base, flash) : null;
  const desSpeedup = desBase && desFlash ? speedup(desBase.makespan_s, desFlash.makespan_s) : null;
  return {
    workload: 'w4',
    prompts: o.prompts,
    n: o.n,
    servers: o.servers,
    max_batch: o.max_batch,
    c0_s: o.c0_s,
    c1_s: o.c1_s,
    time_scale: o.time_scale,
    mean_tokens: Object.fromEntries(Object.entries(lengths).map(([m, l]) => [m, Math.round(mean(l.flat()))])),
    max_tokens: Object.fromEntries(Object.entries(lengths).map(([m, l]) => [m, Math.max(...l.flat())])),
    baseline_makespan_s: base ?? null,
    rollflow_makespan_s: flash ?? null,
    measured_speedup: measuredSpeedup,
    des_speedup: desSpeedup,
    /** measured speedup / DES speedup − 1. */
    speedup_vs_des: measuredSpeedup !== null && desSpeedup !== null ? overhead(measuredSpeedup, desSpeedup) : null,
    des_baseline_makespan_s: desBase?.makespan_s ?? null,
    des_rollflow_makespan_s: desFlash?.makespan_s ?? null,
    des_utilization: { n_per_request: desBase?.utilization ?? null, replicated: desFlash?.utilization ?? null },
    /** The DES makespan over 100 other arrival orders of the same requests: where a measured makespan below the DES comes from. */
    des_order_range: Object.fromEntries(Object.entries(lengths).map(([m, l]) => [m, desOrderRange(o, l, m as W4Mode)])),
    overhead: flash !== undefined && desFlash ? overhead(flash, desFlash.makespan_s) : null,
    baseline_overhead: base !== undefined && desBase ? overhead(base, desBase.makespan_s) : null,
    /** The DES of both modes on the baseline run's lengths: the replication gain with no sampling difference. */
    des_same_lengths: sameLengths ? { ...sameLengths, speedup: speedup(sameLengths.n_per_request_s, sameLengths.replicated_s) } : null,
    runs: Object.fromEntries(Object.entries(runs).map(([mode, r]) => [mode, runRecord(r)])),
    /** Response tokens [prompt][member] each run generated, in dispatch order: every DES figure above is computed from these. */
    lengths,
  };
}
