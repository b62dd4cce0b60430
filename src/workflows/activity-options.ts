/**
 * Timeouts and retry policies per kind of call. Long calls heartbeat, so a
 * dead worker is noticed in heartbeatTimeout, not startToCloseTimeout: its
 * calls are retried on a live worker HEARTBEAT_TIMEOUT after its last beat
 * (heartbeat-timing.ts), or at once when it is restarted on its host.
 * Failure types that retrying cannot fix are named here, not matched by text.
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { ENV_STEP_ATTEMPTS, HEARTBEAT_TIMEOUT, NON_RETRYABLE_ACTIVITY_ERRORS } from '../core';
import { NON_RETRYABLE_ENV_ERRORS } from '../envs/errors';
import { NON_RETRYABLE_ENGINE_ERRORS } from '../gpu-bridge/errors';
import { NON_RETRYABLE_STORE_ERRORS } from '../store/errors';

/** Every boundary's errors that no retry can fix, by their class names (the failure types activities raise). */
const NON_RETRYABLE = [...NON_RETRYABLE_ENGINE_ERRORS, ...NON_RETRYABLE_STORE_ERRORS, ...NON_RETRYABLE_ENV_ERRORS, ...NON_RETRYABLE_ACTIVITY_ERRORS];

/** Generation: may wait out weight syncs and long tails. */
export const GENERATE: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: NON_RETRYABLE },
};

/**
 * Env reset/step: seconds to minutes; a fail-stop env is cut by the timeout and retried (the env replays).
 * An env server that cannot be reached is waited for inside the call, for as long as it takes, without
 * using up an attempt (activities/engine-wait.ts: its supervisor restarts it, or it waits in crash-loop
 * for someone to fix it). The 25 attempts (1 + 2 + 4 + 8 + 16 s, then 30 s apart: about ten minutes)
 * count only failures of an env server that answers its health check: an env that keeps failing on
 * its own fails the trajectory as an infrastructure failure (never trained).
 *
 * The timeouts nest, so a long step is never cut and retried while it runs: the server bounds one step
 * by the env's limits (step_timeout_s, e.g. swe_lite's command + grading + 20 s: 160 s by default, at
 * most 600 + 1800 + 20 s); the bridge waits that plus STEP_TIMEOUT_MARGIN_MS (gpu-bridge/env-client.ts);
 * startToClose (1 hour) exceeds the largest of those (about 41 minutes). The heartbeat, sent by a timer
 * while the call waits, only says the worker lives: a dead worker's step is retried HEARTBEAT_TIMEOUT
 * after its last beat, and that retry is answered from the server's record of the step's index
 * (roles/env/steps.py), waiting for it if it still runs; it is never applied twice.
 */
export const ENV: ActivityOptions = {
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: ENV_STEP_ATTEMPTS, nonRetryableErrorTypes: NON_RETRYABLE },
};

/**
 * A generation and its env step as one activity (env_calls turn, and auto in trajectory workflows): one activity
 * task and one workflow task a turn instead of two of each. Its timeout is the two calls' together; it retries as a
 * generation does, without limit, and keeps the env step's ENV_STEP_ATTEMPTS itself (activities/rollout.ts playTurn).
 */
export const TURN: ActivityOptions = {
  startToCloseTimeout: '3 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: GENERATE.retry,
};

/** Store reads and writes: quick, retried fast. */
export const STORE: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '200 ms', maximumInterval: '10 seconds', nonRetryableErrorTypes: NON_RETRYABLE },
};

/** Train step, export, weight sync: minutes; heartbeats while they run. */
export const TRAIN: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: NON_RETRYABLE },
};

/**
 * Env calls and sample writes as local activities (env_calls local, auto in a
 * one-request group; the reset and the sample write of env_calls turn, and so
 * of auto in a trajectory workflow): executed by the worker that runs the workflow and
 * recorded as markers in its history, so the server dispatches one workflow
 * task per phase instead of one activity task per call. In a one-request
 * group that is 3·G of its 3·G + 1 calls. Meant for envs that answer in
 * milliseconds: a local call that sleeps keeps its workflow task open. Its
 * 10 minutes exceed a step's client timeout under swe_lite's default limits
 * (160 + 30 s), not under its largest ones; a local step cut there is retried
 * and answered from the server's record, never applied twice.
 */
export const LOCAL_ENV: LocalActivityOptions = {
  startToCloseTimeout: '10 minutes',
  localRetryThreshold: '10 seconds',
  retry: ENV.retry,
};

export const LOCAL_STORE: LocalActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: STORE.retry,
};
