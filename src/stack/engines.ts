/** The python-engines servers a config asks rollflow to launch (engines.*.launch: true). */
import path from 'node:path';
import type { RunConfig } from '../configs';
import { engineHealth, type EngineRole } from '../gpu-bridge';
import { logsDir, pidsDir, pythonBin, ROOT, stateDir } from '../paths';
import { ensureStarted, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

export interface LaunchedEngine {
  role: EngineRole;
  url: string;
  backend: string;
  options: Record<string, unknown>;
  process: ManagedProcess;
}

/**
 * Settings a model-backed server takes from the run config (actor_infer /
 * actor_train, as ROLL names them); an engine's own `options` override them.
 * The sim backends load no model and take none.
 */
function optionsFromConfig(config: RunConfig, role: EngineRole, backend: string): Record<string, unknown> {
  if (backend === 'sim' || role === 'env') return {};
  const train = config.actor_train;
  if (role === 'inference') return { model: (config.actor_infer.model_args ?? train.model_args).model_name_or_path };
  const t = train.training_args;
  return {
    model: train.model_args.model_name_or_path,
    learning_rate: t.learning_rate,
    weight_decay: t.weight_decay,
    max_grad_norm: t.max_grad_norm,
    micro_batch_size: t.per_device_train_batch_size,
    ...(t.gradient_accumulation_steps === undefined ? {} : { gradient_accumulation_steps: t.gradient_accumulation_steps }),
  };
}

export function launchedEngines(config: RunConfig): LaunchedEngine[] {
  const all = [
    ...config.engines.inference.map((e) => ({ role: 'inference' as const, ...e })),
    { role: 'trainer' as const, ...config.engines.trainer },
    { role: 'env' as const, ...config.engines.env },
  ].map((e) => ({ ...e, options: { ...optionsFromConfig(config, e.role, e.backend), ...e.options } }));
  return all
    .filter((e) => e.launch)
    .map((e) => {
      const port = new URL(e.url).port;
      const name = `engine-${e.role}-${port}`;
      return { role: e.role, url: e.url, backend: e.backend, options: e.options, process: { name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'rollflow_engines serve' } };
    });
}

export async function startEngine(e: LaunchedEngine): Promise<string> {
  const { hostname, port } = new URL(e.url);
  // A launched trainer exports weights under the state dir unless the config says otherwise.
  const options = e.role === 'trainer' ? { export_dir: path.join(stateDir(), 'weights', e.process.name), ...e.options } : e.options;
  const args = ['-m', 'rollflow_engines', 'serve', '--role', e.role, '--backend', e.backend, '--host', hostname.replace(/^\[|\]$/g, ''), '--port', port];
  for (const [k, v] of Object.entries(options)) args.push('--option', `${k}=${JSON.stringify(v)}`);
  const env = { ...process.env, PYTHONPATH: path.join(ROOT, 'python-engines') };
  const { pid, action } = await ensureStarted(e.process, JSON.stringify(args), () => startDetached(e.process, pythonBin(), args, env, JSON.stringify(args)));
  if (action === 'already running') return `${e.process.name}: already running (pid ${pid})`;
  // A model-backed server may first build its model (a tiny model's warm-start takes minutes on 2
  // loaded cores); it is watched all along, so a crash still fails fast with its log.
  const readyWithinMs = e.backend === 'sim' || e.role === 'env' ? 120_000 : 900_000;
  await waitUntil(e.process, () => engineHealth(e.url, { timeoutMs: 2_000 }), readyWithinMs);
  return `${e.process.name}: ${action === 'restarted' ? 'restarted with new settings' : 'started'} (pid ${pid}) at ${e.url}`;
}

export async function engineStatus(e: LaunchedEngine): Promise<{ ok: boolean; line: string }> {
  const pid = livePid(e.process);
  if (pid === undefined) return { ok: false, line: `${e.process.name}: stopped` };
  try {
    const h = await engineHealth(e.url, { timeoutMs: 2_000 });
    return { ok: true, line: `${e.process.name}: running pid=${pid} url=${e.url} backend=${h.backend}` };
  } catch (err) {
    return { ok: false, line: `${e.process.name}: unhealthy pid=${pid} (${(err as Error).message})` };
  }
}

export const stopEngine = (e: LaunchedEngine) => stopProcess(e.process);
