/**
 * trainStep: one training step (on the run's task queue, like every workflow). Loads the batch
 * by reference, runs advantages + loss on the trainer, exports weights
 * version n+1 where the inference servers can load them.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, TrainerBinding, TrainOptions } from '../activities';
import { STORE, TRAIN } from './activity-options';
import { batchKey, REPLAYED_STEPS, type RoleQueues } from '../core';
import { roleActivities } from './routing';

const { writeBatch } = proxyActivities<Activities>(STORE);

export interface TrainStepInput {
  runId: string;
  step: number;
  sampleKeys: string[];
  options: TrainOptions;
  /** The run's hold on the trainer: a restarted trainer is recovered before the step (absent for runs planned before it). */
  binding?: TrainerBinding;
  /** The run's role task queues (RunPlan.queues); absent when it does not route by role. */
  queues?: RoleQueues;
}

export interface TrainStepResult {
  step: number;
  version: number;
  weightsPath: string;
  metrics: Record<string, number>;
  /** The trainer had already trained this step (a retry); its recorded result was returned. */
  replayed: boolean;
}

export async function trainStep(input: TrainStepInput): Promise<TrainStepResult> {
  const batchPath = await writeBatch.executeWithOptions({ summary: `step ${input.step} · ${input.sampleKeys.length} samples to one batch file` }, [{ batchKey: batchKey(input.runId, input.step), sampleKeys: input.sampleKeys }]);
  const binding = input.binding ? { binding: input.binding } : {};
  const { runTrainStep, exportWeights } = roleActivities(TRAIN, 'trainer', input.queues);
  const trained = await runTrainStep.executeWithOptions({ summary: `step ${input.step} · advantages, loss and update on the trainer` }, [{ step: input.step, batchPath, options: input.options, ...binding }]);
  const weights = await exportWeights.executeWithOptions({ summary: `export v${trained.version}` }, [{ version: trained.version, ...binding }]);
  // A trainer restarted between the step and the export was recovered by the export: count those replays with the step's.
  const metrics = weights.replayedSteps ? { ...trained.metrics, [REPLAYED_STEPS]: (trained.metrics[REPLAYED_STEPS] ?? 0) + weights.replayedSteps } : trained.metrics;
  return { step: trained.step, version: trained.version, weightsPath: weights.path, metrics, replayed: trained.replayed };
}
