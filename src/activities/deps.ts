/**
 * What activities need, built once per worker process: engine clients, the
 * server pool with its router and health prober, the sample store and the
 * run's latest weights. Activities are closures over this object.
 */
import type { LoadedConfig } from '../configs';
import { EnvClient, HealthProber, InferenceClient, InferencePool, InferenceRouter, TrainerClient } from '../gpu-bridge';
import type { Logger } from '../logging';
import { openSampleStore, type SampleStore } from '../store';
import { createLogger } from '../logging';
import { RunTrackers } from '../trackers';
import { LatestWeights } from './weights';

export interface ActivityDeps {
  store: SampleStore;
  pool: InferencePool;
  inference: Map<string, InferenceClient>;
  router: InferenceRouter;
  /** Started and stopped with the worker (src/worker). */
  prober: HealthProber;
  weights: LatestWeights;
  env: EnvClient;
  trainer: TrainerClient;
  /** temporal.worker.max_result_bytes: the guard on results that can grow (payload.ts). */
  maxResultBytes: number;
  /** temporal.worker.heartbeat_partial_tokens: generation heartbeats carry the partial tokens (withProgress). */
  heartbeatPartialTokens: boolean;
  /** The runs' experiment trackers (track_with); closed with the worker. */
  trackers: RunTrackers;
}

export function createDeps({ config, derived }: LoadedConfig, log?: Logger): ActivityDeps {
  const urls = config.engines.inference.map((e) => e.url);
  const store = openSampleStore(derived.sample_store);
  const pool = new InferencePool(urls);
  const inference = new Map(urls.map((u) => [u, new InferenceClient(u)]));
  const weights = new LatestWeights(store);
  const router = new InferenceRouter(pool, inference, () => weights.current());
  return {
    store,
    pool,
    inference,
    router,
    prober: new HealthProber(pool, router, 1_000, (url) => log?.info({ url }, 'inference server back up, on the latest weights')),
    weights,
    env: new EnvClient(config.engines.env.url),
    trainer: new TrainerClient(config.engines.trainer.url),
    maxResultBytes: config.temporal.worker.max_result_bytes,
    heartbeatPartialTokens: config.temporal.worker.heartbeat_partial_tokens,
    trackers: new RunTrackers(log ?? createLogger('trackers')),
  };
}
