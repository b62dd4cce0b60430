/**
 * Runs one benchmark run on the real system, through the same path as
 * `rollflow run --json`: the config is written to a file and validated by the
 * config loader, the embedded stack is brought up on the bench's own ports
 * and state dir, the run is started and awaited, and what the run recorded
 * (metrics.jsonl, its final status) is read back. A run that exceeds its
 * timeout is terminated with everything it started.
 */
import { spawnSync } from 'node:child_process';
import { tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { startRun } from '../../launch/run';
import { connectClient } from '../../client/connect';
import { terminateRun } from '../../client/terminate';
import { loadConfig, type LoadedConfig, type RunConfigInput } from '../../configs';
import { cliEntry, logsDir, pidsDir, ROOT, stateDir } from '../../paths';
import { down, up } from '../../stack';
import { ensureStarted, startDetached, stopProcess, waitUntil, type ManagedProcess } from '../../stack/processes';
import { pollers } from '../../stack/worker';
import { runRecords } from '../../activities/run-records';
import { recordsDirOf } from '../../client/plan';
import { openSampleStore } from '../../store';
import { status as statusQuery, type RunStatus } from '../../workflows/run';
import type { Metrics } from './report';

export interface RunOutcome {
  run_id: string;
  ok: boolean;
  /** Why the run did not complete: its failure, or "timeout after N s". */
  error?: string;
  /** The `rollflow run --json` summary line. */
  summary?: Record<string, unknown>;
  /** One record per train step, from wherever the run keeps its records (its directory, or the bucket of a bucket store). */
  metrics: Metrics[];
  /** The run's final status (totals of dispatched, failed, dropped groups). */
  status?: RunStatus;
  /** The run's sample store when it is a directory (batch files of what each step trained on); none for a bucket. */
  store_dir?: string;
  wall_s: number;
  load1_before: number;
  load1_after: number;
  /** CPU seconds each part of the stack used during the run. */
  cpu_s: { server: number; worker: number; engines: number };
  /** Lines the Temporal server and the worker logged at warn level or above during the run. */
  logged: { server: Record<string, number>; worker: Record<string, number> };
}

export interface Machine {
  nproc: number;
  mem_gib: number;
  cpu_model: string;
  node: string;
  git_commit: string;
}

export function machine(): Machine {
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  return { nproc: cpus().length, mem_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version, git_commit: git.stdout.trim() || 'unknown' };
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
/** Histories read back at once after a bench run (BenchStack.histories). */
const HISTORY_FETCHES_AT_ONCE = 8;

/** CPU seconds (user + system, with reaped children) of a live process; 0 when it is gone. */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLK_TCK;
  } catch {
    return 0;
  }
}

const pidIn = (file: string): number | undefined => {
  try {
    return Number(readFileSync(file, 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
};

function stackCpu(): { server: number; worker: number; engines: number } {
  const pids = existsSync(pidsDir()) ? readdirSync(pidsDir()) : [];
  const sum = (names: string[]) => names.reduce((s, f) => s + cpuSeconds(pidIn(path.join(pidsDir(), f))), 0);
  return {
    server: cpuSeconds(pidIn(path.join(stateDir(), 'temporal', 'server.pid'))),
    worker: sum(pids.filter((f) => f.startsWith('worker-'))),
    engines: sum(pids.filter((f) => f.startsWith('engine-'))),
  };
}

/** Counts of warn/error lines (JSON logs) appended to `file` since byte `from`. */
function levelsSince(file: string, from: number): Record<string, number> {
  if (!existsSync(file)) return {};
  const text = readFileSync(file).subarray(from).toString('utf8');
  const counts: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line) continue;
    let level: string;
    try {
      const rec = JSON.parse(line) as { level?: string | number };
      // pino logs numbers (40 warn, 50 error), the Temporal server upper-case names
      level = typeof rec.level === 'number' ? (rec.level >= 50 ? 'error' : rec.level >= 40 ? 'warn' : 'info') : String(rec.level ?? '').toLowerCase();
    } catch {
      level = 'unparsed';
    }
    if (['warn', 'error', 'fatal', 'dpanic', 'panic', 'unparsed'].includes(level)) counts[level] = (counts[level] ?? 0) + 1;
  }
  return counts;
}

const storeDirOf = ({ derived }: LoadedConfig) => (derived.sample_store.kind === 'dir' ? { store_dir: derived.sample_store.path } : {});
const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);
const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Response tokens of every sample a run trained on, by uid, from the batch files the trainer read (a directory store's). */
export function trainedTokens(storeDir: string | undefined, runId: string): Map<string, number> {
  if (storeDir === undefined) throw new Error(`reading what run ${runId} trained on needs a directory sample store; this run's store is a bucket`);
  const dir = path.join(storeDir, runId, 'batches');
  const tokens = new Map<string, number>();
  if (!existsSync(dir)) return tokens;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)) {
      const s = JSON.parse(line) as { uid: string; response_ids: number[] };
      tokens.set(s.uid, s.response_ids.length);
    }
  }
  return tokens;
}

export class BenchStack {
  private lastLoaded?: LoadedConfig;
  private extraWorkers = 0;

  /** `dir`: the bench's state dir (ROLLFLOW_STATE for every process it starts). */
  constructor(
    readonly dir: string,
    private readonly say: (line: string) => void,
  ) {
    process.env.ROLLFLOW_STATE = dir;
    mkdirSync(path.join(dir, 'configs'), { recursive: true });
  }

  /** A fresh Temporal database and no old runs, so every invocation measures the same thing; only when no server runs here. */
  static clean(dir: string): void {
    if (existsSync(path.join(dir, 'temporal', 'server.pid'))) return;
    for (const f of ['temporal/temporal.db', 'temporal/temporal.db-wal', 'temporal/temporal.db-shm', 'runs']) rmSync(path.join(dir, f), { recursive: true, force: true });
  }

  /** Writes the config where the worker can re-read it and validates it with the config loader. */
  load(name: string, raw: RunConfigInput): { loaded: LoadedConfig; file: string } {
    const file = path.join(this.dir, 'configs', `${name}.yaml`);
    writeFileSync(file, `# written by rollflow bench\n${JSON.stringify(raw, null, 2)}\n`);
    return { loaded: loadConfig(file), file };
  }

  /** Worker processes beyond the one `up` starts, all polling the bench's task queue (k = 2, 3, …). */
  private extraWorker(k: number): ManagedProcess {
    const name = `worker-bench-${k}`;
    return { name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'cli/index.js worker' };
  }

  /**
   * `workers` worker processes in all. An env step holds its activity slot
   * while the env sleeps, so B trajectories in flight need B slots to run as
   * the DES assumes (unbounded concurrency); one worker has
   * temporal.worker.max_concurrent_activities of them.
   */
  private async ensureWorkers(loaded: LoadedConfig, file: string, workers: number): Promise<void> {
    const { temporal, engines } = loaded.config;
    const fingerprint = JSON.stringify({ temporal, engines, store: loaded.derived.sample_store, built: statSync(cliEntry).mtimeMs, file });
    const client = await connectClient(loaded.config);
    try {
      for (let k = 2; k <= Math.max(workers, this.extraWorkers + 1); k++) {
        const proc = this.extraWorker(k);
        if (k > workers) {
          await stopProcess(proc);
          continue;
        }
        const { pid, action } = await ensureStarted(proc, fingerprint, () => startDetached(proc, process.execPath, [cliEntry, 'worker', file], process.env, fingerprint));
        if (action !== 'already running') await waitUntil(proc, async () => ((await pollers(client, loaded)).some((id) => id.startsWith(`${pid}@`)) ? true : undefined), 180_000);
      }
      this.extraWorkers = workers - 1;
    } finally {
      await client.connection.close();
    }
  }

  /** Never throws for what the system does: a stack that will not come up, a run that fails or hangs, a server that stops answering are the outcome. */
  async run(name: string, raw: RunConfigInput, runId: string, timeoutS: number, workers = 1): Promise<RunOutcome> {
    const { loaded, file } = this.load(name, raw);
    this.lastLoaded = loaded;
    try {
      await up(loaded, [file], this.say); // engines and worker restart only when their settings changed
      await this.ensureWorkers(loaded, file, workers);
    } catch (e) {
      return { run_id: runId, ok: false, error: `stack: ${(e as Error).message}`, metrics: [], ...storeDirOf(loaded), wall_s: 0, load1_before: round(loadavg()[0]!, 2), load1_after: round(loadavg()[0]!, 2), cpu_s: { server: 0, worker: 0, engines: 0 }, logged: { server: {}, worker: {} } };
    }
    const serverLog = path.join(this.dir, 'temporal', 'server.log');
    const workerLog = path.join(this.dir, 'logs', `worker-${loaded.config.temporal.task_queue}.log`);
    const logFrom = { server: sizeOf(serverLog), worker: sizeOf(workerLog) };
    const cpu0 = stackCpu();
    const load1_before = loadavg()[0]!;
    const started = Date.now();
    const lines: string[] = [];
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timeout after ${timeoutS} s`)), timeoutS * 1000);
    });
    const running = startRun(loaded, [file], { json: true, runId }, (l) => lines.push(l), this.say);
    running.catch(() => undefined); // after a timeout it rejects once the run is terminated
    try {
      await Promise.race([running, timeout]);
    } catch (e) {
      error = (e as Error).message;
    } finally {
      clearTimeout(timer);
    }
    const wall_s = (Date.now() - started) / 1000;
    const cpu1 = stackCpu();
    const status = await this.finalStatus(loaded, runId);
    if (error) await this.terminate(loaded, runId).catch((e: Error) => this.say(`rollflow bench: could not terminate ${runId}: ${e.message}`));
    const records = runRecords(recordsDirOf(loaded, runId), openSampleStore(loaded.derived.sample_store));
    const metrics = (await records.read('metrics.jsonl').catch((e: Error) => {
      error ??= `reading the run's records: ${e.message}`;
      return [];
    })) as unknown as Metrics[];
    const last = lines[lines.length - 1];
    return {
      run_id: runId,
      ok: !error,
      ...(error ? { error } : {}),
      ...(!error && last ? { summary: JSON.parse(last) as Record<string, unknown> } : {}),
      metrics,
      ...(status ? { status } : {}),
      ...storeDirOf(loaded),
      wall_s: round(wall_s),
      load1_before: round(load1_before, 2),
      load1_after: round(loadavg()[0]!, 2),
      cpu_s: { server: round(cpu1.server - cpu0.server, 1), worker: round(cpu1.worker - cpu0.worker, 1), engines: round(cpu1.engines - cpu0.engines, 1) },
      logged: { server: levelsSince(serverLog, logFrom.server), worker: levelsSince(workerLog, logFrom.worker) },
    };
  }

  /**
   * When each generate request of the last-run config's run `runId` was
   * scheduled (ms since the epoch), from the histories of its group and
   * trajectory workflows: how fast the orchestration put the batch's work in
   * front of the engines (the DES puts it all there at time 0).
   */
  async generateScheduledAt(runId: string): Promise<number[]> {
    const times: number[] = [];
    for (const history of await this.histories(runId, ['trajectory', 'group'])) {
      for (const e of history) {
        const name = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
        if (name.startsWith('generate') && e.eventTime) times.push(tsToMs(e.eventTime));
      }
    }
    return times;
  }

  /** The event histories of run `runId`'s workflows of the given types (of the last-run config's server). */
  async histories(runId: string, types: readonly string[]): Promise<temporal.api.history.v1.IHistoryEvent[][]> {
    if (!this.lastLoaded) return [];
    const client = await connectClient(this.lastLoaded.config);
    try {
      const wanted: { workflowId: string; runId: string }[] = [];
      for await (const wf of client.workflow.list({ query: `RollflowRunId = '${runId}'` })) if (types.includes(wf.type)) wanted.push(wf);
      // A few fetches at once: a run of a thousand trajectories was read back one history at a time.
      const out: temporal.api.history.v1.IHistoryEvent[][] = new Array(wanted.length);
      let next = 0;
      const fetcher = async () => {
        for (let i = next++; i < wanted.length; i = next++) out[i] = (await client.workflow.getHandle(wanted[i]!.workflowId, wanted[i]!.runId).fetchHistory()).events ?? [];
      };
      await Promise.all(Array.from({ length: Math.min(HISTORY_FETCHES_AT_ONCE, wanted.length) }, fetcher));
      return out;
    } finally {
      await client.connection.close();
    }
  }

  private async finalStatus(loaded: LoadedConfig, runId: string): Promise<RunStatus | undefined> {
    const client = await connectClient(loaded.config).catch(() => undefined);
    try {
      return await client?.workflow.getHandle(runId).query(statusQuery);
    } catch {
      return undefined;
    } finally {
      await client?.connection.close();
    }
  }

  private async terminate(loaded: LoadedConfig, runId: string): Promise<void> {
    const client = await connectClient(loaded.config);
    try {
      await terminateRun(client, runId, 'rollflow bench: run failed or timed out');
    } finally {
      await client.connection.close();
    }
  }

  async down(): Promise<void> {
    for (let k = 2; k <= this.extraWorkers + 1; k++) await stopProcess(this.extraWorker(k));
    if (this.lastLoaded) await down(this.lastLoaded, this.say);
  }
}
