// `rollflow chaos` refuses bad flags and configs it cannot check, naming the flag or key, before anything starts.
import { describe, expect, it } from 'vitest';
import { checkChaosConfig } from '../../src/chaos';
import { exportDirOf } from '../../src/chaos/exactly-once';
import { parseChaosFlags } from '../../src/cli/chaos';
import { parseConfig } from '../../src/configs';

const flags = { faults: 'worker,temporal', signals: 'kill,stop', every: '60', seed: '0', order: 'rotate', timeout: '3600' };

describe('rollflow chaos options', () => {
  it('parses good flags; --max-faults absent means no limit', () => {
    expect(parseChaosFlags(flags)).toEqual({ kinds: ['worker', 'temporal'], signals: ['kill', 'stop'], everyS: 60, seed: 0, order: 'rotate', timeoutS: 3600, maxFaults: Infinity });
    expect(parseChaosFlags({ ...flags, maxFaults: '2', order: 'mixed' })).toMatchObject({ maxFaults: 2, order: 'mixed' });
    expect(parseChaosFlags({ ...flags, faults: 'trainer,corrupt,disk', diskMb: '256' })).toMatchObject({ kinds: ['trainer', 'corrupt', 'disk'], diskMb: 256 });
  });

  it('names every bad flag, its value and what was expected', () => {
    expect(() => parseChaosFlags({ faults: 'worker,netsplit', signals: 'kill,hup', every: '0', seed: '-1', order: 'random', timeout: 'x', maxFaults: '1.5', diskMb: '8' })).toThrow(
      [
        'invalid config chaos options:',
        '  --faults: got "netsplit"; a comma-separated list of worker, temporal, inference, trainer, env, corrupt, disk, partition',
        '  --signals: got "hup"; a comma-separated list of kill, stop',
        '  --every: got "0"; a number of seconds > 0',
        '  --timeout: got "x"; a number of seconds > 0',
        '  --seed: got "-1"; an integer ≥ 0',
        '  --max-faults: got "1.5"; an integer ≥ 0',
        '  --disk-mb: got "8"; an integer number of MiB ≥ 16',
        '  --order: got "random"; rotate or mixed',
      ].join('\n'),
    );
  });

  it('refuses lockstep rollout and a kind the config does not launch', () => {
    const config = (raw: Record<string, unknown>) => parseConfig(raw, 'test.yaml');
    expect(() => checkChaosConfig(config({ rollout_mode: 'lockstep' }), ['worker'])).toThrow('rollout_mode: got "lockstep"; env_async (the chaos checks account for group workflows)');
    const noTrainer = config({ engines: { trainer: { url: 'http://127.0.0.1:1', launch: false } } });
    expect(() => checkChaosConfig(noTrainer, ['worker', 'trainer'])).toThrow('--faults: got "trainer"; a kind the stack launches; the config launches no trainer server (engines.trainer.launch)');
    expect(() => checkChaosConfig(noTrainer, ['worker', 'temporal', 'inference', 'env'])).not.toThrow();
    expect(() => checkChaosConfig(noTrainer, ['worker', 'corrupt'])).toThrow('--faults: got "corrupt"; a kind the stack launches; the config launches no trainer server (engines.trainer.launch)');
    expect(() => checkChaosConfig(config({}), ['worker', 'disk'])).toThrow('--disk-mb: got (missing); the size in MiB of the tmpfs mounted over the run directory, which a disk fault fills (needed with --faults disk)');
    expect(() => checkChaosConfig(config({}), ['worker', 'disk', 'corrupt'], 64)).not.toThrow();
    expect(() => checkChaosConfig(config({}), ['partition'])).toThrow('--faults: got "partition"; a launched engine whose listen address differs from its url (engines.*.listen)');
    expect(() => checkChaosConfig(config({ engines: { env: { url: 'http://127.0.0.1:8501', listen: 'http://127.0.0.1:18501' } } }), ['partition'])).not.toThrow();
    const cluster = config({ temporal: { address: '127.0.0.1:7333', embedded: false } });
    expect(() => checkChaosConfig(cluster, ['temporal'])).toThrow('--faults: got "temporal"; a kind the stack launches; the config launches no temporal server (temporal.embedded: a Temporal cluster is not supervised by rollflow)');
  });

  it('the exactly-once checks read weights files from a directory, and refuse a trainer that exports to a bucket by name', () => {
    const config = (raw: Record<string, unknown>) => parseConfig(raw, 'test.yaml');
    expect(exportDirOf(config({ engines: { trainer: { url: 'http://127.0.0.1:8401', options: { export_dir: '/disk/weights' } } } }))).toBe('/disk/weights');
    expect(() => exportDirOf(config({ sample_store: { kind: 's3', bucket: 'rollflow' } }))).toThrow(
      "exactly-once checks read the weights exports' files from a directory; this trainer exports to the bucket s3://rollflow/weights/engine-trainer-8401",
    );
  });
});
