/**
 * `rollflow chaos <config> [--faults k,…] [--signals kill,stop] [--disk-mb n] [--every s] [--seed n] [--order rotate|mixed] [--out md]`:
 * the run fault-free, then under a seeded fault schedule (src/chaos) that
 * the stack's supervisor recovers from alone, each checked against the
 * invariants; the report goes to --out. Exit 1 when an invariant failed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { machine } from '../bench/live/runner';
import { chaos, chaosMarkdown, FAULT_KINDS, FAULT_SIGNALS, PROCESS_KINDS, isFaultKind, isFaultSignal, type FaultKind, type FaultOrder, type FaultSignal } from '../chaos';
import { ConfigError, type ConfigProblem } from '../configs';
import { ROOT } from '../paths';
import { commandLine } from './bench';
import { loadFromArgs, withConfigOptions, type ConfigOptions } from './options';

interface ChaosFlags extends ConfigOptions {
  faults: string;
  signals: string;
  every: string;
  seed: string;
  order: string;
  out: string;
  runId?: string;
  timeout: string;
  maxFaults?: string;
  diskMb?: string;
}

/** The flags as numbers and kinds, or every problem with the flag named. */
export function parseChaosFlags(f: Pick<ChaosFlags, 'faults' | 'signals' | 'every' | 'seed' | 'order' | 'timeout' | 'maxFaults' | 'diskMb'>): { kinds: FaultKind[]; signals: FaultSignal[]; everyS: number; seed: number; order: FaultOrder; timeoutS: number; maxFaults: number; diskMb?: number } {
  const problems: ConfigProblem[] = [];
  const kinds = f.faults.split(',').map((k) => k.trim());
  for (const k of kinds) if (!isFaultKind(k)) problems.push({ path: '--faults', given: k, expected: `a comma-separated list of ${FAULT_KINDS.join(', ')}` });
  const signals = f.signals.split(',').map((k) => k.trim());
  for (const k of signals) if (!isFaultSignal(k)) problems.push({ path: '--signals', given: k, expected: `a comma-separated list of ${FAULT_SIGNALS.join(', ')}` });
  const seconds = (flag: string, v: string) => {
    const n = Number(v);
    if (!(Number.isFinite(n) && n > 0)) problems.push({ path: flag, given: v, expected: 'a number of seconds > 0' });
    return n;
  };
  const everyS = seconds('--every', f.every);
  const timeoutS = seconds('--timeout', f.timeout);
  const count = (flag: string, v: string) => {
    const n = Number(v);
    if (!(Number.isInteger(n) && n >= 0)) problems.push({ path: flag, given: v, expected: 'an integer ≥ 0' });
    return n;
  };
  const seed = count('--seed', f.seed);
  const maxFaults = f.maxFaults === undefined ? Infinity : count('--max-faults', f.maxFaults);
  const diskMb = f.diskMb === undefined ? undefined : Number(f.diskMb);
  if (diskMb !== undefined && !(Number.isInteger(diskMb) && diskMb >= 16)) problems.push({ path: '--disk-mb', given: f.diskMb, expected: 'an integer number of MiB ≥ 16' });
  if (f.order !== 'rotate' && f.order !== 'mixed') problems.push({ path: '--order', given: f.order, expected: 'rotate or mixed' });
  if (problems.length) throw new ConfigError('chaos options', problems);
  return { kinds: kinds as FaultKind[], signals: signals as FaultSignal[], everyS, seed, order: f.order as FaultOrder, timeoutS, maxFaults, ...(diskMb !== undefined ? { diskMb } : {}) };
}

export function chaosCommand(out: (line: string) => void, err: (line: string) => void): Command {
  return withConfigOptions(new Command('chaos').exitOverride())
    .description('run the config fault-free, then again with processes killed (SIGKILL) or stopped (SIGSTOP), the newest trainer state damaged, the disk filled or an engine cut off on a seeded schedule, recovered without an operator; check the invariants on both runs\' records')
    .option('--faults <kinds>', `comma-separated kinds to hit: processes ${PROCESS_KINDS.join(',')}; corrupt (damage the newest saved trainer state, then SIGKILL the trainer); disk (fill the run directory's tmpfs for 30-120 s, needs --disk-mb and root); partition (cut one engine off from the run for 30-120 s through a proxy at its url, needs engines whose listen differs from url)`, PROCESS_KINDS.join(','))
    .option('--signals <signals>', 'comma-separated, for the process kinds: kill (SIGKILL), stop (SIGSTOP for 30-120 s, then SIGCONT unless replaced)', 'kill')
    .option('--disk-mb <n>', 'with --faults disk: mount a tmpfs of n MiB over the run directory for both runs (as root), which each disk fault fills')
    .option('--every <s>', 'seconds between faults (each ±25 %, seeded)', '60')
    .option('--seed <n>', 'seed of the fault schedule (times, kinds, signals, which server)', '0')
    .option('--order <order>', 'rotate: the kinds in turn; mixed: each kill draws its kind', 'rotate')
    .option('--out <md>', 'the report (markdown)', path.join(ROOT, 'bench', 'results', 'chaos.md'))
    .option('--run-id <prefix>', 'run ids <prefix>-fault-free and <prefix>-faults (default: <exp_name>-chaos-<seed>-<time>)')
    .option('--max-faults <n>', 'stop after n faults (default: until the run ends)')
    .option('--timeout <s>', 'a run not finished after this long is terminated and reported', '3600')
    .action(async (file: string | undefined, flags: ChaosFlags) => {
      const { kinds, signals, everyS, seed, order, timeoutS, maxFaults, diskMb } = parseChaosFlags(flags);
      const { loaded, args } = loadFromArgs(file, flags);
      const runIdPrefix = flags.runId ?? `${loaded.config.exp_name}-chaos-${seed}-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}`;
      const load1 = loadavg()[0]!;
      const result = await chaos(loaded, args, { schedule: { kinds, signals, everyS, seed, order }, runIdPrefix, timeoutS, maxFaults, faultFree: true, ...(diskMb !== undefined ? { diskMb } : {}), say: err });
      const m = machine();
      const header = { command: commandLine(process.argv.slice(2)), date: new Date().toISOString(), machine: `${m.nproc} cores (${m.cpu_model}), load ${load1.toFixed(2)} at the start, commit ${m.git_commit}`, config: loaded.source };
      mkdirSync(path.dirname(path.resolve(flags.out)), { recursive: true });
      writeFileSync(flags.out, `${chaosMarkdown(result, header)}\n`);
      for (const run of [result.faultFree, result.underFaults]) {
        if (run) out(`${run.runId}: ${run.ok ? 'ok' : 'FAILED'} (${run.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`).join('; ') || 'every invariant holds'}), makespan ${run.makespanS?.toFixed(1) ?? 'n/a'} s`);
      }
      out(`${result.recoveries.length} faults; effective time ${result.effectiveTime?.toFixed(3) ?? 'n/a'}; report ${flags.out}`);
      if (!result.ok) process.exitCode = 1;
    });
}
