/**
 * Every boundary's errors that no retry can fix, by their class names (the failure types activities raise): the
 * retry policies of activity-options.ts name them, and the turn activity keeps a final failure's own type for them.
 * Pure names, no activity code: workflow code imports this file (its layer is above this folder's).
 */
import { NON_RETRYABLE_ACTIVITY_ERRORS } from '../core';
import { NON_RETRYABLE_ENV_ERRORS } from '../envs/errors';
import { NON_RETRYABLE_ENGINE_ERRORS } from '../gpu-bridge/errors';
import { NON_RETRYABLE_STORE_ERRORS } from '../store/errors';

export const NON_RETRYABLE: readonly string[] = [...NON_RETRYABLE_ENGINE_ERRORS, ...NON_RETRYABLE_STORE_ERRORS, ...NON_RETRYABLE_ENV_ERRORS, ...NON_RETRYABLE_ACTIVITY_ERRORS];
