/**
 * Chooses an inference server for each generate call (the LLMProxy's
 * routing): the one with the fewest outstanding requests from this worker,
 * except that the turns of one trajectory stay on the server that served its
 * earlier turns (affinity: its prompt prefix is likely still cached there),
 * unless that server is marked down.
 *
 * A server is marked down when a connection to it fails (the router and the
 * weight sync do it) and up again by the HealthProber, once it answers and
 * holds the run's latest weights. With every server down, acquire throws a
 * retryable EngineUnavailableError: the generate activity fails this attempt
 * and Temporal retries it (with backoff, without limit) until one is back,
 * resuming from the partial tokens it heartbeated. Nothing is scored.
 */
import { EngineUnavailableError } from './errors';

export interface Lease {
  url: string;
  release(): void;
}

export class InferencePool {
  private outstanding: Map<string, number>;
  private affinity = new Map<string, string>();
  private down = new Set<string>();
  private nextTie = 0;

  constructor(
    readonly urls: readonly string[],
    private readonly maxAffinityKeys = 100_000,
  ) {
    if (urls.length === 0) throw new Error('InferencePool needs at least one server');
    this.outstanding = new Map(urls.map((u) => [u, 0]));
  }

  /** Throws EngineUnavailableError (retryable, not unreachable) when every server is marked down. */
  acquire(affinityKey?: string): Lease {
    const pinned = affinityKey === undefined ? undefined : this.affinity.get(affinityKey);
    const url = pinned && !this.down.has(pinned) ? pinned : this.leastLoaded();
    if (affinityKey !== undefined) this.remember(affinityKey, url);
    this.outstanding.set(url, (this.outstanding.get(url) ?? 0) + 1);
    let released = false;
    return {
      url,
      release: () => {
        if (released) return;
        released = true;
        this.outstanding.set(url, (this.outstanding.get(url) ?? 1) - 1);
      },
    };
  }

  /** A connection to the server failed: route around it until it is marked up again. */
  markDown(url: string): void {
    if (this.outstanding.has(url)) this.down.add(url);
  }

  markUp(url: string): void {
    this.down.delete(url);
  }

  /** Forget a finished trajectory's affinity. */
  forget(affinityKey: string): void {
    this.affinity.delete(affinityKey);
  }

  load(url: string): number {
    return this.outstanding.get(url) ?? 0;
  }

  isDown(url: string): boolean {
    return this.down.has(url);
  }

  /** The servers marked down, for the prober. */
  downUrls(): string[] {
    return [...this.down];
  }

  private leastLoaded(): string {
    const up = this.urls.filter((u) => !this.down.has(u));
    if (up.length === 0) throw new EngineUnavailableError(`every inference server is marked down (${this.urls.join(', ')}); waiting for the health prober to bring one back`);
    const min = Math.min(...up.map((u) => this.load(u)));
    const tied = up.filter((u) => this.load(u) === min);
    return tied[this.nextTie++ % tied.length] as string; // rotate among ties so idle servers share work
  }

  private remember(key: string, url: string): void {
    this.affinity.delete(key); // re-insert: Map order is recency order
    this.affinity.set(key, url);
    if (this.affinity.size > this.maxAffinityKeys) this.affinity.delete(this.affinity.keys().next().value as string);
  }
}
