import { Client, Connection } from '@temporalio/client';
import type { RunConfig } from '../configs';
import { TemporalUnreachableError } from './errors';

export async function connectClient(config: RunConfig): Promise<Client> {
  const { address, namespace } = config.temporal;
  try {
    const connection = await Connection.connect({ address, connectTimeout: '5s' });
    return new Client({ connection, namespace });
  } catch (e) {
    throw new TemporalUnreachableError(`no Temporal server at ${address} (${(e as Error).message}); start one with \`rollflow dev up\``);
  }
}

/** The Temporal UI page of one workflow. */
export function workflowUrl(config: RunConfig, workflowId: string): string {
  const base = config.temporal.ui_url.replace(/\/$/, '');
  return `${base}/namespaces/${encodeURIComponent(config.temporal.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
