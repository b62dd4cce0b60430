/** What `rollflow chaos` reports: each run checked against the invariants, and the figures over both (index.ts makes it, report.ts writes it). */
import type { Check, GroupAccounting } from './invariants';
import type { FaultRecord, RunUnderFaults } from './runner';
import type { ScheduleOptions } from './schedule';

export interface CheckedRun extends RunUnderFaults {
  ok: boolean;
  checks: Check[];
  accounting: GroupAccounting;
  /** The last step's wall_s. */
  makespanS?: number;
}

export interface ChaosResult {
  schedule: ScheduleOptions;
  faultFree?: CheckedRun;
  underFaults: CheckedRun;
  /** Median step interval of the fault-free run: the normal rate recovery is measured against. */
  normalStepS?: number;
  effectiveTime?: number;
  recoveries: (FaultRecord & { recoveryS?: number })[];
  ok: boolean;
}
