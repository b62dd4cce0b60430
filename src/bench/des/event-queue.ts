/**
 * The clock of every simulation here: a binary min-heap of timed callbacks.
 * Events at the same instant run in the order they were scheduled, so a
 * simulation is a deterministic function of its inputs (no ties broken by
 * heap layout).
 */

interface Scheduled {
  at: number;
  order: number;
  run: () => void;
}

export class EventQueue {
  private heap: Scheduled[] = [];
  private scheduled = 0;
  private stopped = false;
  /** Simulated seconds since the start. */
  now = 0;

  /** Runs `run` at time `at` (never earlier than now). */
  at(at: number, run: () => void): void {
    if (!(at >= this.now)) throw new RangeError(`event at ${at} is before now (${this.now})`);
    this.push({ at, order: this.scheduled++, run });
  }

  /** Runs `run` after `delay` seconds. */
  after(delay: number, run: () => void): void {
    this.at(this.now + delay, run);
  }

  /** Ends the simulation at the current instant: no further event runs. */
  stop(): void {
    this.stopped = true;
  }

  /** Runs events in time order until none is left or stop() is called; returns the final time. */
  run(): number {
    while (!this.stopped && this.heap.length > 0) {
      const next = this.pop();
      this.now = next.at;
      next.run();
    }
    return this.now;
  }

  get pending(): number {
    return this.heap.length;
  }

  private before(a: Scheduled, b: Scheduled): boolean {
    return a.at < b.at || (a.at === b.at && a.order < b.order);
  }

  private push(e: Scheduled): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): Scheduled {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.before(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
