import { describe, expect, it } from 'vitest';
import { EngineUnavailableError, isServerLost } from '../../src/gpu-bridge/errors';
import { InferencePool } from '../../src/gpu-bridge/pool';

describe('InferencePool', () => {
  it('sends each call to the server with the fewest outstanding requests', () => {
    const pool = new InferencePool(['a', 'b', 'c']);
    const leases = Array.from({ length: 6 }, () => pool.acquire());
    expect(['a', 'b', 'c'].map((u) => pool.load(u))).toEqual([2, 2, 2]);
    leases.filter((l) => l.url === 'b').forEach((l) => l.release());
    expect(pool.acquire().url).toBe('b');
    expect(pool.acquire().url).toBe('b');
  });

  it('keeps a trajectory on its server, and moves it when that server is down', () => {
    const pool = new InferencePool(['a', 'b']);
    const first = pool.acquire('traj-1');
    first.release();
    for (let i = 0; i < 3; i++) pool.acquire(); // load the other server... and this one
    const again = pool.acquire('traj-1');
    expect(again.url).toBe(first.url);
    pool.markDown(first.url);
    expect(pool.acquire('traj-1').url).not.toBe(first.url);
    pool.markUp(first.url);
  });

  it('with every server down, acquire fails retryably (not unreachable: no server to blame) until one is marked up', () => {
    const pool = new InferencePool(['a', 'b']);
    pool.markDown('a');
    pool.markDown('b');
    pool.markDown('not-in-pool'); // ignored
    expect(pool.downUrls()).toEqual(['a', 'b']);
    let error: unknown;
    try {
      pool.acquire();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect(isServerLost(error)).toBe(false);
    expect((error as Error).message).toContain('every inference server is marked down (a, b)');
    pool.markUp('b');
    expect([pool.acquire().url, pool.isDown('a'), pool.isDown('b')]).toEqual(['b', true, false]);
  });

  it('releases a lease once', () => {
    const pool = new InferencePool(['a']);
    const lease = pool.acquire();
    pool.acquire();
    lease.release();
    lease.release();
    expect(pool.load('a')).toBe(1);
  });

  it('bounds its affinity map: an evicted trajectory follows load again', () => {
    const pool = new InferencePool(['a', 'b'], 1);
    const k1 = pool.acquire('k1'); // pinned to k1.url, which now has 1 outstanding
    pool.acquire('k2').release(); // evicts k1's pin (capacity 1)
    const other = k1.url === 'a' ? 'b' : 'a';
    expect(pool.acquire('k1').url).toBe(other); // least loaded, not the old pin
  });
});
