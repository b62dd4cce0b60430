/**
 * The codec server of `rollflow dev up` (temporal.codec_url on a loopback
 * address): `rollflow codec-server` in its own process, ready when /health answers.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { LoadedConfig } from '../configs';
import { cliEntry, logsDir, pidsDir } from '../paths';
import { ensureStarted, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];

/** The codec server dev up manages, if the config names one on this machine. */
export function codecProcess({ config }: LoadedConfig): (ManagedProcess & { url: string }) | undefined {
  const url = config.temporal.codec_url;
  if (!url || !LOOPBACK.includes(new URL(url).hostname)) return undefined;
  const name = `codec-${new URL(url).port}`;
  return { url, name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'cli/index.js codec-server' };
}

const answers = (url: string) => fetch(`${url}/health`).then((r) => (r.ok ? true : undefined), () => undefined);

export async function startCodecServer(loaded: LoadedConfig, configArgs: string[]): Promise<string | undefined> {
  const proc = codecProcess(loaded);
  if (!proc) return undefined;
  // Its settings (where the store is, the UI it serves, the payload codecs) and a rebuilt dist/ make a running one stale.
  const fingerprint = JSON.stringify({ temporal: loaded.config.temporal, store: loaded.derived.sample_store, built: statSync(cliEntry).mtimeMs });
  const { pid, action } = await ensureStarted(proc, fingerprint, () => startDetached(proc, process.execPath, [cliEntry, 'codec-server', ...configArgs], process.env, fingerprint));
  if (action !== 'already running') await waitUntil(proc, () => answers(proc.url), 60_000);
  return `${proc.name}: ${action} (pid ${pid}) at ${proc.url}`;
}

export async function stopCodecServer(loaded: LoadedConfig): Promise<string | undefined> {
  const proc = codecProcess(loaded);
  return proc ? `${proc.name}: ${await stopProcess(proc)}` : undefined;
}

export async function codecStatus(loaded: LoadedConfig): Promise<{ ok: boolean; line: string } | undefined> {
  const proc = codecProcess(loaded);
  if (!proc) return undefined;
  const pid = livePid(proc);
  const ok = pid !== undefined && (await answers(proc.url)) === true;
  return { ok, line: `${proc.name}: ${ok ? `running pid=${pid} url=${proc.url}` : 'stopped'}` };
}
