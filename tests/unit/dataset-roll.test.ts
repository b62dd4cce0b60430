// ROLL's RLVR JSON lines (preset: roll): `messages` as ROLL writes it, a JSON string of chat messages (or the
// list itself), read before `prompt`; the answer in ground_truth, the domain its tag, the id `id`. And chat
// messages checked one by one, so a bad one is a malformed row reported by line.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataset } from '../../src/envs/dataset';
import { checkMessages, renderMessages } from '../../src/envs/dataset-messages';
import type { EnvClient } from '../../src/gpu-bridge';

const dir = mkdtempSync(path.join(tmpdir(), 'rollflow-roll-'));
const sent: Record<string, unknown>[] = [];
const env = dataset({ reward: async (req: Record<string, unknown>) => (sent.push(req), { reward: 1, info: {} }) } as unknown as EnvClient);
const SYSTEM = { role: 'system', content: 'You are a math assistant.' };

/** A row as ROLL's docs show it: messages a JSON string, a plain prompt beside it, tag and ground_truth. */
const rollRow = (id: string, question: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, source: 'gsm8k', difficulty: 0, prompt: question, messages: JSON.stringify([SYSTEM, { role: 'user', content: question }]), ground_truth: '7', case_type: '', test_case_function: '', test_cases: '', tag: 'gsm8k', ...extra });

function file(name: string, lines: string[]): string {
  const p = path.join(dir, name);
  writeFileSync(p, lines.join('\n'));
  return p;
}

describe('ROLL jsonl rows (preset: roll)', () => {
  it('sends messages as chat messages, scores against ground_truth, routes by tag', async () => {
    const p = file('roll.jsonl', [rollRow('0', '3+4='), rollRow('1', 'list', { messages: [{ role: 'user', content: 'a list, not a string' }], tag: 'math_rule' })]);
    const config = env.parseConfig({ path: p, preset: 'roll' });
    expect(await env.index(config)).toEqual({ size: 2, malformed: 0, skipped: {}, problems: [] });
    const first = await env.reset(config, 0);
    expect(first.messages).toEqual([SYSTEM, { role: 'user', content: '3+4=' }]);
    expect(first.observation).toBe('system: You are a math assistant.\n\nuser: 3+4=');
    expect((await env.reset(config, 1)).observation).toBe('a list, not a string');
    sent.length = 0;
    await env.step(config, first.state, '7');
    expect([sent[0]!.reference, sent[0]!.domain]).toEqual(['7', 'gsm8k']);
  });

  it('a row without messages serves its prompt (as ROLL falls back to prompt); a bad messages field is a malformed row', async () => {
    const lines = [
      JSON.stringify({ id: 'a', prompt: 'plain', ground_truth: '1', tag: 'x' }),
      rollRow('b', 'q', { messages: '[{"role": "user", "content": "unclosed"' }),
      rollRow('c', 'q', { messages: JSON.stringify([{ role: 'user' }]) }),
      rollRow('d', 'q', { messages: JSON.stringify({ role: 'user', content: 'an object' }) }),
      rollRow('a', 'again'),
      JSON.stringify({ id: 'e', ground_truth: '1' }),
    ];
    const config = env.parseConfig({ path: file('bad.jsonl', lines), preset: 'roll' });
    const index = await env.index(config);
    expect((await env.reset(config, 0)).observation).toBe('plain');
    expect(index.size).toBe(1);
    expect(index.skipped).toEqual({ bad_messages: 3, duplicate_id: 1, missing_field: 1 });
    expect(index.problems).toEqual([
      expect.stringMatching(/^line 2: prompt messages \(messages\): a string that is not a JSON list of messages \(.+\)$/),
      'line 3: prompt messages (messages): message 0 (user) needs a string content, got nothing',
      'line 4: prompt messages (messages): expected a list of {role, content}, got an object',
      'line 5: duplicate id "a" (first on line 1); the first row is kept',
      'line 6: needs string fields "messages" or "prompt" and "ground_truth"',
    ]);
  });

  it('without the preset, the same keys set one by one do the same; a text prompt_key value is never parsed as JSON', async () => {
    const p = file('keys.jsonl', [rollRow('0', '3+4=', { tag: 'math_rule' })]);
    const byKeys = env.parseConfig({ path: p, messages_key: 'messages', answer_key: 'ground_truth', domain_key: 'tag' });
    expect((await env.reset(byKeys, 0)).messages).toEqual([SYSTEM, { role: 'user', content: '3+4=' }]);
    // prompt_key on the JSON string: text, sent as one user message
    const asText = env.parseConfig({ path: p, prompt_key: 'messages', answer_key: 'ground_truth' });
    const reset = await env.reset(asText, 0);
    expect([reset.messages, reset.observation.startsWith('[{"role"')]).toEqual([undefined, true]);
    // a key set with the preset wins over it
    const overridden = env.parseConfig({ path: p, preset: 'roll', domain_key: 'source' });
    sent.length = 0;
    await env.step(overridden, (await env.reset(overridden, 0)).state, 'r');
    expect(sent[0]!.domain).toBe('gsm8k'); // the row's source field, not its tag
  });
});

describe('chat messages', () => {
  it('keeps role and content, drops fields that are null, refuses any other value', () => {
    expect(checkMessages([{ role: 'system', content: 's', tool_calls: null }, { role: 'user', content: '' }])).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: '' },
    ]);
    expect(checkMessages('[]')).toEqual({ why: 'expected a list of {role, content}, got "[]"' });
    expect(checkMessages([['user', 'x']])).toEqual({ why: 'message 0 is a list, not an object' });
    expect(checkMessages([{ role: 'user', content: { text: 'x' } }])).toEqual({ why: 'message 0 (user) needs a string content, got an object' });
  });

  it('renders one user message as its text, a conversation as role: content paragraphs', () => {
    expect(renderMessages([{ role: 'user', content: 'q' }])).toBe('q');
    expect(renderMessages([{ role: 'system', content: 's' }, { role: 'user', content: 'q' }])).toBe('system: s\n\nuser: q');
    expect(renderMessages([{ role: 'assistant', content: 'a' }])).toBe('assistant: a');
  });
});
