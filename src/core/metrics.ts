/**
 * The metric keys of a run's records, in one typed place: metrics.jsonl and
 * validation.jsonl, written by the training activity from what the run
 * workflow builds (src/workflows/step-metrics.ts); read by the metrics
 * exporters, the trackers, the bench report, chaos and the tests through
 * these names, never by matching strings.
 */

/** Keys of a step's record in <run_dir>/<run id>/metrics.jsonl, beside run_id, step, version and wall_s. */
export const METRIC = {
  samples: 'rollout/samples',
  tokens: 'rollout/tokens',
  rewardMean: 'rollout/reward_mean',
  /** Dispatch staleness (Batch.staleness): versions between a group's dispatch (or its oldest token, if older) and the step that trains it. */
  stalenessMean: 'staleness/dispatch_mean',
  stalenessMax: 'staleness/dispatch_max',
  partialRatio: 'partial/ratio',
  partialMaxSpan: 'partial/max_span',
  /** Seconds from the previous step's end until this batch was ready, then training, then the weight sync. */
  waitBatch: 'timing/wait_batch',
  train: 'timing/train',
  syncWeights: 'timing/sync_weights',
  /** Shares of the step's time the trainer waited for a batch, and no trajectory was running (verl's idle ratios). */
  trainerIdle: 'idle/trainer',
  rolloutIdle: 'idle/rollout',
  syncAborted: 'sync/aborted_requests',
  /** Since the previous step's batch: samples of groups failed for an infrastructure reason (never trained), env sessions rebuilt by replay, episodes started over (on_env_loss). */
  infraFailed: 'rollout/infra_failed',
  envReplayed: 'rollout/env_replayed',
  envRestarted: 'rollout/env_restarted',
  /** Since the previous step's batch: samples of groups failed because a response could not be scored (an LLM judge gave no readable grade); never trained. */
  rewardUnscored: 'rollout/reward_unscored',
} as const;

/**
 * The run as the step ended: samples buffered and in flight, and its totals so far (counts since the run
 * started, carried across continue-as-new): what a dashboard plots beside the step's own numbers.
 */
export const RUN_COUNT = {
  buffered: 'run/buffered_samples',
  inFlight: 'run/in_flight_samples',
  dispatchedGroups: 'run/dispatched_groups',
  filteredGroups: 'run/filtered_groups',
  failedGroups: 'run/failed_groups',
  infraFailedGroups: 'run/infra_failed_groups',
  droppedSamples: 'run/dropped_samples',
  trainedSamples: 'run/trained_samples',
} as const;

/** The trainer's metrics land under this prefix (losses/…, actor/…, staleness/oldest_token_*: see the trainer's batch metrics). */
export const TRAINER_PREFIX = 'train/';
/** Added to the trainer's metrics by the bridge: stored batches replayed to recover a restarted trainer (activities/trainer-recovery.ts). */
export const REPLAYED_STEPS = 'recovery/replayed_steps';
/** Added beside it: saved trainer states passed over as corrupt by that recovery (an older one was loaded instead). */
export const SKIPPED_STATES = 'recovery/skipped_states';

/** Keys of a record in <run_dir>/<run id>/validation.jsonl. */
export const VAL_METRIC = {
  rewardMean: 'val/reward_mean',
  samples: 'val/samples',
  failedGroups: 'val/failed_groups',
  tagRewardMean: (tag: string) => `val/${tag}/reward_mean`,
} as const;

export type MetricKey = (typeof METRIC)[keyof typeof METRIC];
