/**
 * What activities need, built once per worker process: engine clients, the
 * server pool, the sample store. Activities are closures over this object.
 */
import type { LoadedConfig } from '../configs';
import { EnvClient, InferenceClient, InferencePool, TrainerClient } from '../gpu-bridge';
import { DirectorySampleStore, type SampleStore } from '../store';

export interface ActivityDeps {
  store: SampleStore;
  pool: InferencePool;
  inference: Map<string, InferenceClient>;
  env: EnvClient;
  trainer: TrainerClient;
  /** temporal.worker.max_result_bytes: the guard on results that can grow (payload.ts). */
  maxResultBytes: number;
}

export function createDeps({ config, derived }: LoadedConfig): ActivityDeps {
  const urls = config.engines.inference.map((e) => e.url);
  return {
    store: new DirectorySampleStore(derived.sample_store_path),
    pool: new InferencePool(urls),
    inference: new Map(urls.map((u) => [u, new InferenceClient(u)])),
    env: new EnvClient(config.engines.env.url),
    trainer: new TrainerClient(config.engines.trainer.url),
    maxResultBytes: config.temporal.worker.max_result_bytes,
  };
}
