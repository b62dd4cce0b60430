/**
 * An API key and a TLS server name, end to end. A front stands where Temporal
 * Cloud would (helpers/tls-proxy.ts, startApiKeyFront): TLS with a
 * certificate for `temporal.internal` only, and every gRPC call refused
 * (UNAUTHENTICATED) unless it carries the API key; calls with the key go on
 * to a plaintext dev server. The worker (the SDK's Rust core) and the CLI
 * (grpc-js) reach Temporal only through it, at 127.0.0.1: a run completes
 * only if both sent the key and accepted the certificate by its name. Then
 * each part is taken away, or overridden by an environment variable, and
 * the CLI says in one line what is wrong.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ROOT, TestDevServer, type ScriptResult } from './helpers/dev-server';
import { makeCerts, NAMED_SERVER, startApiKeyFront, type ApiKeyFront, type Certs } from './helpers/tls-proxy';

let server: TestDevServer;
let certs: Certs;
let front: ApiKeyFront;
let config: string;
let ports: number[];
const apiKey = randomBytes(16).toString('hex');

/** The run config, its `tls` and `api_key_file` lines given (the broken variants change them). */
const yaml = (security: string) => `
exp_name: key
max_steps: 2
rollout_batch_size: 2
num_return_sequences_in_group: 2
is_num_return_sequences_expand: true
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 8 }
run_dir: ${server.stateDir}/run
temporal:
  address: "${front.address}"
  embedded: false
  task_queue: api-key
${security}
engines:
  inference: [{ url: "http://127.0.0.1:${ports[0]}", backend: sim }]
  trainer: { url: "http://127.0.0.1:${ports[1]}", backend: sim }
  env: { url: "http://127.0.0.1:${ports[2]}" }
`;
const configWith = (name: string, security: string) => {
  const file = path.join(server.stateDir, `${name}.yaml`);
  writeFileSync(file, yaml(security));
  return file;
};
const keyFile = (name: string, key: string) => {
  const file = path.join(server.stateDir, name);
  writeFileSync(file, `${key}\n`);
  return file;
};

/** bin/rollflow against the test's server, with extra environment variables. */
function rollflow(args: string[], env: NodeJS.ProcessEnv = {}): ScriptResult {
  const r = spawnSync(path.join(ROOT, 'bin/rollflow'), args, { env: { ...server.env, ROLLFLOW_LOG_FORMAT: 'json', ...env }, encoding: 'utf8', timeout: 300_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  server = await TestDevServer.create();
  server.start();
  certs = makeCerts();
  front = await startApiKeyFront(certs, { port: server.port }, apiKey);
  ports = [await freePort(), await freePort(), await freePort()];
  config = configWith('keyed', `  tls: { ca_file: "${certs.ca}", server_name: ${NAMED_SERVER} }\n  api_key_file: "${keyFile('api.key', apiKey)}"`);
  const up = rollflow(['dev', 'up', config]);
  expect(up.status, up.stderr).toBe(0);
});

afterAll(async () => {
  if (config) rollflow(['dev', 'down', config]);
  await front?.close();
  server?.stop();
});

/** A CLI failure: exit 1, one line on stderr, matching `pattern`. */
function expectOneLineFailure(r: ScriptResult, pattern: RegExp): void {
  expect(r.status, r.stderr).toBe(1);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(pattern);
}

describe('an API key and a TLS server name', () => {
  it('a run completes with the worker and the CLI sending the API key to a server known by name only', () => {
    const r = rollflow(['run', config, '--wait', '--run-id', 'key']);
    expect(r.status, r.stderr).toBe(0);
    const calls = front.calls();
    expect(calls.filter((c) => !c.accepted)).toEqual([]);
    // Both gRPC stacks sent the key: the worker's (the SDK's Rust core: tonic) and the CLI's (grpc-js).
    const agents = new Set(calls.map((c) => c.userAgent.split('/')[0]));
    expect(agents).toContain('tonic');
    expect(agents).toContain('grpc-node-js');
    expect(calls.some((c) => c.method.endsWith('/PollWorkflowTaskQueue') && c.userAgent.startsWith('tonic/'))).toBe(true);
    expect(calls.some((c) => c.method.endsWith('/StartWorkflowExecution') && c.userAgent.startsWith('grpc-node-js/'))).toBe(true);
  });

  it('without the key, or a wrong one from TEMPORAL_API_KEY, the server refuses; the CLI and a worker say so in one line', () => {
    const noKeyConfig = configWith('no-key', `  tls: { ca_file: "${certs.ca}", server_name: ${NAMED_SERVER} }`);
    const refusedBefore = front.calls().filter((c) => !c.accepted).length;
    expectOneLineFailure(
      rollflow(['status', 'key', '--config', noKeyConfig]),
      /^rollflow: Temporal at 127\.0\.0\.1:\d+ refused the credentials \(TLS with the CA of temporal\.tls\.ca_file \([^)]+\)\): UNAUTHENTICATED: no API key \(authorization header\) given; give an API key: temporal\.api_key_file or TEMPORAL_API_KEY$/,
    );
    // The environment wins over the config's (right) key file.
    expectOneLineFailure(
      rollflow(['status', 'key', '--config', config], { TEMPORAL_API_KEY: 'not-the-key' }),
      /refused the credentials \(.*an API key from TEMPORAL_API_KEY\): UNAUTHENTICATED: invalid API key; check the API key \(TEMPORAL_API_KEY\)$/,
    );
    // A worker (its own gRPC stack) without the key does not start.
    expectOneLineFailure(rollflow(['worker', noKeyConfig]), /^rollflow: Temporal at 127\.0\.0\.1:\d+ refused the credentials \(.*\): .*no API key \(authorization header\) given.*; give an API key: temporal\.api_key_file or TEMPORAL_API_KEY$/);
    expect(front.calls().filter((c) => !c.accepted).length).toBeGreaterThanOrEqual(refusedBefore + 3);
  });

  it('without the server name the certificate is refused, naming the fix; TEMPORAL_TLS_SERVER_NAME supplies it', () => {
    const noName = configWith('no-name', `  tls: { ca_file: "${certs.ca}" }\n  api_key_file: "${keyFile('api.key', apiKey)}"`);
    expectOneLineFailure(
      rollflow(['status', 'key', '--config', noName]),
      /^rollflow: no TLS connection to Temporal at 127\.0\.0\.1:\d+ \(.*\): ERR_TLS_CERT_ALTNAME_INVALID: .*127\.0\.0\.1.*; the server's certificate is for another name: set temporal\.tls\.server_name \(or TEMPORAL_TLS_SERVER_NAME\)/,
    );
    const named = rollflow(['status', 'key', '--config', noName], { TEMPORAL_TLS_SERVER_NAME: NAMED_SERVER });
    expect(named.status, named.stderr).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ runId: 'key', step: 2, maxSteps: 2 });
  });
});
