/**
 * What the invariant checker reads about one run, as src/chaos/records.ts
 * gathers it. Each field comes from a different writer, so that an invariant
 * can compare two records that could disagree: the workflow (its result,
 * metrics.jsonl, the batch files it wrote), the trainer (its step log),
 * Temporal (histories), the sample store (its files) and the env server (its
 * action log).
 */

/** One execution of a group workflow of the run, as Temporal recorded it. */
export interface GroupExecution {
  workflowId: string;
  /** The group's uid (e<epoch>-p<position>); a restarted (stale) group has several executions. */
  uid: string;
  /** Temporal's execution status: COMPLETED, CANCELLED, RUNNING, TERMINATED, FAILED, TIMED_OUT, … */
  status: string;
  /** Closed after the run did (or still open): it was in flight when the run ended. */
  closedAfterRun: boolean;
  /** Its history holds a cancel request (the run cancels the groups in flight when it ends). */
  cancelRequested: boolean;
  /** The group's result, for a completed execution. */
  result?: { accepted: boolean; error?: string };
}

/** A line of the trainer's step log (python-engines roles/trainer/step_log.py) of this run. */
export type TrainerLogLine =
  | { kind: 'step'; step: number; versionAfter: number; uidsSha256: string; lineage: string; recovered: boolean }
  | { kind: 'reset' | 'load' | 'save'; version: number; lineage: string; parent?: string | null; path?: string };

/** One execution of a trainStep workflow of the run, from its history. */
export interface TrainStepExecution {
  workflowId: string;
  /** The step in its workflow id (<run>/train-<step>). */
  step: number;
  status: string;
  /** runTrainStep activities scheduled and completed (a retry is another attempt of one activity, not another). */
  trainScheduled: number;
  trainCompleted: number;
  /** The highest attempt of its runTrainStep activity that started. */
  trainAttempts: number;
  /** The step the activity asked the trainer for, and what it returned. */
  trainInputStep?: number;
  trainResult?: { step: number; version: number; replayed: boolean };
  /** The sample uids, in order, of its writeBatch activity's input: the batch the workflow chose for the step. */
  batchUids?: string[];
}

export interface RunRecords {
  runId: string;
  /** The run workflow's final status (COMPLETED, FAILED, …), or why it could not be read. */
  outcome: string;
  /** What the run returned. */
  final?: {
    step: number;
    version: number;
    /** Samples accepted but not trained when it ended, and samples of the groups still in flight. */
    buffered: number;
    running: number;
    totals: { dispatchedGroups: number; filteredGroups: number; failedGroups: number; droppedSamples: number; restartedSamples: number };
  };
  /** <run_dir>/<run id>/metrics.jsonl, every line of this run as written (a line written twice is there twice). */
  metrics: { step: number; version: number; wall_s: number }[];
  /**
   * The batch files in the sample store, one per file: the step in its name,
   * its sample uids in order, and per sample the oldest weight version that
   * generated one of its trained tokens (version_spans, or per-token
   * versions): undefined when the sample records none, or its spans leave
   * such a token out; null when it has no trained token.
   * A file that cannot be read has `unreadable` instead.
   */
  batches: { step: number; uids: string[]; oldestTokenVersion: (number | undefined | null)[]; unreadable?: string }[];
  /** The uids of the sample files in the store (<run>/samples/<uid>.json). */
  sampleUids: string[];
  groups: GroupExecution[];
  /** The trainer's step log, this run's lines in file order; undefined: no log to read (`why`). */
  trainerLog: { file: string; lines: TrainerLogLine[]; unreadableLines: number } | { file?: string; why: string };
  /** Every execution of the run's trainStep workflows, and the trainStep children its executions started (workflow ids, in order). */
  trainSteps: TrainStepExecution[];
  trainStepStarts: string[];
  /** The saved trainer states recovery passed over (recovery.jsonl beside them: version and why). */
  skippedStates?: { version: number; reason: string }[];
  /**
   * The run's files that do not parse (JSON files, and JSON-lines files with a line that is not JSON) under its
   * own directory and its sample store directory, temp files and saved trainer states left out (those carry
   * checksums): what a crash or a full disk left half-written. Undefined: not read.
   */
  tornFiles?: string[];
  /** The env server's action log (one line per env step applied), if it keeps one (env option action_log). */
  envActions?: { file: string; lines: { session: string; index: number; actionSha256: string }[]; unreadableLines: number };
}

/** One invariant's verdict on a run's records. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
