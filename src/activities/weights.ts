/**
 * The run's latest weights, kept durably in the sample store (weightsKey):
 * syncWeights writes them when a sync completes, the generate activities read
 * them to ask every request for that version at least (min_version), and the
 * router and the prober bring a server that is behind to them. The servers
 * hold one set of weights, so a worker serves one run at a time: the last run
 * an activity named is the one servers are caught up to.
 */
import type { WeightsTarget } from '../gpu-bridge';
import { getIfPresent, type SampleStore } from '../store';
import { weightsKey } from '../core';

export class LatestWeights {
  private runId: string | undefined;

  constructor(private readonly store: SampleStore) {}

  /** The weights of `runId`'s last completed sync; undefined before its first. */
  async read(runId: string): Promise<WeightsTarget | undefined> {
    this.runId = runId;
    return getIfPresent<WeightsTarget>(this.store, weightsKey(runId));
  }

  async write(runId: string, target: WeightsTarget): Promise<void> {
    this.runId = runId;
    await this.store.put(weightsKey(runId), { version: target.version, path: target.path });
  }

  /** The latest weights of the run this worker served last (undefined if none yet). */
  current(): Promise<WeightsTarget | undefined> {
    return this.runId === undefined ? Promise.resolve(undefined) : this.read(this.runId);
  }
}
