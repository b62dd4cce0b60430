// deploy/systemd and deploy/k8s, checked offline: systemd's own unit loader
// (`systemd-analyze verify`, Debian's systemd package) and the Kubernetes API's
// JSON schemas in strict mode (kubernetes-validate in .venv), each shown to
// reject a broken copy; then the probes and watchdogs read against the
// liveness contract (docs/production.md), and the engine options against the
// engines' own offline check. deploy/k8s is the multi-host topology (docs/scaling.md): its run.yaml is loaded
// by the config loader (routed by role, the data plane in the bucket), each role worker sits in its engine's
// pod, no claim is mounted by two Deployments, and the bucket is addressed by AWS variables only.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig, loadConfigObject } from '../../src/configs';
import { WORKER_ROLES } from '../../src/core';
import { pythonBin, pythonEnginesEnv } from '../../src/paths';

const root = path.join(__dirname, '../..');
const systemdDir = path.join(root, 'deploy/systemd');
const k8sDir = path.join(root, 'deploy/k8s');
const ROLES = ['inference', 'trainer', 'env'] as const;

// ---- systemd ----------------------------------------------------------------

const UNITS = ['rollflow.target', 'rollflow-worker.service', 'rollflow-codec.service', 'rollflow-engine@.service'];
const INSTANCES = ROLES.map((r) => `rollflow-engine@${r}.service`);

/** Clean means exit 0 and nothing said: verify exits 0 on an unknown key or a bad value, it only warns. */
function verifyUnits(dir: string): { clean: boolean; said: string } {
  const names = [...UNITS.filter((u) => !u.includes('@.')), ...INSTANCES];
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', ...names], { cwd: dir, encoding: 'utf8', env: { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` } });
  if (r.error) throw new Error(`systemd-analyze is not installed (make setup installs Debian's systemd): ${r.error.message}`);
  const said = `${r.stdout}${r.stderr}`.trim();
  return { clean: r.status === 0 && said === '', said };
}

function brokenUnitCopy(file: string, from: string, to: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-units-'));
  cpSync(systemdDir, dir, { recursive: true });
  const text = readFileSync(path.join(dir, file), 'utf8');
  expect(text).toContain(from);
  writeFileSync(path.join(dir, file), text.replace(from, to));
  return dir;
}

/** A unit file's [Section] → key → values (a key may repeat). */
function readUnit(file: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const line of readFileSync(path.join(systemdDir, file), 'utf8').split('\n')) {
    const head = /^\[(\w+)\]$/.exec(line);
    if (head) section = head[1]!;
    else if (/^\w/.test(line)) {
      const [key, ...value] = line.split('=');
      ((out[section] ??= {})[key!] ??= []).push(value.join('='));
    }
  }
  return out;
}

const readEnvFile = (file: string) =>
  Object.fromEntries(
    readFileSync(path.join(systemdDir, file), 'utf8')
      .split('\n')
      .filter((l) => /^\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

describe('deploy/systemd', () => {
  it('systemd-analyze verify loads every unit and each engine instance without a word', () => {
    const r = verifyUnits(systemdDir);
    expect(r.said).toBe('');
    expect(r.clean).toBe(true);
  });

  it('is checked for real: a misspelt key, a bad value and a missing program are each refused', () => {
    const misspelt = verifyUnits(brokenUnitCopy('rollflow-worker.service', 'WatchdogSec=30', 'WatchdogSecs=30'));
    expect(misspelt.clean).toBe(false);
    expect(misspelt.said).toContain("Unknown key 'WatchdogSecs'");
    const badValue = verifyUnits(brokenUnitCopy('rollflow-engine@.service', 'Restart=on-failure', 'Restart=on-failur'));
    expect(badValue.clean).toBe(false);
    expect(badValue.said).toContain('on-failur');
    const missing = verifyUnits(brokenUnitCopy('rollflow-codec.service', 'ExecStart=/usr/bin/env ', 'ExecStart=/usr/bin/envx '));
    expect(missing.clean).toBe(false);
    expect(missing.said).toContain('/usr/bin/envx');
  });

  it('watchdogs per the liveness contract: engines notify from their own pid, the worker through systemd-notify', () => {
    const engine = readUnit('rollflow-engine@.service').Service!;
    expect([engine.Type, engine.NotifyAccess, engine.WatchdogSec]).toEqual([['notify'], ['main'], ['30']]);
    expect(engine.ExecStart![0]).toMatch(/ \$\{ROLLFLOW_HOME\}\/\.venv\/bin\/python -m rollflow_engines serve --role \$\{ROLLFLOW_ENGINE_ROLE\} --backend \$\{ROLLFLOW_ENGINE_BACKEND\} --host \$\{ROLLFLOW_ENGINE_HOST\} --port \$\{ROLLFLOW_ENGINE_PORT\} \$ROLLFLOW_ENGINE_ARGS$/);
    const worker = readUnit('rollflow-worker.service').Service!;
    expect([worker.NotifyAccess, worker.WatchdogSec]).toEqual([['all'], ['30']]);
    expect(worker.ExecStart![0]).toMatch(/ \$\{ROLLFLOW_NODE\} dist\/cli\/index\.js worker \$\{ROLLFLOW_CONFIG\}$/);
    expect(readUnit('rollflow-codec.service').Service!.ExecStart![0]).toMatch(/ dist\/cli\/index\.js codec-server \$\{ROLLFLOW_CONFIG\}$/);
  });

  it('every unit restarts on failure, stops a crash loop, belongs to rollflow.target and reads the one EnvironmentFile', () => {
    const target = readUnit('rollflow.target');
    expect(target.Unit!.Wants![0]!.split(' ').sort()).toEqual([...INSTANCES, 'rollflow-worker.service'].sort());
    for (const file of UNITS.filter((u) => u.endsWith('.service'))) {
      const unit = readUnit(file);
      expect(unit.Service!.Restart, file).toEqual(['on-failure']);
      expect(unit.Service!.RestartSec, file).toHaveLength(1);
      expect(Number(unit.Unit!.StartLimitBurst), file).toBeGreaterThan(1);
      expect(unit.Unit!.StartLimitIntervalSec, file).toHaveLength(1);
      expect(unit.Unit!.PartOf, file).toEqual(['rollflow.target']);
      expect(unit.Install!.WantedBy, file).toEqual(['rollflow.target']);
      expect(unit.Service!.EnvironmentFile![0], file).toBe('%E/rollflow/rollflow.env');
    }
  });

  it('every variable a unit expands is set by its environment files; each role has one, on its own port', () => {
    const common = readEnvFile('rollflow.env');
    const ports = new Set<string>();
    for (const role of ROLES) {
      const vars = { ...common, ...readEnvFile(`engine-${role}.env`) };
      expect(vars.ROLLFLOW_ENGINE_ROLE).toBe(role);
      ports.add(vars.ROLLFLOW_ENGINE_PORT!);
      const used = [...readFileSync(path.join(systemdDir, 'rollflow-engine@.service'), 'utf8').matchAll(/\$\{?(\w+)\}?/g)].map((m) => m[1]!);
      expect(used.filter((v) => !(v in vars))).toEqual([]);
    }
    expect(ports.size).toBe(ROLES.length);
    for (const file of ['rollflow-worker.service', 'rollflow-codec.service']) {
      const used = [...readFileSync(path.join(systemdDir, file), 'utf8').matchAll(/\$\{?(\w+)\}?/g)].map((m) => m[1]!);
      expect(used.filter((v) => !(v in common)), file).toEqual([]);
    }
  });
});

// ---- Kubernetes ---------------------------------------------------------------

// The oldest and the newest API the validator ships schemas for that we check.
const K8S_VERSIONS = ['1.30.0', '1.37.0'];
const manifestFiles = () => readdirSync(k8sDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');

/** Valid means every resource passed: an unknown kind is only a warning to the validator. */
function validateManifests(dir: string, files: string[], version: string): { valid: boolean; said: string } {
  const r = spawnSync(pythonBin(), ['-m', 'kubernetes_validate', '--strict', '-k', version, ...files], { cwd: dir, encoding: 'utf8' });
  if (r.error) throw new Error(`kubernetes-validate is not installed (make setup installs python-engines/requirements.txt): ${r.error.message}`);
  const said = `${r.stdout}${r.stderr}`;
  const resources = files.flatMap((f) => parseAllDocuments(readFileSync(path.join(dir, f), 'utf8'))).length;
  const passed = said.split('\n').filter((l) => l.includes('passed for resource')).length;
  return { valid: r.status === 0 && passed === resources, said };
}

interface Probe { httpGet?: { path: string; port: string }; exec?: { command: string[] }; periodSeconds: number; timeoutSeconds: number; failureThreshold: number }
interface Container {
  name: string;
  command: string[];
  env?: { name: string; value: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  startupProbe: Probe;
  livenessProbe: Probe;
  readinessProbe: Probe;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Volume { name: string; configMap?: { name: string }; emptyDir?: object; persistentVolumeClaim?: { claimName: string } }
interface Resource {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec: {
    accessModes?: string[];
    clusterIP?: string;
    selector: Record<string, unknown>;
    ports: { port: number; targetPort: string }[];
    template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[]; volumes?: Volume[] } };
  };
}
const resources = () => manifestFiles().flatMap((f) => parseAllDocuments(readFileSync(path.join(k8sDir, f), 'utf8')).map((d) => d.toJS() as Resource));
const deployment = (name: string) => resources().find((r) => r.kind === 'Deployment' && r.metadata.name === name)!;
const service = (name: string) => resources().find((r) => r.kind === 'Service' && r.metadata.name === name)!;
const container = (name: string) => deployment(name).spec.template.spec.containers[0]!;
const deployments = () => resources().filter((r) => r.kind === 'Deployment');
/** The rollflow worker in a Deployment's pod, beside its engine. */
const workerIn = (name: string) => deployment(name).spec.template.spec.containers.find((c) => c.name === 'worker')!;
const WORKER_PODS = ROLES.map((r) => `rollflow-engine-${r}`);
/** A worker command line: node dist/cli/index.js worker <config> [--role r,…] [--set k=v]… */
function workerArgs(command: string[]): { config: string; roles: string[]; sets: string[]; flags: string[] } {
  expect(command.slice(0, 3)).toEqual(['node', 'dist/cli/index.js', 'worker']);
  const rest = command.slice(4);
  const flags = rest.filter((_, i) => i % 2 === 0);
  const valueOf = (flag: string) => rest.filter((_, i) => i % 2 === 1 && rest[i - 1] === flag);
  return { config: command[3]!, roles: valueOf('--role').flatMap((r) => r.split(',')), sets: valueOf('--set'), flags };
}
/** The run config as the ConfigMap mounts it, written to a file and read by the loader the CLI uses, with a worker's --set overrides. */
function loadRunYaml(sets: string[] = []) {
  const configMap = resources().find((r) => r.kind === 'ConfigMap' && r.metadata.name === 'rollflow-config')!;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'rollflow-k8s-config-')), 'run.yaml');
  writeFileSync(file, configMap.data!['run.yaml']!);
  return loadConfig(file, sets);
}
const argAfter = (command: string[], flag: string) => command[command.indexOf(flag) + 1];
/** How long after a hang the kubelet restarts the container at most: the first probe to miss comes within a period, the last waits its timeout out. */
const hangBound = (p: Probe) => p.periodSeconds * p.failureThreshold + p.timeoutSeconds;

describe('deploy/k8s', () => {
  it.each(K8S_VERSIONS)('every resource is valid against the Kubernetes %s API schemas, unknown fields refused', (version) => {
    const r = validateManifests(k8sDir, manifestFiles(), version);
    expect(r.said).not.toMatch(/ERROR|WARN/);
    expect(r.valid).toBe(true);
  });

  it('is checked for real: a misspelt key, a wrong type and an unknown kind are each refused', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-k8s-'));
    const worker = readFileSync(path.join(k8sDir, 'engine-env.yaml'), 'utf8');
    const broken = { 'misspelt.yaml': ['livenessProbe:', 'livenesProbe:'], 'type.yaml': ['periodSeconds: 5\n', 'periodSeconds: "5"\n'], 'kind.yaml': ['kind: Deployment', 'kind: Deploymnt'] };
    for (const [file, [from, to]] of Object.entries(broken)) {
      expect(worker).toContain(from);
      writeFileSync(path.join(dir, file), worker.replace(from!, to!));
    }
    const misspelt = validateManifests(dir, ['misspelt.yaml'], K8S_VERSIONS[0]!);
    expect(misspelt.valid).toBe(false);
    expect(misspelt.said).toContain("'livenesProbe' was unexpected");
    const type = validateManifests(dir, ['type.yaml'], K8S_VERSIONS[0]!);
    expect(type.valid).toBe(false);
    expect(type.said).toContain("periodSeconds: '5' is not of type 'integer'");
    expect(validateManifests(dir, ['kind.yaml'], K8S_VERSIONS[0]!).valid).toBe(false);
  });

  it('kustomization.yaml lists every manifest', () => {
    const kustomization = parseAllDocuments(readFileSync(path.join(k8sDir, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as { resources: string[] };
    expect([...kustomization.resources].sort()).toEqual(manifestFiles().sort());
  });

  it.each([
    ['inference', 60],
    ['env', 60],
    ['trainer', 120],
  ] as const)('the %s engine: /health on its serving port for all three probes, a hang restarted within %i s', (role, bound) => {
    const c = container(`rollflow-engine-${role}`);
    expect(argAfter(c.command, '--role')).toBe(role);
    expect(argAfter(c.command, '--host')).toBe('0.0.0.0');
    expect(c.ports).toEqual([{ name: 'http', containerPort: Number(argAfter(c.command, '--port')) }]);
    for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) expect(probe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(hangBound(c.livenessProbe)).toBeLessThanOrEqual(bound);
    // Model build: the startup probe gives minutes before liveness starts.
    expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBeGreaterThanOrEqual(300);
    expect(service(`rollflow-engine-${role}`).spec.ports).toEqual([{ name: 'http', port: c.ports[0]!.containerPort, targetPort: 'http' }]);
  });

  it.each(WORKER_PODS)('the worker in %s: `probe worker` on its own config for all three probes, its liveness file on a pod-local volume, a hang restarted within 60 s', (name) => {
    const d = deployment(name);
    const c = workerIn(name);
    const { config: configPath } = workerArgs(c.command);
    const volumes = d.spec.template.spec.volumes ?? [];
    const configVolume = volumes.find((v) => v.configMap?.name === 'rollflow-config')!;
    const configMount = c.volumeMounts!.find((m) => m.name === configVolume.name)!;
    expect(configPath).toBe(`${configMount.mountPath}/run.yaml`);
    for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) expect(probe.exec?.command).toEqual(['node', 'dist/cli/index.js', 'probe', 'worker', configPath]);
    const state = c.env!.find((e) => e.name === 'ROLLFLOW_STATE')!.value;
    const stateMount = c.volumeMounts!.find((m) => m.mountPath === state)!;
    expect(volumes.find((v) => v.name === stateMount.name)!.emptyDir).toBeDefined();
    // The liveness file goes stale 30 s after the hang at most; the probe then fails at once.
    expect(30 + hangBound(c.livenessProbe)).toBeLessThanOrEqual(60);
    // The metrics Service (headless: every worker's endpoint) selects this pod, on the worker's metrics port.
    const metrics = service('rollflow-worker');
    expect(metrics.spec.clusterIP).toBe('None');
    const labels = d.spec.template.metadata.labels;
    expect(Object.entries(metrics.spec.selector).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(c.ports).toEqual([{ name: 'metrics', containerPort: metrics.spec.ports[0]!.port }]);
  });

  it('role workers: --role covers inference, trainer and env exactly once and main at least once, each engine role in its own engine\'s pod', () => {
    const workers = deployments().flatMap((d) => d.spec.template.spec.containers.filter((c) => c.command[2] === 'worker').map((c) => ({ pod: d.metadata.name, ...workerArgs(c.command) })));
    expect(workers.map((w) => w.pod).sort()).toEqual([...WORKER_PODS].sort());
    const roles = workers.flatMap((w) => w.roles);
    for (const r of roles) expect(WORKER_ROLES).toContain(r);
    for (const role of ROLES) expect(roles.filter((r) => r === role), role).toHaveLength(1);
    expect(roles.filter((r) => r === 'main').length).toBeGreaterThanOrEqual(1);
    for (const w of workers) {
      expect(w.flags.every((f) => f === '--role' || f === '--set'), w.pod).toBe(true);
      // Every engine role a worker serves is the role of the engine beside it.
      for (const r of w.roles.filter((r) => r !== 'main')) expect(w.pod).toBe(`rollflow-engine-${r}`);
    }
    // main stays one worker: more than one was never exercised (docs/scaling.md).
    const main = workers.filter((w) => w.roles.includes('main'));
    expect(main).toHaveLength(1);
    expect(deployment(main[0]!.pod).spec).toMatchObject({ replicas: 1 });
  });

  it('no volume is shared between pods: each PersistentVolumeClaim is ReadWriteOnce and mounted by one Deployment of one replica', () => {
    const claims = resources().filter((r) => r.kind === 'PersistentVolumeClaim');
    for (const claim of claims) {
      expect(claim.spec.accessModes, claim.metadata.name).toEqual(['ReadWriteOnce']);
      const users = deployments().filter((d) => (d.spec.template.spec.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === claim.metadata.name));
      expect(users.map((d) => d.metadata.name), claim.metadata.name).toHaveLength(1);
      expect(users[0]!.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    }
    // And no Deployment names a claim that is not here.
    const named = deployments().flatMap((d) => (d.spec.template.spec.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [])));
    expect(named.every((n) => claims.some((c) => c.metadata.name === n))).toBe(true);
    // The codec server reads the bucket only: no claim at all.
    expect((deployment('rollflow-codec').spec.template.spec.volumes ?? []).filter((v) => v.persistentVolumeClaim)).toEqual([]);
  });

  it('the object store is addressed by the standard AWS variables, from a ConfigMap and a Secret in every container, never by the run config', () => {
    const settings = resources().find((r) => r.kind === 'ConfigMap' && r.metadata.name === 'rollflow-object-store')!;
    const key = resources().find((r) => r.kind === 'Secret' && r.metadata.name === 'rollflow-object-store')!;
    expect(Object.keys(settings.data!).sort()).toEqual(['AWS_ENDPOINT_URL', 'AWS_REGION']);
    expect(Object.keys(key.stringData!).sort()).toEqual(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']);
    for (const d of deployments()) {
      for (const c of d.spec.template.spec.containers) {
        expect(c.envFrom, `${d.metadata.name}/${c.name}`).toEqual([{ configMapRef: { name: 'rollflow-object-store' } }, { secretRef: { name: 'rollflow-object-store' } }]);
      }
    }
    const runYaml = resources().find((r) => r.kind === 'ConfigMap' && r.metadata.name === 'rollflow-config')!.data!['run.yaml']!;
    expect(runYaml).not.toMatch(/^[^#]*(AWS_|endpoint|secret|access_key)/im);
  });

  it('run.yaml, read by the config loader from a file as a worker reads it: routed by role, its data plane in the bucket, every engine\'s bucket paths under its prefix', () => {
    const { config, derived } = loadRunYaml();
    expect(config.temporal.route_by_role).toBe(true);
    expect(config.temporal.embedded).toBe(false);
    expect(config.sample_store).toMatchObject({ kind: 's3', bucket: expect.any(String), prefix: expect.any(String) });
    expect(derived.sample_store.kind).toBe('s3');
    const root = `s3://${config.sample_store.bucket}/${config.sample_store.prefix}`;
    // Options of servers rollflow does not launch are their own command line's, not engines.*.options.
    const trainer = serveOptions(container('rollflow-engine-trainer').command);
    expect(trainer.export_dir).toMatch(new RegExp(`^${root}.`));
    const env = serveOptions(container('rollflow-engine-env').command);
    expect(env.snapshot_dir).toMatch(new RegExp(`^${root}.`));
    // Scratch (exports and states before upload, pulled weights, sandboxes) on each pod's own emptyDir.
    const scratch: Record<string, unknown[]> = { trainer: [trainer.export_scratch_dir, trainer.state_scratch_dir], inference: [serveOptions(container('rollflow-engine-inference').command).weights_cache_dir], env: [env.sandbox_root] };
    for (const role of ROLES) {
      const d = deployment(`rollflow-engine-${role}`);
      const c = container(`rollflow-engine-${role}`);
      for (const dir of scratch[role]!) {
        expect(typeof dir, `${role} ${String(dir)}`).toBe('string');
        const mount = c.volumeMounts!.find((m) => (dir as string).startsWith(`${m.mountPath}/`))!;
        expect(d.spec.template.spec.volumes!.find((v) => v.name === mount.name)!.emptyDir, `${role} ${String(dir)}`).toBeDefined();
      }
      for (const e of Object.values(config.engines).flat()) if (e) expect(e.options).toEqual({});
    }
    // run_dir (the main worker's checkpoint manifests and trackers' files) is on the claim its pod alone mounts.
    const main = WORKER_PODS.find((p) => workerArgs(workerIn(p).command).roles.includes('main'))!;
    const runMount = workerIn(main).volumeMounts!.find((m) => derived.run_dir.startsWith(`${m.mountPath}/`))!;
    expect(deployment(main).spec.template.spec.volumes!.find((v) => v.name === runMount.name)!.persistentVolumeClaim).toBeDefined();
  });

  it.each(WORKER_PODS)('the worker in %s loads run.yaml with its own --role and --set, and calls the engine of its role in its own pod on loopback', (name) => {
    const { roles, sets } = workerArgs(workerIn(name).command);
    const { config } = loadRunYaml(sets);
    const engine = container(name);
    const role = roles.find((r) => r !== 'main') as (typeof ROLES)[number];
    const own = role === 'inference' ? config.engines.inference : [config.engines[role]];
    expect(own.map((e) => e.url)).toEqual([`http://127.0.0.1:${argAfter(engine.command, '--port')}`]);
    expect(own.every((e) => !e.launch)).toBe(true);
    // The other roles' engines stay the Services (the main worker syncs weights to the inference one).
    for (const other of ROLES.filter((r) => r !== role)) {
      const e = other === 'inference' ? config.engines.inference[0]! : config.engines[other];
      expect(new URL(e.url).hostname).toBe(`rollflow-engine-${other}`);
    }
  });

  it('the run config is a valid rollflow config whose engines, codec and metrics are the Services of these manifests', () => {
    const configMap = resources().find((r) => r.kind === 'ConfigMap' && r.metadata.name === 'rollflow-config')!;
    const { config } = loadConfigObject(parseAllDocuments(configMap.data!['run.yaml']!)[0]!.toJS() as Record<string, unknown>, [], 'rollflow-config run.yaml');
    expect(config.temporal.embedded).toBe(false);
    const engines = { inference: config.engines.inference[0]!, trainer: config.engines.trainer, env: config.engines.env };
    for (const role of ROLES) {
      const url = new URL(engines[role].url);
      const c = container(`rollflow-engine-${role}`);
      expect(url.hostname).toBe(`rollflow-engine-${role}`);
      expect(service(url.hostname).spec.ports[0]!.port).toBe(Number(url.port));
      expect(engines[role].launch).toBe(false);
      if (role !== 'env') expect(argAfter(c.command, '--backend')).toBe(engines[role].backend);
    }
    expect(service('rollflow-worker').spec.ports[0]!.port).toBe(Number(config.temporal.worker.metrics_address.split(':')[1]));
    const codecPort = Number(new URL(config.temporal.codec_url!).port);
    const codec = container('rollflow-codec');
    expect(codec.ports).toEqual([{ name: 'http', containerPort: codecPort }]);
    for (const probe of [codec.startupProbe, codec.livenessProbe, codec.readinessProbe]) expect(probe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(service('rollflow-codec').spec.ports[0]!.port).toBe(codecPort);
  });
});

// ---- both ------------------------------------------------------------------------

/** `--option key=value` pairs of a serve command line, values read as YAML, as the server reads them. */
function serveOptions(args: string[]): Record<string, unknown> {
  const pairs = args.flatMap((a, i) => (args[i - 1] === '--option' ? [a.split('=')] : []));
  return Object.fromEntries(pairs.map(([key, ...value]) => [key!, parse(value.join('='))]));
}

describe('deploy/ engine options', () => {
  it('every --option the units and the manifests pass is one its role and backend accept (rollflow_engines check)', () => {
    const engines = ROLES.flatMap((role) => {
      const vars = readEnvFile(`engine-${role}.env`);
      const k8s = container(`rollflow-engine-${role}`).command;
      return [
        { path: `deploy/systemd/engine-${role}.env`, role, backend: vars.ROLLFLOW_ENGINE_BACKEND!, options: serveOptions(vars.ROLLFLOW_ENGINE_ARGS!.split(' ')) },
        { path: `deploy/k8s/engine-${role}.yaml`, role, backend: argAfter(k8s, '--backend')!, options: serveOptions(k8s) },
      ];
    });
    expect(engines.filter((e) => e.options.device === 'cuda').length).toBe(4);
    // device=cuda is refused where torch sees no GPU (the test machines): checked as cpu.
    type Engine = { path: string; role: string; backend: string; options: Record<string, unknown> };
    const request = { engines: engines.map((e): Engine => ({ ...e, options: { ...e.options, ...(e.options.device === 'cuda' ? { device: 'cpu' } : {}) } })), envs: [], verifiers: [], other_env_types: [] };
    const check = (req: typeof request) => spawnSync(pythonBin(), ['-m', 'rollflow_engines', 'check'], { input: JSON.stringify(req), env: pythonEnginesEnv(), encoding: 'utf8' });
    const r = check(request);
    expect(r.stdout || r.stderr).toBe('{"ok": true, "problems": []}\n');
    const misspelt = check({ ...request, engines: [{ ...request.engines[0]!, options: { max_batchs: 64 } }] });
    expect(misspelt.status).toBe(1);
    expect(misspelt.stdout).toContain('max_batchs');
  });
});
