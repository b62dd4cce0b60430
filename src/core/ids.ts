/**
 * Every name a run gives what it makes, built here and parsed back here:
 * uids, workflow ids, sample-store keys and checkpoint directories. The
 * workflows, the activities, the bench and the tests all call these, so no
 * format is agreed by matching strings. Changing one changes the ids of
 * children a running workflow starts: that is a workflow change (patch it).
 */
/** Six digits, zero-padded: step and version numbers in names that sort. */
export const pad6 = (n: number) => String(n).padStart(6, '0');

/** Where a group's prompt sits: its position in the epoch's seeded order. */
export interface GroupRef {
  epoch: number;
  position: number;
}

// ---- uids: a group is named by where its prompt sits; a sample by its group and member.

/** "e<epoch>-p<position>": the group at `position` of epoch `epoch`'s seeded order. */
export const groupUid = (g: GroupRef): string => `e${g.epoch}-p${g.position}`;

/** "<group uid>-s<member>": member `member` (0 … G−1) of a group. */
export const sampleUid = (groupUid: string, member: number): string => `${groupUid}-s${member}`;

/** A training sample's uid back to its group and member; throws RangeError for anything else. */
export function parseSampleUid(uid: string): GroupRef & { member: number } {
  const m = /^e(\d+)-p(\d+)-s(\d+)$/.exec(uid);
  if (!m) throw new RangeError(`not a sample uid: ${uid}`);
  return { epoch: Number(m[1]), position: Number(m[2]), member: Number(m[3]) };
}

/**
 * The canonical order of a batch's samples: by epoch, position, member for sample uids (numerically, so p10
 * follows p9), any other uid after them by string. A batch in this order does not depend on the order its groups
 * completed in, which varies from run to run and after a fault; the trainer's sums follow the batch order, so
 * only a fixed order makes a step's result exact (docs/exactly-once.md).
 */
export function compareSampleUids(a: string, b: string): number {
  const key = (uid: string) => /^e(\d+)-p(\d+)-s(\d+)$/.exec(uid)?.slice(1).map(Number);
  const [ka, kb] = [key(a), key(b)];
  if (ka && kb) return ka[0]! - kb[0]! || ka[1]! - kb[1]! || ka[2]! - kb[2]!;
  if (ka || kb) return ka ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A group uid (or the last part of a group's workflow id) back to its ref; throws RangeError for anything else. */
export function parseGroupUid(uid: string): GroupRef {
  const m = /^e(\d+)-p(\d+)$/.exec(uid);
  if (!m) throw new RangeError(`not a group uid: ${uid}`);
  return { epoch: Number(m[1]), position: Number(m[2]) };
}

/** Validation group `i` of env `tag` in the validation after `steps` steps (never a training uid). */
export const validationGroupUid = (steps: number, tag: string, i: number): string => `val${steps}-${tag}-g${i}`;

// ---- workflow ids: every child of a run is prefixed with the run id (the run's own workflow id).

export const groupWorkflowId = (runId: string, ref: GroupRef): string => `${runId}/${groupUid(ref)}`;
/** The lockstep batch is named after its first group. */
export const lockstepWorkflowId = (runId: string, first: GroupRef): string => `${runId}/lockstep-${groupUid(first)}`;
export const trainStepWorkflowId = (runId: string, step: number): string => `${runId}/train-${step}`;
export const validateWorkflowId = (runId: string, steps: number): string => `${runId}/val-${steps}`;
/** A child of a group (member i) or of a validation (group i), under its parent's id. */
export const childWorkflowId = (parentId: string, kind: 's' | 'g', i: number): string => `${parentId}/${kind}${i}`;

// ---- sample-store keys (relative to the store root) and run-dir paths.

/** A trajectory's token-level context, rewritten after every turn. */
export const contextKey = (runId: string, uid: string): string => `${runId}/trajectories/${uid}.json`;
/** A finished trajectory as one training sample. */
export const sampleKey = (runId: string, uid: string): string => `${runId}/samples/${uid}.json`;
/** The run's latest weights (version and path), rewritten by every completed weight sync; servers that come back catch up to it. */
export const weightsKey = (runId: string): string => `${runId}/weights.json`;
/** The batch file step `step` trained on: one sample per line. */
export const batchKey = (runId: string, step: number): string => `${batchDir(runId)}/step-${pad6(step)}.jsonl`;
export const batchDir = (runId: string): string => `${runId}/batches`;
/**
 * A run's own directory under run_dir: its metrics.jsonl, validation.jsonl and
 * checkpoints. Keyed by the run id, like the store keys, so no run writes
 * into another's (runs started before this layout wrote to run_dir itself).
 */
export const runDataDir = (runDir: string, runId: string): string => `${runDir}/${runId}`;
/** A batch file's name (the last part of batchKey) back to its step; undefined for any other file. */
export function parseBatchStep(fileName: string): number | undefined {
  const m = /^step-(\d+)\.jsonl$/.exec(fileName);
  return m ? Number(m[1]) : undefined;
}
/** The checkpoint taken after `step` steps, under the run's own directory (RunPlan.runDir, or RunPlan.bucketRunDir). */
export const checkpointDir = (runDir: string, step: number): string => `${runDir}/checkpoints/step-${pad6(step)}`;
/** The file (or object) in a checkpoint that says what it holds; written last, so it names only a complete checkpoint. */
export const CHECKPOINT_MANIFEST = 'manifest.json';
/** The trainer's state saved every few steps for recovery without an operator (src/activities/trainer-recovery.ts): v<version> directories, under the run's own directory. */
export const trainerStateDir = (runDir: string): string => `${runDir}/trainer-state`;
