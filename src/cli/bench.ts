/**
 * `rollflow bench <workload> [--set key=value]… [--des-only] [--out file]`:
 * a bench/README.md workload on the real system (W1, W5, W7: embedded Temporal,
 * sim engines), each cell beside its discrete-event simulation (DES), one
 * JSON line per cell on stdout; or the DES alone (`--des-only`, any of W1–W5).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { applyOverride, ConfigError, type ConfigProblem } from '../configs';
import { DesOptionsError, desSweep, runDes, type DesWorkload } from '../bench/des';
import { isLiveWorkload, liveDes, parseLiveOptions, runLiveBench } from '../bench/live';
import type { OrchestrationDelay } from '../bench/live/orchestration-delay';
import { ROOT } from '../paths';

const DES_WORKLOADS: DesWorkload[] = ['w1', 'w2', 'w3', 'w4', 'w5'];

interface BenchFlags {
  set?: string[];
  desOnly?: boolean;
  sweep?: boolean;
  out?: string;
  stateDir?: string;
  keepStack?: boolean;
}

/** --set pairs as a raw options object; values are read as YAML (numbers, lists like [64,128]). */
export function rawOptions(sets: readonly string[]): Record<string, unknown> {
  const raw: Record<string, unknown> = {};
  const problems = sets.map((s) => applyOverride(raw, s)).filter((p): p is ConfigProblem => p !== undefined);
  if (problems.length) throw new ConfigError('bench options', problems);
  return raw;
}

/** The command line as typed, quoted so it can be pasted back into a shell. */
export function commandLine(argv: readonly string[]): string {
  return ['rollflow', ...argv].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** W7's orchestration delay (orchestration-delay.ts) in words: what keeps the makespan above the DES. */
function w7Delay(d: unknown): string {
  if (!d || typeof d !== 'object') return '';
  if ('error' in d) return `; orchestration delay not read: ${String(d.error)}`;
  const o = d as OrchestrationDelay;
  const s = (x: number) => `${x.toFixed(2)} s`;
  return `; orchestration delay a trajectory ${s(o.delay.mean_s)} mean (started ${s(o.start_offset.mean_s)} after dispatch, the last at ${s(o.start_offset.max_s)}; workflow tasks queued ${s(o.task_wait.mean_s)}); the last to end: started at ${s(o.last.start_offset_s)}, delay ${s(o.last.delay_s)}`;
}

function describeCell(c: Record<string, unknown>): string {
  const pct = (x: unknown) => (typeof x === 'number' ? `${(x * 100).toFixed(1)}%` : 'n/a');
  const s = (x: unknown) => (typeof x === 'number' ? `${x.toFixed(1)} s` : 'failed');
  if (c.skipped) return `${c.workload} in_flight ${c.in_flight}: ${c.skipped}`;
  if (c.workload === 'w1') {
    const ran = (c.runs ?? {}) as Record<string, unknown>;
    const m = (mode: string, x: unknown) => (mode in ran ? s(x) : 'not run');
    const costs = (key: string, base: string, variant: string, what: string) =>
      Object.entries((c[key] ?? {}) as Record<string, Record<string, unknown>>)
        .map(([mode, d]) => `; ${what} cost (${mode}) ${pct(d.cost)}: ${s(d[`makespan_${base}_s`])} ${base}, ${s(d[`makespan_${variant}_s`])} ${variant}`)
        .join('');
    const durability = costs('durability_cost', 'on', 'off', 'durability') + costs('store_cost', 'dir', 's3', 'store');
    return `w1 B=${c.batch} (μ,σ)=(${c.mean_s},${c.std_s}) scale ${c.time_scale}: lockstep ${m('lockstep', c.baseline_makespan_s)}, env_async ${m('env_async', c.rollflow_makespan_s)}, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup}×), overhead ${pct(c.overhead)}${durability}`;
  }
  if (c.workload === 'w7') {
    return `w7 in_flight ${c.in_flight}: makespan ${s(c.makespan_s)} (DES ${s(c.des_makespan_s)}), overhead ${pct(c.overhead)}, ${c.trajectories_per_s ?? 'n/a'} trajectories/s, ${c.activities_per_s ?? 'n/a'} activities/s${c.sustained ? '' : ' (not sustained)'}${w7Delay(c.orchestration)}`;
  }
  if (c.workload === 'w2') {
    return `w2 ${c.baseline} vs ${c.redundant} (batch ${c.batch}) scale ${c.time_scale}: exact ${s(c.baseline_makespan_s)}, redundant ${s(c.rollflow_makespan_s)}, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup}×), overhead ${pct(c.overhead)}`;
  }
  if (c.workload === 'w3') {
    return `w3 ${c.prompts}×${c.k} +${c.max_additional_running_prompts} on ${c.servers} servers scale ${c.time_scale}: batch ${s(c.baseline_makespan_s)}, queue ${s(c.rollflow_makespan_s)}, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup}×), overhead ${pct(c.overhead)}`;
  }
  if (c.workload === 'w4') {
    return `w4 ${c.prompts}×${c.n} on ${c.servers} servers scale ${c.time_scale}: n per request ${s(c.baseline_makespan_s)}, replicated ${s(c.rollflow_makespan_s)}, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup ?? 'n/a'}×), overhead ${pct(c.overhead)}`;
  }
  if (c.workload === 'w8') {
    const left = Object.entries((c.left_behind ?? {}) as Record<string, { workspaces: number; sandbox_processes: number }>).map(([m, l]) => `${m} ${l.workspaces} workspaces, ${l.sandbox_processes} processes`).join('; ');
    return `w8 ${c.episodes} ${c.env ?? 'swe_lite'} episodes: lockstep ${s(c.baseline_makespan_s)}, env_async ${s(c.rollflow_makespan_s)}, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup}×), overhead ${pct(c.overhead)}; left behind: ${left}`;
  }
  return `w5 α=${c.alpha}: ${c.samples_per_s ?? 'n/a'} samples/s, speedup ${c.measured_speedup ?? 'n/a'}× (DES ${c.des_speedup ?? 'n/a'}×), overhead ${pct(c.overhead)}, idle trainer ${pct(c.trainer_idle_ratio)} rollout ${pct(c.rollout_idle_ratio)}`;
}

export function benchCommand(out: (line: string) => void, err: (line: string) => void): Command {
  return new Command('bench')
    .exitOverride()
    .description('run a bench/README.md workload on the real system (w1-w5, w7, w8) beside its DES; --des-only: the DES alone (w1-w5)')
    .argument('<workload>', 'w1 | w2 | w3 | w4 | w5 | w7 | w8 (real system), or w1-w5 with --des-only')
    .option('--set <key=value>', 'a workload option (see src/bench/live/options.ts, or des/ for --des-only); repeatable', (v: string, prev: string[] = []) => [...prev, v])
    .option('--des-only', 'print the simulator\'s result as JSON and exit (no Temporal, fast)')
    .option('--sweep', 'with --des-only on w1-w4: the DES options of bench/README.md\'s whole grid')
    .option('--out <file>', 'also write the whole report (command, machine, date, load, every cell) as JSON')
    .option('--state-dir <dir>', 'the bench\'s own state dir (Temporal db, logs, runs)', path.join(ROOT, '.state', 'bench'))
    .option('--keep-stack', 'leave the bench\'s stack running at the end')
    .action(async (workload: string, flags: BenchFlags) => {
      try {
        await bench(workload, flags, out, err);
      } catch (e) {
        if (!(e instanceof DesOptionsError)) throw e;
        err(`rollflow: invalid bench options: ${e.message}`); // a usage error, like a bad run config
        process.exitCode = 2;
      }
    });
}

async function bench(workload: string, flags: BenchFlags, out: (line: string) => void, err: (line: string) => void): Promise<void> {
  const raw = rawOptions(flags.set ?? []);
  if (flags.desOnly) {
    const w = workload as DesWorkload;
    const live = isLiveWorkload(workload) && !flags.sweep;
    if (!live && !DES_WORKLOADS.includes(w)) throw new ConfigError('bench', [{ path: 'workload', given: workload, expected: `one of ${DES_WORKLOADS.join(', ')}, w7` }]);
    const results = live ? liveDes(workload, parseLiveOptions(workload, raw)) : flags.sweep ? desSweep(w, raw) : [runDes(w, raw)];
    return out(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
  }
  if (!isLiveWorkload(workload)) throw new ConfigError('bench', [{ path: 'workload', given: workload, expected: 'w1, w2, w3, w4, w5, w7 or w8' }]);
  const report = await runLiveBench(workload, raw, {
    stateDir: path.resolve(flags.stateDir!),
    keepStack: flags.keepStack ?? false,
    command: commandLine(process.argv.slice(2)),
    emit: (cell) => {
      out(JSON.stringify(cell));
      err(`rollflow bench: ${describeCell(cell as Record<string, unknown>)}`);
    },
    say: (line) => err(line),
  });
  if (flags.out) {
    mkdirSync(path.dirname(path.resolve(flags.out)), { recursive: true });
    writeFileSync(flags.out, `${JSON.stringify(report, null, 2)}\n`);
    err(`rollflow bench: report written to ${flags.out}`);
  }
  if (report.error) process.exitCode = 1;
}
