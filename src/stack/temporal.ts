/** The embedded Temporal dev server, through temporal/dev-server.sh (the one place that knows how to run it). */
import { spawnSync } from 'node:child_process';
import type { Derived } from '../configs';
import { devServerScript, stateDir } from '../paths';

function devServer(command: 'start' | 'stop' | 'status', t: Derived['temporal'], codecUrl?: string) {
  const env = { ...process.env, ROLLFLOW_STATE: stateDir(), TEMPORAL_IP: t.host === 'localhost' ? '127.0.0.1' : t.host, TEMPORAL_PORT: String(t.port), TEMPORAL_UI_PORT: String(t.ui_port), ...(codecUrl ? { TEMPORAL_CODEC_ENDPOINT: codecUrl } : {}) };
  return spawnSync('bash', [devServerScript, command], { env, encoding: 'utf8' });
}

/** `codecUrl`: the codec server the embedded UI calls (temporal.codec_url). */
export function startTemporal(t: Derived['temporal'], codecUrl?: string): void {
  const r = devServer('start', t, codecUrl);
  process.stderr.write(r.stderr);
  if (r.status !== 0) throw new Error(`the Temporal dev server did not start (exit ${r.status})`);
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
