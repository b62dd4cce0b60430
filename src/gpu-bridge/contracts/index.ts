// Wire types shared with python-engines, by role; fixtures live in contracts/<role>/.
import type { z } from 'zod';
import { ENV_CONTRACTS } from './env';
import { INFERENCE_CONTRACTS } from './inference';
import { TRAINER_CONTRACTS } from './trainer';

export const CONTRACTS: Record<'inference' | 'trainer' | 'env', Record<string, z.ZodType>> = {
  inference: INFERENCE_CONTRACTS,
  trainer: TRAINER_CONTRACTS,
  env: ENV_CONTRACTS,
};
