/** `rollflow smoke`: runs the smoke workflow against the configured engines and prints its report. */
import type { LoadedConfig } from '../configs';
import { connectClient, workflowUrl } from '../client/connect';
import { NoWorkerError } from '../client/errors';
import { startWorkerHint } from '../client/run-handle';
import { pollers } from '../stack/worker';
import { smoke } from '../workflows/smoke';
import { KIND } from '../workflows/search-attributes';
import type { SmokeReport } from '../workflows/smoke';

export async function runSmoke(loaded: LoadedConfig, out: (line: string) => void): Promise<SmokeReport> {
  const { config } = loaded;
  const engines = [
    ...config.engines.inference.map((e) => ({ role: 'inference' as const, url: e.url })),
    { role: 'trainer' as const, url: config.engines.trainer.url },
    { role: 'env' as const, url: config.engines.env.url },
  ];
  const client = await connectClient(config);
  try {
    if ((await pollers(client, loaded)).length === 0) {
      throw new NoWorkerError(`no worker is polling task queue "${config.temporal.task_queue}" at ${config.temporal.address}; ${startWorkerHint}`);
    }
    const workflowId = `smoke-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const handle = await client.workflow.start(smoke, {
      taskQueue: config.temporal.task_queue,
      workflowId,
      args: [{ engines }],
      typedSearchAttributes: [{ key: KIND, value: 'smoke' }],
      workflowExecutionTimeout: '5 minutes',
    });
    out(`smoke workflow ${workflowId} started: ${workflowUrl(config, workflowId)}`);
    const report = await handle.result();
    for (const e of report.engines) {
      out(e.ok ? `  ok    ${e.role.padEnd(9)} ${e.url} backend=${e.health.backend} pid=${e.health.pid}` : `  FAIL  ${e.role.padEnd(9)} ${e.url} ${e.error}`);
    }
    out(report.ok ? 'smoke: every engine answered through Temporal' : 'smoke: some engines failed');
    return report;
  } finally {
    await client.connection.close();
  }
}
