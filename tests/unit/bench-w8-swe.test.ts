// W8 on the swe env (src/bench/live/w8-swe.ts): its run config (the env, the oracle reading the same dataset, the
// dataset's size), the throughput figures and where a sweep of episodes in flight stops growing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/configs';
import { parseLiveOptions } from '../../src/bench/live';
import { w8RunConfig } from '../../src/bench/live/w8-bench';
import { jsonlInstances, saturation, throughput } from '../../src/bench/live/w8-swe';

function dataset(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'w8-swe-')), 'instances.jsonl');
  writeFileSync(file, ['{"instance_id": "a", "split": "train"}', '', '{"instance_id": "b", "split": "test"}', '{"instance_id": "c", "split": "train"}', ''].join('\n'));
  return file;
}

describe('W8 on the swe env', () => {
  it('runs the swe env on the dataset, with the oracle given the same file and the noise; the seeds walk its rows', () => {
    const file = dataset();
    const o = parseLiveOptions('w8', { env: 'swe', instances: file, groups: 2, group_size: 1, failed_edit_prob: 0.5, actions: 'tool_calls' });
    const { config } = parseConfig(w8RunConfig(o, 'env_async', '/tmp/runs', '/tmp/sandboxes'), 'w8', '/work');
    expect(config.custom_envs.swe).toMatchObject({ env_type: 'swe', env_calls: 'activity', max_tokens_per_step: 4096 });
    expect(config.custom_envs.swe!.env_config).toMatchObject({ instances: file, actions: 'tool_calls', source: { kind: 'local' } });
    expect((config.custom_envs.swe!.env_config as { source: { repo_path: string } }).source.repo_path).toMatch(/^\/.*\.cache\/swe-mined\/repos\/\{instance_id\}$/);
    expect(config.engines.inference[0]!.options).toMatchObject({ sim: { policy: { kind: 'swe_oracle', instances: file, failed_edit_prob: 0.5, wrong_file_prob: 0 } } });
    expect(config.dataset_size).toBe(3);
    expect(w8RunConfig({ ...o, split: 'train' }, 'env_async', '/r', '/s').dataset_size).toBe(2);
  });

  it('keeps swe_lite the default, and refuses env swe without a dataset', () => {
    const o = parseLiveOptions('w8', {});
    expect(w8RunConfig(o, 'lockstep', '/r', '/s').custom_envs!.swe).toMatchObject({ env_type: 'swe_lite', max_tokens_per_step: 512 });
    expect(() => w8RunConfig(parseLiveOptions('w8', { env: 'swe' }), 'lockstep', '/r', '/s')).toThrow('needs --set instances');
    expect(() => parseLiveOptions('w8', { env: 'swe_bench' })).toThrow('w8.env');
  });

  it('counts a JSON-lines dataset\'s rows (of a split); a parquet file needs its size given', () => {
    expect([jsonlInstances(dataset()), jsonlInstances(dataset(), 'test'), jsonlInstances(dataset(), 'x')]).toEqual([3, 1, 0]);
    expect(() => jsonlInstances('/x/data.parquet')).toThrow('dataset_size');
  });

  it('gives episodes per minute per core, and the size where throughput stopped growing', () => {
    const t = throughput(30, 60);
    expect(t.episodes_per_min).toBe(30);
    expect(t.episodes_per_min_per_core).toBeCloseTo(30 / t.cores, 2);
    expect(throughput(3, null).episodes_per_min).toBeNull();
    const at = (pairs: [number, number | null][]) => saturation(pairs.map(([in_flight, episodes_per_min]) => ({ in_flight, episodes_per_min })));
    expect(at([[1, 10], [2, 19], [4, 30], [8, 31], [16, 29]])).toBe(4);
    expect(at([[1, 10], [2, 20], [4, 40]])).toBeNull(); // still growing
    expect(at([[4, 30], [1, 10], [8, null], [2, 29]])).toBe(2); // unsorted, a failed size left out
  });
});
