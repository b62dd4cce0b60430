/**
 * Seeded, deterministic prompt order per epoch. Workflow code may not use
 * Math.random for anything a resume must reproduce, so the order comes from
 * (seed, epoch) alone: the same run config gives the same order on any
 * machine, which is what makes "skip the consumed positions" exact on resume.
 */

/** splitmix32: a small, well-mixed 32-bit generator; returns floats in [0, 1). */
export function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** The dataset indices 0..size-1 in the order epoch `epoch` of a run seeded `seed` visits them (Fisher–Yates). */
export function epochOrder(size: number, seed: number, epoch: number): number[] {
  const order = Array.from({ length: size }, (_, i) => i);
  const next = splitmix32((Math.imul(seed >>> 0, 0x27d4eb2d) ^ Math.imul(epoch + 1, 0x165667b1)) >>> 0);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}
