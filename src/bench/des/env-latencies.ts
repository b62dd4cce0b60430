/**
 * Env step latencies as a table latency[trajectory][turn], drawn with the
 * very function the live latency_sim env calls (src/envs/latency.ts
 * `stepLatency(model, episodeSeed, turn)`), so the DES schedules the same
 * seconds the real run sleeps.
 *
 * How the real run keys them: the group workflow resets every member of an
 * env group with the group's env seed (src/workflows/group.ts), and that seed
 * is the group's dataset index (dispatch-order.ts). With latency_sim's
 * latency_keying 'shared' all G members of a group take identical step
 * latencies; 'independent' gives each member its own stream,
 * `independentEpisodeSeed(envSeed, member)` (src/envs/latency.ts).
 */
import { episodeSeed, independentEpisodeSeed, stepLatency, type LatencyKeying, type LatencyModel } from '../../envs/latency';
import { dispatchOrder } from './dispatch-order';

export { episodeSeed, independentEpisodeSeed, type LatencyKeying };

/** Seconds of each of the `turns` env steps of one episode (Infinity: a fail-stop step), scaled like the live env. */
export function episodeLatencies(model: LatencyModel, seed: number, turns: number, timeScale = 1): number[] {
  return Array.from({ length: turns }, (_, turn) => stepLatency(model, seed, turn) * timeScale);
}

export interface BatchLatencyInput {
  model: LatencyModel;
  turns: number;
  /** The run's seed and dataset size: together they fix which env seeds the groups get. */
  seed: number;
  datasetSize: number;
  groups: number;
  groupSize: number;
  /** Dispatch position of the first group (e.g. step s of a synchronous run starts at s·groups). */
  firstGroup?: number;
  keying?: LatencyKeying;
  timeScale?: number;
}

/**
 * latency[g·G + member][turn] for `groups` groups dispatched in run order:
 * the batch a fresh run (no failures) rolls out at dispatch positions
 * firstGroup … firstGroup + groups − 1.
 */
export function batchLatencyTable(input: BatchLatencyInput): number[][] {
  const envSeedAt = dispatchOrder(input.datasetSize, input.seed);
  const first = input.firstGroup ?? 0;
  const table: number[][] = [];
  for (let g = 0; g < input.groups; g++) {
    const envSeed = envSeedAt(first + g);
    for (let member = 0; member < input.groupSize; member++) {
      table.push(episodeLatencies(input.model, episodeSeed(envSeed, member, input.keying ?? 'shared'), input.turns, input.timeScale));
    }
  }
  return table;
}
