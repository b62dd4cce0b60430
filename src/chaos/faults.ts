/**
 * The processes the chaos harness kills, one entry per kind: how to find the
 * live processes of that kind, and how an operator brings them back. Every
 * kind restarts through `rollflow dev up` (src/stack), which starts whatever
 * is not running; a Temporal cluster (temporal.embedded false) through
 * temporal/cluster.sh first. A new kind is one more entry here.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { LoadedConfig } from '../configs';
import type { EngineRole } from '../gpu-bridge';
import { ROOT, stateDir } from '../paths';
import { up } from '../stack';
import { launchedEngines } from '../stack/engines';
import type { ManagedProcess } from '../stack/processes';
import { workerProcess } from '../stack/worker';

export const FAULT_KINDS = ['worker', 'temporal', 'inference', 'trainer', 'env'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  /** The processes of this kind the stack runs; a fault kills one of them. */
  processes(loaded: LoadedConfig): ManagedProcess[];
  /** Brings the killed process back as an operator would; `configArgs` re-create the config for the worker. */
  restart(loaded: LoadedConfig, configArgs: string[], say: (line: string) => void): Promise<void>;
}

const embedded = ({ config, derived }: LoadedConfig) => config.temporal.embedded && derived.temporal.loopback;

/** The dev server (temporal/dev-server.sh) or the cluster's server (temporal/cluster.sh): their pid files and command lines. */
function temporalProcess(loaded: LoadedConfig): ManagedProcess {
  if (embedded(loaded)) {
    const dir = path.join(stateDir(), 'temporal');
    return { name: 'temporal', pidFile: path.join(dir, 'server.pid'), logFile: path.join(dir, 'server.log'), marker: 'server start-dev' };
  }
  const dir = process.env.TEMPORAL_CLUSTER_DIR ?? path.join(stateDir(), 'cluster');
  return { name: 'temporal-cluster', pidFile: path.join(dir, 'server.pid'), logFile: path.join(dir, 'server.log'), marker: `--root ${dir} --config config` };
}

function startCluster(say: (line: string) => void): void {
  const r = spawnSync('bash', [path.join(ROOT, 'temporal', 'cluster.sh'), 'start'], { env: { ...process.env, ROLLFLOW_STATE: stateDir() }, encoding: 'utf8' });
  for (const line of r.stderr.trim().split('\n').filter(Boolean)) say(line);
  if (r.status !== 0) throw new Error(`temporal/cluster.sh start failed (exit ${r.status})`);
}

const engineFault = (role: EngineRole): Fault => ({
  processes: (loaded) => launchedEngines(loaded.config).filter((e) => e.role === role).map((e) => e.process),
  restart: (loaded, args, say) => up(loaded, args, say),
});

export const FAULTS: Record<FaultKind, Fault> = {
  worker: { processes: (loaded) => [workerProcess(loaded)], restart: (loaded, args, say) => up(loaded, args, say) },
  temporal: {
    processes: (loaded) => [temporalProcess(loaded)],
    restart: async (loaded, args, say) => {
      if (!embedded(loaded)) startCluster(say);
      await up(loaded, args, say);
    },
  },
  inference: engineFault('inference'),
  trainer: engineFault('trainer'),
  env: engineFault('env'),
};

export const isFaultKind = (k: string): k is FaultKind => (FAULT_KINDS as readonly string[]).includes(k);
