/**
 * Routes generate calls over the inference pool and keeps its servers on the
 * run's weights. A call whose connection fails marks its server down (the
 * caller continues from the tokens it received on another server); a server
 * that refuses a call as behind the weights it asked for (409 version_behind:
 * typically restarted, serving its launch weights) is brought to the latest
 * weights, that server only, and asked again.
 */
import { EngineRejectedError, EngineUnavailableError, EngineVersionBehindError, isServerLost } from './errors';
import type { InferenceClient } from './inference-client';
import type { InferencePool } from './pool';

/** Where a run's latest weights are, as its last completed weight sync loaded them. */
export interface WeightsTarget {
  version: number;
  path: string;
}

/**
 * Loads `target` on one server unless it holds that version already: pause
 * (wait: generations in flight finish on the weights they started with) ->
 * update_weights -> resume. A server found paused (mid-sync, or a suspended
 * run's) is updated and left paused: whoever paused it resumes it.
 */
export async function bringToWeights(client: InferenceClient, target: WeightsTarget): Promise<void> {
  const state = await client.state();
  if (state.version === target.version) return;
  try {
    if (state.paused) {
      await client.updateWeights(target);
      return;
    }
    await client.pause({ mode: 'wait' });
    try {
      await client.updateWeights(target);
    } finally {
      await client.resume();
    }
  } catch (e) {
    // Another worker's catch-up or a weight sync resumed the server between our pause and our update:
    // a race to retry, not a bad request.
    if (e instanceof EngineRejectedError && e.status === 409) throw new EngineUnavailableError(`${client.baseUrl}: weight catch-up raced another pause/resume: ${e.message}`);
    throw e;
  }
}

export class InferenceRouter {
  private catchingUp = new Map<string, Promise<void>>();

  constructor(
    readonly pool: InferencePool,
    private readonly clients: ReadonlyMap<string, InferenceClient>,
    /** The weights servers must hold; undefined before a run's first sync (nothing to catch up to). */
    private readonly latestWeights: () => Promise<WeightsTarget | undefined>,
  ) {}

  /**
   * Runs `call` on the server the pool picks for `affinity`. A lost server is
   * marked down and the error propagates (the caller decides how to continue);
   * a server behind is caught up and asked once more.
   */
  async run<T>(affinity: string | undefined, call: (client: InferenceClient) => Promise<T>): Promise<T> {
    for (let caughtUp = false; ; caughtUp = true) {
      const lease = this.pool.acquire(affinity);
      try {
        return await call(this.client(lease.url));
      } catch (e) {
        if (isServerLost(e)) this.pool.markDown(lease.url);
        if (!(e instanceof EngineVersionBehindError) || caughtUp) throw e;
        await this.bringUp(lease.url);
      } finally {
        lease.release();
      }
    }
  }

  /** Brings one server to the latest weights; concurrent callers for one server share one catch-up. */
  bringUp(url: string): Promise<void> {
    const running = this.catchingUp.get(url);
    if (running) return running;
    const catchUp = (async () => {
      const target = await this.latestWeights();
      if (target) await bringToWeights(this.client(url), target);
    })()
      .catch((e: unknown) => {
        if (isServerLost(e)) this.pool.markDown(url);
        throw e;
      })
      .finally(() => this.catchingUp.delete(url));
    this.catchingUp.set(url, catchUp);
    return catchUp;
  }

  private client(url: string): InferenceClient {
    const client = this.clients.get(url);
    if (!client) throw new Error(`no inference client for ${url}`);
    return client;
  }
}
