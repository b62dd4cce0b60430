import { Context } from '@temporalio/activity';
import { HEARTBEAT_EVERY_MS } from '../core';

/**
 * Runs `fn` while heartbeating every HEARTBEAT_EVERY_MS, so a dead worker is noticed
 * within the heartbeat timeout instead of the (long) start-to-close timeout,
 * and passes the activity's cancellation signal down.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  return withProgress<T, undefined>((signal) => fn(signal), false);
}

/**
 * withHeartbeat for work that records progress: `report` keeps the latest
 * progress, and each heartbeat carries it as its details; `resumed` is what
 * the previous attempt reported last (Temporal keeps the last heartbeat's
 * details across retries), so a retry continues instead of starting over.
 * Reports are cheap (kept, not sent): the details are serialized at most
 * once per heartbeat, and the worker sends each beat at once (its throttle
 * is set to the same interval), so a crash loses at most one interval's worth.
 * The first beat goes one interval after the start, not at it: the heartbeat
 * timeout counts from the start as from a beat, and the server still holds
 * what the last attempt beat, so a beat at the start would only cost every
 * call a heartbeat request and a history write (one of five a turn made).
 * With `keepProgress` false the beats are empty, reports are dropped and a
 * retry starts over (temporal.worker.heartbeat_partial_tokens false).
 */
export async function withProgress<T, P>(fn: (signal: AbortSignal, report: (progress: P) => void, resumed: P | undefined) => Promise<T>, keepProgress: boolean): Promise<T> {
  const ctx = Context.current();
  // A local activity has no heartbeat (the server does not know it): the SDK would reject each one with a warning.
  if (ctx.info.isLocal) return fn(ctx.cancellationSignal, () => undefined, undefined);
  const resumed = keepProgress ? (ctx.info.heartbeatDetails as P | undefined) : undefined;
  // Every beat carries the latest progress (until there is some: what a retry resumed from), since each
  // heartbeat's details replace the last ones recorded.
  let latest: P | undefined = resumed;
  const report = keepProgress ? (p: P) => void (latest = p) : () => undefined;
  const timer = setInterval(() => ctx.heartbeat(latest), HEARTBEAT_EVERY_MS);
  try {
    return await fn(ctx.cancellationSignal, report, resumed);
  } finally {
    clearInterval(timer);
  }
}
