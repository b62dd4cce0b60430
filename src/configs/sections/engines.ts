/** engines (rollflow): where the python-engines servers are, and whether rollflow starts them. */
import { z } from 'zod';

const isLoopbackHost = (host: string) => ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host);

function endpoint<B extends readonly [string, ...string[]]>(backends: B, defaultUrl: string, defaultBackend: B[number]) {
  return endpointShape(backends, defaultBackend).prefault({ url: defaultUrl });
}

/** An endpoint with no default of its own: absent unless configured (engines.judge). */
function endpointShape<B extends readonly [string, ...string[]]>(backends: B, defaultBackend: B[number]) {
  return z
    .strictObject({
      url: z.url({ protocol: /^https?$/ }).describe('Base URL of the server, e.g. http://127.0.0.1:8301.'),
      backend: z.enum(backends).default(defaultBackend as never).describe(`Implementation behind the role: ${backends.join(' | ')}.`),
      launch: z.boolean().default(true).describe('Start this server with `rollflow dev up` (loopback URLs only); false for a server you run yourself.'),
      listen: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe('Where a launched server listens, when the run reaches it at `url` through something in between (a proxy, a load balancer, the chaos harness\'s partition proxy): the stack starts, probes and supervises the server here, the worker calls `url`. Default: `url`.'),
      options: z.record(z.string(), z.unknown()).default({}).describe('Role/backend settings passed to a launched server as --option key=value (see python-engines).'),
    })
    .superRefine((e, ctx) => {
      if (e.launch && URL.canParse(e.url) && !isLoopbackHost(new URL(e.url).hostname)) { // a bad url is reported by url's own check
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'launch: true needs a loopback URL (127.0.0.1, localhost, ::1); set launch: false for a remote server' });
      }
      if (e.listen !== undefined && !e.launch) {
        ctx.addIssue({ code: 'custom', path: ['listen'], message: 'listen is where rollflow starts a server it launches; with launch: false rollflow starts nothing, so leave listen out and give the server\'s address as url' });
      } else if (e.listen !== undefined && URL.canParse(e.listen) && !isLoopbackHost(new URL(e.listen).hostname)) {
        ctx.addIssue({ code: 'custom', path: ['listen'], message: 'a launched server listens on a loopback address (127.0.0.1, localhost, ::1)' });
      }
    });
}

export const EnginesSchema = z
  .strictObject({
    inference: z
      .array(endpoint(['sim', 'torch', 'vllm'] as const, 'http://127.0.0.1:8301', 'sim'))
      .min(1)
      .prefault([{ url: 'http://127.0.0.1:8301' }])
      .describe('Inference servers (LLMProxy workers); generate calls are balanced across them.'),
    trainer: endpoint(['sim', 'torch', 'megatron'] as const, 'http://127.0.0.1:8401', 'sim').describe('The trainer server.'),
    env: endpoint(['python'] as const, 'http://127.0.0.1:8501', 'python').describe('The env/reward server for Python-side envs and verifiers.'),
    judge: endpointShape(['sim', 'torch', 'vllm'] as const, 'torch')
      .optional()
      .describe('An inference server that grades responses for the llm_judge verifier (point its verifier_config.url here). `rollflow dev up` starts it like the others, with only its own options (set options.model: the policy\'s model settings never apply to it); it never generates for the run.'),
  })
  .prefault({})
  .describe('(rollflow) The python-engines servers this run uses.');
