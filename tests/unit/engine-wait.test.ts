// While an engine cannot be reached, a call waits for its /health and calls again (src/activities/engine-wait.ts):
// on a real HTTP server that is down, then listens. A failure from an engine whose /health answers is thrown at once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { acrossOutages, enginesWaitedFor } from '../../src/activities/engine-wait';
import { EngineRejectedError, EngineUnavailableError, EnvClient, engineHealth } from '../../src/gpu-bridge';
import { registry } from '../../src/monitoring/run-metrics';

const HEALTH = JSON.stringify({ status: 'ok', role: 'env', backend: 'python', version: '0', pid: 1, uptime_s: 1 });
const servers: Server[] = [];

function listen(port = 0): Promise<number> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(HEALTH));
  servers.push(server);
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A port nothing listens on (yet). */
async function closedPort(): Promise<number> {
  const port = await listen();
  await new Promise((resolve) => servers.pop()!.close(resolve));
  return port;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('calls across an engine outage', () => {
  it('waits while the engine cannot be reached, is counted and shown, and calls again once it answers', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    let calls = 0;
    const call = async () => {
      calls++;
      await engineHealth(url, { timeoutMs: 2_000 }); // the "call": fails with EngineUnavailableError while down
      return 'answered';
    };
    const result = acrossOutages('env', new EnvClient(url), new AbortController().signal, call, 10);
    // The engine comes back only once the call is seen waiting for it.
    for (let i = 0; enginesWaitedFor().length === 0; i++) {
      expect(i, 'the call never started waiting').toBeLessThan(3000);
      await sleep(10);
    }
    expect(enginesWaitedFor()[0]).toMatch(new RegExp(`^env ${url} \\(for \\d+ s, 1 call\\)$`));
    expect(await registry.getSingleMetric('rollflow_engine_waiting')!.get()).toMatchObject({ values: [{ value: 1, labels: { role: 'env', url } }] });
    await listen(port);
    expect(await result).toBe('answered');
    expect(calls).toBe(2);
    expect(enginesWaitedFor()).toEqual([]);
    const waited = (await registry.getSingleMetric('rollflow_engine_wait_seconds_total')!.get()).values.find((v) => v.labels.url === url);
    expect(waited!.value).toBeGreaterThan(0);
  });

  it('throws at once a failure of an engine that answers its health check: that failure is its own', async () => {
    const url = `http://127.0.0.1:${await listen()}`;
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new EngineUnavailableError(`${url}: HTTP 500 the env raised`);
    };
    await expect(acrossOutages('env', new EnvClient(url), new AbortController().signal, failing, 10)).rejects.toThrow('HTTP 500 the env raised');
    expect(calls).toBe(1);
  });

  it('passes other errors through untouched, and stops waiting when the call is cancelled', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    await expect(acrossOutages('env', new EnvClient(url), new AbortController().signal, () => Promise.reject(new EngineRejectedError('400 bad action', 400)), 10)).rejects.toThrow('400 bad action');
    const cancel = new AbortController();
    const waiting = acrossOutages('env', new EnvClient(url), cancel.signal, () => Promise.reject(new EngineUnavailableError('refused', true)), 10);
    for (let i = 0; enginesWaitedFor().length === 0; i++) {
      expect(i).toBeLessThan(3000);
      await sleep(10);
    }
    cancel.abort();
    await expect(waiting).rejects.toThrow();
    expect(enginesWaitedFor()).toEqual([]);
  });
});
