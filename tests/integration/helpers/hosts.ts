/**
 * Simulated hosts for one test file (hosts/netns.sh, docs/hosts.md): network namespaces on a switch the test
 * process is not on, each with its own mount namespace in which the machine is read-only except the host's own
 * /tmp, HOME and repository `.state`. Each test file gets its own set (namespaces `<set>-<host>`), so files can
 * run in parallel. Call `down()` in afterAll: it kills every process of the set and removes everything.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions, type SpawnSyncOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ROOT, type ScriptResult } from './dev-server';

const SCRIPT = path.join(ROOT, 'hosts', 'netns.sh');

export class TestHosts {
  private constructor(
    readonly set: string,
    /** The set's directory: `disks/<host>/{home,state}` is each host's storage, seen from the test process. */
    readonly dir: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Brings up `names` in a new set; if that fails, takes down whatever part came up before throwing. */
  static up(names: string[]): TestHosts {
    // 't' and 5 base-36 characters: a set name must fit in 6 (netns.sh), and random ones do not collide.
    const set = `t${[...randomBytes(5)].map((b) => (b % 36).toString(36)).join('')}`;
    const env = { ...process.env, ROLLFLOW_HOSTS_SET: set };
    const dir = run(env, ['dir']).trim();
    const hosts = new TestHosts(set, dir, env);
    try {
      run(env, ['up', ...names]);
    } catch (e) {
      hosts.down();
      throw e;
    }
    return hosts;
  }

  /** Runs `args` on `host` and waits: its exit status and output (never throws on a failing command). */
  exec(host: string, args: string[], opts: SpawnSyncOptions = {}): ScriptResult {
    const r = spawnSync(SCRIPT, ['exec', host, '--', ...args], { env: this.env, encoding: 'utf8', ...opts });
    if (r.error) throw r.error;
    return { status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  /** A bash script on `host`. */
  sh(host: string, script: string, opts: SpawnSyncOptions = {}): ScriptResult {
    return this.exec(host, ['bash', '-c', script], opts);
  }

  /** Starts `args` on `host` in the background; the child is the command itself (netns.sh execs into it). */
  spawn(host: string, args: string[], opts: SpawnOptions = {}): ChildProcess {
    return spawn(SCRIPT, ['exec', host, '--', ...args], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  }

  addr(host: string): string {
    return run(this.env, ['addr', host]).trim();
  }

  pids(host: string): number[] {
    return run(this.env, ['pids', host]).split('\n').filter(Boolean).map(Number);
  }

  /** SIGKILLs every process of `host`; returns once none is left. */
  kill(host: string): void {
    run(this.env, ['kill', host]);
  }

  /** Cuts (`down`) or restores (`up`) the host's cable: packets are dropped, no connection is reset. */
  link(host: string, state: 'down' | 'up'): void {
    run(this.env, ['link', host, state]);
  }

  status(): string {
    return run(this.env, ['status']);
  }

  /** Idempotent: kills every process of the set and removes its namespaces, mounts and directory. */
  down(): void {
    run(this.env, ['down']);
  }
}

/** netns.sh with `args`: its stdout, or an error carrying its stderr (which names what refused). */
function run(env: NodeJS.ProcessEnv, args: string[]): string {
  const r = spawnSync(SCRIPT, args, { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hosts/netns.sh ${args.join(' ')} failed (exit ${r.status}): ${r.stderr || r.error}`);
  return r.stdout;
}
