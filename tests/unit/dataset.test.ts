// The dataset env's file parsing: valid rows in file order, malformed rows
// reported by line and counted, never fatal.
import { describe, expect, it } from 'vitest';
import { dataset, parseRows } from '../../src/envs/dataset';
import type { EnvClient } from '../../src/gpu-bridge';

const config = dataset({} as EnvClient).parseConfig({ path: '/data.jsonl' });

describe('dataset rows', () => {
  it('keeps valid rows in order, with the default domain where a row has none', () => {
    const { rows, index } = parseRows('{"prompt": "a", "answer": "1"}\n\n{"prompt": "b", "answer": 2, "domain": "code"}\n', config);
    expect(rows).toEqual([
      { prompt: 'a', answer: '1', domain: 'math' },
      { prompt: 'b', answer: '2', domain: 'code' },
    ]);
    expect(index).toEqual({ size: 2, malformed: 0, problems: [] });
  });

  it('reports and counts malformed rows by line, and skips them', () => {
    const text = ['{"prompt": "a", "answer": "1"}', '{oops', '[1, 2]', '{"prompt": "c"}', '{"prompt": {"x": 1}, "answer": "1"}'].join('\n');
    const { rows, index } = parseRows(text, config);
    expect(rows.map((r) => r.prompt)).toEqual(['a']);
    expect(index.size).toBe(1);
    expect(index.malformed).toBe(4);
    expect(index.problems.map((p) => p.split(':')[0])).toEqual(['line 2', 'line 3', 'line 4', 'line 5']);
    expect(index.problems[2]).toBe('line 4: needs string fields "prompt" and "answer"');
  });

  it('reads the configured keys', () => {
    const custom = dataset({} as EnvClient).parseConfig({ path: '/d', prompt_key: 'question', answer_key: 'solution' });
    expect(parseRows('{"question": "q", "solution": "s"}', custom).rows).toEqual([{ prompt: 'q', answer: 's', domain: 'math' }]);
  });

  it('names a bad config key', () => {
    expect(() => dataset({} as EnvClient).parseConfig({ path: '/d', promt_key: 'x' })).toThrow(/promt_key/);
  });
});
