/**
 * Discrete-event simulation (DES) of the benchmark workloads: the makespan
 * each mode would reach with zero orchestration overhead, on the same sampled
 * latencies the real run uses (`rollflow bench <workload> --des-only`).
 * Pure: no Temporal, no I/O; the caller prints.
 *
 * Option defaults follow bench/README.md; each workload's zod
 * schema (W1Options … W5Options) describes every field.
 */
import { desW1, desW1Sweep } from './w1-env-async';
import { desW2, desW2Grid } from './w2-redundant-rollout';
import { desW3, desW3Sweep } from './w3-queue-scheduling';
import { desW4, desW4Sweep } from './w4-prompt-replication';
import { desW5 } from './w5-async-training';
import type { DesResult, DesWorkload } from './result';
import type { W1Options } from './w1-env-async';
import type { W2Options } from './w2-redundant-rollout';
import type { W3Options } from './w3-queue-scheduling';
import type { W4Options } from './w4-prompt-replication';
import type { W5Options } from './w5-async-training';

export interface DesOptionsByWorkload {
  w1: W1Options;
  w2: W2Options;
  w3: W3Options;
  w4: W4Options;
  w5: W5Options;
}

const RUN: Record<DesWorkload, (raw?: unknown) => DesResult> = { w1: desW1, w2: desW2, w3: desW3, w4: desW4, w5: desW5 };

/** One configuration of a workload: every mode's makespan and details. Throws DesOptionsError on a bad option. */
export function runDes<W extends DesWorkload>(workload: W, options?: Partial<DesOptionsByWorkload[W]>): DesResult {
  const run = RUN[workload];
  if (!run) throw new RangeError(`unknown workload ${String(workload)}; expected one of ${Object.keys(RUN).join(', ')}`);
  return run(options);
}

/** The same, as the JSON text the CLI prints. */
export function runDesJson<W extends DesWorkload>(workload: W, options?: Partial<DesOptionsByWorkload[W]>): string {
  return JSON.stringify(runDes(workload, options), null, 2);
}

/**
 * The grid bench/README.md asks for: W1 batch × (μ, σ), W2 num_env_groups ×
 * group_size (the heatmap), W3 batch sizes, W4 prompts × n; W5's α values are
 * the modes of a single result. Options apply to every cell.
 */
export function desSweep<W extends DesWorkload>(workload: W, options?: Partial<DesOptionsByWorkload[W]>): DesResult[] {
  const raw = options as { [key: string]: unknown } | undefined;
  switch (workload) {
    case 'w1':
      return desW1Sweep(raw);
    case 'w2':
      return desW2Grid(raw);
    case 'w3':
      return desW3Sweep(raw);
    case 'w4':
      return desW4Sweep(raw);
    default:
      return [runDes(workload, options)];
  }
}

export { DesNoProgressError, DesOptionsError, type DesModeResult, type DesResult, type DesWorkload, type Json } from './result';
export { endToEndBounds, generationBounds, queueCompletionBound, type EndToEndBoundInput, type GenerationBoundInput } from './async-bounds';
export { dispatchOrder } from './dispatch-order';
export { batchLatencyTable, episodeLatencies, episodeSeed, independentEpisodeSeed, type BatchLatencyInput, type LatencyKeying } from './env-latencies';
export { EventQueue } from './event-queue';
export { SimulatedInferenceServers, type ServerModel, type ServerStats } from './inference-servers';
export { constantTable, envAsyncMakespan, lockstepMakespan, lockstepTurnSeconds, trajectoryDurations, type TurnTimes } from './rollout';
export { groupPassesStdFilter, longTailDraw, promptSolveRate, responseLength, responseSolved, type LongTail, type SolveModel } from '../../envs/draws';
export { desW1, desW1Sweep, W1_SWEEP, W1Options } from './w1-env-async';
export { desW2, desW2Grid, groupOutcome, redundantRolloutSchedule, trajectoryOutcome, W2_GRID, W2Options, type Outcome, type RedundantRolloutPlan, type RedundantRolloutSchedule } from './w2-redundant-rollout';
export { batchRolloutSchedule, desW3, desW3Sweep, queueRolloutSchedule, W3_BATCHES, W3Options, w3Prompts, type FilteredPrompt, type FilteredRolloutPlan, type FilteredRolloutSchedule } from './w3-queue-scheduling';
export { desW4, desW4Sweep, promptReplicationSchedule, W4_CONFIGS, W4Options, w4Lengths, w4ServerModel, type ReplicationSchedule } from './w4-prompt-replication';
export { asyncTrainingSchedule, desW5, W5Options, type AsyncTrainingPlan, type AsyncTrainingSchedule } from './w5-async-training';
