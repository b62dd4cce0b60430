/** Wire types of the trainer role; contracts/trainer/*.json holds one fixture per type. */
import type { z } from 'zod';

export const TRAINER_CONTRACTS: Record<string, z.ZodType> = {};
