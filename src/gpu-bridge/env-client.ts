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
import { callChecked, type RequestOptions } from './http';

export class EnvClient {
  constructor(readonly baseUrl: string) {}

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
