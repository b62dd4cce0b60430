/**
 * DES options: one zod schema per workload is the source of truth (defaults
 * match bench/README.md; every field says what it is). A bad option fails with
 * its key, the value and what was expected, like a bad run config.
 */
import type { z } from 'zod';
import { formatProblem } from '../../configs/errors';
import { explainIssues } from '../../configs/explain';
import { DesOptionsError, type Json } from './result';

export function parseDesOptions<S extends z.ZodType>(workload: string, schema: S, raw: unknown): z.output<S> {
  const r = schema.safeParse(raw ?? {});
  if (!r.success) {
    const problems = explainIssues(r.error.issues, raw, schema).map((p) => ({ ...p, path: `${workload}.${p.path}` }));
    throw new DesOptionsError(`DES options for ${workload}:\n${problems.map(formatProblem).join('\n')}`);
  }
  return r.data;
}

/** Resolved options as JSON for the result (they are plain numbers, strings and booleans by construction). */
export function optionsJson(options: object): { [key: string]: Json } {
  return JSON.parse(JSON.stringify(options)) as { [key: string]: Json };
}

/** Rounds seconds for reports: microsecond resolution is far below anything measured. */
export function seconds(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

export function ratio(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
