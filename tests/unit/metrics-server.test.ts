// The worker's /metrics server (monitoring/metrics-server.ts) and the SDK runtime's
// exporter behind it (installRuntime in worker/index.ts), over real sockets: the page
// holds the run metrics and the SDK exporter's text; an address that is taken is a
// warning and never the worker's failure, for the worker's port and for the SDK's.
// (The SDK's real metrics on a live worker: tests/integration/worker-metrics.test.ts.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Runtime } from '@temporalio/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging';
import { startMetricsServer } from '../../src/monitoring/metrics-server';
import { observeRecord } from '../../src/monitoring/run-metrics';
import { installRuntime } from '../../src/worker';
import { METRIC } from '../../src/core';

function capture() {
  const lines: { level: number; msg: string; attempt?: number }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as (typeof lines)[number]);
      done();
    },
  });
  return { log: createLogger('test', stream), warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg), lines };
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A server on a free loopback port answering every request with `body`; its host:port. */
async function listening(body = ''): Promise<string> {
  const server = createServer((_req, res) => res.end(body));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A free loopback host:port (listened on, then closed). */
async function freeAddress(): Promise<string> {
  const address = await listening();
  await new Promise((resolve) => servers.pop()!.close(resolve));
  return address;
}

describe('the worker\'s /metrics server', () => {
  it('serves the run metrics followed by the SDK exporter\'s page, and 404 elsewhere', async () => {
    observeRecord('metrics.jsonl', { run_id: 'srv', step: 2, version: 3, [METRIC.rewardMean]: 0.625 });
    const sdk = await listening('# TYPE temporal_worker_task_slots_available gauge\ntemporal_worker_task_slots_available{worker_type="ActivityWorker"} 7\n');
    const address = await freeAddress();
    const server = await startMetricsServer(address, sdk, capture().log);
    expect(server).toBeDefined();
    servers.push(server!);
    const page = await (await fetch(`http://${address}/metrics`)).text();
    expect(page).toContain('rollflow_run_step{run_id="srv"} 3\n');
    expect(page).toContain('rollflow_run_reward_mean{run_id="srv"} 0.625\n');
    expect(page).toContain('rollflow_worker_process_cpu_seconds_total');
    expect(page).toContain('temporal_worker_task_slots_available{worker_type="ActivityWorker"} 7\n');
    expect(page.indexOf('rollflow_run_step')).toBeLessThan(page.indexOf('temporal_worker_task_slots_available'));
    expect((await fetch(`http://${address}/other`)).status).toBe(404);
  });

  it('still serves the run metrics when the SDK exporter does not answer', async () => {
    const address = await freeAddress();
    const server = await startMetricsServer(address, await freeAddress(), capture().log);
    servers.push(server!);
    const r = await fetch(`http://${address}/metrics`);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('rollflow_worker_process_cpu_seconds_total');
  });

  it('warns and goes on when its port is taken (another worker on the host)', async () => {
    const taken = await listening('the other worker');
    const { log, warnings } = capture();
    expect(await startMetricsServer(taken, undefined, log)).toBeUndefined();
    expect(warnings()).toEqual([`worker metrics not served at ${taken}: the port is taken (another worker on this host?); set temporal.worker.metrics_address (host:port or off)`]);
    expect(await (await fetch(`http://${taken}/metrics`)).text()).toBe('the other worker');
  });
});

describe('the SDK runtime\'s exporter (installRuntime)', () => {
  it('tries three ports, then installs the runtime without metrics and warns: never fails the worker', async () => {
    await Runtime.instance().shutdown(); // the test set-up's runtime (tests/setup.ts): installRuntime installs its own
    const taken = [await listening(), await listening(), await listening()];
    const picks = [...taken];
    const { log, warnings, lines } = capture();
    expect(await installRuntime(log, true, () => Promise.resolve(picks.shift()!))).toBeUndefined();
    expect(picks).toEqual([]);
    expect(lines.filter((l) => l.level === 40).map((l) => l.attempt)).toEqual([1, 2, 3, undefined]);
    expect(warnings().at(-1)).toBe('the worker\'s /metrics goes on without the Temporal SDK runtime\'s metrics');
    expect(Runtime.instance().options.runtimeOptions.metricsExporter).toBeNull();
  });
});
