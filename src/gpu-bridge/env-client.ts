/**
 * Typed calls to an env/reward server (python-engines --role env), responses
 * checked against the shared contract.
 */
import {
  CloseResponseSchema,
  ResetResponseSchema,
  RewardResponseSchema,
  StepResponseSchema,
  type CloseRequest,
  type CloseResponse,
  type ResetRequest,
  type ResetResponse,
  type RewardRequest,
  type RewardResponse,
  type StepRequest,
  type StepResponse,
} from './contracts/env';
import { engineHealth, type EngineHealth } from './engines';
import { callChecked, type RequestOptions } from './http';

/**
 * What a step's client timeout adds to the session's step_timeout_s (the server's bound on one step, from
 * /reset): the server's queueing under load and the transfer. Past it the step is taken for lost and its
 * activity retries; the retry is answered from the server's record (each index is applied once), but a
 * long grading is never cut and retried mid-flight. Without a bound (a state from before the server
 * reported one), the margin alone: the 30 s every env call had before.
 */
export const STEP_TIMEOUT_MARGIN_MS = 30_000;

export const stepTimeoutMs = (stepTimeoutS: number | undefined): number => Math.ceil((stepTimeoutS ?? 0) * 1000) + STEP_TIMEOUT_MARGIN_MS;

export class EnvClient {
  constructor(readonly baseUrl: string) {}

  /** GET /health: answers while the server is up and not stalled. */
  health(opts?: RequestOptions): Promise<EngineHealth> {
    return engineHealth(this.baseUrl, opts);
  }

  reset(req: ResetRequest, opts?: RequestOptions): Promise<ResetResponse> {
    return this.post('/reset', req, ResetResponseSchema, opts);
  }

  step(req: StepRequest, opts?: RequestOptions): Promise<StepResponse> {
    return this.post('/step', req, StepResponseSchema, opts);
  }

  close(req: CloseRequest, opts?: RequestOptions): Promise<CloseResponse> {
    return this.post('/close', req, CloseResponseSchema, opts);
  }

  reward(req: RewardRequest, opts?: RequestOptions): Promise<RewardResponse> {
    return this.post('/reward', req, RewardResponseSchema, opts);
  }

  private post<T>(path: string, body: unknown, schema: Parameters<typeof callChecked<T>>[2], opts: RequestOptions = {}): Promise<T> {
    return callChecked(this.baseUrl, path, schema, { ...opts, body });
  }
}
