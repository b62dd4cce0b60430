/**
 * The run config: one zod schema is the source of truth. Key names follow ROLL
 * where ROLL has them; rollflow's own keys are marked "(rollflow)". Every field
 * carries a one-line description (a unit test checks this). Values computed
 * from these fields live in derive.ts and nowhere else.
 *
 * One file per section under sections/ (engines, temporal, actors, envs,
 * algorithm; run.ts lists the top-level keys), the checks between fields in
 * checks.ts; this file puts them together and is what the rest imports.
 */
import type { z } from 'zod';
import { checkCrossReferences } from './checks';
import { RunConfigFields } from './sections/run';

export { ActorInferSchema, ActorTrainSchema, LR_SCHEDULER_TYPES, warmupSteps } from './sections/actors';
export { ADV_ESTIMATORS, AlgorithmSettings, LOSS_AGG_MODES, PG_VARIANTS, REWARD_NORMS } from './sections/algorithm';
export { EnginesSchema } from './sections/engines';
export { CustomEnvSchema, EnvManagerSchema, REWARD_TYPES, RewardSchema } from './sections/envs';
export { TemporalSchema, WORKER_SLOTS } from './sections/temporal';
export { TRACKERS } from './sections/run';

export const RunConfigSchema = RunConfigFields.superRefine(checkCrossReferences);

export type RunConfigInput = z.input<typeof RunConfigSchema>;
export type RunConfig = z.output<typeof RunConfigSchema>;
