/** One problem in a config: where, what was given, what was expected. */
export interface ConfigProblem {
  path: string;
  given: unknown;
  expected: string;
}

/** Thrown when a config file is unreadable, not YAML, or fails the schema; carries every problem found. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly source: string,
    readonly problems: ConfigProblem[],
  ) {
    super(`invalid config ${source}:\n${problems.map(formatProblem).join('\n')}`);
  }
}

export function formatProblem(p: ConfigProblem): string {
  const given = p.given === undefined ? '(missing)' : JSON.stringify(p.given);
  return `  ${p.path || '(top level)'}: got ${given}; ${p.expected}`;
}
