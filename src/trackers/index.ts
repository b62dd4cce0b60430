/**
 * A run's experiment trackers (track_with), fed from the worker: `stdout`
 * writes a line per record to the worker's log; `tensorboard` and `wandb` run
 * in one Python process per run (python-engines' trackers, with the real
 * libraries), started on the run's first record and closed after its last.
 *
 * A tracker never fails the run: its errors are logged (once per tracker and
 * run) and counted (rollflow_tracker_errors_total), and the record goes on to
 * the others. A process that died (or could not start) is started again for
 * the next record. A run that ends without its last record (cancelled, failed,
 * terminated) has its process closed once it has been idle for IDLE_CLOSE_MS.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Counter } from 'prom-client';
import type { Logger } from '../logging';
import { registry } from '../monitoring/run-metrics';
import { pythonBin, pythonEnginesEnv, ROOT } from '../paths';
import type { TrackingSpec } from '../core';

export type { TrackingSpec } from '../core';


/** How long a record may take in the trackers; past it the process is taken for hung, killed, and the run goes on. */
const ANSWER_TIMEOUT_MS = 60_000;
/**
 * A run's process is closed after this long without a record (wandb finishes its run), so runs that ended
 * without their final record do not keep a Python process each; a later record opens a new one.
 */
const IDLE_CLOSE_MS = 30 * 60_000;

const trackerErrors = new Counter({ name: 'rollflow_tracker_errors_total', help: 'Errors of experiment trackers (track_with); the run goes on without the failed tracker.', labelNames: ['run_id', 'tracker'] as const, registers: [registry] });

interface Answer {
  ok: boolean;
  errors: { tracker: string; error: string }[];
}

/** The Python trackers of one run: a JSON line in, an answer line out. */
class TrackerProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  /** The trackers this process runs (all but stdout). */
  private readonly python: string[];
  private readonly answers: ((a: Answer) => void)[] = [];
  private startError: string | undefined;
  private closed = false;
  readonly exited: Promise<void>;

  constructor(runId: string, runDir: string, spec: TrackingSpec, log: Logger, private readonly answerTimeoutMs: number) {
    this.python = spec.trackWith.filter((t) => t !== 'stdout');
    this.child = spawn(pythonBin(), ['-m', 'rollflow_engines', 'track', '--run-id', runId, '--run-dir', runDir, '--track-with', this.python.join(','), '--kwargs', JSON.stringify(spec.kwargs)], { env: pythonEnginesEnv(), cwd: ROOT });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return; // not an answer (the process keeps stdout for its answers: trackers/main.py)
      }
      if (typeof (answer as Partial<Answer> | null)?.ok === 'boolean') this.answers.shift()?.(answer);
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => log.debug({ run_id: runId, line }, 'tracker process'));
    this.exited = new Promise((resolve) => this.child.once('close', () => resolve()));
    this.child.once('error', (e) => (this.startError = e.message)); // cannot start (no python): its close answers for it
    this.child.once('close', () => {
      this.closed = true;
      this.answers.splice(0).forEach((r) => r(this.exitAnswer()));
    });
    this.child.stdin.on('error', () => undefined); // a dead process: its answer says so
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private exitAnswer(): Answer {
    return { ok: false, errors: [{ tracker: this.python.join(','), error: this.startError ?? 'the tracker process exited' }] };
  }

  send(message: unknown): Promise<Answer> {
    if (this.closed) return Promise.resolve(this.exitAnswer()); // it died on an earlier line: nobody would answer
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // Hung (a deadlocked library): killed, so later records do not each wait out the timeout; the next starts a new one.
        this.child.kill('SIGKILL');
        resolve({ ok: false, errors: [{ tracker: this.python.join(','), error: `no answer within ${this.answerTimeoutMs / 1000} s; the process was killed` }] });
      }, this.answerTimeoutMs);
      this.answers.push((a) => {
        clearTimeout(timer);
        resolve(a);
      });
      this.child.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** EOF: each tracker closes (wandb finishes its run), then the process exits. */
  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }
}

export class RunTrackers {
  private readonly processes = new Map<string, TrackerProcess>();
  private readonly warned = new Set<string>();
  /**
   * Per run and file, the last step its trackers got from this worker: a retried activity's record is not logged
   * twice. Steps only grow within a file (appendMetrics adds a step once), so the last one is enough.
   */
  private readonly lastStep = new Map<string, number>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly log: Logger,
    private readonly idleCloseMs = IDLE_CLOSE_MS,
    private readonly answerTimeoutMs = ANSWER_TIMEOUT_MS,
  ) {}

  /** The runs with a tracker process open. */
  openRuns(): string[] {
    return [...this.processes.keys()];
  }

  /** One record of a run's metrics.jsonl or validation.jsonl, to each of its trackers, once per worker; `final`: the run's last record. */
  async record(runId: string, runDir: string, spec: TrackingSpec, file: string, record: { step: number } & Record<string, unknown>, final: boolean): Promise<void> {
    const key = `${runId}/${file}`;
    if (record.step <= (this.lastStep.get(key) ?? -1)) return;
    this.lastStep.set(key, record.step);
    clearTimeout(this.idleTimers.get(runId));
    if (spec.trackWith.includes('stdout')) this.log.info({ run_id: runId, file, ...record }, `${file === 'validation.jsonl' ? 'validation' : 'step'} ${record.step}`);
    if (spec.trackWith.some((t) => t !== 'stdout')) {
      let proc = this.processes.get(runId);
      if (!proc?.alive) {
        proc = new TrackerProcess(runId, runDir, spec, this.log, this.answerTimeoutMs);
        this.processes.set(runId, proc);
        this.report(runId, await proc.send({ kind: 'config', config: spec.hparams }));
      }
      this.report(runId, await proc.send({ kind: 'record', file, record }));
      if (final) await this.close(runId);
      else this.idleTimers.set(runId, setTimeout(() => void this.close(runId), this.idleCloseMs).unref());
    }
  }

  private report(runId: string, answer: Answer): void {
    for (const e of answer.errors) {
      trackerErrors.inc({ run_id: runId, tracker: e.tracker });
      const key = `${runId}/${e.tracker}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      this.log.warn({ run_id: runId, tracker: e.tracker, error: e.error }, 'tracker failed; the run goes on without it (counted in rollflow_tracker_errors_total)');
    }
  }

  async close(runId: string): Promise<void> {
    clearTimeout(this.idleTimers.get(runId));
    this.idleTimers.delete(runId);
    const proc = this.processes.get(runId);
    this.processes.delete(runId);
    await proc?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.processes.keys()].map((id) => this.close(id)));
  }
}
