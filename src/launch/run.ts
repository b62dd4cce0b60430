/** Starts a training run as `rollflow run` does and follows it to its end; the CLI, the live bench and chaos all start runs through it. */
import { workflowUrl } from '../client/connect';
import { checkConfig } from '../client/preflight';
import { prepareRun, RollflowClient } from '../client/rollflow-client';
import { batchDir } from '../core';
import type { LoadedConfig, RunConfig } from '../configs';
import { describeIndex } from '../envs/dataset-rows';
import { up } from '../stack';
import { openSampleStore, type SampleStore } from '../store';
import { status, type RunStatus } from '../workflows/run';
import { cancelledNote, progressSink, type ProgressSink } from './progress';

export interface RunOptions {
  resumeFrom?: string;
  wait?: boolean;
  json?: boolean;
  runId?: string;
}

export async function startRun(loaded: LoadedConfig, configArgs: string[], opts: RunOptions, out: (line: string) => void, err: (line: string) => void): Promise<void> {
  const { config } = loaded;
  // The plan, the checkpoint and the run id are checked before anything starts.
  const prepared = await prepareRun(loaded, { ...(opts.runId ? { runId: opts.runId } : {}), ...(opts.resumeFrom ? { resumeFrom: opts.resumeFrom } : {}), warn: err });
  if (config.temporal.embedded && loaded.derived.temporal.loopback) await up(loaded, configArgs, err, { supervise: 'unless-off' }); // checks the config first
  else checkConfig(loaded, { run: false }); // buildPlan checked the rest
  const started = Date.now();
  const rf = await RollflowClient.connectTo(config);
  try {
    const { runId, url, resumedFrom } = await rf.startPrepared(prepared);
    out(`run ${runId} started${resumedFrom ? ` from step ${resumedFrom.step} of ${resumedFrom.runId}` : ''}: ${url}`);
    if (!opts.wait && !opts.json) return;
    const final = await follow(rf, runId, opts.json ? undefined : progressSink(out, process.stdout.isTTY === true));
    if (opts.json) out(JSON.stringify(await summary(config, openSampleStore(loaded.derived.sample_store), final, (Date.now() - started) / 1000)));
    else for (const line of await closingLines(rf, config, prepared.plan.runDir, runId)) out(line);
  } finally {
    await rf.close();
  }
}

/**
 * Follows a run until it ends: progress to `sink` (none for --json), the dataset's report once, the end-of-run
 * validation. Returns the final status; throws RunFailedError (the cause) if the run did not complete.
 */
export async function follow(rf: RollflowClient, runId: string, sink: ProgressSink | undefined): Promise<RunStatus> {
  const handle = rf.temporal.workflow.getHandle(runId);
  let datasetReported = false;
  const ended = rf.wait(runId).then(
    (s) => ({ s }),
    (e: unknown) => ({ e }),
  );
  let finished: { s?: RunStatus; e?: unknown } | undefined;
  void ended.then((f) => (finished = f));
  while (!finished) {
    const s = await handle.query(status).catch(() => undefined);
    if (s?.dataset && !datasetReported) {
      datasetReported = true;
      sink?.note(`dataset: ${describeIndex(s.dataset)}`);
    }
    if (s) sink?.update(s);
    await Promise.race([ended, new Promise((r) => setTimeout(r, 1000))]);
  }
  if (finished.e !== undefined) {
    sink?.end(); // the cause goes on a line of its own
    throw finished.e;
  }
  const final = finished.s!;
  sink?.update(final); // on a terminal the bar's last frame, drawn over the previous one
  sink?.end();
  // The end-of-run validation finishes after the last step's line, so the line the run ends on says it, always.
  if (final.lastValidation) sink?.note(`final validation reward ${final.lastValidation.rewardMean.toFixed(3)} (after step ${final.lastValidation.steps})`);
  if (final.cancelled) sink?.note(cancelledNote(final.cancelled));
  return final;
}

/** Where to look once a run is over: its directory (metrics.jsonl, validation.jsonl, checkpoints) and one of its
 * trajectories in the Temporal UI (found through visibility; the run's own page when none is listed yet). */
async function closingLines(rf: RollflowClient, config: RunConfig, runDir: string, runId: string): Promise<string[]> {
  let trajectory: string | undefined;
  try {
    for await (const w of rf.temporal.workflow.list({ query: `RollflowRunId="${runId}" AND RollflowKind="trajectory"`, pageSize: 1 })) {
      trajectory = w.workflowId;
      break;
    }
  } catch {
    // visibility is a convenience here: the run's own page below still leads to every trajectory
  }
  return [
    `run directory: ${runDir}`,
    trajectory ? `a trajectory in the Temporal UI: ${workflowUrl(config, trajectory)}` : `the run in the Temporal UI: ${workflowUrl(config, runId)}`,
  ];
}

/** The one-line JSON summary; unique uids are counted from the batch files the trainer read, not from the run's own counters. */
async function summary(config: RunConfig, store: SampleStore, s: RunStatus, wall_s: number) {
  const batches = batchDir(s.runId);
  const uids = new Set<string>();
  let lines = 0;
  for (const f of (await store.keys(batches)).filter((n) => n.endsWith('.jsonl'))) {
    for (const sample of await store.getLines<{ uid: string }>(`${batches}/${f}`)) {
      uids.add(sample.uid);
      lines++;
    }
  }
  return {
    run_id: s.runId,
    steps: s.step,
    samples_consumed: lines,
    unique_uids_consumed: uids.size,
    dropped: s.totals.droppedSamples,
    max_staleness: s.staleness.max,
    mean_staleness: s.staleness.mean,
    partial_ratio: s.partial.ratio,
    max_partial_span: s.partial.maxSpan,
    wall_s,
    peak_samples_in_system: s.totals.peakSamplesInSystem,
    async_generation_ratio: config.async_generation_ratio,
  };
}
