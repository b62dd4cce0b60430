// Replay tests: every recorded history in histories/ is replayed against the
// workflow code of src/workflows, as a worker would replay a run that was
// started under the code that recorded it. A change to workflow code that
// alters the commands a recorded history issued (another activity, child,
// timer, signal, marker, search attribute upsert or continue-as-new, or the
// same ones in another order) fails here with the history's name and the
// SDK's determinism error. docs/versioning.md says how to make such a change
// (patched) and when to record histories (tests/replay/record.sh). No
// Temporal server is needed: the SDK replays the events in process.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker, type WorkflowBundle } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, it } from 'vitest';

const HISTORIES = path.join(__dirname, 'histories');

/** A history file as record.sh writes it: the CLI's JSON history plus where it came from. */
interface Recorded {
  workflowId: string;
  runId: string;
  workflowType: string;
  recordedFrom: string;
  note: string;
  events: unknown[];
}

const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json')).sort();
const load = (file: string) => JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')) as Recorded;

/**
 * The recorded ProtoJSON events as the SDK's History message. Not through
 * @temporalio/common's historyFromJSON, which runReplayHistory calls on JSON:
 * in this install @temporalio/common and @temporalio/proto each carry their
 * own copy of protobufjs 8 (the top-level one is @grpc/proto-loader's 7), so
 * its `instanceof Type` check fails ("type must be a Type"). The same parse,
 * with the protobufjs copy @temporalio/proto's types were built with.
 */
const { fromJson } = createRequire(require.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as {
  fromJson: (type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }) => temporal.api.history.v1.IHistory;
};
const historyOf = (recorded: Recorded) => fromJson(temporal.api.history.v1.History, { events: recorded.events }, { ignoreUnknownFields: true });

/** The replay's error, if any. The workflow id matters: child workflow ids are derived from it and checked. */
async function replay(workflowBundle: WorkflowBundle, recorded: Recorded): Promise<Error | undefined> {
  try {
    await Worker.runReplayHistory({ workflowBundle }, historyOf(recorded), recorded.workflowId);
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

const bundle = (workflowsPath: string) => bundleWorkflowCode({ workflowsPath, logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } });

let workflows: WorkflowBundle;

beforeAll(async () => {
  workflows = await bundle(path.join(__dirname, '../../src/workflows/index.ts'));
});

describe('recorded histories replay against the current workflow code', () => {
  it('every case has a history (record.sh names them <case>.<commit>.json)', () => {
    const cases = ['run-first', 'run-last', 'run-spares', 'run-prepatch', 'run-prepatch-newplan', 'group-replicated', 'group-one-request', 'trajectory-partial', 'train-step', 'validate', 'lockstep-rollout', 'run-routed', 'group-routed', 'train-step-routed', 'group-inline'];
    expect(cases.filter((c) => !files.some((f) => f.startsWith(`${c}.`)))).toEqual([]);
  });

  it.each(files)('%s', async (file) => {
    const recorded = load(file);
    const error = await replay(workflows, recorded);
    if (error) {
      throw new Error(`${file} (${recorded.workflowType} ${recorded.workflowId}, recorded from ${recorded.recordedFrom}) no longer replays: ${error.name}: ${error.message}`, { cause: error });
    }
  });
});

describe('the replayer fires', () => {
  it('a trainStep that trains before writing its batch fails to replay a recorded trainStep with a determinism error', async () => {
    const file = files.find((f) => f.startsWith('train-step.'))!;
    const changed = await bundle(path.join(__dirname, 'workflows/index.ts'));
    const error = await replay(changed, load(file));
    expect(error).toBeInstanceOf(DeterminismViolationError);
    expect(error!.message).toMatch(/writeBatch.*runTrainStep/); // the recorded activity, then the one the changed code asked for
  });
});
