/**
 * rollflow as a library: `import { RollflowClient } from 'rollflow'` to
 * start, steer, wait for and list runs from code (a CI job, a notebook).
 * The command line (`rollflow`, bin/rollflow) is built on the same client.
 */
export { RollflowClient, loadConfigSource, prepareRun, type ConfigSource, type PreparedRun, type RunListing, type StartedRun, type StartOptions } from './client/rollflow-client';
export { NoWorkerError, RunFailedError, RunNotFoundError, TemporalUnreachableError } from './client/errors';
export { ConfigError, loadConfig, loadConfigObject, type ConfigProblem, type LoadedConfig, type RunConfig, type RunConfigInput } from './configs';
export type { RunStatus } from './workflows/run';
