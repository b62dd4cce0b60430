// The supervisor's loop (src/stack/supervise.ts) on real processes (`sleep`, a shell that exits at once) with
// pid files: a dead one is started again, a hung one (its probe failing) is killed and replaced, and a part that
// cannot stay up is left in crash-loop with its log. Assertions are on the statuses it reported, in order.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptOrStop, isAlive, livePid, startDetached, type ManagedProcess } from '../../src/stack/processes';
import { backoffMs, watchPart, SUPERVISE_DEFAULTS, type Part, type SuperviseOptions } from '../../src/stack/supervise';
import { claimSupervisor, releaseSupervisor, supervisorProcess, writeSupervisorStatus, type PartStatus } from '../../src/stack/supervisor';
import { parseConfig } from '../../src/configs';
import { localStackView } from '../../src/stack';
import { liveWorkerBeats, removeDeadWorkerBeats, workerAliveFile, workerBeatProblem, type WorkerBeat } from '../../src/stack/worker';
import { beat } from '../../src/worker/liveness';

const FAST: SuperviseOptions = { checkEveryMs: 10, probeEveryMs: 10, fastFailMs: 60_000, maxFastFailures: 3, maxBackoffMs: 20, crashLoopRetryMs: 30 };

function managed(name: string, marker = 'sleep 1000'): ManagedProcess {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-supervise-'));
  return { name, pidFile: path.join(dir, `${name}.pid`), logFile: path.join(dir, `${name}.log`), marker };
}

const startSleep = (p: ManagedProcess) => startDetached(p, 'sleep', ['1000']);

/** Runs watchPart until `until(statuses)` holds; returns every status it reported. */
async function watchUntil(part: Part, until: (s: PartStatus[]) => boolean, o = FAST): Promise<PartStatus[]> {
  const seen: PartStatus[] = [];
  let done = false;
  await watchPart(part, o, (s) => {
    seen.push(s);
    if (until(seen)) done = true;
  }, () => done);
  return seen;
}

const kill = (pid: number | undefined) => pid !== undefined && isAlive(pid) && process.kill(pid, 'SIGKILL');

describe('supervisor', () => {
  it('starts a process that died again, at once', async () => {
    const p = managed('dies');
    const first = startSleep(p);
    let starts = 0;
    const part: Part = { name: 'dies', process: p, start: async () => (starts++, startSleep(p)), probe: async () => undefined, hangAfterMs: 1_000 };
    process.kill(first, 'SIGKILL');
    const seen = await watchUntil(part, (s) => s.at(-1)?.state === 'running' && s.at(-1)!.restarts === 1);
    // The first report is 'running' if the killed process was still a zombie when the watch began.
    expect(seen.map((s) => s.state).slice(-3)).toEqual(['backoff', 'starting', 'running']);
    const backoff = seen.at(-3)!;
    expect(backoff).toMatchObject({ reason: 'exited', restarts: 1 });
    expect(backoff.nextAttemptAt! - backoff.since).toBe(0); // the first restart does not wait
    expect(starts).toBe(1);
    const second = livePid(p);
    expect(second).not.toBe(first);
    kill(second);
  });

  it('kills a live process whose probe keeps failing, and replaces it', async () => {
    const p = managed('hangs');
    const first = startSleep(p);
    process.kill(first, 'SIGSTOP'); // what a hung process looks like from outside: alive, not answering
    let healthy = false;
    const part: Part = {
      name: 'hangs',
      process: p,
      start: async () => ((healthy = true), startSleep(p)),
      probe: async () => (healthy ? undefined : 'no answer within 5 s'),
      hangAfterMs: 50,
    };
    const seen = await watchUntil(part, (s) => s.at(-1)?.state === 'running' && s.at(-1)!.restarts === 1);
    expect(isAlive(first)).toBe(false);
    const states = seen.map((s) => s.state);
    expect(states.slice(0, 2)).toEqual(['running', 'unhealthy']);
    expect(states.slice(-3)).toEqual(['backoff', 'starting', 'running']);
    expect(seen.find((s) => s.state === 'backoff')).toMatchObject({ reason: 'hung (no answer within 5 s)', hangKills: 1 });
    kill(livePid(p));
  });

  it('puts a part that cannot stay up in crash-loop, with its log, after backing off, and then only tries it again slowly', async () => {
    const p = managed('crashes', 'rollflow-crash-test');
    let starts = 0;
    const start = async () => {
      starts++;
      writeFileSync(p.logFile, `attempt ${starts}: cannot bind port 1\n`, { flag: 'a' });
      const child = spawn('sh', ['-c', 'exit 1', 'rollflow-crash-test'], { stdio: 'ignore' });
      await new Promise((resolve) => child.on('exit', resolve));
      throw new Error('exited during start');
    };
    const part: Part = { name: 'crashes', process: p, start, probe: async () => undefined, hangAfterMs: 1_000 };
    // Until its second crash-loop report: one more start in between, after crashLoopRetryMs.
    const seen = await watchUntil(part, (s) => s.filter((x) => x.state === 'crash-loop').length === 2);
    const first = seen.find((s) => s.state === 'crash-loop')!;
    expect(first.logTail).toContain(`attempt ${FAST.maxFastFailures}: cannot bind port 1`);
    expect(first.reason).toContain('3 lives in a row each shorter than 60 s, none healthy: tried again every 0.03 s only');
    expect(first.nextAttemptAt! - first.since).toBe(FAST.crashLoopRetryMs);
    expect(starts).toBe(FAST.maxFastFailures + 1);
    expect(seen.filter((s) => s.state === 'backoff').map((s) => s.reason)).toEqual(['exited', 'the restart failed: exited during start', 'the restart failed: exited during start']);
    expect(seen.map((s) => s.state).filter((s) => s !== 'starting')).toEqual(['backoff', 'backoff', 'backoff', 'crash-loop', 'crash-loop']);
  });

  it('restarts a part that came up and then hung each time, backing off as short lives do, and never parks it in crash-loop', async () => {
    const p = managed('deadlocks');
    startSleep(p);
    // Each life answers its first probe, then reports its work stopped (a backend that deadlocks after some work).
    let probes = 0;
    const part: Part = {
      name: 'deadlocks',
      process: p,
      start: async () => ((probes = 0), startSleep(p)),
      probe: async () => (probes++ === 0 ? undefined : 'stalled: no progress for 5 s'),
      hangAfterMs: 0,
    };
    const hangs = FAST.maxFastFailures * 2;
    const seen = await watchUntil(part, (s) => s.at(-1)?.state === 'running' && s.at(-1)!.hangKills === hangs);
    const backoffs = seen.filter((s) => s.state === 'backoff');
    expect(backoffs).toHaveLength(hangs);
    expect(backoffs.map((s) => s.nextAttemptAt! - s.since)).toEqual(backoffs.map((_, i) => backoffMs(i + 1, FAST)));
    expect(seen.some((s) => s.state === 'crash-loop')).toBe(false);
    kill(livePid(p));
  });

  it('backs off at once, then 1, 2, 4 … s, capped', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffMs(n, SUPERVISE_DEFAULTS))).toEqual([0, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  });
});

describe('the local stack as `rollflow status` and `dev status` show it', () => {
  it('reports each part\'s restarts and what the worker waits for, from the supervisor\'s status file and the worker\'s beat', () => {
    const before = process.env.ROLLFLOW_STATE;
    process.env.ROLLFLOW_STATE = mkdtempSync(path.join(tmpdir(), 'rollflow-stack-view-'));
    try {
      const loaded = parseConfig({ temporal: { task_queue: 'view-test' } }, 'test.yaml');
      expect(localStackView(loaded)).toBeUndefined();
      writeSupervisorStatus(loaded, { pid: 1, updatedAt: Date.now(), parts: { 'engine-env-8501': { state: 'backoff', restarts: 2, hangKills: 1, since: 0, reason: 'hung (no answer)' } } });
      beat(loaded, undefined, 0);
      expect(localStackView(loaded)).toEqual({ restarts: { 'engine-env-8501': { state: 'backoff', restarts: 2, hangKills: 1 } }, waitingFor: [] });
      expect(workerBeatProblem(loaded, process.pid)).toBeUndefined();
      expect(workerBeatProblem(loaded, process.pid, Date.now() + 16_000)).toMatch(/^no beat from pid \d+ for 16\.\d s/);
      expect(workerBeatProblem(loaded, process.pid + 1)).toMatch(/it has not beaten yet/);
    } finally {
      process.env.ROLLFLOW_STATE = before;
      if (before === undefined) delete process.env.ROLLFLOW_STATE;
    }
  });

  it('a second worker of the same queue on this host beats in a file of its own: the supervisor\'s worker stays healthy, the probe sees both', async () => {
    const before = process.env.ROLLFLOW_STATE;
    process.env.ROLLFLOW_STATE = mkdtempSync(path.join(tmpdir(), 'rollflow-two-workers-'));
    // The second worker: a live process whose beat stopped 20 s ago and that waits for the env server.
    const other = spawn('sleep', ['1000'], { stdio: 'ignore' });
    try {
      const loaded = parseConfig({ temporal: { task_queue: 'two-workers' } }, 'test.yaml');
      expect(workerBeatProblem(loaded)).toMatch(/^no live worker of task queue two-workers beats here/);
      beat(loaded, undefined, 0);
      const otherBeat: WorkerBeat = { pid: other.pid!, at: Date.now() - 20_000, loopLagMs: 0, runState: 'RUNNING', activitiesInFlight: 1, activationsInFlight: 0, waitingFor: ['env http://127.0.0.1:8501 (1 call)'] };
      writeFileSync(workerAliveFile(loaded, other.pid!), JSON.stringify(otherBeat));
      // Before, both wrote one file: the supervisor read the other's pid in it and killed its own worker as hung.
      expect(workerBeatProblem(loaded, process.pid)).toBeUndefined();
      expect(workerBeatProblem(loaded, other.pid!)).toMatch(new RegExp(`^no beat from pid ${other.pid} for 20\\.\\d s`));
      expect(workerBeatProblem(loaded)).toMatch(new RegExp(`^no beat from pid ${other.pid} for`)); // the probe: any hung one fails it
      expect(localStackView(loaded)?.waitingFor).toEqual([`worker pid ${other.pid}: env http://127.0.0.1:8501 (1 call)`]);
      // Gone, its file is left over: ignored, then removed by the next worker that starts beating.
      const exited = new Promise((resolve) => other.once('exit', resolve));
      other.kill('SIGKILL');
      await exited;
      expect(liveWorkerBeats(loaded).map((b) => b.pid)).toEqual([process.pid]);
      expect(workerBeatProblem(loaded)).toBeUndefined();
      expect(existsSync(workerAliveFile(loaded, other.pid!))).toBe(true);
      removeDeadWorkerBeats(loaded);
      expect(existsSync(workerAliveFile(loaded, other.pid!))).toBe(false);
      expect(existsSync(workerAliveFile(loaded))).toBe(true);
    } finally {
      other.kill('SIGKILL');
      process.env.ROLLFLOW_STATE = before;
      if (before === undefined) delete process.env.ROLLFLOW_STATE;
    }
  });
});

describe('one supervisor per stack', () => {
  it('a second supervisor finds the first holding the lock, points the pid file back at it and stands down; a stale lock is taken over', () => {
    const before = process.env.ROLLFLOW_STATE;
    process.env.ROLLFLOW_STATE = mkdtempSync(path.join(tmpdir(), 'rollflow-supervisor-lock-'));
    const other = spawn('sh', ['-c', 'sleep 1000; true', 'node dist/cli/index.js supervise'], { stdio: 'ignore' });
    try {
      const loaded = parseConfig({ temporal: { task_queue: 'lock-test' } }, 'test.yaml');
      const p = supervisorProcess(loaded);
      const lock = path.join(path.dirname(p.pidFile), 'supervisor-lock-test.lock');
      mkdirSync(path.dirname(p.pidFile), { recursive: true });
      // Another live supervisor holds the lock; this process's spawner wrote its own pid in the pid file.
      writeFileSync(lock, `${other.pid}\n`);
      writeFileSync(p.pidFile, `${process.pid}\nfingerprint\n`);
      expect(claimSupervisor(loaded)).toBe(other.pid);
      expect(readFileSync(p.pidFile, 'utf8')).toBe(`${other.pid}\nfingerprint\n`);
      // Its holder gone, the lock is stale: taken over, and released again only by its holder.
      other.kill('SIGKILL');
      writeFileSync(lock, '999999999\n');
      expect(claimSupervisor(loaded)).toBeUndefined();
      expect(readFileSync(lock, 'utf8')).toBe(`${process.pid}\n`);
      releaseSupervisor(loaded);
      expect(existsSync(lock)).toBe(false);
    } finally {
      other.kill('SIGKILL');
      process.env.ROLLFLOW_STATE = before;
      if (before === undefined) delete process.env.ROLLFLOW_STATE;
    }
  });
});

describe('a server the pid file lost', () => {
  it('is taken back into its pid file when its command line is the one asked for, and stopped when it is not', async () => {
    const p = managed('orphan');
    const same = spawn('sleep', ['1000'], { stdio: 'ignore' });
    const other = spawn('sleep', ['999'], { stdio: 'ignore' });
    try {
      expect(await adoptOrStop(p, same.pid!, ['1000'], 'fp')).toBe(same.pid);
      expect(readFileSync(p.pidFile, 'utf8')).toBe(`${same.pid}\nfp\n`);
      expect(livePid(p)).toBe(same.pid);
      const gone = new Promise((resolve) => other.once('exit', resolve));
      expect(await adoptOrStop({ ...p, marker: 'sleep 999' }, other.pid!, ['1000'], 'fp')).toBeUndefined();
      await gone;
      expect(readFileSync(p.pidFile, 'utf8')).toBe(`${same.pid}\nfp\n`); // the adopted one's, untouched
    } finally {
      same.kill('SIGKILL');
      other.kill('SIGKILL');
    }
  });
});
