// Test-only workflows: small enough to reason about, real enough to exercise the server.
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

export const release = defineSignal<[string]>('release');
export const state = defineQuery<string>('state');

/** Waits, durably, until someone signals `release`; returns what the signal carried. */
export async function waitForRelease(): Promise<string> {
  let payload: string | undefined;
  setHandler(release, (p) => {
    payload = p;
  });
  setHandler(state, () => (payload === undefined ? 'waiting' : 'released'));
  await condition(() => payload !== undefined);
  return `released with ${payload}`;
}

/** One call that only a reclaim (or a ten-minute heartbeat timeout) retries; returns what its last attempt returned. */
export async function oneLongCall(): Promise<unknown> {
  const { heartbeatUntilRetried } = proxyActivities<{ heartbeatUntilRetried(): Promise<unknown> }>({
    startToCloseTimeout: '1 hour',
    heartbeatTimeout: '10 minutes',
    retry: { initialInterval: '100 ms' },
  });
  return heartbeatUntilRetried();
}
