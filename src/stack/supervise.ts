/**
 * `rollflow supervise`: keeps every part of the local stack alive with no
 * operator. Each part is watched on its own: a process that exits is started
 * again; a live one whose probe keeps failing (no answer: SIGSTOP, a blocked
 * event loop; or an answer that says its work stopped moving) for the part's
 * `hangAfterMs` is killed with SIGKILL and started again. Restarts back off
 * (at once, then 1, 2, 4 … up to 30 s) while each life is short. After
 * `maxFastFailures` short lives in a row that never passed a probe (a part
 * that cannot come up, not one that came up and then hung or died) the part
 * is in state `crash-loop`,
 * its log's last lines in the status file, and it is tried again only every
 * `crashLoopRetryMs` (5 min): restarting a process that cannot start at full
 * speed only hides why, but giving up for good would leave it down after
 * the cause went away (a worker that could not start while Temporal was
 * down).
 *
 * Why our own and not supervisord, s6 or runit: the checks are the point,
 * and they are rollflow's (an engine's progress, a worker's beat, Temporal's
 * gRPC health); the start of each part is the same code `dev up` runs
 * (fingerprints, readiness); and it runs wherever the project is checked
 * out, as any user, with nothing more installed. Production uses systemd or
 * Kubernetes with the same checks (deploy/).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadedConfig } from '../configs';
import { isAlive, livePid, tail, type ManagedProcess } from './processes';
import { claimSupervisor, releaseSupervisor, writeSupervisorStatus, type PartStatus, type SupervisorStatus } from './supervisor';

export interface Part {
  name: string;
  process: ManagedProcess;
  /** Starts the part unless it runs (idempotent) and resolves once it is ready; throws if it cannot. */
  start(): Promise<unknown>;
  /** undefined when healthy; otherwise what is wrong. Must settle within a few seconds whatever the process does. */
  probe(pid: number): Promise<string | undefined>;
  /** How long a live process may keep failing its probe before it is replaced. */
  hangAfterMs: number;
}

export interface SuperviseOptions {
  checkEveryMs: number;
  probeEveryMs: number;
  /**
   * A life shorter than this that ends in a restart makes the next restart wait longer; if it never passed a probe,
   * it also counts towards a crash loop. One that passed a probe came up and worked (a deadlock after some work): it
   * is restarted after its backoff however often, since parking it in crash-loop would stall the run that needs it.
   */
  fastFailMs: number;
  maxFastFailures: number;
  crashLoopRetryMs: number;
  maxBackoffMs: number;
}

export const SUPERVISE_DEFAULTS: SuperviseOptions = { checkEveryMs: 1_000, probeEveryMs: 2_000, fastFailMs: 60_000, maxFastFailures: 5, maxBackoffMs: 30_000, crashLoopRetryMs: 300_000 };

/** The wait before restart number `fastFailures` of a run of short lives: none for the first. */
export const backoffMs = (fastFailures: number, o: SuperviseOptions) => (fastFailures <= 1 ? 0 : Math.min(o.maxBackoffMs, 1000 * 2 ** (fastFailures - 2)));

async function killHung(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL'); // works on a stopped process too
  } catch {
    return; // gone already
  }
  for (const deadline = Date.now() + 30_000; isAlive(pid) && Date.now() < deadline; ) await sleep(50);
}

/** Watches one part until `stopping()`; `report` gets each change of its status. */
export async function watchPart(part: Part, o: SuperviseOptions, report: (s: PartStatus) => void, stopping: () => boolean): Promise<void> {
  let status: PartStatus = { state: 'running', restarts: 0, hangKills: 0, since: Date.now() };
  const set = (change: Partial<PartStatus>) => report((status = { ...status, ...change }));
  let lifeStart = Date.now();
  let fastFailures = 0;
  let cannotComeUp = 0; // short lives in a row that never passed a probe
  let unhealthySince: number | undefined;
  let lastProbe = 0;
  let cameUp = false; // this life passed a probe
  let startError: string | undefined;
  const first = livePid(part.process);
  if (first !== undefined) set({ pid: first });
  while (!stopping()) {
    const pid = livePid(part.process);
    let why: string | undefined = pid === undefined ? (startError ? `the restart failed: ${startError}` : 'exited') : undefined;
    if (pid !== undefined && Date.now() - lastProbe >= o.probeEveryMs) {
      lastProbe = Date.now();
      const problem = await part.probe(pid);
      if (problem === undefined) {
        unhealthySince = undefined;
        cameUp = true;
        if (status.state !== 'running' || status.pid !== pid) set({ state: 'running', pid, since: Date.now() });
      } else {
        unhealthySince ??= Date.now();
        set({ state: 'unhealthy', pid, reason: problem });
        if (Date.now() - unhealthySince >= part.hangAfterMs) {
          why = `hung (${problem})`;
          await killHung(pid);
          set({ hangKills: status.hangKills + 1 });
        }
      }
    }
    if (why === undefined) {
      await sleep(o.checkEveryMs);
      continue;
    }
    const short = Date.now() - lifeStart < o.fastFailMs;
    fastFailures = short ? fastFailures + 1 : 1;
    cannotComeUp = short && !cameUp ? cannotComeUp + 1 : 1;
    const now = Date.now();
    if (cannotComeUp > o.maxFastFailures) {
      const reason = `${why}; ${cannotComeUp - 1} lives in a row each shorter than ${o.fastFailMs / 1000} s, none healthy: tried again every ${o.crashLoopRetryMs / 1000} s only (see its log, fix it, then rollflow dev up)`;
      set({ state: 'crash-loop', pid: undefined, reason, restarts: status.restarts + 1, logTail: tail(part.process.logFile, 15), nextAttemptAt: now + o.crashLoopRetryMs, since: now });
    } else {
      set({ state: 'backoff', pid: undefined, reason: why, restarts: status.restarts + 1, nextAttemptAt: now + backoffMs(fastFailures, o), since: now });
    }
    const delay = status.nextAttemptAt! - now;
    await sleep(delay);
    if (stopping()) return;
    set({ state: 'starting', nextAttemptAt: undefined });
    lifeStart = Date.now();
    unhealthySince = undefined;
    cameUp = false;
    try {
      await part.start();
      startError = undefined;
      set({ state: 'running', pid: livePid(part.process), since: Date.now() });
    } catch (e) {
      startError = (e as Error).message.split('\n')[0];
      set({ reason: `${why}; the restart failed: ${startError}` });
    }
    lastProbe = Date.now(); // a fresh start gets a probe interval before its first probe
  }
}

/** Watches every part until SIGTERM/SIGINT or until `stillWanted()` turns false, keeping the status file current. */
export async function supervise(loaded: LoadedConfig, parts: Part[], stillWanted: () => boolean, o: SuperviseOptions = SUPERVISE_DEFAULTS, say: (line: string) => void = () => undefined): Promise<void> {
  const holder = claimSupervisor(loaded);
  if (holder !== undefined) return say(`another supervisor (pid ${holder}) watches this stack; this one (pid ${process.pid}) exits`);
  try {
    await superviseParts(loaded, parts, stillWanted, o, say);
  } finally {
    releaseSupervisor(loaded);
  }
}

async function superviseParts(loaded: LoadedConfig, parts: Part[], stillWanted: () => boolean, o: SuperviseOptions, say: (line: string) => void): Promise<void> {
  let stop = false;
  const onSignal = () => void (stop = true);
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const status: SupervisorStatus = { pid: process.pid, updatedAt: Date.now(), parts: {} };
  const write = () => writeSupervisorStatus(loaded, { ...status, updatedAt: Date.now() });
  const report = (name: string) => (s: PartStatus) => {
    const before = status.parts[name];
    status.parts[name] = s;
    if (before?.state !== s.state) say(`${name}: ${s.state}${s.reason ? ` (${s.reason})` : ''}${s.pid ? ` pid ${s.pid}` : ''}`);
    write();
  };
  const stopping = () => stop || !stillWanted();
  const heartbeat = setInterval(write, 5_000); // a fresh updatedAt says the supervisor itself is alive
  try {
    write();
    await Promise.all(parts.map((p) => watchPart(p, o, report(p.name), stopping)));
  } finally {
    clearInterval(heartbeat);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
