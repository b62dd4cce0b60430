/**
 * `rollflow chaos`: the same run twice, fault-free and under a seeded fault
 * schedule (SIGKILL, SIGSTOP) that the stack's supervisor recovers from with
 * nobody's help, each run checked against the invariants on its own records,
 * with the effective time and a recovery time per fault.
 */
import { ConfigError, type LoadedConfig } from '../configs';
import { FAULTS, type FaultKind } from './faults';
import { checkRun, type Expectations } from './invariants';
import { effectiveTime, normalStepS, recoveryS } from './recovery';
import { runUnderFaults, type RunUnderFaults } from './runner';
import type { ChaosResult, CheckedRun } from './result';
import type { ScheduleOptions } from './schedule';

export { FAULT_KINDS, FAULT_SIGNALS, isFaultKind, isFaultSignal, type FaultKind, type FaultSignal } from './faults';
export { checkRun, type Check, type RunRecords } from './invariants';
export { chaosMarkdown } from './report';
export type { ChaosResult, CheckedRun } from './result';
export type { FaultOrder, ScheduleOptions } from './schedule';

/** What checkRun expects of a run of this config. */
export function expectations({ config, derived }: LoadedConfig): Expectations {
  return { maxSteps: config.max_steps, samplesPerStep: derived.samples_per_step, groupSize: derived.group_size, maxStaleness: derived.max_staleness, stalePolicy: config.stale_policy };
}

/** A config and fault kinds the harness can run: env_async rollout (it accounts for group workflows), a launched process of every kind. */
export function checkChaosConfig(loaded: LoadedConfig, kinds: readonly FaultKind[]): void {
  if (loaded.config.rollout_mode !== 'env_async') {
    throw new ConfigError(loaded.source, [{ path: 'rollout_mode', given: loaded.config.rollout_mode, expected: 'env_async (the chaos checks account for group workflows)' }]);
  }
  const missing = kinds.filter((k) => FAULTS[k](loaded).length === 0);
  const where = (k: FaultKind) => (k === 'temporal' ? 'temporal.embedded: a Temporal cluster is not supervised by rollflow' : k === 'inference' ? 'engines.inference[i].launch' : `engines.${k}.launch`);
  if (missing.length) throw new ConfigError('chaos options', missing.map((k) => ({ path: '--faults', given: k, expected: `a kind the stack launches; the config launches no ${k} server (${where(k)})` })));
}

function checked(run: RunUnderFaults, e: Expectations): CheckedRun {
  const walls = run.records.metrics.map((m) => m.wall_s);
  return { ...run, ...checkRun(run.records, e), ...(walls.length ? { makespanS: Math.max(...walls) } : {}) };
}

/** Recovery time of each kill, against the normal step interval of the fault-free run. */
function recoveries(underFaults: CheckedRun, normalS: number | undefined): ChaosResult['recoveries'] {
  const walls = [...underFaults.records.metrics].sort((a, b) => a.step - b.step).map((m) => m.wall_s);
  return underFaults.faults.map((k) => {
    const r = normalS === undefined || k.skipped ? undefined : recoveryS(walls, k.atS, normalS);
    return r === undefined ? k : { ...k, recoveryS: r };
  });
}

export interface ChaosOptions {
  schedule: ScheduleOptions;
  /** Run ids are <prefix>-fault-free and <prefix>-faults. */
  runIdPrefix: string;
  timeoutS: number;
  /** Faults after which the run goes on undisturbed (Infinity: until it ends). */
  maxFaults: number;
  /** Compare against a fault-free run of the same config first (the effective time and recovery need it). */
  faultFree: boolean;
  say: (line: string) => void;
}

export async function chaos(loaded: LoadedConfig, configArgs: string[], o: ChaosOptions): Promise<ChaosResult> {
  checkChaosConfig(loaded, o.schedule.kinds);
  const e = expectations(loaded);
  const faultFree = o.faultFree ? checked(await runUnderFaults(loaded, configArgs, `${o.runIdPrefix}-fault-free`, undefined, o, o.say), e) : undefined;
  const underFaults = checked(await runUnderFaults(loaded, configArgs, `${o.runIdPrefix}-faults`, o.schedule, o, o.say), e);
  const walls = faultFree?.records.metrics.map((m) => m.wall_s) ?? [];
  const normalS = walls.length >= 2 ? normalStepS(walls) : undefined;
  return {
    schedule: o.schedule,
    ...(faultFree ? { faultFree } : {}),
    underFaults,
    ...(normalS !== undefined ? { normalStepS: normalS } : {}),
    ...(faultFree?.makespanS && underFaults.makespanS && faultFree.ok && underFaults.ok ? { effectiveTime: effectiveTime(faultFree.makespanS, underFaults.makespanS) } : {}),
    recoveries: recoveries(underFaults, normalS),
    ok: underFaults.ok && (faultFree?.ok ?? true),
  };
}
