/**
 * RollflowClient: what a CI job or a notebook does with runs, in code: start
 * a run from a config (a YAML file or an object, with `--set`-style overrides,
 * validated exactly as the CLI validates it), read its status, suspend,
 * resume, load weights, cancel, wait for its end, list runs. The CLI's
 * operator commands are thin printers over it.
 *
 *   import { RollflowClient } from 'rollflow';
 *   const rf = await RollflowClient.connect({ config: 'examples/sim-rlvr.yaml' });
 *   const { runId } = await rf.start('examples/sim-rlvr.yaml', { set: ['max_steps=3'] });
 *   const final = await rf.wait(runId);   // throws RunFailedError with the cause
 *   await rf.close();
 *
 * The client does not start servers: a worker must poll the config's task
 * queue (`rollflow dev up` or `rollflow worker`).
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { loadConfig, loadConfigObject, type LoadedConfig, type RunConfig } from '../configs';
import { ENCRYPTED_ENCODING, EncryptionKeyError } from '../codec/encryption';
import { checkConfig } from './preflight';
import { causeMessage } from '../workflows/failure';
import { runStaticDetails, runSummary } from '../workflows/metadata';
import { rewardsOfMemo } from '../workflows/run-memo';
import type { CheckpointManifest } from '../activities';
import { cancelRun, resume, run, status, suspend, syncWeightsUpdate, type RunPlan, type RunStatus } from '../workflows/run';
import { KIND, POLICY_VERSION, RUN_ID, STEP } from '../workflows/search-attributes';
import { readCheckpoint } from './checkpoint';
import { connectClient, workflowUrl } from './connect';
import { NoWorkerError, RunFailedError } from './errors';
import { buildPlan } from './plan';
import { checkedRun, startWorkerHint } from './run-handle';
import { checkNewRunId } from './run-id';

/** A config: a YAML file's path or the config itself as an object. */
export type ConfigSource = string | Record<string, unknown>;

export interface StartOptions {
  /** `key.path=value` overrides, as the CLI's --set. */
  set?: string[];
  /** The run's id (default: <exp_name>-<timestamp>); an id that already has data is refused. */
  runId?: string;
  /** A checkpoint to resume from, its directory or its s3:// ref (consumed prompts skipped, the step count continues). */
  resumeFrom?: string;
  /** Where notes about the checkpoint go (default: nowhere). */
  warn?: (line: string) => void;
}

export interface StartedRun {
  runId: string;
  /** The run's page in the Temporal UI. */
  url: string;
  /** The checkpoint's run and step, when it resumed one. */
  resumedFrom?: { runId: string; step: number };
}

export interface RunListing {
  runId: string;
  /** Temporal's status: RUNNING, COMPLETED, FAILED, TERMINATED, … */
  status: string;
  step?: number;
  version?: number;
  /** The latest step's mean reward, and the latest validation's (the run's memo), once the run has trained a step. */
  reward?: number;
  valReward?: number;
  startTime: Date;
  closeTime?: Date;
}

/** A query normally answers in milliseconds; past this the listed pollers are workers that stopped. */
const QUERY_DEADLINE_MS = 10_000;
/** `list` asks each running run for its reward; one without a live worker is listed without it. */
const LIST_QUERY_DEADLINE_MS = 3_000;

/** gRPC's DEADLINE_EXCEEDED (4), on the error or (as the client's ServiceError wraps it) its cause. */
const deadlineExceeded = (e: unknown): boolean => e instanceof Error && ((e as { code?: unknown }).code === 4 || deadlineExceeded(e.cause));

const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');

export interface PreparedRun {
  loaded: LoadedConfig;
  runId: string;
  plan: RunPlan;
  resumeFrom?: CheckpointManifest;
}

/** Everything a start checks without a server: the plan (a config that cannot run), the checkpoint, the run id. */
export async function prepareRun(loaded: LoadedConfig, opts: Omit<StartOptions, 'set'> = {}): Promise<PreparedRun> {
  const runId = opts.runId ?? `${loaded.config.exp_name}-${stamp()}`;
  const plan = buildPlan(loaded, runId);
  const resumeFrom = opts.resumeFrom ? await readCheckpoint(opts.resumeFrom, loaded, opts.warn ?? (() => undefined)) : undefined;
  checkNewRunId(loaded, runId);
  return { loaded, runId, plan, ...(resumeFrom ? { resumeFrom } : {}) };
}

export function loadConfigSource(source: ConfigSource | undefined, set: readonly string[] = []): LoadedConfig {
  return typeof source === 'object' ? loadConfigObject(source, set) : loadConfig(source, set);
}

export class RollflowClient {
  private constructor(
    /** The Temporal client underneath, for what this class does not cover. */
    readonly temporal: Client,
    /** The config that gave the Temporal address, namespace and UI. */
    readonly config: RunConfig,
  ) {}

  /** Connects to the Temporal server of `config` (its temporal.* keys; default: the embedded one on this machine). */
  static async connect(opts: { config?: ConfigSource; set?: string[] } = {}): Promise<RollflowClient> {
    return RollflowClient.connectTo(loadConfigSource(opts.config, opts.set).config);
  }

  /** Connects to the Temporal server of a validated config. */
  static async connectTo(config: RunConfig): Promise<RollflowClient> {
    return new RollflowClient(await connectClient(config), config);
  }

  async close(): Promise<void> {
    await this.temporal.connection.close();
  }

  /** Validates the config as the CLI does (schema, then env and engine options offline), then starts its run. */
  async start(source: ConfigSource, opts: StartOptions = {}): Promise<StartedRun> {
    const loaded = loadConfigSource(source, opts.set);
    checkConfig(loaded, { run: false });
    return this.startPrepared(await prepareRun(loaded, opts));
  }

  /** Starts a run prepareRun checked (the CLI checks, and may bring the stack up, in between). */
  async startPrepared({ loaded, runId, plan, resumeFrom }: PreparedRun): Promise<StartedRun> {
    await this.temporal.workflow.start(run, {
      taskQueue: loaded.config.temporal.task_queue,
      workflowId: runId,
      args: [{ plan, resumeFrom }],
      staticSummary: runSummary(plan),
      staticDetails: runStaticDetails(plan),
      typedSearchAttributes: [
        { key: RUN_ID, value: runId },
        { key: KIND, value: 'run' },
      ],
    });
    return { runId, url: workflowUrl(loaded.config, runId), ...(resumeFrom ? { resumedFrom: { runId: resumeFrom.run_id, step: resumeFrom.step } } : {}) };
  }

  /** The run's live status (its `status` query); needs a worker. */
  async status(runId: string): Promise<RunStatus> {
    const { handle, description } = await checkedRun(this.temporal, runId, { needsWorker: true });
    const asked = Date.now();
    try {
      return await this.temporal.connection.withDeadline(asked + QUERY_DEADLINE_MS, () => handle.query(status));
    } catch (e) {
      // A query that failed only once its whole deadline had passed went unanswered, whatever the error says
      // (on a loaded machine the SDK can report it as a plain "Failed to query Workflow").
      if (!deadlineExceeded(e) && Date.now() - asked < QUERY_DEADLINE_MS) throw explainSealed(e);
      throw new NoWorkerError(`run "${runId}" did not answer within ${QUERY_DEADLINE_MS / 1000} s: no live worker on task queue "${description.taskQueue}" (a stopped one stays listed for a few minutes); ${startWorkerHint}`);
    }
  }

  /** Sends suspend, resume or cancel; Temporal keeps the signal until a worker picks the run up. Returns whether a worker polls now. */
  async signal(runId: string, action: 'suspend' | 'resume' | 'cancel'): Promise<{ polled: boolean; taskQueue: string }> {
    const checked = await checkedRun(this.temporal, runId, { needsWorker: false });
    requireRunning(checked.description.status.name, runId, action === 'cancel' ? 'be cancelled' : `be ${action}d`);
    await checked.handle.signal(action === 'suspend' ? suspend : action === 'resume' ? resume : cancelRun);
    return { polled: checked.polled, taskQueue: checked.description.taskQueue };
  }

  suspend(runId: string) {
    return this.signal(runId, 'suspend');
  }

  resume(runId: string) {
    return this.signal(runId, 'resume');
  }

  /** Ends the run after the step in progress: no more dispatch, a checkpoint, the groups in flight cancelled. */
  cancel(runId: string) {
    return this.signal(runId, 'cancel');
  }

  /** Loads external weights (an exported weights directory) on every inference server of the run, between train steps. */
  async syncWeights(runId: string, weightsPath: string): Promise<{ aborted: number; version: number }> {
    const checked = await checkedRun(this.temporal, runId, { needsWorker: true });
    requireRunning(checked.description.status.name, runId, 'load weights');
    try {
      return await checked.handle.executeUpdate(syncWeightsUpdate, { args: [{ path: weightsPath }] });
    } catch (err) {
      throw new Error(`syncWeights failed: ${causeMessage(err)}`);
    }
  }

  /** Waits for the run's end (across continue-as-new); its final status, or RunFailedError naming the cause. */
  async wait(runId: string): Promise<RunStatus> {
    const { handle } = await checkedRun(this.temporal, runId, { needsWorker: false });
    try {
      return (await handle.result()) as RunStatus;
    } catch (err) {
      // Only the run's own end is a run failure; a result this client cannot read, or a lost connection, is not.
      if (!(err instanceof WorkflowFailedError)) throw explainSealed(err);
      const closed = await handle.describe().catch(() => undefined);
      const how = closed ? closed.status.name.toLowerCase().replace(/_/g, ' ') : 'failed';
      throw new RunFailedError(`run ${runId} ${how}: ${causeMessage(err)}`, closed?.status.name ?? 'FAILED');
    }
  }

  /**
   * Runs in the namespace, newest first (Temporal's visibility, by the RollflowKind search attribute), at most `limit`
   * (default 50). The rewards come with each run, in its memo: no worker needed. A run started before the memo existed
   * gets its reward from its result (completed) or a status query (running; without a live worker within a few seconds
   * the reward is left out).
   */
  async list(opts: { limit?: number } = {}): Promise<RunListing[]> {
    return this.listVisible(opts.limit ?? 50).catch((e: unknown) => {
      throw explainSealed(e); // the memo is a payload, sealed like the others
    });
  }

  private async listVisible(limit: number): Promise<RunListing[]> {
    const out: RunListing[] = [];
    for await (const w of this.temporal.workflow.list({ query: `${KIND.name} = "run"` })) {
      const step = w.typedSearchAttributes.get(STEP);
      const version = w.typedSearchAttributes.get(POLICY_VERSION);
      // A run continued-as-new is listed once per execution: keep its newest.
      if (out.some((r) => r.runId === w.workflowId)) continue;
      out.push({ runId: w.workflowId, status: w.status.name, ...(step !== undefined ? { step } : {}), ...(version !== undefined ? { version } : {}), ...rewardsOfMemo(w.memo), startTime: w.startTime, ...(w.closeTime ? { closeTime: w.closeTime } : {}) });
      if (out.length >= limit) break;
    }
    // Trained a step but no reward in the memo: a run from before the memo; ask it.
    await Promise.all(out.filter((r) => r.reward === undefined && (r.step ?? 0) > 0).map(async (r) => {
      const s = await this.latestStatus(r.runId, r.status).catch(() => undefined);
      if (s && s.step > 0) r.reward = s.totals.lastRewardMean;
    }));
    return out;
  }

  private async latestStatus(runId: string, state: string): Promise<RunStatus | undefined> {
    const handle = this.temporal.workflow.getHandle(runId);
    if (state === 'COMPLETED') return (await handle.result()) as RunStatus;
    if (state !== 'RUNNING') return undefined;
    return this.temporal.connection.withDeadline(Date.now() + LIST_QUERY_DEADLINE_MS, () => handle.query(status));
  }
}

/** A payload temporal.encryption sealed, read by a client without a key: the SDK says only "Unknown encoding". */
function explainSealed(err: unknown): unknown {
  if (!(err instanceof Error && err.message.includes(`Unknown encoding: ${ENCRYPTED_ENCODING}`))) return err;
  return new EncryptionKeyError('the run\'s data is encrypted (temporal.encryption) and this config has no key: set temporal.encryption (key_file or key_env) to the key of the run\'s workers');
}

/** Signals and updates reach only a run still running (not completed, failed or terminated). */
function requireRunning(state: string, runId: string, what: string): void {
  if (state !== 'RUNNING') throw new Error(`run "${runId}" is ${state.toLowerCase().replace(/_/g, ' ')}; only a running run can ${what}`);
}
