/**
 * W4: prompt replication (ROLL Flash Sec. 5.1.2, Fig. 8). P prompts × n
 * responses on K servers. Without replication a prompt's n responses are one
 * request (num_return_sequences = n) decoded on one server, so a prompt whose
 * responses all run long keeps one server busy while others idle; with
 * `is_num_return_sequences_expand` they are n independent requests the router
 * spreads. All requests are submitted at once (a synchronous rollout).
 */
import { z } from 'zod';
import { dispatchOrder } from './dispatch-order';
import { EventQueue } from './event-queue';
import { SimulatedInferenceServers, type ServerModel } from './inference-servers';
import { optionsJson, parseDesOptions, ratio, seconds } from './options';
import type { DesModeResult, DesResult } from './result';
import { responseLength } from '../../envs/draws';

export interface ReplicationSchedule {
  makespan_s: number;
  /** Decoding seconds per server. */
  busy_s: number[];
  /** Mean over servers of busy / makespan. */
  utilization: number;
}

/** Makespan of generating lengths[p][j] (prompt p, response j) with or without prompt replication. */
export function promptReplicationSchedule(model: ServerModel, lengths: readonly (readonly number[])[], replicate: boolean): ReplicationSchedule {
  const events = new EventQueue();
  const servers = new SimulatedInferenceServers(events, model);
  let last = 0;
  const done = () => void (last = events.now);
  for (const responses of lengths) {
    if (replicate) for (const length of responses) servers.submit([length], done);
    else servers.submit(responses, done);
  }
  events.run();
  const { busy_s } = servers.stats();
  return { makespan_s: last, busy_s, utilization: last > 0 ? busy_s.reduce((a, b) => a + b, 0) / busy_s.length / last : 0 };
}

export const W4Options = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the prompts (dataset indices) and their response lengths.'),
  prompts: z.number().int().min(1).default(64).describe('Prompts per step (batch size).'),
  n: z.number().int().min(1).default(16).describe('Responses per prompt (num_return_sequences).'),
  servers: z.number().int().min(1).default(8).describe('Inference servers (K).'),
  max_batch: z.number().int().min(1).default(64).describe('Sequences one server decodes together; more wait for a slot.'),
  c0_s: z.number().min(0).default(0.01).describe('Seconds per decode step.'),
  c1_s: z.number().min(0).default(0.001).describe('Extra seconds per decode step per running sequence.'),
  mean_tokens: z.number().positive().default(1000).describe('Mean natural response length (log-normal).'),
  sigma_prompt: z.number().min(0).default(0.8).describe('Log-space std of the per-prompt length factor (hard prompts answer long).'),
  sigma_sample: z.number().min(0).default(0.4).describe('Log-space std of the per-response length factor.'),
  max_tokens: z.number().int().min(1).default(4096).describe('Responses are cut at this length.'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the run (prompts are drawn in its seeded order).'),
  time_scale: z.number().positive().default(1).describe('Multiplies c0 and c1, as the sim server\'s time_scale does.'),
});
export type W4Options = z.output<typeof W4Options>;

export function w4Lengths(o: W4Options): number[][] {
  const promptAt = dispatchOrder(o.dataset_size, o.seed);
  const model = { mean: o.mean_tokens, sigma_prompt: o.sigma_prompt, sigma_sample: o.sigma_sample, max: o.max_tokens };
  return Array.from({ length: o.prompts }, (_, p) => Array.from({ length: o.n }, (_, j) => responseLength(model, o.seed, promptAt(p), j)));
}

/** The K servers W4's options describe, their decode costs after time_scale. */
export function w4ServerModel(o: Pick<W4Options, 'servers' | 'max_batch' | 'c0_s' | 'c1_s' | 'time_scale'>): ServerModel {
  return { servers: o.servers, max_batch: o.max_batch, c0_s: o.c0_s * o.time_scale, c1_s: o.c1_s * o.time_scale };
}

export function desW4(raw?: unknown): DesResult {
  const o = parseDesOptions('w4', W4Options, raw);
  const model = w4ServerModel(o);
  const lengths = w4Lengths(o);
  const mode = (replicate: boolean): DesModeResult => {
    const s = promptReplicationSchedule(model, lengths, replicate);
    return { makespan_s: seconds(s.makespan_s), utilization: ratio(s.utilization), busy_s: s.busy_s.map(seconds) };
  };
  const grouped = mode(false);
  const replicated = mode(true);
  const flat = lengths.flat();
  return {
    workload: 'w4',
    seed: o.seed,
    options: optionsJson(o),
    baseline: 'n_per_request',
    rollflow: 'replicated',
    modes: { n_per_request: { ...grouped, mean_tokens: ratio(flat.reduce((a, b) => a + b, 0) / flat.length), max_tokens: Math.max(...flat) }, replicated },
    speedup: ratio(grouped.makespan_s / replicated.makespan_s),
  };
}

/** Fig. 8's configurations: prompts × n. */
export const W4_CONFIGS: [prompts: number, n: number][] = [
  [32, 16],
  [64, 16],
  [16, 32],
  [16, 64],
];

export function desW4Sweep(raw?: { [key: string]: unknown }): DesResult[] {
  return W4_CONFIGS.map(([prompts, n]) => desW4({ ...raw, prompts, n }));
}
