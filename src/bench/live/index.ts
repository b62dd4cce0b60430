/**
 * `rollflow bench <workload>` on the real system (embedded Temporal, sim
 * engines): W1–W5 and W7 of bench/README.md, each beside its DES. The bench
 * keeps its own state dir, ports and task queue, brings its stack up itself
 * and takes it down at the end, so it never touches a stack you are running.
 */
import { loadavg } from 'node:os';
import { desW1 } from '../des/w1-env-async';
import { desW2 } from '../des/w2-redundant-rollout';
import { desW3 } from '../des/w3-queue-scheduling';
import { desW4 } from '../des/w4-prompt-replication';
import { desW5 } from '../des/w5-async-training';
import { DesOptionsError, type DesResult } from '../des/result';
import { w1Cells, w1DesOptions, w7DesOptions } from './configs';
import { parseLiveOptions, w2DesOptions, w3DesOptions, w4DesOptions, type LiveOptionsByWorkload, type LiveWorkload, type W5LiveOptions } from './options';
import { benchW1, benchW7 } from './rollout-bench';
import { BenchStack, machine, type Machine } from './runner';
import { benchW2 } from './w2-bench';
import { benchW3 } from './w3-bench';
import { benchW4 } from './w4-bench';
import { benchW5 } from './w5-bench';
import { benchW8 } from './w8-bench';

export { isLiveWorkload, parseLiveOptions, W1LiveOptions, W2LiveOptions, W3LiveOptions, W4LiveOptions, W5LiveOptions, W7LiveOptions, W8LiveOptions, type LiveWorkload } from './options';
export { w1Cells, w1DesOptions, w1RunConfig, w2RunConfig, w3RunConfig, w4RunConfig, w5Pools, w5RunConfig, w5TrainStepS, w7DesOptions, w7RunConfig } from './configs';
export { activitiesPerTrajectory, dispatchRamp, overhead, dispatchIndex, rolloutMakespan, summarizeSteps, speedup } from './report';
export { w1Report, w1Variants, w7Report } from './rollout-bench';
export { genSecondsTable, w5Des, w5Row } from './w5-bench';
export { lengthsByPrompt, w4Report } from './w4-bench';
export { w3Report } from './w3-bench';
export { w2Report } from './w2-bench';

export interface BenchReport {
  workload: LiveWorkload;
  command: string;
  date: string;
  machine: Machine;
  load1_start: number;
  load1_end: number;
  options: object;
  cells: object[];
  /** Set when the bench stopped before its last cell. */
  error?: string;
}

/** The DES alone for the same cells (no Temporal): W1 and W7 as desW1 per cell, W2 as desW2, W3 as desW3, W4 as desW4 (its own length sampler), W5 as desW5. */
export function liveDes<W extends LiveWorkload>(workload: W, o: LiveOptionsByWorkload[W]): DesResult[] {
  if (workload === 'w1') {
    const w1 = o as LiveOptionsByWorkload['w1'];
    return w1Cells(w1).map((cell) => desW1(w1DesOptions(w1, cell)));
  }
  if (workload === 'w7') {
    const w7 = o as LiveOptionsByWorkload['w7'];
    return w7.in_flight.map((n) => desW1(w7DesOptions(w7, n)));
  }
  if (workload === 'w2') return [desW2(w2DesOptions(o as LiveOptionsByWorkload['w2']))];
  if (workload === 'w3') return [desW3(w3DesOptions(o as LiveOptionsByWorkload['w3']))];
  if (workload === 'w4') return [desW4(w4DesOptions(o as LiveOptionsByWorkload['w4']))];
  if (workload === 'w8') throw new DesOptionsError('w8: its DES is fed by the latencies a live run met (des/w8-measured.ts); there is no --des-only');
  const w5 = o as W5LiveOptions;
  const { seed, batch, group_size, steps, alphas, workers, beta, mean_gen_s, sigma_sample, max_gen_s, train_s_per_sample, dataset_size, time_scale } = w5;
  const rollflow_alpha = alphas.includes(2) ? 2 : Math.max(...alphas);
  return [desW5({ seed, batch, group_size, steps, alphas, rollflow_alpha, workers, beta, mean_gen_s, sigma_sample, max_gen_s, train_s_per_sample, dataset_size, time_scale })];
}

export interface LiveRunOptions {
  stateDir: string;
  keepStack: boolean;
  command: string;
  emit: (cell: object) => void;
  say: (line: string) => void;
}

export async function runLiveBench<W extends LiveWorkload>(workload: W, raw: unknown, opts: LiveRunOptions): Promise<BenchReport> {
  const options = parseLiveOptions(workload, raw);
  BenchStack.clean(opts.stateDir);
  const stack = new BenchStack(opts.stateDir, opts.say);
  const date = new Date().toISOString();
  const load1_start = loadavg()[0]!;
  const cells: object[] = [];
  const emit = (cell: object) => {
    cells.push(cell);
    opts.emit(cell);
  };
  const ctx = { stack, stamp: date.replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-'), emit };
  const report = (error?: string): BenchReport => ({ workload, command: opts.command, date, machine: machine(), load1_start, load1_end: loadavg()[0]!, options, cells, ...(error ? { error } : {}) });
  try {
    if (workload === 'w1') await benchW1(options as LiveOptionsByWorkload['w1'], ctx);
    else if (workload === 'w7') await benchW7(options as LiveOptionsByWorkload['w7'], ctx);
    else if (workload === 'w2') await benchW2(options as LiveOptionsByWorkload['w2'], ctx);
    else if (workload === 'w3') await benchW3(options as LiveOptionsByWorkload['w3'], ctx);
    else if (workload === 'w4') await benchW4(options as LiveOptionsByWorkload['w4'], ctx);
    else if (workload === 'w8') await benchW8(options as LiveOptionsByWorkload['w8'], ctx);
    else await benchW5(options as LiveOptionsByWorkload['w5'], ctx);
    return report();
  } catch (e) {
    // What was measured before the failure is still worth keeping.
    opts.say(`rollflow bench: stopped early: ${(e as Error).message}`);
    return report(`stopped early: ${(e as Error).message}`);
  } finally {
    if (!opts.keepStack) await stack.down();
  }
}
