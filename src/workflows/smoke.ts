/**
 * smoke: the system's end-to-end probe. One activity per configured engine
 * calls its /health through the bridge; the report shows each engine's state,
 * so a failed probe still says which engine is down and why.
 */
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EngineHealth, EngineTarget } from '../gpu-bridge';
import { NON_RETRYABLE_ENGINE_ERRORS } from '../gpu-bridge/errors';
import { innermostCause } from './failure';

const { checkEngineHealth } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 ms', maximumAttempts: 4, nonRetryableErrorTypes: NON_RETRYABLE_ENGINE_ERRORS },
});

export interface SmokeInput {
  engines: EngineTarget[];
}

export type EngineReport = EngineTarget & ({ ok: true; health: EngineHealth } | { ok: false; error: string });

export interface SmokeReport {
  ok: boolean;
  engines: EngineReport[];
}

export async function smoke(input: SmokeInput): Promise<SmokeReport> {
  const engines = await Promise.all(
    input.engines.map(async (target): Promise<EngineReport> => {
      try {
        return { ...target, ok: true, health: await checkEngineHealth(target) };
      } catch (err) {
        const cause = innermostCause(err);
        const error = cause instanceof ApplicationFailure ? `${cause.type ?? 'Error'}: ${cause.message}` : String(cause);
        return { ...target, ok: false, error };
      }
    }),
  );
  return { ok: engines.every((e) => e.ok), engines };
}
