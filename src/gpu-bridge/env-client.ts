/**
 * Typed calls to an env/reward server (python-engines --role env). Responses
 * are checked against the shared contract, so drift between the two sides
 * fails loudly at the first call instead of corrupting a trajectory.
 */
import type { z } from 'zod';
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
import { EngineRejectedError } from './errors';
import { requestJson, type RequestOptions } from './http';

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

  private async post<T>(path: string, body: unknown, schema: z.ZodType<T>, opts: RequestOptions = {}): Promise<T> {
    const url = new URL(path, this.baseUrl).toString();
    const parsed = schema.safeParse(await requestJson<unknown>(url, { ...opts, body }));
    if (!parsed.success) throw new EngineRejectedError(`${url}: response does not match the contract: ${parsed.error.message}`, 502);
    return parsed.data;
  }
}
