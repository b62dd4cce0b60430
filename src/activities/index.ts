// Every activity the worker registers. Workflows see these only as types,
// through proxyActivities<Activities>.
import type { ActivityDeps } from './deps';
import { checkEngineHealth } from './health';
import { rolloutActivities } from './rollout';
import { trainingActivities } from './training';

export function createActivities(deps: ActivityDeps) {
  return { checkEngineHealth, ...rolloutActivities(deps), ...trainingActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
export { checkEngineHealth };
export { createDeps, type ActivityDeps } from './deps';
export type { GenerateTurnInput, Sampling, StepResult, TrajectoryContext, TurnSummary } from './rollout';
export type { CheckpointManifest } from './training';
export type { TrainerBinding, TrainOptions } from './trainer-recovery';
