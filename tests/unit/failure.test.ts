// Which failures are the infrastructure's: the chains Temporal builds around an activity's error, classified.
import { ActivityFailure, ApplicationFailure, CancelledFailure, ChildWorkflowFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { EnvConfigError, EnvGaveUpError, EnvSessionLostError, RewardUnscoredError } from '../../src/envs/errors';
import { EngineRejectedError, EngineUnavailableError, TokenizationDriftError } from '../../src/gpu-bridge/errors';
import { EnvStepAttemptsExhaustedError } from '../../src/core';
import { CANCELLED_MESSAGE, isInfraFailure, summarizeFailure } from '../../src/workflows/failure';

/** As a trajectory's group sees it: child workflow <- activity <- the activity's error (its class name as the failure type). */
const viaActivity = (cause: Error) =>
  new ChildWorkflowFailure('default', { workflowId: 'r/e0-p0/s0', runId: 'x' }, 'trajectory', RetryState.NON_RETRYABLE_FAILURE,
    new ActivityFailure('activity failed', 'envStep', '1', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'worker', cause));
const raised = (err: Error) => ApplicationFailure.create({ type: err.name, message: err.message });

describe('isInfraFailure', () => {
  it.each([
    ['an engine down past its retries', raised(new EngineUnavailableError('http://127.0.0.1:1/step: ECONNREFUSED'))],
    ['an env session lost under on_env_loss: drop', raised(new EnvSessionLostError('lost'))],
    ['an env that gave up', raised(new EnvGaveUpError('fail-stop'))],
    ['an env step that kept failing in a turn activity', raised(new EnvStepAttemptsExhaustedError('the env step of turn 2 failed 25 times: boom'))],
    ['an activity timeout', new TimeoutFailure('activity StartToClose timeout', undefined, TimeoutType.START_TO_CLOSE)],
    ['a heartbeat timeout', new TimeoutFailure('activity Heartbeat timeout', undefined, TimeoutType.HEARTBEAT)],
  ])('%s is the infrastructure\'s', (_, cause) => {
    expect(isInfraFailure(viaActivity(cause))).toBe(true);
  });

  it.each([
    ['a bad env config', raised(new EnvConfigError('config.size: expected a number'))],
    ['an engine refusing the request (4xx)', raised(new EngineRejectedError('HTTP 400', 400))],
    ['a tokenization drift', raised(new TokenizationDriftError('turn 2'))],
    ['a response no verifier could score', raised(new RewardUnscoredError('no readable grade'))],
    ['an error raised in the workflow', ApplicationFailure.nonRetryable('asks each sample for its own settings', 'EnvConfigError')],
  ])('%s is not', (_, cause) => {
    expect(isInfraFailure(viaActivity(cause))).toBe(false);
  });

  it('keeps the innermost message beside the kind', () => {
    expect(summarizeFailure(viaActivity(raised(new EngineUnavailableError('env down'))))).toEqual({ message: 'env down', infra: true });
    expect(summarizeFailure(new Error('plain'))).toEqual({ message: 'plain', infra: false });
    expect(summarizeFailure(viaActivity(raised(new RewardUnscoredError('no readable grade'))))).toEqual({ message: 'no readable grade', infra: false, unscored: true });
  });

  it('says a cancelled trajectory was cancelled (its CancelledFailure has no message), and not the infrastructure\'s', () => {
    expect(summarizeFailure(viaActivity(new CancelledFailure('')))).toEqual({ message: CANCELLED_MESSAGE, infra: false });
  });
});
