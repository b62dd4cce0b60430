/** A real python-engines server process on a free port, for one test file. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, ROOT } from './dev-server';

export class TestEngine {
  private proc?: ChildProcess;
  private output = '';

  private constructor(
    readonly role: 'inference' | 'trainer' | 'env',
    readonly args: string[],
    readonly port: number,
  ) {}

  static async start(role: 'inference' | 'trainer' | 'env', args: string[] = []): Promise<TestEngine> {
    const engine = new TestEngine(role, args, await freePort());
    await engine.restart();
    return engine;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** (Re)starts the process and waits until /health answers; a readiness poll with a deadline, not a timing assumption. */
  async restart(): Promise<void> {
    this.stop();
    this.output = '';
    const proc = spawn(path.join(ROOT, '.venv/bin/python'), ['-m', 'rollflow_engines', 'serve', '--role', this.role, '--port', String(this.port), ...this.args], {
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python-engines') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout?.on('data', (d) => (this.output += d));
    proc.stderr?.on('data', (d) => (this.output += d));
    this.proc = proc;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`${this.role} engine exited (${proc.exitCode}):\n${this.output}`);
      try {
        if ((await fetch(`${this.url}/health`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`${this.role} engine not healthy in time:\n${this.output}`);
      await sleep(100);
    }
  }

  stop(): void {
    this.proc?.kill('SIGKILL');
    this.proc = undefined;
  }
}
