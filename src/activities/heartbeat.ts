import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every few seconds, so a dead worker is noticed
 * within the heartbeat timeout instead of the (long) start-to-close timeout,
 * and passes the activity's cancellation signal down.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>, everyMs = 5_000): Promise<T> {
  return withProgress<T, undefined>((signal) => fn(signal), everyMs);
}

/**
 * withHeartbeat for work that records progress: `report` keeps the latest
 * progress, and each heartbeat carries it as its details; `resumed` is what
 * the previous attempt reported last (Temporal keeps the last heartbeat's
 * details across retries), so a retry continues instead of starting over.
 * Reports are cheap (kept, not sent): the details are serialized at most
 * once per heartbeat, and the SDK throttles what reaches the server (to
 * about 80% of the heartbeat timeout), so a crash loses at most that much.
 */
export async function withProgress<T, P>(fn: (signal: AbortSignal, report: (progress: P) => void, resumed: P | undefined) => Promise<T>, everyMs = 5_000): Promise<T> {
  const ctx = Context.current();
  const resumed = ctx.info.heartbeatDetails as P | undefined;
  // A local activity has no heartbeat (the server does not know it): the SDK would reject each one with a warning.
  if (ctx.info.isLocal) return fn(ctx.cancellationSignal, () => undefined, undefined);
  // Every beat carries the latest progress (from the start: what a retry resumed from), since each
  // heartbeat's details replace the last ones recorded.
  let latest: P | undefined = resumed;
  ctx.heartbeat(latest);
  const timer = setInterval(() => ctx.heartbeat(latest), everyMs);
  try {
    return await fn(ctx.cancellationSignal, (p) => void (latest = p), resumed);
  } finally {
    clearInterval(timer);
  }
}
