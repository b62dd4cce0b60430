/**
 * In-memory stand-ins for exactly the activities the run, group, trajectory
 * and trainStep workflows call, typed against the real `Activities` so a
 * renamed activity or a changed input breaks the build. Every call is
 * recorded with the run it belongs to (the calling workflow's id up to the
 * first '/': the run id, or a child's `<run id>/…`). Per run, a test can
 * close gates (generation, train steps) that hold calls until it releases
 * them, and make env resets fail.
 */
import { Context } from '@temporalio/activity';
import type { Activities } from '../../../src/activities';
import { type EnvLossPolicy, groupUid, parseSampleUid } from '../../../src/core';
import { EnvConfigError, EnvSessionLostError } from '../../../src/envs/errors';
import { DATASET_ROWS } from './plan';

type Stubbed = 'datasetIndex' | 'initTrainer' | 'resumeTrainer' | 'syncWeights' | 'pauseEngines' | 'resumeEngines' | 'appendMetrics' | 'closeTracking' | 'saveCheckpoint'
  | 'writeBatch' | 'runTrainStep' | 'exportWeights' | 'envReset' | 'envStep' | 'generateTurn' | 'generateGroupTurn' | 'playTurn' | 'finishTrajectory';
export type StubActivities = Pick<Activities, Stubbed>;
type InputOf<K extends Stubbed> = Parameters<Activities[K]>[0];

/** Holds calls (each under a key) until the test releases them; an open gate holds nothing. */
export class Gate {
  private held: { key: string; go: () => void }[] = [];
  constructor(private isOpen = true) {}

  wait(key: string): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    return new Promise((go) => this.held.push({ key, go }));
  }

  /** Keys of the calls held now. */
  get waiting(): string[] {
    return this.held.map((h) => h.key);
  }

  /** Lets the held calls whose key matches go on; the gate stays closed for later ones. */
  release(match: (key: string) => boolean): void {
    for (const h of this.held.filter((h) => match(h.key))) h.go();
    this.held = this.held.filter((h) => !match(h.key));
  }

  open(): void {
    this.isOpen = true;
    this.release(() => true);
  }
}

export interface Scenario {
  /** generateTurn (key: the trajectory uid `e0-p3-s1`) and generateGroupTurn (key: the group uid `e0-p3`). */
  generate: Gate;
  /** runTrainStep, key `step-<n>`. */
  train: Gate;
  /** syncWeights (key: the weights path) and pauseEngines (key 'pause'). */
  sync: Gate;
  /** Env resets from this workflow id throw EnvConfigError (non-retryable). */
  failReset?: (workflowId: string) => boolean;
  /** What the stub env declares at reset (EnvReset.onLoss). */
  declares?: EnvLossPolicy;
  /**
   * The next this-many env steps of the run find their session lost; the stub then does what envStep
   * does: under replay (or no policy) it rebuilds and steps (`replayed`), else throws EnvSessionLostError.
   */
  loseSessions?: number;
  /** Steps after which the stub env ends an episode (done); absent = 1, a single-turn env. */
  episodeSteps?: number;
  /** Chat messages the stub env gives at reset (EnvReset.messages), as a dataset row with a system message does. */
  messages?: { role: string; content: string }[];
  /** Added to each env step's reward (member i scores i): e.g. growing, so that every step has a mean reward of its own. */
  rewardBonus?: () => number;
}

const scenarios = new Map<string, Scenario>();
/** The run's scenario, created with open gates on first use. */
export function scenario(runId: string, set: Partial<Scenario> = {}): Scenario {
  const s = scenarios.get(runId) ?? { generate: new Gate(), train: new Gate(), sync: new Gate() };
  scenarios.set(runId, Object.assign(s, set));
  return s;
}
export const openAllGates = () => scenarios.forEach((s) => (s.generate.open(), s.train.open(), s.sync.open()));

/** Inference-server control calls (syncWeights, pauseEngines, resumeEngines) of each run in flight now, and the most ever at once. */
const engineCalls = new Map<string, { now: number; max: number }>();
async function engineCall<T>(runId: string, call: () => Promise<T>): Promise<T> {
  const c = engineCalls.get(runId) ?? { now: 0, max: 0 };
  engineCalls.set(runId, c);
  c.max = Math.max(c.max, ++c.now);
  try {
    return await call();
  } finally {
    c.now--;
  }
}
export const mostEngineCallsAtOnce = (runId: string) => engineCalls.get(runId)?.max ?? 0;

interface Call { name: Stubbed; runId: string; workflowId: string; input: unknown }
const calls: Call[] = [];
/** The inputs of one activity's calls for one run, in call order. */
export const callsOf = <K extends Stubbed>(runId: string, name: K): InputOf<K>[] =>
  calls.filter((c) => c.runId === runId && c.name === name).map((c) => c.input as InputOf<K>);
/** How many calls of one activity one workflow made (its attempts included). */
export const callCountFrom = (workflowId: string, name: Stubbed) => calls.filter((c) => c.workflowId === workflowId && c.name === name).length;
/** Where the calling workflow belongs; every stub records itself through this. */
function record<K extends Stubbed>(name: K, input: InputOf<K>): { runId: string; workflowId: string } {
  const workflowId = Context.current().info.workflowExecution?.workflowId ?? '(no workflow)';
  const runId = workflowId.split('/')[0]!;
  calls.push({ name, runId, workflowId, input });
  return { runId, workflowId };
}
/** The weight version each run's servers hold (the last syncWeights), which the samples record. */
const served = new Map<string, number>();
export const groupOf = (key: string) => (/-s\d+$/.test(key) ? groupUid(parseSampleUid(key)) : key);

export const stubs: StubActivities = {
  async datasetIndex(input) {
    record('datasetIndex', input);
    return { size: DATASET_ROWS, malformed: 0, skipped: {}, problems: [] };
  },
  async initTrainer() {
    record('initTrainer', undefined);
    return { path: '/w/v0', version: 0 };
  },
  async resumeTrainer(input) {
    record('resumeTrainer', input);
    return { path: input.trainerCheckpoint, version: 0 };
  },
  async syncWeights(input) {
    const { runId } = record('syncWeights', input);
    return engineCall(runId, async () => {
      await scenario(runId).sync.wait(input.path);
      served.set(runId, input.version);
      return { aborted: 1, seconds: 0 };
    });
  },
  async pauseEngines(input) {
    const { runId } = record('pauseEngines', input);
    return engineCall(runId, async () => {
      await scenario(runId).sync.wait('pause');
      return { frozen: 0 };
    });
  },
  async resumeEngines() {
    await engineCall(record('resumeEngines', undefined).runId, async () => undefined);
  },
  async appendMetrics(input) {
    record('appendMetrics', input);
  },
  async closeTracking(input) {
    record('closeTracking', input);
  },
  async saveCheckpoint(input) {
    record('saveCheckpoint', input);
    return input.dir;
  },
  async writeBatch(input) {
    record('writeBatch', input);
    return `/store/${input.batchKey}`;
  },
  async runTrainStep(input) {
    await scenario(record('runTrainStep', input).runId).train.wait(`step-${input.step}`);
    return { step: input.step, version: input.step + 1, replayed: false, metrics: { 'losses/total': 0.5 } };
  },
  async exportWeights(input) {
    record('exportWeights', input);
    return { path: `/w/v${input.version}`, version: input.version };
  },
  async envReset(input) {
    const { runId, workflowId } = record('envReset', input);
    if (scenario(runId).failReset?.(workflowId)) throw new EnvConfigError('stub env: no such key "x"');
    const { declares, messages } = scenario(runId);
    return { state: { member: input.sample ?? 0, steps: 0 }, observation: `prompt ${input.seed}`, info: {}, ...(declares ? { onLoss: declares } : {}), ...(messages ? { messages } : {}) };
  },
  async envStep(input) {
    const s = scenario(record('envStep', input).runId);
    const lost = (s.loseSessions ?? 0) > 0;
    if (lost) {
      s.loseSessions!--;
      if ((input.onLoss ?? 'replay') !== 'replay') throw new EnvSessionLostError('stub env: the env server no longer has the session');
    }
    // Member i scores i: rewards always vary within a group, so the std filter keeps every group.
    const state = input.state as { member: number; steps: number };
    const steps = state.steps + 1;
    return { state: { ...state, steps }, observation: '', reward: state.member + (s.rewardBonus?.() ?? 0), done: steps >= (s.episodeSteps ?? 1), info: { steps, task: 'stub' }, ...(lost ? { replayed: true as const } : {}) };
  },
  async generateTurn(input) {
    await scenario(record('generateTurn', input).runId).generate.wait(input.affinity);
    return { action: 'answer', tokens: 3, finish_reason: 'stop', aborts: 0, failovers: 0, versions: [] };
  },
  /** A turn activity: recorded itself, then as the generateTurn and envStep it runs, as the real one does. */
  async playTurn(input) {
    record('playTurn', input);
    const turn = await stubs.generateTurn(input.generate);
    return { turn, step: await stubs.envStep({ ...input.step, action: turn.action }) };
  },
  async generateGroupTurn(input) {
    await scenario(record('generateGroupTurn', input).runId).generate.wait(input.affinity);
    return input.contextKeys.map(() => ({ action: 'answer', tokens: 3, finish_reason: 'stop' as const, aborts: 0, failovers: 0, versions: [] }));
  },
  async finishTrajectory(input) {
    const v = served.get(record('finishTrajectory', input).runId) ?? 0;
    return { sampleKey: input.sampleKey, tokens: 3, minVersion: v, maxVersion: v, versionsSpanned: 1, aborts: 0 };
  },
};
