/**
 * While an engine is down, the calls that need it wait for it instead of
 * failing. A call that fails because the engine cannot be reached (or
 * answers 5xx) asks the engine's /health every 2 s until it answers, then
 * calls again; an outage never uses up the call's retry attempts, so an env
 * server that is down (its supervisor restarting it, or in crash-loop until
 * someone fixes it) never turns trajectories into failures, and never trips
 * the run's failing-groups stop. A failure from an engine whose /health
 * answers at once is its own, and is thrown as before (the retry policy
 * counts it). The waits show in the worker's metrics
 * (rollflow_engine_waiting, rollflow_engine_wait_seconds_total), in its
 * beat file and so in `rollflow dev status`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge } from 'prom-client';
import type { EngineRole } from '../core';
import { EngineUnavailableError, type RequestOptions } from '../gpu-bridge';
import { registry } from '../monitoring/run-metrics';

export const ENGINE_WAIT_POLL_MS = 2_000;

const waiting = new Gauge({ name: 'rollflow_engine_waiting', help: 'Calls waiting for an engine that cannot be reached.', labelNames: ['role', 'url'] as const, registers: [registry] });
const waited = new Counter({ name: 'rollflow_engine_wait_seconds_total', help: 'Seconds calls spent waiting for an engine that could not be reached.', labelNames: ['role', 'url'] as const, registers: [registry] });

/** An engine's client, as far as waiting for it goes: where it is, and its GET /health. */
export interface Reachable {
  baseUrl: string;
  health(opts?: RequestOptions): Promise<unknown>;
}

const current = new Map<string, { role: EngineRole; url: string; since: number; calls: number }>();

/** What this process waits for now: `<role> <url> (since …, n calls)`. */
export function enginesWaitedFor(now = Date.now()): string[] {
  return [...current.values()].map((w) => `${w.role} ${w.url} (for ${((now - w.since) / 1000).toFixed(0)} s, ${w.calls} call${w.calls === 1 ? '' : 's'})`);
}

/** Resolves once the engine's /health answers: the ms waited, 0 when it answered the first time. Rejects when `signal` aborts. */
export async function untilEngineAnswers(role: EngineRole, engine: Reachable, signal: AbortSignal, pollMs = ENGINE_WAIT_POLL_MS): Promise<number> {
  const url = engine.baseUrl;
  const start = Date.now();
  const key = `${role} ${url}`;
  let counted = false;
  try {
    for (;;) {
      const answered = await Promise.resolve()
        .then(() => engine.health({ timeoutMs: 5_000, signal }))
        .then(() => true, () => false);
      if (answered) return counted ? Date.now() - start : 0;
      signal.throwIfAborted();
      if (!counted) {
        counted = true;
        const w = current.get(key) ?? { role, url, since: start, calls: 0 };
        w.calls++;
        current.set(key, w);
        waiting.inc({ role, url });
      }
      await sleep(pollMs, undefined, { signal });
    }
  } finally {
    if (counted) {
      waiting.dec({ role, url });
      waited.inc({ role, url }, (Date.now() - start) / 1000);
      const w = current.get(key);
      if (w && --w.calls === 0) current.delete(key);
    }
  }
}

/** `call`, called again after each outage of `engine` has ended (see the module comment). */
export async function acrossOutages<T>(role: EngineRole, engine: Reachable, signal: AbortSignal, call: () => Promise<T>, pollMs = ENGINE_WAIT_POLL_MS): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof EngineUnavailableError) || signal.aborted) throw e;
      if ((await untilEngineAnswers(role, engine, signal, pollMs)) === 0) throw e;
    }
  }
}
