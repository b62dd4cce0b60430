/** Typed calls to the python-engines servers. Each role grows its own calls with its capability. */
import type { EngineRole } from '../core';
import { requestJson, type RequestOptions } from './http';

export type { EngineRole };

export interface EngineTarget {
  role: EngineRole;
  url: string;
}

/** GET /health, as python-engines answers it. */
export interface EngineHealth {
  status: 'ok';
  role: EngineRole;
  backend: string;
  version: string;
  pid: number;
  uptime_s: number;
}

export function engineHealth(baseUrl: string, opts: RequestOptions = {}): Promise<EngineHealth> {
  return requestJson<EngineHealth>(new URL('/health', baseUrl).toString(), { timeoutMs: 5_000, ...opts });
}
