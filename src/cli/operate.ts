/**
 * `rollflow status | suspend | resume | cancel | sync-weights | wait | watch | list`: operator commands on runs,
 * each failing in one clear line; RollflowClient does the work, these print.
 */
import type { LoadedConfig, RunConfig } from '../configs';
import { localStackView } from '../stack';
import { RollflowClient } from '../client/rollflow-client';
import { startWorkerHint } from '../client/run-handle';
import type { RunStatus } from '../workflows/run';
import { progressSink } from '../launch/progress';
import { follow } from '../launch/run';

async function withClient<T>(config: RunConfig, fn: (rf: RollflowClient) => Promise<T>): Promise<T> {
  const rf = await RollflowClient.connectTo(config);
  try {
    return await fn(rf);
  } finally {
    await rf.close();
  }
}

/** The run's status, and (field `stack`) what the local stack of its config says: the supervisor's restarts, the engines the worker waits for. */
export const runStatus = (loaded: LoadedConfig, runId: string, out: (line: string) => void) =>
  withClient(loaded.config, async (rf) => {
    const stack = localStackView(loaded);
    out(JSON.stringify({ ...(await rf.status(runId)), ...(stack ? { stack } : {}) }, null, 2));
  });

export async function steer(config: RunConfig, runId: string, action: 'suspend' | 'resume' | 'cancel', out: (line: string) => void): Promise<void> {
  await withClient(config, async (rf) => {
    const { polled, taskQueue } = await rf.signal(runId, action);
    // Temporal keeps the signal; the run acts on it once a worker picks the run up.
    const what = action === 'cancel' ? 'cancel sent: the run ends after the step in progress, with a checkpoint' : `${action} sent`;
    out(`run ${runId}: ${what}${polled ? '' : `; no worker polls task queue "${taskQueue}" yet, so it takes effect when one does (${startWorkerHint})`}`);
  });
}

/** Loads external weights on every inference server of a run (between train steps); prints what the update returned. */
export const syncRunWeights = (config: RunConfig, runId: string, weightsPath: string, out: (line: string) => void) =>
  withClient(config, async (rf) => out(JSON.stringify(await rf.syncWeights(runId, weightsPath))));

/** `rollflow wait`: exit 0 once the run completed (its final status with --json); a run that did not complete throws its cause. */
export const waitRun = (config: RunConfig, runId: string, json: boolean, out: (line: string) => void): Promise<RunStatus> =>
  withClient(config, async (rf) => {
    const final = await rf.wait(runId);
    out(json ? JSON.stringify(final) : `run ${runId} completed: ${final.step}/${final.maxSteps} steps, version ${final.version}${final.cancelled ? ` (cancelled after step ${final.cancelled.atStep})` : ''}`);
    return final;
  });

/** `rollflow watch`: the progress of a running run until it ends (a bar on a terminal, a line per step otherwise). */
export const watchRun = (config: RunConfig, runId: string, out: (line: string) => void) =>
  withClient(config, async (rf) => {
    await rf.status(runId); // a run that does not exist, or no worker to answer, is one clear line
    await follow(rf, runId, progressSink(out, process.stdout.isTTY === true));
  });

/** `rollflow list`: a line per run, newest first; with --json one JSON array. */
export const listRuns = (config: RunConfig, opts: { json?: boolean; limit?: number }, out: (line: string) => void) =>
  withClient(config, async (rf) => {
    const runs = await rf.list({ ...(opts.limit ? { limit: opts.limit } : {}) });
    if (opts.json) return out(JSON.stringify(runs));
    const reward = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(3));
    out(['RUN', 'STATUS', 'STEP', 'VERSION', 'REWARD', 'VAL_REWARD', 'STARTED'].join('\t'));
    for (const r of runs) out([r.runId, r.status.toLowerCase(), r.step ?? '-', r.version ?? '-', reward(r.reward), reward(r.valReward), r.startTime.toISOString()].join('\t'));
  });
