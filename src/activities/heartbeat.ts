import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every few seconds, so a dead worker is noticed
 * within the heartbeat timeout instead of the (long) start-to-close timeout,
 * and passes the activity's cancellation signal down.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>, everyMs = 5_000): Promise<T> {
  const ctx = Context.current();
  // A local activity has no heartbeat (the server does not know it): the SDK would reject each one with a warning.
  if (ctx.info.isLocal) return fn(ctx.cancellationSignal);
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
