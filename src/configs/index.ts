export { RunConfigSchema, PG_VARIANTS, ADV_ESTIMATORS, REWARD_NORMS, REWARD_TYPES, WORKER_SLOTS, warmupSteps, type RunConfig, type RunConfigInput } from './schema';
export { derive, type Derived } from './derive';
export { ConfigError, formatProblem, type ConfigProblem } from './errors';
export { loadConfig, loadConfigObject, parseConfig, applyOverride, type LoadedConfig } from './load';
export { knownKeysAt, suggestKey } from './explain';
