/**
 * How rollflow reaches a secured Temporal server: TLS or mTLS and an API key,
 * from the config (temporal.tls, temporal.api_key_file) or the Temporal CLI's
 * environment variables, which win. Files are read here, so a missing or
 * unreadable one is a config error naming its key and path, not a handshake
 * failure later.
 */
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { ConfigError, type RunConfig } from '../configs';

/** The Temporal CLI's names for the same settings. */
export const TLS_ENV = { ca: 'TEMPORAL_TLS_CA_PATH', cert: 'TEMPORAL_TLS_CERT_PATH', key: 'TEMPORAL_TLS_KEY_PATH', serverName: 'TEMPORAL_TLS_SERVER_NAME', apiKey: 'TEMPORAL_API_KEY' } as const;

export interface ConnectionSecurity {
  tls?: TLSConfig;
  apiKey?: string;
  /** Where the API key came from, for error messages: "TEMPORAL_API_KEY" or "temporal.api_key_file (<path>)". */
  apiKeyFrom?: string;
  /** Where each setting came from, for error messages: e.g. "temporal.tls.ca_file" or "TEMPORAL_TLS_CA_PATH". */
  describe: string;
}

function readSetting(file: string, from: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new ConfigError(from, [{ path: from, given: file, expected: `a readable ${what} file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` }]);
  }
}

/** Where TLS was asked for (the first of: temporal.tls, temporal.api_key_file, a TEMPORAL_TLS_* or TEMPORAL_API_KEY variable), or undefined. */
export function tlsRequestedBy({ temporal }: RunConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (temporal.tls !== undefined) return 'temporal.tls';
  if (temporal.api_key_file !== undefined) return 'temporal.api_key_file';
  return Object.values(TLS_ENV).find((name) => env[name]);
}

export function connectionSecurity(config: RunConfig, env: NodeJS.ProcessEnv = process.env): ConnectionSecurity {
  const { temporal } = config;
  const pick = (envName: string, configValue: string | undefined, configKey: string) =>
    env[envName] ? { value: env[envName], from: envName } : configValue !== undefined ? { value: configValue, from: configKey } : undefined;
  const ca = pick(TLS_ENV.ca, temporal.tls?.ca_file, 'temporal.tls.ca_file');
  const cert = pick(TLS_ENV.cert, temporal.tls?.cert_file, 'temporal.tls.cert_file');
  const key = pick(TLS_ENV.key, temporal.tls?.key_file, 'temporal.tls.key_file');
  const serverName = pick(TLS_ENV.serverName, temporal.tls?.server_name, 'temporal.tls.server_name');
  if ((cert === undefined) !== (key === undefined)) {
    const [has, lacks] = cert ? [cert.from, 'a key (temporal.tls.key_file or TEMPORAL_TLS_KEY_PATH)'] : [key!.from, 'a certificate (temporal.tls.cert_file or TEMPORAL_TLS_CERT_PATH)'];
    throw new ConfigError(has, [{ path: has, given: (cert ?? key)!.value, expected: `mTLS with ${lacks} too` }]);
  }
  const apiKey = env[TLS_ENV.apiKey] || (temporal.api_key_file ? readSetting(temporal.api_key_file, 'temporal.api_key_file', 'API key').toString('utf8').trim() : undefined);
  const apiKeyFrom = env[TLS_ENV.apiKey] ? TLS_ENV.apiKey : apiKey !== undefined ? `temporal.api_key_file (${temporal.api_key_file})` : undefined;
  if (tlsRequestedBy(config, env) === undefined) return { describe: 'plaintext' };
  const tls: TLSConfig = {
    ...(ca ? { serverRootCACertificate: readSetting(ca.value, ca.from, 'CA certificate') } : {}),
    ...(cert && key ? { clientCertPair: { crt: readSetting(cert.value, cert.from, 'client certificate'), key: readSetting(key.value, key.from, 'client key') } } : {}),
    ...(serverName ? { serverNameOverride: serverName.value } : {}),
  };
  const parts = [`TLS${ca ? ` with the CA of ${ca.from} (${ca.value})` : ' with the system CAs'}`, ...(cert ? [`client certificate ${cert.from} (${cert.value})`] : []), ...(apiKeyFrom ? [`an API key from ${apiKeyFrom}`] : [])];
  return { tls, ...(apiKey ? { apiKey, apiKeyFrom } : {}), describe: parts.join(', ') };
}
