// A python env's first-turn messages (ResetResponse.messages: swe_lite's tools message with actions: tool_calls)
// become EnvReset.messages, which turn 0 sends in place of the observation; a reset without them has no such key.
import { describe, expect, it } from 'vitest';
import type { EnvClient } from '../../src/gpu-bridge';
import { ResetResponseSchema, type ResetResponse } from '../../src/gpu-bridge/contracts/env';
import { pythonEnv } from '../../src/envs';

const answering = (response: ResetResponse) => ({ reset: async () => ResetResponseSchema.parse(response) }) as unknown as EnvClient;
const base = { session: 's0', observation: 'Task t1-002. Issue: …\nCall edit, then submit.', info: {}, on_env_loss: 'restart' as const, step_timeout_s: 160 };

describe('python env first-turn messages', () => {
  it('passes the messages of a reset on to the episode', async () => {
    const messages = [
      { role: 'tools', content: '[{"type": "function", "function": {"name": "submit", "parameters": {}}}]' },
      { role: 'user', content: base.observation },
    ];
    const env = pythonEnv(answering({ ...base, messages }), 'swe_lite');
    const reset = await env.reset(env.parseConfig({ actions: 'tool_calls' }), 0);
    expect(reset.messages).toEqual(messages);
    expect(reset.observation).toBe(base.observation);
  });

  it('sends none when the server sends none', async () => {
    const env = pythonEnv(answering(base), 'swe_lite');
    const reset = await env.reset(env.parseConfig({}), 0);
    expect('messages' in reset).toBe(false);
  });
});
