/**
 * trainStep: one training step (on the run's task queue, like every workflow). Loads the batch
 * by reference, runs advantages + loss on the trainer, exports weights
 * version n+1 where the inference servers can load them.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, TrainOptions } from '../activities';
import { STORE, TRAIN } from './activity-options';
import { batchKey } from './ids';

const { writeBatch } = proxyActivities<Activities>(STORE);
const { runTrainStep, exportWeights } = proxyActivities<Activities>(TRAIN);

export interface TrainStepInput {
  runId: string;
  step: number;
  sampleKeys: string[];
  options: TrainOptions;
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
  const batchPath = await writeBatch({ batchKey: batchKey(input.runId, input.step), sampleKeys: input.sampleKeys });
  const trained = await runTrainStep({ step: input.step, batchPath, options: input.options });
  const weights = await exportWeights({ version: trained.version });
  return { step: trained.step, version: trained.version, weightsPath: weights.path, metrics: trained.metrics, replayed: trained.replayed };
}
