/**
 * What the chaos harness injects, one entry per kind. Process kinds get a
 * signal: it restarts nothing, the stack's supervisor (src/stack/supervise.ts)
 * notices each dead or hung process and replaces it, as it would with nobody
 * watching. A Temporal cluster (temporal.embedded false) is not supervised by
 * rollflow, so its server is not a kind the harness may fault. Two kinds hit
 * the run's files instead (src/chaos/file-faults.ts): `corrupt` damages the
 * newest saved trainer state and SIGKILLs the trainer, so its recovery must
 * pass that state over; `disk` fills the small tmpfs mounted over the run
 * directory (`--disk-mb`) for a while, so every write of the run meets a full
 * disk. `partition` cuts one engine off from the run for a while
 * (src/chaos/partition-proxy.ts) and kills nothing. A new process kind is one
 * more entry in FAULTS.
 */
import type { LoadedConfig } from '../configs';
import type { EngineRole } from '../gpu-bridge';
import { launchedEngines } from '../stack/engines';
import type { ManagedProcess } from '../stack/processes';
import { temporalProcess } from '../stack/temporal';
import { workerProcess } from '../stack/worker';

/** The kinds of process a signal hits. */
export const PROCESS_KINDS = ['worker', 'temporal', 'inference', 'trainer', 'env'] as const;
export type ProcessKind = (typeof PROCESS_KINDS)[number];
/** corrupt: damage the newest saved trainer state, then SIGKILL the trainer. disk: a full disk for 30-120 s. */
export const FILE_FAULTS = ['corrupt', 'disk'] as const;
export type FileFault = (typeof FILE_FAULTS)[number];
/** Every kind `--faults` takes; partition: one engine unreachable from the run for 30-120 s, then healed. */
export const FAULT_KINDS = [...PROCESS_KINDS, ...FILE_FAULTS, 'partition'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** kill: SIGKILL. stop: SIGSTOP, then SIGCONT after the scheduled pause if nothing replaced the process first. */
export const FAULT_SIGNALS = ['kill', 'stop'] as const;
export type FaultSignal = (typeof FAULT_SIGNALS)[number];

const embedded = ({ config, derived }: LoadedConfig) => config.temporal.embedded && derived.temporal.loopback;

const engines = (role: EngineRole) => (loaded: LoadedConfig) => launchedEngines(loaded).filter((e) => e.role === role).map((e) => e.process);

/** The processes of each kind the stack runs (and supervises); a fault hits one of them. */
export const FAULTS: Record<ProcessKind, (loaded: LoadedConfig) => ManagedProcess[]> = {
  worker: (loaded) => [workerProcess(loaded)],
  temporal: (loaded) => (embedded(loaded) ? [temporalProcess()] : []),
  inference: engines('inference'),
  trainer: engines('trainer'),
  env: engines('env'),
};

/** The process kind a fault's signal goes to: its own, the trainer for `corrupt`, none for `disk` and `partition`. */
export const processKindOf = (k: FaultKind): ProcessKind | undefined => (k === 'corrupt' ? 'trainer' : k === 'disk' || k === 'partition' ? undefined : k);

export const isFaultKind = (k: string): k is FaultKind => (FAULT_KINDS as readonly string[]).includes(k);
export const isFaultSignal = (s: string): s is FaultSignal => (FAULT_SIGNALS as readonly string[]).includes(s);
