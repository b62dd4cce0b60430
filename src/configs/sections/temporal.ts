/** temporal (rollflow): the connection to the Temporal server, and the worker's limits. */
import { z } from 'zod';
import { count } from './fields';

/** Default activity and local-activity slots of one worker (temporal.worker.*); the bench sizes its workers by it. */
export const WORKER_SLOTS = 2000;

export const TemporalSchema = z
  .strictObject({
    address: z.string().regex(/^[^:\s]+:\d{1,5}$/, 'host:port').default('127.0.0.1:7233').describe('Temporal frontend gRPC address, host:port.'),
    namespace: z.string().min(1).default('default').describe('Temporal namespace the run lives in.'),
    task_queue: z.string().min(1).default('rollflow').describe('Task queue rollflow workers poll.'),
    route_by_role: z
      .boolean()
      .default(false)
      .describe('(rollflow) Schedule the calls of each engine role on its own task queue, <task_queue>-inference, -trainer and -env, which only workers started beside such an engine poll (`rollflow worker --role`), so hosts that share no disk each serve the engines they run; workflows, the store, weight syncs and metrics stay on task_queue. A worker without --role polls every queue. Env calls are then activities (env_calls local is refused). docs/scaling.md.'),
    embedded: z.boolean().default(true).describe('Start the embedded dev server (temporal/dev-server.sh) when the address is loopback and nothing answers.'),
    ui_url: z.url().default('http://127.0.0.1:8233').describe('Temporal UI base URL, used in printed links; its port is the embedded UI port.'),
    codec_url: z
      .url({ protocol: /^http$/ })
      .optional()
      .describe('(rollflow) The codec server the Temporal UI calls to show payloads (`rollflow codec-server`): it decrypts encrypted payloads and adds each trajectory result\'s transcript from the sample store. `rollflow dev up` starts it on this loopback URL and the embedded dev server\'s UI uses it (a dev server already running keeps its settings until `dev down`). Unset: no codec server.'),
    tls: z
      .strictObject({
        ca_file: z.string().min(1).optional().describe('PEM file of the CA that signed the server\'s certificate (default: the system\'s CAs). Env TEMPORAL_TLS_CA_PATH overrides it.'),
        cert_file: z.string().min(1).optional().describe('PEM file of this client\'s certificate, for mTLS (with key_file). Env TEMPORAL_TLS_CERT_PATH.'),
        key_file: z.string().min(1).optional().describe('PEM file of this client\'s private key, for mTLS (with cert_file). Env TEMPORAL_TLS_KEY_PATH.'),
        server_name: z.string().min(1).optional().describe('The name to check the server\'s certificate against, when it is not the address\'s host. Env TEMPORAL_TLS_SERVER_NAME.'),
      })
      .refine((t) => (t.cert_file === undefined) === (t.key_file === undefined), { message: 'cert_file and key_file go together (mTLS needs both)', path: ['cert_file'] })
      .optional()
      .describe('(rollflow) Connect to Temporal over TLS (present = on), for the CLI, the client library and workers; files only, never key material in the config. Any TEMPORAL_TLS_* variable also turns TLS on.'),
    api_key_file: z.string().min(1).optional().describe('(rollflow) A file holding the API key sent to Temporal (Temporal Cloud); env TEMPORAL_API_KEY (the key itself) overrides it. An API key turns TLS on.'),
    encryption: z
      .strictObject({
        key_file: z.string().min(1).optional().describe('A file holding the 256-bit key, as 64 hex digits or base64.'),
        key_env: z.string().min(1).optional().describe('The name of an environment variable holding the key (64 hex digits or base64).'),
      })
      .refine((e) => (e.key_file === undefined) !== (e.key_env === undefined), { message: 'exactly one of key_file and key_env' })
      .optional()
      .describe('(rollflow) Encrypt every payload (prompts, responses, results) with AES-256-GCM before it reaches Temporal; workers, the CLI and the codec server (temporal.codec_url) decrypt them. Every process of a run needs the same key.'),
    worker: z
      .strictObject({
        max_concurrent_activities: count(1).default(WORKER_SLOTS).describe('Activities one worker runs at once; rollflow\'s wait on engines and envs (I/O, not CPU), and a sleeping env step holds a slot, so this is far above the SDK\'s 100.'),
        max_concurrent_local_activities: count(1).default(WORKER_SLOTS).describe('Local activities one worker runs at once (env calls with env_calls local or auto); the SDK\'s default of 100 would queue the env steps of a large batch.'),
        max_concurrent_workflow_tasks: count(2).optional().describe('Workflow tasks one worker runs at once (SDK default when unset).'),
        max_cached_workflows: count(0).optional().describe('Workflows kept in a worker\'s cache between tasks (SDK default when unset).'),
        non_sticky_poll_ratio: z
          .number()
          .gt(0)
          .lte(1)
          .optional()
          .describe('Share of a worker\'s workflow-task polls spent on its task queue rather than its sticky queue (SDK default 0.2 when unset: 2 of 10 polls). A new workflow\'s first task comes from the task queue, so a burst of starts queues there; 1 (10 polls there, 1 on the sticky queue) cut W7\'s mean orchestration delay at 256 in flight from 4.9 to 4.0 s (bench/results/w7.md, "Where the overhead goes").'),
        max_result_bytes: count(1024)
          .default(1024 * 1024)
          .describe('Largest env reset/step or generation result (its JSON: observation, generated text) a worker hands to Temporal; a larger one fails its group with PayloadTooLargeError instead of a payload the server rejects (above 2 MB) and a retry without end.'),
        metrics_address: z
          .union([z.string().regex(/^[^:\s]+:([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/, 'host:port, port 1-65535'), z.literal('off')])
          .default('127.0.0.1:9464')
          .describe('Where a worker serves Prometheus metrics (/metrics: the run metrics by run id, the process\'s, and the Temporal SDK runtime\'s), host:port, or off. A taken port (a second worker on the host) is a warning, not a failure.'),
        heartbeat_partial_tokens: z
          .boolean()
          .default(true)
          .describe('Each generation heartbeat carries the tokens generated so far, so a generation retried after a crash (of this worker or its server) continues from them; false sends empty beats and a retry starts over from the prompt (it saves the beats\' payload; make bench durability measures both).'),
      })
      .prefault({})
      .describe('Worker capacity.'),
  })
  .prefault({})
  .describe('(rollflow) Connection to the Temporal server.');
