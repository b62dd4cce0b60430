// docker-compose.yml and temporal/dynamic-config.yaml, checked without a
// container engine: Debian's docker-compose validates the file offline, and
// the dev server's reading of the dynamic config must equal the YAML itself.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { registry } from '../../src/monitoring/run-metrics';

const root = path.join(__dirname, '../..');

function composeConfig(file: string, ...args: string[]) {
  const r = spawnSync('docker-compose', ['-f', file, 'config', ...args], { cwd: path.dirname(file), encoding: 'utf8' });
  if (r.error) throw new Error(`docker-compose is not installed (make setup installs it): ${r.error.message}`);
  return r;
}

describe('docker-compose.yml', () => {
  it('is a valid compose file with the Temporal cluster, UI, worker and engines', () => {
    expect(composeConfig(path.join(root, 'docker-compose.yml'), '-q').status).toBe(0);
    const r = composeConfig(path.join(root, 'docker-compose.yml'), '--services');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n').sort()).toEqual(
      ['engine-env', 'engine-inference', 'engine-trainer', 'grafana', 'object-store', 'object-store-setup', 'postgresql', 'prometheus', 'temporal', 'temporal-setup', 'temporal-ui', 'worker'].sort(),
    );
  });

  type Service = { build?: unknown; image?: string; command?: string[]; volumes?: string[]; environment?: Record<string, string>; networks?: Record<string, { ipv4_address?: string }> };
  const services = () => (parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> }).services;
  const rollflowServices = ['engine-inference', 'engine-trainer', 'engine-env', 'worker'];

  it('has an object store, and the rollflow services share no volume: everything goes through the bucket', () => {
    const all = services();
    expect(all['object-store']!.build).toBe('deploy/versitygw');
    // A volume (named or a host path) mounted by two services is a disk they share.
    const mountedBy = new Map<string, string[]>();
    for (const [name, s] of Object.entries(all)) for (const v of s.volumes ?? []) mountedBy.set(v.split(':')[0]!, [...(mountedBy.get(v.split(':')[0]!) ?? []), name]);
    for (const [source, by] of mountedBy) expect(by.length, `${source} is mounted by ${by.join(', ')}`).toBe(1);
    for (const name of rollflowServices) expect(all[name]!.volumes ?? [], name).toEqual([]);
  });

  it('every service that touches the store gets it from the standard AWS variables, the endpoint being the store\'s fixed address', () => {
    const all = services();
    const address = all['object-store']!.networks!.default!.ipv4_address;
    for (const name of [...rollflowServices, 'object-store-setup']) {
      const env = all[name]!.environment ?? {};
      expect(Object.keys(env), name).toEqual(expect.arrayContaining(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_ENDPOINT_URL', 'AWS_REGION']));
      expect(env.AWS_ENDPOINT_URL, name).toBe(`http://${address}:7070`);
    }
    expect(all['engine-trainer']!.command).toEqual(expect.arrayContaining(['export_dir=s3://rollflow/weights']));
    expect(all['engine-env']!.command!.some((a) => a.startsWith('snapshot_dir=s3://rollflow/'))).toBe(true);
  });

  it('the compose run config keeps its samples in the bucket and names no credential', () => {
    const text = readFileSync(path.join(root, 'examples/compose.yaml'), 'utf8');
    expect((parse(text) as { sample_store: unknown }).sample_store).toEqual({ kind: 's3', bucket: 'rollflow' });
    expect(text).not.toMatch(/aws_|secret|access_key|endpoint/i);
  });

  it('deploy/compose/local-images.yml is a valid override of it', () => {
    const r = spawnSync('docker-compose', ['-f', 'docker-compose.yml', '-f', 'deploy/compose/local-images.yml', 'config', '-q'], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });

  it('is checked for real: a misspelt key is rejected', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-compose-'));
    const broken = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8').replace('    healthcheck:', '    healthchek:');
    writeFileSync(path.join(dir, 'docker-compose.yml'), broken);
    copyFileSync(path.join(root, 'Dockerfile'), path.join(dir, 'Dockerfile'));
    mkdirSync(path.join(dir, 'deploy/versitygw'), { recursive: true });
    copyFileSync(path.join(root, 'deploy/versitygw/Dockerfile'), path.join(dir, 'deploy/versitygw/Dockerfile'));
    const r = composeConfig(path.join(dir, 'docker-compose.yml'), '-q');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('healthchek');
  });
});

describe('deploy/ (Prometheus and Grafana)', () => {
  it('the scrape config targets the compose worker on the port its config serves', () => {
    const prom = parse(readFileSync(path.join(root, 'deploy/prometheus/prometheus.yml'), 'utf8')) as { scrape_configs: { static_configs: { targets: string[] }[] }[] };
    const compose = parse(readFileSync(path.join(root, 'examples/compose.yaml'), 'utf8')) as { temporal: { worker: { metrics_address: string } } };
    const port = compose.temporal.worker.metrics_address.split(':')[1];
    expect(prom.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets))).toEqual([`worker:${port}`]);
  });

  const dashboard = () =>
    JSON.parse(readFileSync(path.join(root, 'deploy/grafana/dashboards/rollflow.json'), 'utf8')) as {
      panels: { title: string; datasource: { uid: string }; targets: { expr: string }[] }[];
      templating: { list: { datasource: { uid: string }; query: string }[] };
    };
  const queries = () => [...dashboard().panels.flatMap((p) => p.targets.map((t) => t.expr)), ...dashboard().templating.list.map((v) => v.query)];

  it('the dashboard is valid JSON whose panels all query something', () => {
    const dash = dashboard();
    expect(dash.panels.length).toBeGreaterThanOrEqual(8);
    for (const p of dash.panels) expect(p.targets.length, p.title).toBeGreaterThan(0);
  });

  it('every rollflow metric the dashboard queries is one the worker registers (temporal_* ones: the live scrape in worker-metrics.test.ts)', async () => {
    const registered = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const queried = new Set(queries().flatMap((q) => [...q.matchAll(/\b(rollflow_[a-z_]+)/g)].map((x) => x[1]!)));
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((name) => !registered.has(name.replace(/_(bucket|sum|count)$/, '')))).toEqual([]);
  });

  it('Grafana is provisioned with the data source the dashboard names and the directory compose mounts the dashboard in', () => {
    const datasources = parse(readFileSync(path.join(root, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as { datasources: { uid: string; url: string }[] };
    const providers = parse(readFileSync(path.join(root, 'deploy/grafana/provisioning/dashboards/rollflow.yml'), 'utf8')) as { providers: { options: { path: string } }[] };
    const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { image?: string; volumes?: string[] }> };
    const dash = dashboard();
    const uids = new Set([...dash.panels.map((p) => p.datasource.uid), ...dash.templating.list.map((v) => v.datasource.uid)]);
    expect([...uids]).toEqual([datasources.datasources[0]!.uid]);
    expect(datasources.datasources[0]!.url).toBe('http://prometheus:9090');
    expect(compose.services.grafana!.volumes).toContain(`./deploy/grafana/dashboards:${providers.providers[0]!.options.path}:ro`);
    expect(compose.services.grafana!.volumes).toContain('./deploy/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(compose.services.prometheus!.volumes).toContain('./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
  });

  it('every image compose pulls is pinned to a version tag', () => {
    const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { image?: string; build?: unknown }> };
    const pulled = Object.entries(compose.services).filter(([, s]) => !s.build);
    expect(pulled.map(([name]) => name)).toEqual(expect.arrayContaining(['prometheus', 'grafana']));
    for (const [name, s] of pulled) expect(s.image, name).toMatch(/^[\w./-]+:v?\d+(\.\d+)*$/);
  });
});

describe('temporal/dynamic-config.yaml', () => {
  it('gives the dev server the same pairs the cluster reads', () => {
    const file = path.join(root, 'temporal/dynamic-config.yaml');
    const asYaml = Object.entries(parse(readFileSync(file, 'utf8')) as Record<string, { value: unknown }[]>).map(
      ([key, [entry]]) => `${key}=${JSON.stringify(entry?.value)}`,
    );
    const script = `source <(sed -n '/^dynamic_config_pairs()/,/^}/p' temporal/dev-server.sh); dynamic_config_pairs temporal/dynamic-config.yaml`;
    const r = spawnSync('bash', ['-c', script], { cwd: root, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(asYaml);
    expect(asYaml.length).toBeGreaterThan(0);
  });
});
