/**
 * W8 on the `swe` env (`--set env=swe --set instances=FILE`): SWE-bench-format instances on real repositories
 * (docs/swe-bench.md) instead of SWE-lite's 60 generated tasks, answered by the sim's scripted oracle, which applies
 * each instance's gold patch through the env's actions (python-engines/.../roles/inference/swe_gold.py) and reads
 * the same dataset file. Here: the env section and the policy's options of a W8 run, the dataset's size (so env
 * seeds walk its instances), and the figures real tasks add: episodes per minute per core, sandbox start latency
 * (an episode's reset: its repository unpacked into a fresh workspace and the test patch applied), and grading time
 * per task (the submit step), with a sweep of episodes in flight to find where throughput stops growing.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { ROOT } from '../../paths';
import type { W8LiveOptions } from './options';

/** SWE-lite has 60 tasks; the dataset size maps env seeds onto them. */
const SWE_LITE_TASKS = 60;

/** A path option as the engines must read it: relative ones are the repository's, as the bench is run from it. */
const absolute = (p: string) => path.resolve(ROOT, p);

/** Readable-looking rows of a JSON-lines dataset (of `split` when given): the env's seed walks as many instances. */
export function jsonlInstances(file: string, split?: string): number {
  if (file.endsWith('.parquet')) throw new RangeError('w8: a parquet dataset needs --set dataset_size=N (its rows are not counted here)');
  const rows = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
  if (split === undefined) return rows.length;
  return rows.filter((l) => {
    try {
      return (JSON.parse(l) as { split?: unknown }).split === split;
    } catch {
      return false;
    }
  }).length;
}

/** The custom env, the scripted policy's options and the dataset size of a W8 run on `o.env`. */
export function w8Workload(o: W8LiveOptions) {
  const budget = { max_turns: o.max_turns, actions: o.actions };
  const flail = { solve_prob: o.solve_prob, flail_turns: o.flail_turns };
  if (o.env === 'swe_lite') {
    return {
      env: { env_type: 'swe_lite', env_config: { ...budget, tiers: o.tiers } },
      policy: { kind: 'swe_oracle', ...flail, solve_after_turns: o.solve_after_turns },
      datasetSize: SWE_LITE_TASKS,
      maxTokens: 512,
    };
  }
  if (!o.instances) throw new RangeError('w8: env swe needs --set instances=FILE (a SWE-bench-format dataset)');
  const instances = absolute(o.instances);
  const source = { kind: 'local', repo_path: absolute(o.repo_path), python: absolute(o.python) };
  return {
    env: { env_type: 'swe', env_config: { ...budget, instances, source, ...(o.split ? { split: o.split } : {}), grading_timeout_s: o.grading_timeout_s } },
    policy: { kind: 'swe_oracle', ...flail, instances, wrong_file_prob: o.wrong_file_prob, failed_edit_prob: o.failed_edit_prob, wasted_command_prob: o.wasted_command_prob },
    datasetSize: o.dataset_size ?? jsonlInstances(instances, o.split),
    // The sim writes a reply a token per byte: an edit quotes a hunk before and after, a git apply a whole file's patch.
    maxTokens: 4096, // the sim server's max_tokens_cap
  };
}

/** Episodes per minute over a makespan, and per core of this machine (all its cores, shared or not). */
export function throughput(episodes: number, makespanS: number | null) {
  if (makespanS === null || makespanS <= 0) return { episodes_per_min: null, episodes_per_min_per_core: null, cores: cpus().length };
  const perMin = (episodes * 60) / makespanS;
  const r = (x: number) => Math.round(x * 100) / 100;
  return { episodes_per_min: r(perMin), episodes_per_min_per_core: r(perMin / cpus().length), cores: cpus().length };
}

/** The 1-, 5- and 15-minute load averages now, as `uptime` prints them. */
export const uptimeLoad = () => loadavg().map((x) => Math.round(x * 100) / 100);

/**
 * Where throughput stopped growing in a sweep of episodes in flight: the smallest size from which no larger size gains
 * more than `gain` (10 %) in episodes per minute; null while it still grows at the largest size.
 */
export function saturation<P extends { in_flight: number; episodes_per_min: number | null }>(points: readonly P[], gain = 0.1): number | null {
  const ok = points.filter((p) => p.episodes_per_min !== null).sort((a, b) => a.in_flight - b.in_flight);
  for (let i = 0; i < ok.length - 1; i++) {
    const best = Math.max(...ok.slice(i + 1).map((p) => p.episodes_per_min!));
    if (best <= ok[i]!.episodes_per_min! * (1 + gain)) return ok[i]!.in_flight;
  }
  return null;
}
