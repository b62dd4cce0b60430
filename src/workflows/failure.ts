/**
 * Temporal wraps a failure once per hop (an update, a child workflow, an
 * activity, the engine's reply): the wrappers say where it failed, the
 * innermost cause says why. Workflows, the CLI and the bench report that one.
 */
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { EnvSessionLostError, INFRA_ENV_ERRORS, RewardUnscoredError } from '../envs/errors';
import { INFRA_ENGINE_ERRORS } from '../gpu-bridge/errors';
import { EnvStepAttemptsExhaustedError } from '../core';

/** The innermost error of a cause chain. */
export function innermostCause(err: unknown): unknown {
  let e = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e;
}

/** The innermost error's message (or the thrown value, as text). */
export function causeMessage(err: unknown): string {
  const e = innermostCause(err);
  return e instanceof Error ? e.message : String(e);
}

/** The env server lost the episode's session, and its on_env_loss left the decision to the workflow (restart, drop). */
export function isEnvSessionLost(err: unknown): boolean {
  const e = innermostCause(err);
  return e instanceof ApplicationFailure && e.type === EnvSessionLostError.name;
}

// An env step that used up its attempts inside a turn activity (activities/rollout.ts playTurn) is the env's failure,
// never the model's: what activity-options.ts says of an env that keeps failing on its own.
const INFRA_FAILURE_TYPES = new Set([...INFRA_ENGINE_ERRORS, ...INFRA_ENV_ERRORS, EnvStepAttemptsExhaustedError.name]);

/**
 * Whether a failure is the infrastructure's rather than the model's or the
 * config's: an engine or env server unreachable or 5xx past its retries
 * (EngineUnavailableError), an env session lost under on_env_loss: drop, an
 * env that gave up or whose step kept failing in a turn activity, or any timeout on the way (an activity's start-to-close
 * or heartbeat timeout surfaces as a TimeoutFailure somewhere in the chain).
 * A bad config (EnvConfigError, a 4xx), a tokenization drift or a workflow
 * bug is not.
 */
export function isInfraFailure(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof TimeoutFailure) return true;
    if (e instanceof ApplicationFailure && e.type !== undefined && e.type !== null && INFRA_FAILURE_TYPES.has(e.type)) return true;
  }
  return false;
}

/** A verifier could not score a response (RewardUnscoredError): neither the model's 0 nor the infrastructure's failure. */
export function isUnscored(err: unknown): boolean {
  const e = innermostCause(err);
  return e instanceof ApplicationFailure && e.type === RewardUnscoredError.name;
}

/** What a group keeps of a failure: the innermost message, whether the infrastructure caused it, and whether a response went unscored. */
export interface FailureSummary {
  message: string;
  infra: boolean;
  unscored?: true;
}

/** What a workflow stopped by Temporal's cancellation says: the CancelledFailure itself carries no message. */
export const CANCELLED_MESSAGE = 'cancelled: its run ended or was cancelled (rollflow cancel), or an operator cancelled it';
const failureMessage = (err: unknown): string => (innermostCause(err) instanceof CancelledFailure ? CANCELLED_MESSAGE : causeMessage(err));

export const summarizeFailure = (err: unknown): FailureSummary => ({ message: failureMessage(err), infra: isInfraFailure(err), ...(isUnscored(err) ? { unscored: true as const } : {}) });
