/**
 * group: one prompt group (GRPO group / env group). Starts its G
 * trajectories on the same env seed, applies the group filter, and sends the
 * run one summary signal (so the run receives one signal per group, not per
 * sample). It reports to the run's workflow id, which always reaches the
 * newest run after continue-as-new.
 */
import { ApplicationFailure, executeChild, getExternalWorkflowHandle, log, patched, workflowInfo } from '@temporalio/workflow';
import type { Sampling } from '../activities';
import { GENERATE } from './activity-options';
import { sumEnvInfo, type EnvInfoSums } from './env-info';
import { summarizeFailure, type FailureSummary } from './failure';
import { childWorkflowId, contextKey, type GroupRef, memberSamplingSeed, type RoleQueues, sampleUid } from '../core';
// The run's own message (a cycle with run.ts, used only inside functions: safe).
import { groupDone } from './run-messages';
import type { GroupResult } from './run-buffer';
import { generateSummary, trajectoryWorkflowSummary } from './metadata';
import { carryQueues, roleActivities } from './routing';
import { KIND, RUN_ID } from './search-attributes';
import type { EnvSpec, GroupFilter } from './env-spec';
import { episodeCalls, finishEpisode, playOut, startEpisode, stepEnv, trajectory, type TrajectoryInput, type TrajectorySummary } from './trajectory';

export interface GroupInput {
  runId: string;
  /** False for validation groups: their result goes to the caller only. */
  reportToRun?: boolean;
  ref: GroupRef;
  groupUid: string;
  groupSize: number;
  startVersion: number;
  env: EnvSpec;
  envSeed: number;
  sampling: Sampling;
  /** std: drop groups whose rewards are all equal (no learning signal for GRPO). */
  filter: GroupFilter;
  /**
   * Prompt replication (ROLL's is_num_return_sequences_expand): each sample
   * its own trajectory workflow and request. Off (single-turn only): the
   * group's G samples come from one request with n = G.
   */
  replicate: boolean;
  /** The run's role task queues (RunPlan.queues); absent when it does not route by role. */
  queues?: RoleQueues;
  /**
   * trajectory_workflows false: the G trajectories run here, concurrently, as the same calls a trajectory workflow
   * makes, instead of as G child workflows. Absent: each its own workflow (and in every history from before it).
   */
  inline?: true;
}

/** trajectory_workflows false, as a field of a group's (or a validation's) input: none when each trajectory is its own workflow. */
export const carryInline = (inline: true | undefined): { inline?: true } => (inline ? { inline } : {});

export async function group(input: GroupInput): Promise<GroupResult> {
  let result: GroupResult;
  try {
    // One request serves single-turn groups only: a multi-turn episode needs its own loop.
    const oneRequest = !input.replicate && input.env.maxTurns === 1;
    result = summarize(input, await (oneRequest ? runOneRequest(input) : runTrajectories(input)));
  } catch (err) {
    result = failedGroup(input, summarizeFailure(err));
  }
  if (input.reportToRun !== false) await reportToRun(input.runId, result);
  return result;
}

/** The G trajectories of a group: same env seed, one sampling seed each. */
export function trajectoryInputs(input: GroupInput): TrajectoryInput[] {
  return Array.from({ length: input.groupSize }, (_, i) => ({
    runId: input.runId,
    uid: sampleUid(input.groupUid, i),
    groupId: input.groupUid,
    member: i,
    env: input.env,
    envSeed: input.envSeed,
    sampling: { ...input.sampling, seed: memberSamplingSeed(input.sampling.seed, i) },
    ...carryQueues(input.queues),
  }));
}

function runTrajectories(input: GroupInput): Promise<TrajectorySummary[]> {
  // (patched: the trajectories' calls in this workflow are a new command sequence; a group from before never has `inline`.)
  if (input.inline && patched('trajectories-in-group')) return Promise.all(trajectoryInputs(input).map((args) => trajectory(args)));
  return Promise.all(
    trajectoryInputs(input).map((args, i) =>
      executeChild(trajectory, {
        workflowId: childWorkflowId(workflowInfo().workflowId, 's', i),
        args: [args],
        staticSummary: trajectoryWorkflowSummary(args.uid, input.env.type),
        typedSearchAttributes: [
          { key: RUN_ID, value: input.runId },
          { key: KIND, value: 'trajectory' },
        ],
      }),
    ),
  );
}

/**
 * Prompt replication off: one env reset per sample (same seed), one n = G
 * generation request, then each sample's env step and sample write. The env
 * and store calls are local activities unless the env asks otherwise: the
 * throughput path.
 */
async function runOneRequest(input: GroupInput): Promise<TrajectorySummary[]> {
  const trajectories = trajectoryInputs(input);
  const calls = episodeCalls(input.env, 'local', input.queues);
  const { generateGroupTurn } = roleActivities(GENERATE, 'inference', input.queues);
  const episodes = await Promise.all(trajectories.map((t) => startEpisode(t, calls)));
  const generation = episodes[0]!.generation;
  // One request cannot give its choices different settings: an env that asks per member needs prompt replication.
  if (episodes.some((ep) => JSON.stringify(ep.generation) !== JSON.stringify(generation))) {
    throw ApplicationFailure.nonRetryable(`env ${input.env.type} asks each sample for its own generation settings; set is_num_return_sequences_expand: true`, 'EnvConfigError');
  }
  const turns = await generateGroupTurn.executeWithOptions({ summary: generateSummary(0, input.sampling.max_tokens, trajectories.length) }, [{ contextKeys: trajectories.map((t) => contextKey(t.runId, t.uid)), observation: episodes[0]!.observation, ...(episodes[0]!.messages ? { messages: episodes[0]!.messages } : {}), sampling: input.sampling, affinity: input.groupUid, runId: input.runId, ...(generation ? { generation } : {}) }]);
  const stepped = await Promise.all(trajectories.map((t, i) => stepEnv(t, episodes[i]!, turns[i]!, calls)));
  // An episode the env server lost and restarted (on_env_loss restart) is played out alone; the others are done.
  const played = await Promise.all(trajectories.map((t, i) => playOut(t, stepped[i]!, calls)));
  return Promise.all(trajectories.map((t, i) => finishEpisode(t, played[i]!, calls)));
}

/**
 * A trajectory failed for good (retries exhausted or a non-retryable error). The run must still hear
 * about this group, or its admission capacity would stay taken forever. No sample of it is trained
 * (no reward is made up for it); `infra` tells the run whose fault it was.
 */
export function failedGroup(input: GroupInput, failure: FailureSummary): GroupResult {
  return { ...input.ref, startVersion: input.startVersion, endVersion: input.startVersion, samples: input.groupSize, accepted: false, rewardMean: 0, tokens: 0, partialSamples: 0, maxSpan: 0, storeKeys: [], error: failure.message, ...(failure.infra ? { infra: true } : {}), ...(failure.unscored ? { unscored: true } : {}) };
}

export async function reportToRun(runId: string, result: GroupResult): Promise<void> {
  try {
    await getExternalWorkflowHandle(runId).signal(groupDone, result);
  } catch (err) {
    // The run finished (or was terminated) while this group ran: nothing is waiting for it.
    log.warn('run no longer accepts group results', { runId, error: String(err) });
  }
}

export function summarize(input: GroupInput, results: TrajectorySummary[]): GroupResult {
  const rewards = results.map((r) => r.reward);
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  const accepted = input.filter === 'none' || rewards.some((r) => Math.abs(r - mean) > 1e-12);
  return {
    ...input.ref,
    startVersion: input.startVersion,
    endVersion: Math.max(input.startVersion, ...results.map((r) => r.maxVersion)),
    // minVersion is -1 for a sample without generated tokens.
    oldestVersion: Math.min(input.startVersion, ...results.flatMap((r) => (r.minVersion >= 0 ? [r.minVersion] : []))),
    samples: results.length,
    accepted,
    rewardMean: mean,
    tokens: results.reduce((n, r) => n + r.tokens, 0),
    partialSamples: results.filter((r) => r.versionsSpanned > 1).length,
    maxSpan: Math.max(...results.map((r) => r.versionsSpanned)),
    storeKeys: results.map((r) => r.sampleKey),
    envReplays: results.reduce((n, r) => n + (r.envReplays ?? 0), 0),
    envRestarts: results.reduce((n, r) => n + (r.envRestarts ?? 0), 0),
    ...withEnvInfo(sumEnvInfo(results.map((r) => r.envInfo))),
  };
}

const withEnvInfo = (envInfo: EnvInfoSums | undefined) => (envInfo ? { envInfo } : {});
