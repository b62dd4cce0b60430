/**
 * `rollflow chaos <config> [--faults k,…] [--every s] [--seed n] [--order rotate|mixed] [--out md]`:
 * the run fault-free, then under a seeded SIGKILL schedule (src/chaos), each
 * checked against the invariants; the report goes to --out. Exit 1 when an
 * invariant failed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { machine } from '../bench/live/runner';
import { chaos, chaosMarkdown, FAULT_KINDS, isFaultKind, type FaultKind, type FaultOrder } from '../chaos';
import { ConfigError, type ConfigProblem } from '../configs';
import { ROOT } from '../paths';
import { commandLine } from './bench';
import { loadFromArgs, withConfigOptions, type ConfigOptions } from './options';

interface ChaosFlags extends ConfigOptions {
  faults: string;
  every: string;
  seed: string;
  order: string;
  out: string;
  runId?: string;
  timeout: string;
  kills?: string;
}

/** The flags as numbers and kinds, or every problem with the flag named. */
export function parseChaosFlags(f: Pick<ChaosFlags, 'faults' | 'every' | 'seed' | 'order' | 'timeout' | 'kills'>): { kinds: FaultKind[]; everyS: number; seed: number; order: FaultOrder; timeoutS: number; maxKills: number } {
  const problems: ConfigProblem[] = [];
  const kinds = f.faults.split(',').map((k) => k.trim());
  for (const k of kinds) if (!isFaultKind(k)) problems.push({ path: '--faults', given: k, expected: `a comma-separated list of ${FAULT_KINDS.join(', ')}` });
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
  const maxKills = f.kills === undefined ? Infinity : count('--kills', f.kills);
  if (f.order !== 'rotate' && f.order !== 'mixed') problems.push({ path: '--order', given: f.order, expected: 'rotate or mixed' });
  if (problems.length) throw new ConfigError('chaos options', problems);
  return { kinds: kinds as FaultKind[], everyS, seed, order: f.order as FaultOrder, timeoutS, maxKills };
}

export function chaosCommand(out: (line: string) => void, err: (line: string) => void): Command {
  return withConfigOptions(new Command('chaos').exitOverride())
    .description('run the config fault-free, then again killing processes (SIGKILL) on a seeded schedule and restarting them; check the invariants on both runs\' records')
    .option('--faults <kinds>', `comma-separated kinds to kill: ${FAULT_KINDS.join(',')}`, FAULT_KINDS.join(','))
    .option('--every <s>', 'seconds between kills (each ±25 %, seeded)', '60')
    .option('--seed <n>', 'seed of the kill schedule (times, kinds, which server)', '0')
    .option('--order <order>', 'rotate: the kinds in turn; mixed: each kill draws its kind', 'rotate')
    .option('--out <md>', 'the report (markdown)', path.join(ROOT, 'bench', 'results', 'chaos.md'))
    .option('--run-id <prefix>', 'run ids <prefix>-fault-free and <prefix>-faults (default: <exp_name>-chaos-<seed>-<time>)')
    .option('--kills <n>', 'stop killing after n kills (default: until the run ends)')
    .option('--timeout <s>', 'a run not finished after this long is terminated and reported', '3600')
    .action(async (file: string | undefined, flags: ChaosFlags) => {
      const { kinds, everyS, seed, order, timeoutS, maxKills } = parseChaosFlags(flags);
      const { loaded, args } = loadFromArgs(file, flags);
      const runIdPrefix = flags.runId ?? `${loaded.config.exp_name}-chaos-${seed}-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}`;
      const load1 = loadavg()[0]!;
      const result = await chaos(loaded, args, { schedule: { kinds, everyS, seed, order }, runIdPrefix, timeoutS, maxKills, faultFree: true, say: err });
      const m = machine();
      const header = { command: commandLine(process.argv.slice(2)), date: new Date().toISOString(), machine: `${m.nproc} cores (${m.cpu_model}), load ${load1.toFixed(2)} at the start, commit ${m.git_commit}`, config: loaded.source };
      mkdirSync(path.dirname(path.resolve(flags.out)), { recursive: true });
      writeFileSync(flags.out, `${chaosMarkdown(result, header)}\n`);
      for (const run of [result.faultFree, result.underFaults]) {
        if (run) out(`${run.runId}: ${run.ok ? 'ok' : 'FAILED'} (${run.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`).join('; ') || 'every invariant holds'}), makespan ${run.makespanS?.toFixed(1) ?? 'n/a'} s`);
      }
      out(`${result.recoveries.length} kills; effective time ${result.effectiveTime?.toFixed(3) ?? 'n/a'}; report ${flags.out}`);
      if (!result.ok) process.exitCode = 1;
    });
}
