import { Client, Connection } from '@temporalio/client';
import { dataConverterOf } from '../codec/encryption';
import type { RunConfig } from '../configs';
import { explainConnectFailure } from './connect-failure';
import { TemporalUnreachableError } from './errors';
import { connectionSecurity } from './tls';

/** A client of the config's Temporal server: over TLS and with an API key when configured, payloads sealed when temporal.encryption is set. */
export async function connectClient(config: RunConfig): Promise<Client> {
  const { address, namespace } = config.temporal;
  const security = connectionSecurity(config); // a missing file is a ConfigError before any connection
  const dataConverter = dataConverterOf(config);
  try {
    const connection = await Connection.connect({ address, connectTimeout: '5s', ...(security.tls ? { tls: security.tls } : {}), ...(security.apiKey ? { apiKey: security.apiKey } : {}) });
    return new Client({ connection, namespace, ...(dataConverter ? { dataConverter } : {}) });
  } catch (e) {
    throw new TemporalUnreachableError(await explainConnectFailure(address, security, e));
  }
}

/** The Temporal UI page of one workflow. */
export function workflowUrl(config: RunConfig, workflowId: string): string {
  const base = config.temporal.ui_url.replace(/\/$/, '');
  return `${base}/namespaces/${encodeURIComponent(config.temporal.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
