// A run across four simulated hosts that share no disk (hosts/netns.sh: each its own network and mount
// namespace, the software a read-only image, every writable place its own), talking only TCP over veth:
//   A: the Temporal server and the object store (versitygw);
//   B, C: an inference server, an env server and a worker each (roles inference and env, calling the
//         servers on their own host);
//   D: the trainer and a worker (roles main and trainer: workflows, the store, weight syncs to B and C).
// Samples, batches, weights, trainer states and env snapshots go through the bucket on A. Mid-run host C
// is lost (its link cut, every process killed): its calls are retried on B, its episodes rebuilt on B's
// env server. Then host B is partitioned for longer than a heartbeat timeout (its link down, then up):
// the run waits, heals, and completes. Checked from what the hosts recorded: every step trained once on
// distinct samples, and no env step applied twice on either env server.
import { closeSync, cpSync, openSync, readdirSync, readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { envActionCheck } from '../../src/chaos/history-invariants';
import { readEnvActions } from '../../src/chaos/records';
import { batchDir } from '../../src/core';
import { ROOT, until } from './helpers/dev-server';
import { TestHosts } from './helpers/hosts';

// `make test` runs the short version; bench/multihost/run.sh the long one, through these settings.
const bench = {
  steps: Number(process.env.MULTIHOST_STEPS ?? 8),
  /** Steps trained before the first fault, and between faults. */
  between: Number(process.env.MULTIHOST_STEPS_BETWEEN ?? 2),
  /** Longer than the heartbeat timeout (30 s): B's calls in flight are timed out and retried, while B may still finish them. */
  partitionS: Number(process.env.MULTIHOST_PARTITION_S ?? 45),
  /** Bring host C back (its link, its servers and worker) before B's partition, so B's work moves to C. */
  restoreC: process.env.MULTIHOST_RESTORE_C === '1',
  /** Temporal on host A: the dev server (SQLite), or the cluster on PostgreSQL (temporal/cluster.sh; its server built by the bench). */
  temporal: process.env.MULTIHOST_TEMPORAL === 'cluster' ? ('cluster' as const) : ('dev' as const),
  /** Where to write the run's timeline (bench/results/multihost.md), if anywhere. */
  report: process.env.MULTIHOST_REPORT,
};
const STEPS = bench.steps;
const B = 8; // 2 groups of 4 episodes
const RUN = 'mh';
const PORTS = { temporal: bench.temporal === 'cluster' ? 7333 : 7233, s3: 7470, inference: 8001, trainer: 8002, env: 8003 };
// Every host sees the checkout at ROOT, and its own disk at ROOT/.state.
const STATE = path.join(ROOT, '.state');
let hosts: TestHosts;
const addr: Record<string, string> = {};

/** A host's disk as the test process sees it (its ROOT/.state on the host). */
const disk = (host: string, ...rest: string[]) => path.join(hosts.dir, 'disks', host, 'state', ...rest);

/** Starts `args` on `host` in the background, its output in its own disk's logs/<name>.log. */
function start(host: string, name: string, args: string[], env: NodeJS.ProcessEnv = {}): void {
  mkdirSync(disk(host, 'logs'), { recursive: true });
  const log = openSync(disk(host, 'logs', `${name}.log`), 'a');
  hosts.spawn(host, args, { stdio: ['ignore', log, log], env: { ...hostEnv(), ...env } });
  closeSync(log);
}

/** What every process on a host gets: no AWS settings from this process (each host reads its own ~/.aws). */
const hostEnv = (): NodeJS.ProcessEnv => ({ ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_'))), ROLLFLOW_HOSTS_SET: hosts.set, PYTHONDONTWRITEBYTECODE: '1', ROLLFLOW_LOG_FORMAT: 'json' });

function mustRun(host: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = hosts.exec(host, args, { env: { ...hostEnv(), ...env }, timeout: 300_000 });
  if (r.status !== 0) throw new Error(`${args.join(' ')} on host ${host} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

const engine = (host: string, role: 'inference' | 'trainer' | 'env', options: Record<string, unknown>) => {
  const args = [path.join(ROOT, '.venv/bin/python'), '-m', 'rollflow_engines', 'serve', '--role', role, '--backend', role === 'env' ? 'python' : 'sim', '--host', addr[host]!, '--port', String(PORTS[role])];
  for (const [k, v] of Object.entries(options)) args.push('--option', `${k}=${JSON.stringify(v)}`);
  start(host, `engine-${role}`, args, { PYTHONPATH: path.join(ROOT, 'python-engines') });
};

/** The run config as host `host` reads it: one file per host, on its own disk. */
function writeConfig(host: string, inference: string[], env: string): string {
  writeFileSync(
    disk(host, 'run.yaml'),
    `
exp_name: multihost
run_dir: ${STATE}/run
max_steps: ${STEPS}
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 1
dataset_size: 64
trainer_state_save_steps: 2
sample_store: { kind: s3, bucket: rollflow, prefix: mh/ }
custom_envs:
  lake: { env_type: frozen_lake, max_steps: 4, max_tokens_per_step: 8, env_calls: activity, env_config: { map_size: 3, max_turns: 4, render: compact } }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [lake] }
actor_infer: { generating_args: { max_new_tokens: 8 } }
temporal: { address: "${addr.a}:${PORTS.temporal}", embedded: false, task_queue: mh, route_by_role: true, worker: { metrics_address: off } }
engines:
  inference: [${inference.map((h) => `{ url: "http://${addr[h]}:${PORTS.inference}", backend: sim, launch: false }`).join(', ')}]
  trainer: { url: "http://${addr.d}:${PORTS.trainer}", backend: sim, launch: false }
  env: { url: "http://${addr[env]}:${PORTS.env}", launch: false }
`,
  );
  return path.join(STATE, 'run.yaml');
}

/** Polls `url` from `host` until it answers. */
const answers = (host: string, url: string) => until(async () => (hosts.exec(host, ['curl', '-sf', '-m', '5', url]).status === 0 ? true : undefined), `${url} answering on host ${host}`, 180_000);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  hosts = TestHosts.up(['a', 'b', 'c', 'd']);
  for (const h of ['a', 'b', 'c', 'd']) {
    addr[h] = hosts.addr(h);
    mkdirSync(disk(h, 'logs'), { recursive: true });
  }
  // A: Temporal and the object store. The dev server listens on every address of A: its services dial each other
  // on loopback, so bound to A's network address alone it cannot start a workflow. The cluster binds A's address.
  if (bench.temporal === 'cluster') mustRun('a', [path.join(ROOT, 'temporal/cluster.sh'), 'start'], { TEMPORAL_CLUSTER_IP: addr.a!, TEMPORAL_CLUSTER_PORT: String(PORTS.temporal) });
  else mustRun('a', [path.join(ROOT, 'temporal/dev-server.sh'), 'start'], { TEMPORAL_IP: '0.0.0.0', TEMPORAL_PORT: String(PORTS.temporal), TEMPORAL_LOG: `${STATE}/logs/temporal.log` });
  mustRun('a', [path.join(ROOT, 'object-store/versitygw.sh'), 'start'], { ROLLFLOW_S3_ADDRESS: `${addr.a}:${PORTS.s3}` });
  // The store's key reaches the other hosts as a secret would: its files, copied into each host's ~/.aws.
  const aws = disk('a', 'object-store', 'aws');
  for (const h of ['b', 'c', 'd']) {
    mkdirSync(path.join(hosts.dir, 'disks', h, 'home', '.aws'), { recursive: true, mode: 0o700 });
    for (const f of ['credentials', 'config']) writeFileSync(path.join(hosts.dir, 'disks', h, 'home', '.aws', f), readFileSync(path.join(aws, f)), { mode: 0o600 });
  }
  await startRolloutHost('b');
  await startRolloutHost('c');
  engine('d', 'trainer', { sim_seconds_per_sample: 0.02, export_dir: `${BUCKET}weights/trainer`, export_scratch_dir: `${STATE}/weights`, state_scratch_dir: `${STATE}/trainer-state-scratch`, step_log: `${STATE}/trainer-steps.jsonl` });
  await answers('d', `http://${addr.d}:${PORTS.trainer}/health`);
  // D runs the workflows and the trainer's calls, and syncs weights to every inference server.
  start('d', 'worker', [path.join(ROOT, 'bin/rollflow'), 'worker', writeConfig('d', ['b', 'c'], 'b'), '--role', 'main,trainer'], { ROLLFLOW_HOST: 'd' });
}, 600_000);

const BUCKET = 's3://rollflow/mh/';

/** B or C: an inference server and an env server, and a worker that calls them (and only them). */
async function startRolloutHost(h: string): Promise<void> {
  engine(h, 'inference', { sim: { c0: 0.01, length: { dist: 'fixed', mean: 8 } }, weights_cache_dir: `${STATE}/weights-cache` });
  engine(h, 'env', { action_log: `${STATE}/env-actions.jsonl`, snapshot_dir: `${BUCKET}env-snapshots` });
  for (const role of ['inference', 'env'] as const) await answers(h, `http://${addr[h]}:${PORTS[role]}/health`);
  start(h, 'worker', [path.join(ROOT, 'bin/rollflow'), 'worker', writeConfig(h, [h], h), '--role', 'inference,env'], { ROLLFLOW_HOST: h });
}

afterAll(() => {
  // Each host's logs outlive it, for a failure's diagnosis: .state/test-reports/multihost/<host>/.
  for (const h of ['a', 'b', 'c', 'd']) {
    if (hosts && existsSync(disk(h, 'logs'))) cpSync(disk(h, 'logs'), path.join(ROOT, '.state', 'test-reports', 'multihost', h), { recursive: true });
  }
  hosts?.down();
});

/** The run's step records: objects in the bucket (one per step), read where versitygw keeps them on A's disk. */
const metricsOf = () => {
  const dir = disk('a', 'object-store', 'data', 'rollflow', 'mh', RUN, 'metrics');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^step-\d+\.json$/.test(f)).sort().map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { run_id: string; step: number; wall_s: number }) : [];
};
const stepsDone = () => metricsOf().filter((m) => m.run_id === RUN).length;
/** Seconds since the test started the run: the faults' times, on the clock of the steps' wall_s (from the run's start, within a second). */
let runStartedAt = 0;
const timeline: { at: number; event: string }[] = [];
const mark = (event: string) => timeline.push({ at: (Date.now() - runStartedAt) / 1000, event });

it('completes across four hosts, through the loss of host C and a partition of host B, every step once and no env step applied twice', async () => {
  const config = path.join(STATE, 'run.yaml'); // D's
  runStartedAt = Date.now();
  mustRun('d', [path.join(ROOT, 'bin/rollflow'), 'run', config, '--run-id', RUN]);

  // Lose host C after a few steps: cut its link, then kill every process on it.
  await until(async () => (stepsDone() >= bench.between ? true : undefined), 'steps trained before the first fault', 600_000);
  hosts.link('c', 'down');
  hosts.kill('c');
  mark('host C lost');
  const lostAt = stepsDone();
  await until(async () => (stepsDone() >= lostAt + bench.between ? true : undefined), 'steps trained after host C was lost', 600_000);
  if (bench.restoreC) {
    hosts.link('c', 'up');
    await startRolloutHost('c');
    mark('host C back');
    const backAt = stepsDone();
    await until(async () => (stepsDone() >= backAt + bench.between ? true : undefined), 'steps trained after host C came back', 600_000);
  }

  // Then partition B for longer than a heartbeat timeout (with C lost, B is the only host with inference and env).
  hosts.link('b', 'down');
  mark(`host B partitioned (${bench.partitionS} s)`);
  await sleep(bench.partitionS * 1000); // the fault's length, not a synchronisation: nothing is awaited here
  hosts.link('b', 'up');
  mark('host B healed');

  const waited = JSON.parse(mustRun('d', [path.join(ROOT, 'bin/rollflow'), 'wait', RUN, '--config', config, '--json']).trim().split('\n').at(-1)!) as { step: number };
  expect(waited.step).toBe(STEPS);

  // Every step trained once, on a full batch of distinct samples (the batches in the bucket, on A's disk).
  expect(metricsOf().filter((m) => m.run_id === RUN).map((m) => m.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));
  const batches = path.join(disk('a', 'object-store', 'data', 'rollflow', 'mh'), batchDir(RUN)); // <prefix><run>/batches
  const uids = readdirSync(batches).flatMap((f) => readFileSync(path.join(batches, f), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { uid: string }).uid));
  expect(uids).toHaveLength(STEPS * B);
  expect(new Set(uids).size).toBe(STEPS * B);

  // No env step applied twice, over both env servers' logs (each on its own host's disk).
  const logs = ['b', 'c'].map((h) => readEnvActions(disk(h, 'env-actions.jsonl'))!);
  const check = envActionCheck({ envActions: { file: 'env-actions.jsonl of B and C', lines: logs.flatMap((l) => l.lines), unreadableLines: logs.reduce((n, l) => n + l.unreadableLines, 0) } });
  expect(check.ok, check.detail).toBe(true);
  expect(logs[1]!.lines.length).toBeGreaterThan(0); // C served episodes before it was lost
  if (bench.report) writeFileSync(bench.report, JSON.stringify({ bench, timeline, steps: metricsOf().filter((m) => m.run_id === RUN), envActions: { b: logs[0]!.lines.length, c: logs[1]!.lines.length, check: check.detail } }, null, 2));
}, 3_600_000);
