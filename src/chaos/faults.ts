/**
 * The processes the chaos harness injects faults into, one entry per kind,
 * and the two signals it sends. It restarts nothing: the stack's supervisor
 * (src/stack/supervise.ts) notices each dead or hung process and replaces
 * it, as it would with nobody watching. A Temporal cluster
 * (temporal.embedded false) is not supervised by rollflow, so its server is
 * not a kind the harness may fault. A new kind is one more entry here.
 */
import type { LoadedConfig } from '../configs';
import type { EngineRole } from '../gpu-bridge';
import { launchedEngines } from '../stack/engines';
import type { ManagedProcess } from '../stack/processes';
import { temporalProcess } from '../stack/temporal';
import { workerProcess } from '../stack/worker';

export const FAULT_KINDS = ['worker', 'temporal', 'inference', 'trainer', 'env'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** kill: SIGKILL. stop: SIGSTOP, then SIGCONT after the scheduled pause if nothing replaced the process first. */
export const FAULT_SIGNALS = ['kill', 'stop'] as const;
export type FaultSignal = (typeof FAULT_SIGNALS)[number];

const embedded = ({ config, derived }: LoadedConfig) => config.temporal.embedded && derived.temporal.loopback;

const engines = (role: EngineRole) => (loaded: LoadedConfig) => launchedEngines(loaded.config).filter((e) => e.role === role).map((e) => e.process);

/** The processes of each kind the stack runs (and supervises); a fault hits one of them. */
export const FAULTS: Record<FaultKind, (loaded: LoadedConfig) => ManagedProcess[]> = {
  worker: (loaded) => [workerProcess(loaded)],
  temporal: (loaded) => (embedded(loaded) ? [temporalProcess()] : []),
  inference: engines('inference'),
  trainer: engines('trainer'),
  env: engines('env'),
};

export const isFaultKind = (k: string): k is FaultKind => (FAULT_KINDS as readonly string[]).includes(k);
export const isFaultSignal = (s: string): s is FaultSignal => (FAULT_SIGNALS as readonly string[]).includes(s);
