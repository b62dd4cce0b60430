/**
 * `rollflow chaos`: the same run twice, fault-free and under a seeded fault
 * schedule (SIGKILL, SIGSTOP, a damaged trainer state, a full disk, an
 * engine cut off by a partition) that the stack's supervisor and the run
 * recover from with nobody's help, each run checked against the invariants on
 * its own records, with the effective time and a recovery time per fault.
 */
import { ConfigError, type ConfigProblem, type LoadedConfig } from '../configs';
import { FAULTS, processKindOf, type FaultKind } from './faults';
import { mountSmallDisk, unmountSmallDisk } from './file-faults';
import { proxiableEngines, startPartitionProxies, type ProxiedEngine } from './partition-proxy';
import { checkRun, corruptionCheck, type Expectations } from './invariants';
import { effectiveTime, normalStepS, recoveryS } from './recovery';
import { runUnderFaults, type RunUnderFaults } from './runner';
import type { ChaosResult, CheckedRun } from './result';
import type { ScheduleOptions } from './schedule';

export { FAULT_KINDS, FAULT_SIGNALS, FILE_FAULTS, PROCESS_KINDS, isFaultKind, isFaultSignal, type FaultKind, type FaultSignal, type ProcessKind } from './faults';
export { checkRun, type Check, type RunRecords } from './invariants';
export { chaosMarkdown } from './report';
export type { ChaosResult, CheckedRun } from './result';
export type { FaultOrder, ScheduleOptions } from './schedule';

/** What checkRun expects of a run of this config. */
export function expectations({ config, derived }: LoadedConfig): Expectations {
  return { maxSteps: config.max_steps, samplesPerStep: derived.samples_per_step, groupSize: derived.group_size, maxStaleness: derived.max_staleness, stalePolicy: config.stale_policy };
}

/**
 * A config and fault kinds the harness can run: env_async rollout (it accounts for group workflows), a launched
 * process of every kind (a launched trainer for `corrupt`), and the size of the disk for `disk`.
 */
export function checkChaosConfig(loaded: LoadedConfig, kinds: readonly FaultKind[], diskMb?: number): void {
  if (loaded.config.rollout_mode !== 'env_async') {
    throw new ConfigError(loaded.source, [{ path: 'rollout_mode', given: loaded.config.rollout_mode, expected: 'env_async (the chaos checks account for group workflows)' }]);
  }
  const missing = kinds.filter((k) => {
    const p = processKindOf(k);
    return p !== undefined && FAULTS[p](loaded).length === 0;
  });
  const where = (k: FaultKind) => (k === 'temporal' ? 'temporal.embedded: a Temporal cluster is not supervised by rollflow' : k === 'inference' ? 'engines.inference[i].launch' : `engines.${processKindOf(k)}.launch`);
  const problems: ConfigProblem[] = missing.map((k) => ({ path: '--faults', given: k, expected: `a kind the stack launches; the config launches no ${processKindOf(k)} server (${where(k)})` }));
  if (loaded.derived.sample_store.kind !== 'dir') {
    problems.push({ path: 'sample_store.kind', given: loaded.derived.sample_store.kind, expected: 'dir: the chaos checks read the store\'s batch and sample files from its directory' });
  }
  if (kinds.includes('partition') && proxiableEngines(loaded).length === 0) {
    problems.push({ path: '--faults', given: 'partition', expected: 'a launched engine whose listen address differs from its url (engines.*.listen): the harness puts its partition proxy at the url the run calls, in front of the server' });
  }
  if (kinds.includes('disk') && diskMb === undefined) problems.push({ path: '--disk-mb', given: undefined, expected: 'the size in MiB of the tmpfs mounted over the run directory, which a disk fault fills (needed with --faults disk)' });
  if (problems.length) throw new ConfigError('chaos options', problems);
}

function checked(run: RunUnderFaults, e: Expectations): CheckedRun {
  const walls = run.records.metrics.map((m) => m.wall_s);
  const verdict = checkRun(run.records, e);
  const corrupted = run.faults.flatMap((f) => (f.corrupted ? [f.corrupted.version] : []));
  if (corrupted.length) verdict.checks.push(corruptionCheck(corrupted, run.records, e.maxSteps));
  return { ...run, ...verdict, ok: verdict.checks.every((c) => c.ok), ...(walls.length ? { makespanS: Math.max(...walls) } : {}) };
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
  /** With disk faults: the MiB of the tmpfs mounted over the run directory for both runs (mounting needs root). */
  diskMb?: number;
  say: (line: string) => void;
}

export async function chaos(loaded: LoadedConfig, configArgs: string[], o: ChaosOptions): Promise<ChaosResult> {
  checkChaosConfig(loaded, o.schedule.kinds, o.diskMb);
  const e = expectations(loaded);
  // Both runs on the same small disk, so the fault-free one is a fair baseline; mounted before either starts, as a
  // mount hides what the directory held (earlier runs' records reappear once it is undone).
  const disk = o.schedule.kinds.includes('disk') ? loaded.derived.run_dir : undefined;
  if (disk) {
    mountSmallDisk(disk, o.diskMb!);
    o.say(`rollflow chaos: ${disk} is a ${o.diskMb} MiB tmpfs until the runs end`);
  }
  let faultFree: CheckedRun | undefined;
  let underFaults: CheckedRun;
  // An engine that listens apart from its url is reached through the harness's proxy, whatever the kinds (the config
  // says something stands in between), in both runs, so the fault-free one pays the same extra hop.
  let proxied: ProxiedEngine[] = [];
  try {
    proxied = await startPartitionProxies(loaded);
    for (const p of proxied) o.say(`rollflow chaos: ${p.name} is reached through a partition proxy at ${p.proxy.from} (it listens at ${p.proxy.to})`);
    const limits = { ...o, proxied };
    faultFree = o.faultFree ? checked(await runUnderFaults(loaded, configArgs, `${o.runIdPrefix}-fault-free`, undefined, limits, o.say), e) : undefined;
    underFaults = checked(await runUnderFaults(loaded, configArgs, `${o.runIdPrefix}-faults`, o.schedule, limits, o.say), e);
  } finally {
    await Promise.all(proxied.map((p) => p.proxy.close()));
    if (disk) unmountSmallDisk(disk);
  }
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
