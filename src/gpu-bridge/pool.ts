/**
 * Chooses an inference server for each generate call (the LLMProxy's
 * routing): the one with the fewest outstanding requests from this worker,
 * except that the turns of one trajectory stay on the server that served its
 * earlier turns (affinity: its prompt prefix is likely still cached there),
 * unless that server is marked down.
 */
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

  /** A server failed a call: route around it until it is marked up again. */
  markDown(url: string): void {
    if (this.down.size + 1 < this.urls.length) this.down.add(url); // never mark the last server down
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

  private leastLoaded(): string {
    const up = this.urls.filter((u) => !this.down.has(u));
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
