/** Wire types of the env role; contracts/env/*.json holds one fixture per type. */
import type { z } from 'zod';

export const ENV_CONTRACTS: Record<string, z.ZodType> = {};
