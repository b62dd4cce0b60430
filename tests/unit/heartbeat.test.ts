// withProgress (src/activities/heartbeat.ts) on the SDK's mock activity environment, its interval on fake timers:
// no beat at the start (the server keeps the last attempt's details, and the timeout counts from the start), then
// one beat an interval carrying the latest progress reported, or, before any, what the attempt resumed from.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withProgress } from '../../src/activities/heartbeat';
import { HEARTBEAT_EVERY_MS } from '../../src/core';
import { MockActivityEnvironment } from '../helpers/mock-activity';

beforeEach(() => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
afterEach(() => vi.useRealTimers());

/** Runs withProgress in an attempt that resumed from `resumed`; `work` gets report and a way to let the call end. */
function attempt(resumed: number | undefined, keepProgress = true) {
  const env = new MockActivityEnvironment({ heartbeatDetails: resumed });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  let report!: (p: number) => void;
  let end!: () => void;
  const done = env.run(() => withProgress<string, number>((_signal, r) => ((report = r), new Promise<string>((resolve) => (end = () => resolve('ok')))), keepProgress));
  return { beats, report: (p: number) => report(p), end: () => end(), done };
}

describe('heartbeats with progress', () => {
  it('sends nothing at the start, then each interval the progress reported last (before any, what the attempt resumed from)', async () => {
    const a = attempt(3);
    expect(a.beats).toEqual([]);
    vi.advanceTimersByTime(HEARTBEAT_EVERY_MS);
    expect(a.beats).toEqual([3]);
    a.report(5);
    a.report(7);
    vi.advanceTimersByTime(HEARTBEAT_EVERY_MS);
    expect(a.beats).toEqual([3, 7]);
    a.end();
    expect(await a.done).toBe('ok');
    vi.advanceTimersByTime(3 * HEARTBEAT_EVERY_MS);
    expect(a.beats).toEqual([3, 7]); // none after the call ended
  });

  it('with keepProgress off, beats carry nothing and reports are dropped', async () => {
    const a = attempt(3, false);
    a.report(5);
    vi.advanceTimersByTime(2 * HEARTBEAT_EVERY_MS);
    expect(a.beats).toEqual([undefined, undefined]);
    a.end();
    await a.done;
  });
});
