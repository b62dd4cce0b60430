/** Wire types of the inference role; contracts/inference/*.json holds one fixture per type. */
import type { z } from 'zod';

export const INFERENCE_CONTRACTS: Record<string, z.ZodType> = {};
