#!/usr/bin/env node
// The histories of one run's workflows, counted: `histories.cjs ADDRESS RUN_ID` prints one JSON object on stdout,
// the sums over every execution whose workflow id is RUN_ID or starts with RUN_ID/ (a continued-as-new workflow
// counts each of its executions): executions, history events, events by type, markers by name, and the state
// transitions the server counted. turn_cost.py calls it after the run completed, outside what it measures.
// Node, not Python: the Temporal client is in node_modules (.venv has no Temporal SDK), and one connection
// fetching many histories costs far less than a `temporal workflow show` process per workflow.
/* eslint-disable @typescript-eslint/no-require-imports -- a plain node script */
const { Client, Connection } = require('@temporalio/client');
const { temporal } = require('@temporalio/proto');

const [address, runId] = process.argv.slice(2);
const EVENT_NAMES = Object.fromEntries(Object.entries(temporal.api.enums.v1.EventType).map(([name, n]) => [n, name.replace(/^EVENT_TYPE_/, '')]));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every execution of the run, once visibility lists none of them as running (it is written after the close, asynchronously). */
async function executions(client) {
  const query = `WorkflowId = '${runId}' OR WorkflowId STARTS_WITH '${runId}/'`;
  for (let i = 0; i < 240; i++) {
    const all = [];
    for await (const wf of client.workflow.list({ query })) all.push(wf);
    if (all.length > 0 && all.every((wf) => wf.status.name !== 'RUNNING')) return all;
    await sleep(250);
  }
  throw new Error(`${runId}: visibility still lists running workflows (or none) 60 s after the run completed`);
}

async function main() {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const list = await executions(client);
    const out = { executions: list.length, history_events: 0, state_transitions: 0, events: {}, markers: {}, by_workflow_type: {} };
    const add = (counts, key, n = 1) => (counts[key] = (counts[key] ?? 0) + n);
    // A few histories at a time: enough to hide the round trips, few enough to leave the server alone.
    for (let i = 0; i < list.length; i += 8) {
      await Promise.all(list.slice(i, i + 8).map(async (wf) => {
        const events = (await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ?? [];
        out.history_events += events.length;
        out.state_transitions += Number(wf.raw.stateTransitionCount ?? 0);
        const byType = (out.by_workflow_type[wf.type] ??= { executions: 0, history_events: 0 });
        byType.executions += 1;
        byType.history_events += events.length;
        for (const e of events) {
          add(out.events, EVENT_NAMES[e.eventType] ?? String(e.eventType));
          if (e.markerRecordedEventAttributes) add(out.markers, e.markerRecordedEventAttributes.markerName);
        }
      }));
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    await connection.close();
  }
}

main().catch((e) => {
  console.error(`histories: ${e.stack ?? e}`);
  process.exit(1);
});
