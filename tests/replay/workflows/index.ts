// Test-only workflow code for replay.test.ts: a `trainStep` that is no longer
// the recorded one. It has the workflow type name of
// src/workflows/train-step.ts but trains before it writes the batch, so its
// first command (schedule runTrainStep) is not the recorded history's first
// (schedule writeBatch): the kind of change a patch exists for, made without one.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../../src/activities';
import type { TrainStepInput, TrainStepResult } from '../../../src/workflows/train-step';

// Replay never runs an activity, and activity options are not part of the commands it compares.
const { writeBatch, runTrainStep, exportWeights } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });

export async function trainStep(input: TrainStepInput): Promise<TrainStepResult> {
  const batchPath = `${input.runId}/batches/step-${String(input.step).padStart(6, '0')}.jsonl`;
  const trained = await runTrainStep({ step: input.step, batchPath, options: input.options });
  await writeBatch({ batchKey: batchPath, sampleKeys: input.sampleKeys });
  const weights = await exportWeights({ version: trained.version });
  return { step: trained.step, version: trained.version, weightsPath: weights.path, metrics: trained.metrics, replayed: trained.replayed };
}
