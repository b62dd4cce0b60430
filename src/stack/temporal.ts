/** The embedded Temporal dev server, through temporal/dev-server.sh (the one place that knows how to run it). */
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import type { Derived } from '../configs';
import { devServerScript, stateDir } from '../paths';
import type { ManagedProcess } from './processes';

function devServerEnv(t: Derived['temporal'], codecUrl?: string): NodeJS.ProcessEnv {
  return { ...process.env, ROLLFLOW_STATE: stateDir(), TEMPORAL_IP: t.host === 'localhost' ? '127.0.0.1' : t.host, TEMPORAL_PORT: String(t.port), TEMPORAL_UI_PORT: String(t.ui_port), ...(codecUrl ? { TEMPORAL_CODEC_ENDPOINT: codecUrl } : {}) };
}

function devServer(command: 'start' | 'stop' | 'status', t: Derived['temporal'], codecUrl?: string) {
  return spawnSync('bash', [devServerScript, command], { env: devServerEnv(t, codecUrl), encoding: 'utf8' });
}

/** The dev server's pid file and command line (temporal/env.sh names them). */
export function temporalProcess(state = stateDir()): ManagedProcess {
  const dir = path.join(state, 'temporal');
  return { name: 'temporal', pidFile: path.join(dir, 'server.pid'), logFile: path.join(dir, 'server.log'), marker: 'server start-dev' };
}

/** `codecUrl`: the codec server the embedded UI calls (temporal.codec_url). */
export function startTemporal(t: Derived['temporal'], codecUrl?: string): void {
  const r = devServer('start', t, codecUrl);
  process.stderr.write(r.stderr);
  if (r.status !== 0) throw new Error(`the Temporal dev server did not start (exit ${r.status})`);
}

/** startTemporal without blocking the event loop (the supervisor watches other parts meanwhile). */
export function startTemporalInBackground(t: Derived['temporal'], codecUrl?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('bash', [devServerScript, 'start'], { env: devServerEnv(t, codecUrl) }, (err, _out, stderr) => {
      if (err) reject(new Error(`the Temporal dev server did not start (exit ${err.code}): ${stderr.trim().split('\n').at(-1) ?? ''}`));
      else resolve();
    });
  });
}

export function stopTemporal(t: Derived['temporal']): void {
  const r = devServer('stop', t);
  process.stderr.write(r.stderr);
  if (r.status !== 0) throw new Error(`stopping the Temporal dev server failed (exit ${r.status})`);
}

/** One status line, and whether it is healthy. */
export function temporalStatus(t: Derived['temporal']): { ok: boolean; line: string } {
  const r = devServer('status', t);
  return { ok: r.status === 0, line: (r.stdout || r.stderr).trim() };
}

/** undefined when Temporal's frontend answers its gRPC health check within `timeoutMs`; otherwise why not. */
export async function temporalHealth(connection: Connection, timeoutMs: number): Promise<string | undefined> {
  try {
    const r = await connection.withDeadline(Date.now() + timeoutMs, () => connection.healthService.check({ service: 'temporal.api.workflowservice.v1.WorkflowService' }));
    return r.status === 1 ? undefined : `health check answered status ${r.status}, not SERVING`;
  } catch (e) {
    return `no health answer within ${timeoutMs / 1000} s: ${(e as Error).message.split('\n')[0]}`;
  }
}
