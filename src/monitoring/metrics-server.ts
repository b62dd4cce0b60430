/**
 * The worker's /metrics (temporal.worker.metrics_address): the run metrics
 * and the process's own (prom-client), followed by the Temporal SDK runtime's
 * metrics, which its Prometheus exporter serves on a loopback port of its own;
 * one scrape target gives both.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logging';
import { registry } from './run-metrics';

/** A free loopback port for the SDK's exporter (it binds by itself, after this returns). */
export async function freeLoopbackAddress(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

const SDK_SCRAPE_TIMEOUT_MS = 3000;

async function sdkMetrics(sdkAddress: string | undefined): Promise<string> {
  if (!sdkAddress) return '';
  try {
    // A bound: an exporter that hangs must not hang the scrape (Prometheus' own timeout is 10 s by default).
    const r = await fetch(`http://${sdkAddress}/metrics`, { signal: AbortSignal.timeout(SDK_SCRAPE_TIMEOUT_MS) });
    return r.ok ? await r.text() : '';
  } catch {
    return ''; // the SDK's exporter not up yet, or too slow: this scrape has the run metrics only
  }
}

/**
 * Serves /metrics on `address` (host:port). An address it cannot listen on (the port taken by another worker on this
 * host, a host that is not this machine's) is a warning, never the worker's failure: its metrics are then not served,
 * and the log says so.
 */
export async function startMetricsServer(address: string, sdkAddress: string | undefined, log: Logger): Promise<Server | undefined> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end('not found; try /metrics');
    Promise.all([registry.metrics(), sdkMetrics(sdkAddress)])
      .then(([own, sdk]) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(`${own}\n${sdk}`))
      .catch((e: unknown) => res.writeHead(500).end(String(e)));
  });
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'the port is taken (another worker on this host?)' : 'cannot listen there';
    log.warn({ address, err: e }, `worker metrics not served at ${address}: ${why}; set temporal.worker.metrics_address (host:port or off)`);
    return undefined;
  }
  log.info({ url: `http://${address}/metrics` }, 'worker metrics served');
  return server;
}
