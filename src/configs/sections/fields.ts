/** Field builders the config sections share. */
import { z } from 'zod';

/** A whole number of at least `min`. */
export const count = (min: number) => z.number().int().min(min);
