/**
 * A set of non-negative integers stored as sorted, disjoint [start, end)
 * ranges. The consumed set of a run is mostly a prefix of the epoch's order
 * with a few holes, so it stays a handful of ranges even after millions of
 * samples: small enough for workflow state, continue-as-new input and
 * checkpoint manifests (Temporal payloads are capped at 2 MB).
 */
export type Range = [start: number, end: number];

export class IntervalSet {
  private ranges: Range[];

  constructor(ranges: readonly Range[] = []) {
    this.ranges = [];
    for (const [s, e] of ranges) for (let i = s; i < e; i++) this.add(i);
  }

  /** Rebuilds from toJSON() output without re-adding element by element. */
  static fromJSON(ranges: readonly Range[]): IntervalSet {
    const set = new IntervalSet();
    set.ranges = ranges.map(([s, e]) => [s, e]);
    return set;
  }

  toJSON(): Range[] {
    return this.ranges.map(([s, e]) => [s, e]);
  }

  get size(): number {
    return this.ranges.reduce((n, [s, e]) => n + (e - s), 0);
  }

  has(x: number): boolean {
    const i = this.indexAfter(x) - 1;
    const r = this.ranges[i];
    return r !== undefined && x < r[1];
  }

  /** Adds x; returns false when it was already present. */
  add(x: number): boolean {
    if (this.has(x)) return false;
    const i = this.indexAfter(x); // ranges[i-1] starts <= x (and ends <= x), ranges[i] starts > x
    const left = this.ranges[i - 1];
    const right = this.ranges[i];
    const joinsLeft = left !== undefined && left[1] === x;
    const joinsRight = right !== undefined && right[0] === x + 1;
    if (joinsLeft && joinsRight) {
      left[1] = right[1];
      this.ranges.splice(i, 1);
    } else if (joinsLeft) left[1] = x + 1;
    else if (joinsRight) right[0] = x;
    else this.ranges.splice(i, 0, [x, x + 1]);
    return true;
  }

  /** Index of the first range whose start is > x (binary search). */
  private indexAfter(x: number): number {
    let lo = 0;
    let hi = this.ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.ranges[mid] as Range)[0] <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
