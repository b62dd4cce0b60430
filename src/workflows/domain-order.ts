/**
 * domain_interleave_probs: the prompt of every dispatch position when each
 * step's groups come from the domains in fixed shares (ROLL's per-domain
 * batch shares of rollout_batch_size).
 *
 * The dataset env then orders its training rows by domain (the index's
 * `domains`, in that order, each a contiguous range of training seeds), so
 * for run position p (epochs run on: p = epoch·datasetSize + position):
 *   block      b = ⌊p / G⌋, G the groups of a step;
 *   domain     slot p mod G of block b, its slots dealt to the domains by
 *              BlockCounts (domain-slots.ts) and shuffled with a per-block seed;
 *   row        the k-th use of domain d (slots of d before this one) serves
 *              its row k mod n_d in a seeded shuffle of the domain's n_d rows,
 *              a new shuffle each time the domain has served all its rows.
 * Everything is a pure function of (run seed, position), so a replay, a
 * continue-as-new and a resume from a checkpoint give every position the same
 * prompt, and each domain keeps its own epochs whatever its share.
 */
import { epochOrder, splitmix32 } from '../core';
import type { DomainRows } from '../envs/dataset-rows';
import { BlockCounts, shareUnits } from './domain-slots';

/** FNV-1a of a domain's name: its row order's seed does not move when other domains come or go. */
function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Mixes for the two seeded shuffles, apart from epochOrder's own. */
const BLOCK_MIX = 0x2545f491;
const DOMAIN_MIX = 0x68e31da4;

export class DomainOrder {
  private readonly slots: BlockCounts;
  /** Where each domain's rows start among the training seeds. */
  private readonly offsets: number[];
  /** Domains with a share above 0, as indices into `domains`. */
  private readonly served: number[];
  private block?: { b: number; slots: number[] };
  private readonly rowOrders = new Map<number, { epoch: number; order: number[] }>();

  /**
   * `domains`: every domain of the training rows in the env's order; `shares`: domain_interleave_probs (a domain of
   * the rows it does not name has share 0: never served); `blockSize`: G.
   */
  constructor(
    private readonly domains: readonly DomainRows[],
    shares: Readonly<Record<string, number>>,
    readonly blockSize: number,
    private readonly runSeed: number,
  ) {
    const unknown = Object.keys(shares).filter((name) => !domains.some((d) => d.name === name));
    if (unknown.length > 0) throw new Error(`domain_interleave_probs names ${unknown.join(', ')}, which the training rows do not have (they have ${domains.map((d) => d.name).join(', ')})`);
    this.served = domains.flatMap((d, i) => ((shares[d.name] ?? 0) > 0 ? [i] : []));
    const empty = this.served.filter((i) => domains[i]!.rows === 0);
    if (empty.length > 0) throw new Error(`domain_interleave_probs gives a share to ${empty.map((i) => domains[i]!.name).join(', ')}, which has no training rows`);
    this.slots = new BlockCounts(shareUnits(this.served.map((i) => shares[domains[i]!.name]!)), blockSize);
    let start = 0;
    this.offsets = domains.map((d) => ((start += d.rows), start - d.rows));
  }

  /** The domain and the training seed (dataset env seed) of run position `p`. */
  at(p: number): { domain: string; seed: number } {
    const b = Math.floor(p / this.blockSize);
    const slot = p % this.blockSize;
    const slots = this.blockSlots(b);
    const s = slots[slot]!;
    // Uses of this domain before this slot: in earlier blocks, then earlier in this block.
    let k = this.slots.before(b)[s]!;
    for (let i = 0; i < slot; i++) if (slots[i] === s) k++;
    const d = this.served[s]!;
    const { rows, name } = this.domains[d]!;
    return { domain: name, seed: this.offsets[d]! + this.rowOrder(d, Math.floor(k / rows))[k % rows]! };
  }

  /** The domain (index into `served`) of each slot of block `b`: its counts, dealt in a seeded shuffle. */
  private blockSlots(b: number): number[] {
    if (this.block?.b === b) return this.block.slots;
    const slots = this.slots.counts(b).flatMap((n, s) => Array.from({ length: n }, () => s));
    const next = splitmix32((Math.imul(this.runSeed >>> 0, BLOCK_MIX) ^ Math.imul(b + 1, 0x165667b1)) >>> 0);
    for (let i = slots.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [slots[i], slots[j]] = [slots[j]!, slots[i]!];
    }
    this.block = { b, slots };
    return slots;
  }

  /** Domain d's rows in the order its `epoch`-th pass visits them. */
  private rowOrder(d: number, epoch: number): number[] {
    const cached = this.rowOrders.get(d);
    if (cached?.epoch === epoch) return cached.order;
    const order = epochOrder(this.domains[d]!.rows, (Math.imul(this.runSeed >>> 0, DOMAIN_MIX) ^ nameHash(this.domains[d]!.name)) >>> 0, epoch);
    this.rowOrders.set(d, { epoch, order });
    return order;
  }
}
