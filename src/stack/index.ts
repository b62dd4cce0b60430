/**
 * The local stack of `rollflow dev up|down|status`: the embedded Temporal dev
 * server (when the config asks for it), the engine servers the config
 * launches, one worker, and the supervisor that restarts any of them that
 * dies or hangs (supervise.ts), each in the background with logs under the
 * state dir.
 */
import type { Client } from '@temporalio/client';
import { connectClient } from '../client/connect';
import { checkConfig } from '../client/preflight';
import type { LoadedConfig } from '../configs';
import { engineStatus, launchedEngines, startEngine, stopEngine } from './engines';
import { codecProcess, codecStatus, startCodecServer, stopCodecServer } from './codec';
import { startTemporal, stopTemporal, temporalStatus } from './temporal';
import { haltSupervisor, readSupervisorStatus, startSupervisor, stopSupervisor, supervisionTurnedOff, supervisorLines } from './supervisor';
import { liveWorkerBeats, startWorker, stopWorker, workerBeatProblem, workerStatus } from './worker';

const embedded = ({ config, derived }: LoadedConfig) => config.temporal.embedded && derived.temporal.loopback;


/**
 * Brings everything up; parts already running are left alone. The config is checked first, so a
 * running server is never stopped for a replacement that would refuse its settings.
 * `configArgs` re-create the config for the worker process. `supervise`: true starts the supervisor;
 * false stops it and keeps it off (a crashed part then stays down to be looked at) until the next plain
 * `dev up`; 'unless-off' (what `rollflow run` uses) starts it unless it was turned off that way.
 */
export async function up(loaded: LoadedConfig, configArgs: string[], say: (line: string) => void, { supervise = true as boolean | 'unless-off' } = {}): Promise<void> {
  checkConfig(loaded, { run: false });
  // A running supervisor would restart each part this call replaces, from the config it was started with, beside
  // the one started here (two workers on one queue, one of the old config): it stops first, and is started again,
  // with this config, once every part is up.
  const halted = await haltSupervisor(loaded);
  if (embedded(loaded)) startTemporal(loaded.derived.temporal, codecProcess(loaded)?.url);
  // Engines start in parallel: each is a Python process that takes a moment to import.
  for (const line of await Promise.all(launchedEngines(loaded).map(startEngine))) say(line);
  const codec = await startCodecServer(loaded, configArgs);
  if (codec) say(codec);
  const client = await connectClient(loaded.config);
  try {
    say(await startWorker(client, loaded, configArgs));
  } finally {
    await client.connection.close();
  }
  const on = supervise === 'unless-off' ? !supervisionTurnedOff(loaded) : supervise;
  if (on) return say(await startSupervisor(loaded, configArgs));
  await stopSupervisor(loaded, { turnOff: supervise === false });
  say(halted);
}

export async function down(loaded: LoadedConfig, say: (line: string) => void): Promise<void> {
  say(await stopSupervisor(loaded)); // first, or it would restart what is stopped next
  say(`worker: ${await stopWorker(loaded)}`);
  const engines = launchedEngines(loaded);
  const results = await Promise.all(engines.map(stopEngine)); // each takes uvicorn's ~1.5 s graceful exit
  engines.forEach((e, i) => say(`${e.process.name}: ${results[i]}`));
  const codec = await stopCodecServer(loaded);
  if (codec) say(codec);
  if (embedded(loaded)) stopTemporal(loaded.derived.temporal);
}

/** One line per part; true when every part is up and healthy. */
export async function status(loaded: LoadedConfig, say: (line: string) => void): Promise<boolean> {
  const lines: { ok: boolean; line: string }[] = [];
  if (embedded(loaded)) lines.push(temporalStatus(loaded.derived.temporal));
  lines.push(...(await Promise.all(launchedEngines(loaded).map(engineStatus))));
  const codec = await codecStatus(loaded);
  if (codec) lines.push(codec);
  let client: Client | undefined;
  try {
    client = await connectClient(loaded.config);
  } catch (e) {
    lines.push({ ok: false, line: `temporal: ${(e as Error).message}` });
  }
  try {
    lines.push(await workerStatus(client, loaded));
  } finally {
    await client?.connection.close();
  }
  lines.push(...supervisorLines(loaded));
  for (const l of lines) say(l.line);
  return lines.every((l) => l.ok);
}

/** `rollflow probe worker`: undefined when a worker of this config beat within `maxAgeMs` (see src/worker/liveness.ts). */
export const probeWorker = (loaded: LoadedConfig, maxAgeMs: number): string | undefined => workerBeatProblem(loaded, undefined, Date.now(), maxAgeMs);

/**
 * What the local stack of this config (its supervisor's status file, its worker's beat) says about faults:
 * restarts and hang kills per part, and the engines the worker's calls wait for. Undefined when no such
 * files exist here (a stack under systemd or Kubernetes, or on another machine).
 */
export function localStackView(loaded: LoadedConfig): { restarts: Record<string, { state: string; restarts: number; hangKills: number }>; waitingFor: string[] } | undefined {
  const supervisor = readSupervisorStatus(loaded);
  const beats = liveWorkerBeats(loaded);
  if (!supervisor && beats.length === 0) return undefined;
  const restarts = Object.fromEntries(Object.entries(supervisor?.parts ?? {}).map(([name, p]) => [name, { state: p.state, restarts: p.restarts, hangKills: p.hangKills }]));
  // Several workers of the config on this host (a second one added for capacity): each says what it waits for.
  const waitingFor = beats.flatMap((b) => (b.waitingFor ?? []).map((w) => (beats.length > 1 ? `worker pid ${b.pid}: ${w}` : w)));
  return { restarts, waitingFor };
}
