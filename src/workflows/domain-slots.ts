/**
 * How many of each dispatch block's G slots every domain gets under
 * domain_interleave_probs. A domain of share p gets ⌊G·p⌋ or ⌈G·p⌉ slots in
 * every block, and after b blocks it has had b·G·p slots to within one
 * (|lag| < 1), so the long-run share is p even when G·p < 1.
 *
 * ROLL gives every step the same counts: ⌊p·B⌋ for each domain but the last
 * named, which takes the rest. That never serves a domain whose p·B is below
 * 1 and skews the last one; here the fractional parts are carried instead.
 *
 * The carry is a Pfair schedule: with base_d = ⌊G·p_d⌋, each block has
 * E = G − Σ base_d extra slots, and domain d's weight w_d = G·p_d − base_d
 * (< 1; the weights add up to E). Handing E extras per block to domains of
 * these weights is scheduling tasks of weight w_d on E processors, one slot
 * per block; the PD² priority (Anderson & Srinivasan, 2000) schedules every
 * subtask j of a task within its window [⌊(j−1)/w⌋, ⌈j/w⌉) when the weights
 * fill the processors exactly, as they do here, which is the lag bound.
 *
 * Shares are taken in millionths (SHARE_UNITS), so the arithmetic is exact
 * integer arithmetic and a replay computes the same counts on any machine.
 */

/** Shares are apportioned in these units (to 6 decimal places). */
export const SHARE_UNITS = 1_000_000;

/** Largest-remainder apportionment of SHARE_UNITS over the shares (they sum to 1 within 1e-6): exact integers summing to SHARE_UNITS. */
export function shareUnits(shares: readonly number[]): number[] {
  const total = shares.reduce((a, b) => a + b, 0);
  const quotas = shares.map((s) => (s / total) * SHARE_UNITS);
  const units = quotas.map(Math.floor);
  const left = SHARE_UNITS - units.reduce((a, b) => a + b, 0);
  // Ties go to the earlier domain, so the split is a pure function of the shares.
  const byRemainder = quotas.map((q, d) => ({ d, r: q - Math.floor(q) })).sort((a, b) => b.r - a.r || a.d - b.d);
  for (let i = 0; i < left; i++) units[byRemainder[i]!.d]!++;
  return units;
}

const ceilDiv = (x: number, y: number) => Math.floor((x + y - 1) / y);

/** PD² priority of subtask j of a task of weight a/Q: earlier deadline, then b-bit 1, then later group deadline. */
function priority(j: number, a: number): [deadline: number, bBit: number, groupDeadline: number] {
  const Q = SHARE_UNITS;
  const deadline = ceilDiv(j * Q, a);
  const bBit = (j * Q) % a === 0 ? 0 : 1;
  // Only heavy tasks (w ≥ 1/2) have a group deadline: D = ⌈⌈⌈j/w⌉·(1 − w)⌉ / (1 − w)⌉.
  const groupDeadline = 2 * a >= Q ? ceilDiv(ceilDiv(deadline * (Q - a), Q) * Q, Q - a) : 0;
  return [deadline, bBit, groupDeadline];
}

export class BlockCounts {
  /** ⌊G·p_d⌋: every block's slots for each domain before the extras. */
  private readonly base: number[];
  /** w_d in units of 1/SHARE_UNITS: the domain's share of one extra slot per block. */
  private readonly weight: number[];
  /** E: extra slots per block. */
  private readonly extras: number;
  /** Extras each domain has had in the blocks scheduled so far. */
  private readonly given: number[];
  /** cumulative[b][d]: slots of domain d in blocks 0..b−1. */
  private readonly cumulative: number[][];

  /** `units`: each domain's share in SHARE_UNITS (summing to SHARE_UNITS); `blockSize`: G, the groups of a step. */
  constructor(units: readonly number[], readonly blockSize: number) {
    if (units.reduce((a, b) => a + b, 0) !== SHARE_UNITS) throw new Error(`domain shares must add up to ${SHARE_UNITS} units`);
    this.base = units.map((u) => Math.floor((blockSize * u) / SHARE_UNITS));
    this.weight = units.map((u, d) => blockSize * u - this.base[d]! * SHARE_UNITS);
    this.extras = blockSize - this.base.reduce((a, b) => a + b, 0);
    this.given = units.map(() => 0);
    this.cumulative = [units.map(() => 0)];
  }

  /** Slots each domain has in block `b`. */
  counts(b: number): number[] {
    const [before, after] = [this.before(b), this.before(b + 1)];
    return after.map((n, d) => n - before[d]!);
  }

  /** Slots each domain had in blocks 0..b−1. */
  before(b: number): number[] {
    while (this.cumulative.length <= b) this.scheduleNext();
    return this.cumulative[b]!;
  }

  /** Block t = the number scheduled so far: the E eligible domains of highest PD² priority get its extras. */
  private scheduleNext(): void {
    const t = this.cumulative.length - 1;
    const Q = SHARE_UNITS;
    const eligible = this.weight
      .map((a, d) => ({ d, a, j: this.given[d]! + 1 }))
      // Subtask j is released at ⌊(j−1)/w⌋: a domain never runs ahead of its share by a whole slot.
      .filter(({ a, j }) => a > 0 && Math.floor(((j - 1) * Q) / a) <= t)
      .map((s) => ({ ...s, key: priority(s.j, s.a) }))
      .sort((x, y) => x.key[0] - y.key[0] || y.key[1] - x.key[1] || y.key[2] - x.key[2] || x.d - y.d);
    if (eligible.length < this.extras) throw new Error(`domain slots: ${eligible.length} domains eligible for ${this.extras} extra slots in block ${t} (the weights do not fill the block)`);
    const extra = this.base.map(() => 0);
    for (const { d } of eligible.slice(0, this.extras)) {
      extra[d] = 1;
      this.given[d]!++;
    }
    const last = this.cumulative[t]!;
    this.cumulative.push(last.map((n, d) => n + this.base[d]! + extra[d]!));
  }
}
