/**
 * Options of `rollflow bench <workload>` on the real system: one zod schema
 * per workload (every field described), parsed from `--set key=value` like a
 * run config. Defaults are the `make bench` set; bench/README.md's full sweeps
 * are one `--set` away (see bench/results/*.md for the exact commands).
 */
import { z } from 'zod';
import { parseDesOptions } from '../des/options';
import { W2Options } from '../des/w2-redundant-rollout';
import { W3Options } from '../des/w3-queue-scheduling';
import { W4Options } from '../des/w4-prompt-replication';
import { WORKER_SLOTS } from '../../configs';

const seconds = z.number().min(0);

const envCallModes = z.enum(['turn', 'activity', 'local']);
const envCalls = envCallModes
  .default('turn')
  .describe("How the latency_sim env's reset/step and the sample write run (custom_envs.<tag>.env_calls): turn (a turn's generation and env step as one activity: what auto gives a trajectory workflow), activity (each call its own; the default of results recorded before 2026-11-27), or local (local activities). Lockstep runs separate calls in every mode.");

const trajectoryWorkflows = z
  .boolean()
  .default(true)
  .describe("The runs' trajectory_workflows: true, each trajectory its own child workflow of its group; false, a group's trajectories run in the group's workflow (one workflow per group).");

/** Where the bench's own stack lives: never the user's ports or state dir. */
export const StackOptions = {
  port_base: z.number().int().min(1024).max(65000).default(7260).describe('Temporal on port_base, its UI on +1, sim inference +2 (further ones +5, +6, …), trainer +3, env +4 (away from a user stack on 7233/830x).'),
  worker_processes: z.number().int().min(1).max(64).optional().describe('Worker processes polling the bench task queue; an env step holds an activity slot while it sleeps. Default: ⌈in flight / temporal.worker.max_concurrent_activities⌉ (2000 by default), at most max_worker_processes.'),
  max_worker_processes: z.number().int().min(1).default(8).describe('Most worker processes the default `worker_processes` starts (each is a Node process on this machine).'),
  run_timeout_s: z.number().positive().default(3600).describe('A run still going after this many seconds is terminated and reported as a timeout.'),
};

export const W1LiveOptions = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the env seeds of the batch, hence every latency (the DES draws the same ones).'),
  batches: z.array(z.number().int().min(1)).min(1).default([64]).describe('Batch sizes B (trajectories per step, one group each); full sweep [64,128,256,512].'),
  latencies: z.array(z.tuple([seconds, seconds])).min(1).default([[10, 1], [10, 7], [10, 10], [50, 5]]).describe('(μ, σ) pairs of the env step latency, seconds before time_scale; full sweep [[10,1],[10,7],[10,10],[50,5]].'),
  turns: z.number().int().min(1).default(22).describe('Turns per trajectory T; 22 reproduces ROLL Flash Fig. 9.'),
  llm_s: seconds.default(0.1).describe('Generation seconds per turn before time_scale: the sim decodes llm_tokens tokens at llm_s/llm_tokens each; the DES gets the same constant.'),
  llm_tokens: z.number().int().min(1).default(4).describe('Tokens the sim inference generates per turn (fixed length).'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the runs (and the DES): with the seed it fixes which env seeds a batch gets.'),
  time_scale: z.number().positive().default(0.1).describe('Multiplies every latency (env and LLM) in the run and the DES; 0.1 makes μ = 10 s a 1 s step.'),
  modes: z.array(z.enum(['lockstep', 'env_async'])).min(1).default(['lockstep', 'env_async']).describe('Which runs to make; the DES always computes both.'),
  durability: z
    .array(z.enum(['on', 'off']))
    .min(1)
    .default(['on'])
    .describe('Runs of each mode: on, the defaults (generation heartbeats carry the partial tokens, trainer state saved at the start and every trainer_state_save_steps); off, without them (empty beats, the start save only). [on, off] runs both and reports the cost.'),
  stores: z
    .array(z.enum(['dir', 's3']))
    .min(1)
    .default(['dir'])
    .describe("Runs of each mode: dir, the sample store in the run's directory (the default); s3, in the bucket s3_bucket, reached through the standard AWS variables (bench/store/w1.sh starts a local versitygw and sets them). [dir, s3] runs both and reports what the store costs."),
  s3_bucket: z.string().min(3).default('rollflow').describe('The bucket of the s3 runs (it must exist); their keys go under bench/.'),
  env_calls: envCalls,
  trajectory_workflows: trajectoryWorkflows,
  ...StackOptions,
});
export type W1LiveOptions = z.output<typeof W1LiveOptions>;

export const W5LiveOptions = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the prompts, hence the sampling seeds and response lengths.'),
  batch: z.number().int().min(1).default(64).describe('Samples per train step (B = N).'),
  group_size: z.number().int().min(1).default(1).describe('Samples per group.'),
  steps: z.number().int().min(1).default(6).describe('Train steps per run.'),
  alphas: z.array(z.number().min(0)).min(1).default([0, 0.5, 1, 2, 4]).describe('Async ratios α, one run each; 0 is the synchronous baseline.'),
  workers: z.number().int().min(2).default(16).describe('Workers K, split between generation (the sim server\'s max_batch) and training.'),
  beta: z.number().gt(0).lt(1).default(0.5).describe('Share of the K workers that train (β).'),
  mean_gen_s: z.number().positive().default(10).describe('Mean generation seconds per sample before the cut (μ_gen), before time_scale.'),
  sigma_sample: z.number().min(0).default(1).describe('Log-space std of the response length (long tail; the sim\'s lognormal sigma).'),
  max_gen_s: z.number().positive().default(100).describe('Longest generation (L_gen cut; max_tokens = max_gen_s / s_per_token).'),
  s_per_token: z.number().positive().default(0.1).describe('Decode seconds per token of one sequence before time_scale (the sim\'s c0; c1 = 0, so a worker is a batch slot).'),
  train_s_per_sample: seconds.default(6).describe('μ_train: training seconds per sample on one worker; a step takes B·μ_train/(βK).'),
  dataset_size: z.number().int().min(1).default(4096).describe('Dataset size of the runs.'),
  time_scale: z.number().positive().default(0.25).describe('Multiplies every duration (decode and train) in the run and the DES.'),
  ...StackOptions,
});
export type W5LiveOptions = z.output<typeof W5LiveOptions>;

export const W7LiveOptions = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes every env latency (the DES draws the same ones).'),
  in_flight: z.array(z.number().int().min(1)).min(1).default([256, 512, 1024, 2048, 4096]).describe('Trajectories in flight N: one synchronous step of N trajectories, all dispatched at once.'),
  group_size: z.number().int().min(1).default(4).describe('Trajectories per group (G); members share the env seed and latencies.'),
  turns: z.number().int().min(1).default(2).describe('Turns per trajectory T; each turn is two activities (generate, env step), plus reset and finish.'),
  mean_s: seconds.default(10).describe('Mean env step latency μ before time_scale; 0 measures raw orchestration throughput.'),
  std_s: seconds.default(5).describe('Env step latency std σ (truncated at 0).'),
  llm_s: seconds.default(0.1).describe('Generation seconds per turn before time_scale (sim, llm_tokens tokens).'),
  llm_tokens: z.number().int().min(1).default(4).describe('Tokens the sim inference generates per turn.'),
  dataset_size: z.number().int().min(1).default(16384).describe('Dataset size: every group of the largest N gets its own env seed.'),
  time_scale: z.number().positive().default(1).describe('Multiplies every latency in the run and the DES.'),
  max_overhead: z.number().positive().default(0.1).describe('Overhead (measured / DES − 1) at or below which a size counts as sustained.'),
  env_calls: envCalls,
  trajectory_workflows: trajectoryWorkflows,
  ...StackOptions,
  run_timeout_s: z.number().positive().default(900).describe('A size still running after this many seconds is terminated, counted as broken, and larger sizes are skipped.'),
});
export type W7LiveOptions = z.output<typeof W7LiveOptions>;

/** W4: the DES's options (W4Options: the same names and meaning), with defaults sized for 2 cores, and the live-only ones. */
export const W4LiveOptions = W4Options.extend({
  prompts: W4Options.shape.prompts.removeDefault().default(32).describe(W4Options.shape.prompts.description!),
  servers: W4Options.shape.servers.removeDefault().max(32).default(4).describe('Sim inference servers K (one process each, on port_base+2 and port_base+5…).'),
  time_scale: W4Options.shape.time_scale.removeDefault().default(0.25).describe(W4Options.shape.time_scale.description!),
  modes: z.array(z.enum(['n_per_request', 'replicated'])).min(1).default(['n_per_request', 'replicated']).describe('Which runs to make: one request of n per prompt (the baseline), or n requests (is_num_return_sequences_expand).'),
  env_calls: envCallModes.default('local').describe("How the (instant) env's reset/step and the sample write run in the replicated run's trajectory workflows: local (local activities, the right choice for a millisecond env), turn or activity. The baseline's one-request groups always run them locally (env_calls auto)."),
  ...StackOptions,
});
export type W4LiveOptions = z.output<typeof W4LiveOptions>;

export const W2_MODES = ['exact', 'redundant'] as const;
export type W2Mode = (typeof W2_MODES)[number];

/** W2: the DES's options (W2Options), with defaults a 2-core machine can run, and the live-only ones. */
export const W2LiveOptions = W2Options.extend({
  timeout_s: W2Options.shape.timeout_s.removeDefault().default(120).describe('Seconds a fail-stop step holds its trajectory before the env gives up (latency_sim fail_stop: fail), before time_scale.'),
  llm_s: W2Options.shape.llm_s.removeDefault().default(0.1).describe('Generation seconds per turn before time_scale (the sim decodes llm_tokens tokens); the DES gets the same constant.'),
  llm_tokens: z.number().int().min(1).default(4).describe('Tokens the sim inference generates per turn.'),
  modes: z.array(z.enum(W2_MODES)).min(1).default([...W2_MODES]).describe('Which runs to make: exact (baseline_env_groups × baseline_group_size, every group needed) and redundant (num_env_groups × group_size, the first complete groups holding batch trajectories).'),
  env_calls: envCalls,
  ...StackOptions,
});
export type W2LiveOptions = z.output<typeof W2LiveOptions>;

export const W3_MODES = ['batch', 'queue', 'queue_no_additional'] as const;
export type W3Mode = (typeof W3_MODES)[number];

/** W3: the DES's options (W3Options), sized for 2 cores, and the live-only ones. */
export const W3LiveOptions = W3Options.extend({
  time_scale: W3Options.shape.time_scale.removeDefault().default(0.25).describe(W3Options.shape.time_scale.description!),
  servers: W3Options.shape.servers.removeDefault().max(32).default(4).describe('Sim inference servers K (one process each, on port_base+2 and port_base+5…).'),
  replicate: z.literal(true).default(true).describe('Each response its own request: the live env sets each response\'s length, which one n-request cannot carry.'),
  reward_s: z.literal(0).default(0).describe('The live reward is the env\'s last step (instant), so the DES takes 0 too.'),
  modes: z.array(z.enum(W3_MODES)).min(1).default([...W3_MODES]).describe('Which runs to make: batch (generate_opt_level 0, waves), queue (generate_opt_level 1 with max_additional_running_prompts), queue_no_additional (queue with none).'),
  env_calls: envCallModes.default('local').describe("How the (instant) env's reset/step and the sample write run in the trajectory workflows: local, turn or activity."),
  ...StackOptions,
});
export type W3LiveOptions = z.output<typeof W3LiveOptions>;

/** W8: SWE-lite episodes (the sim's scripted swe_oracle policy, real sandboxed commands) in lockstep and env_async. */
export const W8LiveOptions = z.strictObject({
  seed: z.number().int().min(0).default(1).describe('Run seed: fixes the tasks (env seeds) and each episode\'s plan (solve or flail).'),
  groups: z.number().int().min(1).default(50).describe('Env groups of the one step (each a task).'),
  group_size: z.number().int().min(1).default(4).describe('Episodes per group: B = groups × group_size episodes (200 by default).'),
  tiers: z.array(z.number().int().min(1).max(3)).min(1).default([1, 2, 3]).describe('SWE-lite tiers the tasks come from.'),
  max_turns: z.number().int().min(1).max(50).default(12).describe('Turns per episode at most (the env grades the last one).'),
  solve_prob: z.number().min(0).max(1).default(0.5).describe('Share of episodes the scripted policy solves.'),
  solve_after_turns: z.number().int().min(0).default(3).describe('Turns a solver explores (views, commands) before it edits.'),
  flail_turns: z.number().int().min(1).default(8).describe('Turns a flailer acts (commands, invalid replies, a harmless edit) before it submits.'),
  seconds_per_token: seconds.default(0.002).describe('The sim\'s decode time per reply byte (a reply is tens to hundreds of bytes).'),
  modes: z.array(z.enum(['lockstep', 'env_async'])).min(1).default(['lockstep', 'env_async']).describe('Which runs to make; the DES is fed by the env_async run\'s measured latencies.'),
  sandbox_runs: z.number().int().min(0).default(50).describe('Runs of bench/engines/sandbox_bench.py (sandbox create/destroy and command overhead), 0 to skip.'),
  actions: z.enum(['xml', 'tool_calls']).default('xml').describe('The episodes\' action protocol, the env_config.actions of swe_lite (docs/swe-lite.md): xml tags, or native tool calls, which the scripted policy then writes (it reads the tools from the prompt).'),
  env: z.enum(['swe_lite', 'swe']).default('swe_lite').describe('The env: swe_lite (generated tasks, tiers), or swe (SWE-bench-format instances from `instances`, docs/swe-bench.md; the scripted policy applies each one\'s gold patch).'),
  instances: z.string().min(1).optional().describe('swe: the dataset (JSON lines or parquet), relative to the repository; the env and the scripted policy both read it.'),
  split: z.string().min(1).optional().describe('swe: only the instances of this split (env_config.split).'),
  repo_path: z.string().min(1).default('.cache/swe-mined/repos/{instance_id}').describe('swe: source.repo_path, each instance\'s repository (a template; the task miner\'s layout by default).'),
  python: z.string().min(1).default('.cache/swe-mined/envs/{repo_slug}/bin/python').describe('swe: source.python, the prepared environment\'s interpreter (a template).'),
  dataset_size: z.number().int().min(1).optional().describe('swe: instances the env seeds walk; default the JSON-lines file\'s rows (of the split).'),
  grading_timeout_s: z.number().positive().max(1800).default(120).describe('swe: the env\'s grading_timeout_s.'),
  wrong_file_prob: z.number().min(0).max(1).default(0).describe('swe: chance a solver first views an unrelated file (the policy\'s noise).'),
  failed_edit_prob: z.number().min(0).max(1).default(0).describe('swe: chance a solver first sends an edit whose old text does not match.'),
  wasted_command_prob: z.number().min(0).max(1).default(0).describe('swe: chance a solver runs a command that changes nothing (ls, find, the tests).'),
  in_flight: z.array(z.number().int().min(1)).default([]).describe('After the runs: env_async runs of N one-episode groups for each N, episodes per minute against N (where throughput stops growing); [] to skip.'),
  ...StackOptions,
});
export type W8LiveOptions = z.output<typeof W8LiveOptions>;

export const LIVE_SCHEMAS = { w1: W1LiveOptions, w2: W2LiveOptions, w3: W3LiveOptions, w4: W4LiveOptions, w5: W5LiveOptions, w7: W7LiveOptions, w8: W8LiveOptions };
export type LiveWorkload = keyof typeof LIVE_SCHEMAS;
export interface LiveOptionsByWorkload {
  w1: W1LiveOptions;
  w2: W2LiveOptions;
  w3: W3LiveOptions;
  w4: W4LiveOptions;
  w5: W5LiveOptions;
  w7: W7LiveOptions;
  w8: W8LiveOptions;
}

export function isLiveWorkload(w: string): w is LiveWorkload {
  return w in LIVE_SCHEMAS;
}

/** Worker processes for `inFlight` trajectories: the option, or enough activity slots for every one of them, capped. */
export function workersFor(o: { worker_processes?: number | undefined; max_worker_processes: number }, inFlight: number): number {
  return o.worker_processes ?? Math.min(o.max_worker_processes, Math.max(1, Math.ceil(inFlight / WORKER_SLOTS)));
}

/** Validates raw options (from --set); a bad one names the key, the value and what was expected (DesOptionsError). */
export function parseLiveOptions<W extends LiveWorkload>(workload: W, raw: unknown): LiveOptionsByWorkload[W] {
  return parseDesOptions(workload, LIVE_SCHEMAS[workload], raw) as LiveOptionsByWorkload[W];
}

/** The fields of `schema` alone: the DES options of a live run whose options extend them. */
function desFields<T extends z.ZodRawShape>(schema: z.ZodObject<T>, o: object): Record<keyof T, unknown> {
  return Object.fromEntries(Object.keys(schema.shape).map((k) => [k, (o as Record<string, unknown>)[k]])) as Record<keyof T, unknown>;
}

/** The DES options of a W4 live run: its W4Options fields alone. */
export function w4DesOptions(o: W4LiveOptions): W4Options {
  return desFields(W4Options, o) as W4Options;
}

/** The DES options of a W2 live run: its W2Options fields alone. */
export function w2DesOptions(o: W2LiveOptions): W2Options {
  return desFields(W2Options, o) as W2Options;
}

/** The DES options of a W3 live run: its W3Options fields alone. */
export function w3DesOptions(o: W3LiveOptions): W3Options {
  return desFields(W3Options, o) as W3Options;
}
