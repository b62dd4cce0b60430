/**
 * What the supervisor watches in a config's local stack, each part with the
 * start `dev up` uses and a probe that looks at progress where the part has
 * any: an engine's /health (503 when its work stopped moving, no answer when
 * it is stopped), the worker's beat file, Temporal's gRPC health, the codec
 * server's /health. A Temporal cluster (temporal.embedded false) is not ours
 * to restart: it is left out.
 */
import type { Client, Connection } from '@temporalio/client';
import { connectClient } from '../client/connect';
import type { LoadedConfig } from '../configs';
import { engineHealth } from '../gpu-bridge';
import { codecProcess, startCodecServer } from './codec';
import { launchedEngines, startEngine } from './engines';
import type { Part } from './supervise';
import { startTemporalInBackground, temporalHealth, temporalProcess } from './temporal';
import { startWorker, workerBeatProblem, workerProcess } from './worker';

const PROBE_TIMEOUT_MS = 4_000;
/**
 * Failing probes for this long (probes 2 s apart, each up to 4 s) make a live process hung; see docs/unattended.md
 * for the bounds this gives. Shorter would mistake a loaded machine's slow answer for a hang; longer costs every
 * real hang that much more of the run (a stopped engine holds its part of the run until it is replaced).
 */
const HANG_AFTER_MS = 10_000;

const failure = (e: unknown) => (e as Error).message.split('\n')[0];

/** One Temporal connection, made on first use and dropped when it fails, so a restarted server is reached again. */
function temporalConnections(loaded: LoadedConfig) {
  let client: Client | undefined;
  return {
    async get(): Promise<Client> {
      client ??= await connectClient(loaded.config);
      return client;
    },
    async drop(): Promise<void> {
      const c = client;
      client = undefined;
      await c?.connection.close().catch(() => undefined);
    },
  };
}

export function stackParts(loaded: LoadedConfig, configArgs: string[]): Part[] {
  const temporal = temporalConnections(loaded);
  const parts: Part[] = [];
  const { config, derived } = loaded;
  if (config.temporal.embedded && derived.temporal.loopback) {
    parts.push({
      name: 'temporal',
      process: temporalProcess(),
      start: () => startTemporalInBackground(derived.temporal, codecProcess(loaded)?.url),
      probe: async () => {
        const problem = await temporal
          .get()
          .then((c) => temporalHealth(c.connection as Connection, PROBE_TIMEOUT_MS)) // connectClient makes a Connection
          .catch(failure);
        if (problem !== undefined) await temporal.drop();
        return problem;
      },
      hangAfterMs: HANG_AFTER_MS,
    });
  }
  for (const e of launchedEngines(loaded)) {
    parts.push({
      name: e.process.name,
      process: e.process,
      start: () => startEngine(e),
      probe: () => engineHealth(e.listen, { timeoutMs: PROBE_TIMEOUT_MS }).then(() => undefined, failure),
      hangAfterMs: HANG_AFTER_MS,
    });
  }
  const codec = codecProcess(loaded);
  if (codec) {
    parts.push({
      name: codec.name,
      process: codec,
      start: () => startCodecServer(loaded, configArgs),
      probe: () => fetch(`${codec.url}/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).then((r) => (r.ok ? undefined : `/health answered ${r.status}`), failure),
      hangAfterMs: HANG_AFTER_MS,
    });
  }
  const worker = workerProcess(loaded);
  parts.push({
    name: worker.name,
    process: worker,
    start: async () => startWorker(await temporal.get(), loaded, configArgs),
    // The beat is already WORKER_BEAT_STALE_MS old when this fails, so a short extra wait suffices.
    probe: async (pid) => workerBeatProblem(loaded, pid),
    hangAfterMs: 2_000,
  });
  return parts;
}
