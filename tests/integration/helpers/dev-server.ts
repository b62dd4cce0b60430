/**
 * A real Temporal dev server for one test file, run by the project's own
 * temporal/dev-server.sh on free ports with a throw-away state dir.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';

export const ROOT = path.join(__dirname, '../../..');
const script = path.join(ROOT, 'temporal/dev-server.sh');

/**
 * A port nobody else will be handed until our own process binds it. A plain
 * bind(0)-then-close leaves the port free for the next bind(0) or outgoing
 * connection of any process (the other test file's servers, engines and
 * clients), so it is parked in TIME_WAIT first: we connect to it and the
 * listening side closes first. The kernel skips TIME_WAIT ports when it picks
 * ports itself, while our servers (Node, uvicorn, Temporal's Go) bind with
 * SO_REUSEADDR and get it. The same trick as Temporal's own freeport.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer((accepted) => {
      accepted.destroy();
      srv.close(() => resolve(port));
    });
    let port = 0;
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      port = (srv.address() as { port: number }).port;
      const client = connect(port, '127.0.0.1');
      client.on('error', () => undefined); // the reset from our own close
      client.on('close', () => client.destroy());
    });
  });
}

export interface ScriptResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export class TestDevServer {
  private constructor(
    readonly stateDir: string,
    readonly port: number,
    readonly uiPort: number,
  ) {}

  static async create(): Promise<TestDevServer> {
    return new TestDevServer(mkdtempSync(path.join(tmpdir(), 'rollflow-temporal-')), await freePort(), await freePort());
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get env(): NodeJS.ProcessEnv {
    return { ...process.env, ROLLFLOW_STATE: this.stateDir, TEMPORAL_PORT: String(this.port), TEMPORAL_UI_PORT: String(this.uiPort) };
  }

  run(command: 'start' | 'stop' | 'status', extraEnv: NodeJS.ProcessEnv = {}): ScriptResult {
    const r = spawnSync('bash', [script, command], { env: { ...this.env, ...extraEnv }, encoding: 'utf8' });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  start(): ScriptResult {
    const r = this.run('start');
    if (r.status !== 0) throw new Error(`dev server did not start: ${r.stderr}`);
    return r;
  }

  stop(): ScriptResult {
    return this.run('stop');
  }

  /** Writes `yaml` as the state dir's run.yaml, brings its stack up (`rollflow dev up`: engines, one worker) and connects a client. */
  /** `supervise` false: `dev up --no-supervise`, for tests of what an operator's `dev up` does after a kill (the supervisor would race it). */
  async upStack(yaml: string, { supervise = true } = {}): Promise<{ config: string; client: Client }> {
    const config = path.join(this.stateDir, 'run.yaml');
    writeFileSync(config, yaml);
    const up = this.rollflow(['dev', 'up', config, ...(supervise ? [] : ['--no-supervise'])], 600_000);
    if (up.status !== 0) throw new Error(`rollflow dev up failed: ${up.stderr}`);
    return { config, client: new Client({ connection: await Connection.connect({ address: this.address }) }) };
  }

  /** Closes the client and takes the stack of upStack down. */
  async downStack(config: string | undefined, client: Client | undefined): Promise<void> {
    await client?.connection.close();
    if (config) this.rollflow(['dev', 'down', config], 600_000);
  }

  /** SIGKILLs the engine server that `rollflow dev up` started for `url` (its pid file) and waits until `url` no longer answers. */
  async killEngine(role: 'inference' | 'trainer' | 'env', url: string): Promise<void> {
    process.kill(readPid(path.join(this.stateDir, 'pids', `engine-${role}-${new URL(url).port}.pid`)), 'SIGKILL');
    await until(async () => (await fetch(`${url}/health`).then(() => undefined, () => true)), `the ${role} server at ${url} gone`);
  }

  /** bin/rollflow against this server's state dir, with JSON logs. */
  rollflow(args: string[], timeoutMs: number): ScriptResult {
    const r = spawnSync(path.join(ROOT, 'bin/rollflow'), args, { env: { ...this.env, ROLLFLOW_LOG_FORMAT: 'json' }, encoding: 'utf8', timeout: timeoutMs });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
}

/** The records of a JSON-lines file. */
export function readJsonl<T = Record<string, unknown>>(file: string): T[] {
  return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as T);
}

/** The pid in one of rollflow's pid files (first line; the second is the launch fingerprint). */
export function readPid(pidFile: string): number {
  return Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
}

/** Polls `probe` (a recorded state, not a clock) until it yields a value; the deadline only guards against a hang, which names `what`. */
export async function until<T>(probe: () => Promise<T | undefined>, what = 'condition', timeoutMs = 300_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} never held within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}
