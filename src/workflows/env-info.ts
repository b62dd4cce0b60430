/**
 * What envs report about an episode (the last step's info: turns, tests passed, invalid actions, success…)
 * carried from the trajectory to the step record as `env/<key>`: the mean over the batch's samples that
 * reported the key. Only numbers and booleans (as 0/1) travel, at most MAX_KEYS of them, so an env's rich
 * info cannot swell workflow histories. Pure: the workflows call these.
 */

/** Prefix of the env's keys in a step record. */
export const ENV_INFO_PREFIX = 'env/';
const MAX_KEYS = 16;

/** A key's sum and the number of samples that reported it. */
export type EnvInfoSums = Record<string, [sum: number, count: number]>;

/** The numeric and boolean fields of an env step's info; undefined when it has none. */
export function numericInfo(info: Record<string, unknown> | undefined): Record<string, number> | undefined {
  const fields = Object.entries(info ?? {})
    .flatMap(([k, v]): [string, number][] => (typeof v === 'number' && Number.isFinite(v) ? [[k, v]] : typeof v === 'boolean' ? [[k, v ? 1 : 0]] : []))
    .slice(0, MAX_KEYS);
  return fields.length ? Object.fromEntries(fields) : undefined;
}

/** Sums over samples (or over groups' sums); undefined when none reported anything. */
export function sumEnvInfo(parts: (Record<string, number> | EnvInfoSums | undefined)[]): EnvInfoSums | undefined {
  const sums: EnvInfoSums = {};
  for (const part of parts) {
    for (const [k, v] of Object.entries(part ?? {})) {
      const [s, n] = Array.isArray(v) ? v : [v, 1];
      const acc = (sums[k] ??= [0, 0]);
      acc[0] += s;
      acc[1] += n;
    }
  }
  return Object.keys(sums).length ? sums : undefined;
}

/** `env/<key>` → the mean over the samples that reported it. */
export function envInfoMetrics(sums: EnvInfoSums | undefined): Record<string, number> {
  return Object.fromEntries(Object.entries(sums ?? {}).map(([k, [s, n]]) => [`${ENV_INFO_PREFIX}${k}`, s / n]));
}
