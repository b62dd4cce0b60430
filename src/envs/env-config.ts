/** Parses a TypeScript env's env_config with its zod schema, as the run config is parsed. */
import type { z } from 'zod';
import { formatProblem } from '../configs/errors';
import { explainIssues } from '../configs/explain';
import { EnvConfigError } from './errors';

/** The parsed config; a bad key or value throws EnvConfigError naming it (config.<key> in the message). */
export function parseEnvConfig<S extends z.ZodType>(env: string, schema: S, raw: unknown): z.output<S> {
  const r = schema.safeParse(raw ?? {});
  if (r.success) return r.data;
  const problems = explainIssues(r.error.issues, raw, schema);
  throw new EnvConfigError(`${env}:\n${problems.map((p) => formatProblem({ ...p, path: `config.${p.path}` })).join('\n')}`, problems);
}
