/**
 * The run config of the kill tests (temporal-kill, chaos): sim engines on free
 * ports with a real decode and train cost, so a kill lands with groups
 * generating; B = 8 (2 groups of 4), α = 1, staleness bound 1.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, type TestDevServer } from './dev-server';

/**
 * Writes <state dir>/<name>.yaml for `server` and returns its path. With `listen`, each engine listens on a port of
 * its own besides the url the run calls (the chaos harness's partition proxy stands at the url).
 */
export async function writeSimRunConfig(server: TestDevServer, name: string, maxSteps: number, o: { listen?: boolean } = {}): Promise<string> {
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  const listen = async () => (o.listen ? `, listen: "http://127.0.0.1:${await freePort()}"` : '');
  const file = path.join(server.stateDir, `${name}.yaml`);
  writeFileSync(
    file,
    `
exp_name: ${name}
run_dir: ${server.stateDir}/run
max_steps: ${maxSteps}
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 1
dataset_size: 256
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 64 }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [arith] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: ${name} }
engines:
  inference: [{ url: "http://127.0.0.1:${inference}"${await listen()}, backend: sim, options: { sim: { c0: 0.02, c1: 0.002, length: { dist: lognormal, mean: 32, sigma: 0.8 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}"${await listen()}, backend: sim, options: { sim_seconds_per_sample: 0.05 } }
  env: { url: "http://127.0.0.1:${env}"${await listen()} }
`,
  );
  return file;
}
