// temporal/cluster.sh's server config, checked without building the server or
// starting PostgreSQL: `cluster.sh config` prints what `start` writes.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.join(__dirname, '../..');

// That the server itself accepts this config is shown where it runs: `temporal/cluster.sh start`
// (bench/scale/run.sh TARGET=cluster); make test never builds the server.

function renderText(env: Record<string, string> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-cluster-'));
  const r = spawnSync('bash', [path.join(root, 'temporal/cluster.sh'), 'config'], {
    env: { ...process.env, TEMPORAL_CLUSTER_DIR: path.join(dir, 'cluster'), ...env },
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).toBe(0);
  expect(existsSync(path.join(dir, 'cluster')), 'config must not create any state').toBe(false);
  return { dir, text: r.stdout };
}

const renderConfig = (env: Record<string, string> = {}) => parse(renderText(env).text) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('temporal/cluster.sh config', () => {
  it('puts both stores on PostgreSQL (postgres12): temporal and temporal_visibility', () => {
    const { persistence } = renderConfig();
    expect(persistence.numHistoryShards).toBe(4);
    const main = persistence.datastores[persistence.defaultStore].sql;
    const visibility = persistence.datastores[persistence.visibilityStore].sql;
    expect(persistence.defaultStore).not.toBe(persistence.visibilityStore);
    for (const [sql, db] of [
      [main, 'temporal'],
      [visibility, 'temporal_visibility'],
    ] as const) {
      expect(sql).toMatchObject({ pluginName: 'postgres12', databaseName: db, connectAddr: '127.0.0.1:5439', connectProtocol: 'tcp', user: 'temporal' });
      expect(sql.maxConns).toBeGreaterThan(0);
    }
  });

  it('runs the four services in one process on distinct ports, away from the dev server', () => {
    const config = renderConfig();
    expect(Object.keys(config.services).sort()).toEqual(['frontend', 'history', 'matching', 'worker']);
    const ports = Object.values(config.services).flatMap((s: any) => [s.rpc.grpcPort, s.rpc.membershipPort]); // eslint-disable-line @typescript-eslint/no-explicit-any
    ports.push(Number(config.global.metrics.prometheus.listenAddress.split(':')[1]));
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports).not.toContain(7233);
    expect(ports).not.toContain(8233);
    expect(config.services.frontend.rpc.grpcPort).toBe(7333);
    expect(config.clusterMetadata.clusterInformation[config.clusterMetadata.currentClusterName].rpcAddress).toBe('127.0.0.1:7333');
  });

  it('reads the dynamic config file the dev server gets', () => {
    const { dynamicConfigClient } = renderConfig();
    expect(dynamicConfigClient.filepath).toBe(path.join(root, 'temporal/dynamic-config.yaml'));
    expect(existsSync(dynamicConfigClient.filepath)).toBe(true);
  });

  it('follows the environment: ports, shards, PostgreSQL port', () => {
    const config = renderConfig({ TEMPORAL_CLUSTER_PORT: '7733', TEMPORAL_CLUSTER_SHARDS: '8', TEMPORAL_CLUSTER_PG_PORT: '5999' });
    expect(config.services.frontend.rpc.grpcPort).toBe(7733);
    expect(config.persistence.numHistoryShards).toBe(8);
    expect(config.persistence.datastores[config.persistence.defaultStore].sql.connectAddr).toBe('127.0.0.1:5999');
  });
});
