// Part of tests/replay/record.sh (see its header): picks the workflows a replay
// case keeps from one finished run on a Temporal server, fetches each history
// with the Temporal CLI (`workflow show --output json`, the form the SDK's
// historyFromJSON reads) and writes it to <out>/<name>.<recorded from>.json,
// the workflow id beside the events (replay needs it: child workflow ids
// derive from it).
//
//   node fetch-histories.mjs <address> <temporal cli> <out dir> <run id> <recorded from> <name>...
//
// <recorded from> is the short commit whose code ran, "+wip" when its src/ had uncommitted changes.
//
// Prints one line per file: what was kept and why it qualifies.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';

const [address, cli, outDir, runId, recordedFrom, ...names] = process.argv.slice(2);
if (!names.length) throw new Error('usage: fetch-histories.mjs <address> <temporal cli> <out dir> <run id> <recorded from> <name>...');

const connection = await Connection.connect({ address });
const client = new Client({ connection });

async function list(query) {
  const found = [];
  for await (const e of client.workflow.list({ query })) found.push(e);
  return found;
}

/** The executions of one workflow id, oldest first (a continue-as-new chain). */
async function executions(workflowId) {
  return (await list(`WorkflowId = "${workflowId}"`)).sort((a, b) => a.startTime - b.startTime);
}

async function only(workflowId) {
  const all = await executions(workflowId);
  if (all.length !== 1) throw new Error(`${workflowId}: expected one execution, found ${all.length}`);
  return all[0];
}

function show(e) {
  const r = spawnSync(cli, ['workflow', 'show', '--workflow-id', e.workflowId, '--run-id', e.runId, '--output', 'json', '--address', address], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`temporal workflow show ${e.workflowId}: ${r.stderr}`);
  const history = JSON.parse(r.stdout);
  if (!Array.isArray(history.events)) throw new Error(`temporal workflow show ${e.workflowId}: no events in its output`);
  return history.events;
}

/** The child workflows a history started, in order, runs of one type folded: "validate, group×3, trainStep, …". */
function children(events) {
  const types = events.flatMap((ev) => (ev.startChildWorkflowExecutionInitiatedEventAttributes ? [ev.startChildWorkflowExecutionInitiatedEventAttributes.workflowType.name] : []));
  const runs = [];
  for (const t of types) {
    if (runs.at(-1)?.type === t) runs.at(-1).n++;
    else runs.push({ type: t, n: 1 });
  }
  return runs.map((r) => (r.n > 1 ? `${r.type}×${r.n}` : r.type)).join(', ') || '(none)';
}

const count = (events, attr) => events.filter((ev) => ev[attr]).length;
/** The run's plan, from the first execution's input (base64 JSON payload). */
const planOf = (events) => JSON.parse(Buffer.from(events[0].workflowExecutionStartedEventAttributes.input.payloads[0].data, 'base64').toString('utf8')).plan;
const lastEventType = (events) => Object.keys(events.at(-1)).find((k) => k.endsWith('EventAttributes'));

/** Each scheduled activity as type@queue; throws unless each of `routed` is there, on a role's queue (not the run's). */
function onQueues(events, routed) {
  const scheduled = events.flatMap((x) => (x.activityTaskScheduledEventAttributes ? [x.activityTaskScheduledEventAttributes] : []));
  const missing = routed.filter((type) => !scheduled.some((a) => a.activityType.name === type && /-(inference|trainer|env)$/.test(a.taskQueue.name)));
  if (missing.length) throw new Error(`not on a role's queue: ${missing}`);
  return scheduled.map((a) => `${a.activityType.name}@${a.taskQueue.name}`).join(', ');
}

/** Each kept history: which execution, and a check that it shows what its case is for. */
const picks = {
  'run-first': async () => {
    const [first, ...rest] = await executions(runId);
    if (!rest.length || first.status.name !== 'CONTINUED_AS_NEW') throw new Error(`${runId}: the first execution did not continue-as-new`);
    return { e: first, why: (ev) => `first of ${rest.length + 1} executions, ends in ${lastEventType(ev)}; children: ${children(ev)}` };
  },
  'run-last': async () => {
    const all = await executions(runId);
    const last = all.at(-1);
    if (all.length < 2 || last.status.name !== 'COMPLETED') throw new Error(`${runId}: the last execution is not a completed continuation`);
    return { e: last, why: (ev) => `last of ${all.length} executions (continued from ${ev[0].workflowExecutionStartedEventAttributes.continuedExecutionRunId}), ends in ${lastEventType(ev)}; children: ${children(ev)}` };
  },
  run: async () => {
    const e = await only(runId);
    if (e.status.name !== 'COMPLETED') throw new Error(`${runId}: ${e.status.name}`);
    return { e, why: (ev) => `plan.spareGroups ${planOf(ev).spareGroups ?? '(absent)'}; children in order: ${children(ev)}` };
  },
  'group-replicated': async () => ({
    e: await only(`${runId}/e0-p0`),
    why: (ev) => {
      if (!count(ev, 'startChildWorkflowExecutionInitiatedEventAttributes')) throw new Error('a replicated group started no trajectory');
      return `children: ${children(ev)}`;
    },
  }),
  'group-one-request': async () => ({
    e: await only(`${runId}/e0-p0`),
    why: (ev) => {
      const scheduled = ev.flatMap((x) => (x.activityTaskScheduledEventAttributes ? [x.activityTaskScheduledEventAttributes.activityType.name] : []));
      if (count(ev, 'startChildWorkflowExecutionInitiatedEventAttributes') || scheduled.join() !== 'generateGroupTurn') throw new Error(`not one request: ${scheduled}`);
      return `activities: ${scheduled}; local activity markers: ${count(ev, 'markerRecordedEventAttributes')}; children: none`;
    },
  }),
  'group-inline': async () => ({
    e: await only(`${runId}/e0-p0`),
    why: (ev) => {
      const turns = ev.filter((x) => x.activityTaskScheduledEventAttributes?.activityType.name === 'playTurn').length;
      if (count(ev, 'startChildWorkflowExecutionInitiatedEventAttributes') || turns < 2) throw new Error(`not trajectories in the group: children ${children(ev)}, ${turns} playTurn`);
      return `${turns} playTurn activities; local activity markers: ${count(ev, 'markerRecordedEventAttributes')}; children: none`;
    },
  }),
  // temporal.route_by_role: each engine call scheduled on its role's queue (<task_queue>-<role>).
  'run-routed': async () => ({ e: await only(runId), why: (ev) => `activities: ${onQueues(ev, ['initTrainer'])}; children in order: ${children(ev)}` }),
  'group-routed': async () => ({ e: await only(`${runId}/e0-p0`), why: (ev) => `activities: ${onQueues(ev, ['generateGroupTurn', 'envReset', 'envStep'])}; local activity markers: ${count(ev, 'markerRecordedEventAttributes')}` }),
  'train-step-routed': async () => ({ e: await only(`${runId}/train-1`), why: (ev) => `activities: ${onQueues(ev, ['runTrainStep', 'exportWeights'])}` }),
  'train-step': async () => ({ e: await only(`${runId}/train-1`), why: (ev) => `${count(ev, 'activityTaskScheduledEventAttributes')} activities` }),
  validate: async () => ({ e: await only(`${runId}/val-2`), why: (ev) => `children: ${children(ev)}` }),
  'lockstep-rollout': async () => ({ e: await only(`${runId}/lockstep-e0-p0`), why: (ev) => `${count(ev, 'activityTaskScheduledEventAttributes')} activities, ends in ${lastEventType(ev)}` }),
  'trajectory-partial': async () => {
    const all = (await list(`RollflowRunId = "${runId}" AND RollflowKind = "trajectory"`)).sort((a, b) => a.workflowId.localeCompare(b.workflowId));
    for (const e of all) {
      if (e.status.name !== 'COMPLETED') continue;
      const r = await client.workflow.getHandle(e.workflowId, e.runId).result();
      if (r.versionsSpanned > 1 && r.aborts > 0 && r.turns > 1) {
        return { e, why: (ev) => `${r.turns} turns, versions ${r.minVersion}..${r.maxVersion} (versionsSpanned ${r.versionsSpanned}), ${r.aborts} aborted generation(s) continued; ${count(ev, 'activityTaskScheduledEventAttributes')} activities` };
      }
    }
    throw new Error(`${runId}: no completed multi-turn trajectory spans two versions with an aborted generation (of ${all.length})`);
  },
};

try {
  for (const name of names) {
    const kind = name.startsWith('run-') && !picks[name] ? 'run' : name;
    if (!picks[kind]) throw new Error(`unknown history name ${name}; known: ${Object.keys(picks).join(', ')}`);
    const { e, why } = await picks[kind]();
    const events = show(e);
    const note = why(events);
    const file = path.join(outDir, `${name}.${recordedFrom}.json`);
    writeFileSync(file, `${JSON.stringify({ workflowId: e.workflowId, runId: e.runId, workflowType: e.type, recordedFrom, note, events }, null, 1)}\n`);
    console.log(`${path.basename(file)}: ${e.type} ${e.workflowId} (run ${e.runId}), ${events.length} events; ${note}`);
  }
} finally {
  await connection.close();
}
