/** `rollflow run`: start a training run and follow it. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { connectClient, workflowUrl } from '../client/connect';
import { readCheckpoint } from '../client/checkpoint';
import { buildPlan } from '../client/plan';
import { checkNewRunId } from '../client/run-id';
import type { LoadedConfig, RunConfig } from '../configs';
import { describeIndex } from '../envs/dataset-rows';
import { checkConfig, up } from '../stack';
import { causeMessage } from '../workflows/failure';
import { batchDir } from '../workflows/ids';
import { runStaticDetails, runSummary } from '../workflows/metadata';
import { run, status, type RunStatus } from '../workflows/run';
import { KIND, RUN_ID } from '../workflows/search-attributes';

export interface RunOptions {
  resumeFrom?: string;
  wait?: boolean;
  json?: boolean;
  runId?: string;
}

const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');

export async function startRun(loaded: LoadedConfig, configArgs: string[], opts: RunOptions, out: (line: string) => void, err: (line: string) => void): Promise<void> {
  const { config } = loaded;
  const runId = opts.runId ?? `${config.exp_name}-${stamp()}`;
  const plan = buildPlan(loaded, runId); // a config that cannot run fails before anything starts
  const resumeFrom = opts.resumeFrom ? readCheckpoint(opts.resumeFrom, loaded, err) : undefined;
  checkNewRunId(loaded, runId);
  if (config.temporal.embedded && loaded.derived.temporal.loopback) await up(loaded, configArgs, err); // checks the config first
  else checkConfig(loaded, { run: false }); // buildPlan checked the rest
  const started = Date.now();
  const client = await connectClient(config);
  try {
    const handle = await client.workflow.start(run, {
      taskQueue: config.temporal.task_queue,
      workflowId: runId,
      args: [{ plan, resumeFrom }],
      staticSummary: runSummary(plan),
      staticDetails: runStaticDetails(plan),
      typedSearchAttributes: [
        { key: RUN_ID, value: runId },
        { key: KIND, value: 'run' },
      ],
    });
    out(`run ${runId} started${resumeFrom ? ` from step ${resumeFrom.step} of ${resumeFrom.run_id}` : ''}: ${workflowUrl(config, runId)}`);
    if (!opts.wait && !opts.json) return;
    // A failed run says why (RunFailingError names the groups' last error), not just "Workflow execution failed".
    const failed = (err: unknown): never => {
      throw new Error(`run ${runId} failed: ${causeMessage(err)}`);
    };
    const final = await follow(client, runId, opts.json ? () => undefined : out).catch(failed);
    await handle.result().catch(failed);
    if (opts.json) out(JSON.stringify(await summary(config, loaded.derived.sample_store_path, final, (Date.now() - started) / 1000)));
  } finally {
    await client.connection.close();
  }
}

/** Prints a line per finished step until the run completes; returns its final status. */
async function follow(client: Client, runId: string, out: (line: string) => void): Promise<RunStatus> {
  const handle = client.workflow.getHandle(runId);
  let lastStep = -1;
  let printedValSteps: number | undefined;
  let datasetReported = false;
  for (;;) {
    const desc = await handle.describe();
    const done = desc.status.name !== 'RUNNING' && desc.status.name !== 'CONTINUED_AS_NEW';
    const s = done ? ((await handle.result()) as RunStatus) : await handle.query(status).catch(() => undefined);
    if (s?.dataset && !datasetReported) {
      datasetReported = true;
      out(`dataset: ${describeIndex(s.dataset)}`);
    }
    if (s && s.step !== lastStep) {
      lastStep = s.step;
      printedValSteps = s.lastValidation?.steps;
      const val = s.lastValidation ? `  val reward ${s.lastValidation.rewardMean.toFixed(3)} (after ${s.lastValidation.steps} steps)` : '';
      const reward = s.step > 0 ? s.totals.lastRewardMean.toFixed(3) : '  -  '; // no batch trained yet
      out(`step ${s.step}/${s.maxSteps}  version ${s.version}  reward ${reward}${val}  staleness max ${s.staleness.max}  in system ${s.samplesInSystem}/${s.maxSamplesInSystem}`);
    }
    if (done || (s && s.step >= s.maxSteps)) {
      const final = done ? s! : ((await handle.result()) as RunStatus);
      // The end-of-run validation finishes after the last step's line: print its result too.
      if (final.lastValidation && final.lastValidation.steps !== printedValSteps) {
        out(`done: val reward ${final.lastValidation.rewardMean.toFixed(3)} after ${final.lastValidation.steps} steps`);
      }
      return final;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The one-line JSON summary; unique uids are counted from the batch files the trainer read, not from the run's own counters. */
async function summary(config: RunConfig, storeDir: string, s: RunStatus, wall_s: number) {
  const batches = path.join(storeDir, batchDir(s.runId));
  const uids = new Set<string>();
  let lines = 0;
  for (const f of (await readdir(batches)).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of (await readFile(path.join(batches, f), 'utf8')).split('\n').filter(Boolean)) {
      uids.add((JSON.parse(line) as { uid: string }).uid);
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
