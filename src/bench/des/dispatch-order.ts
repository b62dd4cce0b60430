/**
 * Which dataset index the n-th dispatched group gets, exactly as the run
 * workflow picks it (src/workflows/run.ts `envSeedOf`: position n of the
 * seeded epoch order, rolling into the next epoch after datasetSize). A fresh
 * run with no failures or restarts dispatches positions 0, 1, 2, … in order,
 * and a group's env seed *is* its dataset index, so the DES keys every
 * sampled latency, length and outcome by it: the same run seed gives the
 * same prompts, hence the same samples, in the DES and in the real run.
 */
import { epochOrder } from '../../core';

/** dataset index of the n-th dispatched group (n = 0, 1, …). */
export function dispatchOrder(datasetSize: number, seed: number): (n: number) => number {
  if (!Number.isInteger(datasetSize) || datasetSize < 1) throw new RangeError(`datasetSize must be a positive integer, got ${datasetSize}`);
  const epochs = new Map<number, number[]>();
  return (n) => {
    const epoch = Math.floor(n / datasetSize);
    let order = epochs.get(epoch);
    if (!order) epochs.set(epoch, (order = epochOrder(datasetSize, seed, epoch)));
    return order[n - epoch * datasetSize]!;
  };
}
