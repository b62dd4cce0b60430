import { describe, expect, it } from 'vitest';
import { cut, DETAIL_TEXT_CHARS, type RunRow, quote, recordEnvStep, recordReset, recordReward, recordTurn, runDetails, transcriptDetails } from '../../src/workflows/metadata';

describe('UI metadata text (workflows/metadata.ts)', () => {
  it('cuts long text with a marker that counts the rest and says where it is', () => {
    expect(cut('abcdef', 6, 'x')).toBe('abcdef');
    expect(cut('abcdefgh', 3, 'the event history')).toBe('abc… [cut: 5 more chars; full text: the event history]');
    expect(quote('  run\n  ls -la ')).toBe('"run ls -la"');
    expect(quote('y'.repeat(100))).toBe(JSON.stringify(`${'y'.repeat(48)}…`));
  });

  it('a transcript shows the prompt, each response and observation, the reward and the versions; fences in the text cannot break out', () => {
    recordReset('e0-p7-s0', 'swe_lite', 'fix the bug');
    recordTurn('e0-p7-s0', { action: 'run ```ls```', tokens: 4, versions: [3, 4] });
    recordEnvStep('e0-p7-s0', { observation: 'x'.repeat(DETAIL_TEXT_CHARS + 10), reward: 0, done: false });
    recordTurn('e0-p7-s0', { action: 'submit', tokens: 1, versions: [4] });
    recordEnvStep('e0-p7-s0', { observation: 'tests pass', reward: 1, done: true });
    recordReward('e0-p7-s0', 1);
    const md = transcriptDetails();
    expect(md.startsWith('### e0-p7-s0 · swe_lite · reward **1** · 2 turns · v3→v4')).toBe(true);
    expect(md).toContain('**Prompt**\n\n```text\nfix the bug\n```');
    expect(md).toContain('**Response, turn 0** · 4 tokens · v3→v4');
    expect(md).toContain('run `\u200b``ls`\u200b``'); // no bare ``` inside a block
    expect(md).toContain("… [cut: 10 more chars; full text: the result of turn 0's envStep call in the event history]");
    expect(md).toContain('**Env, turn 1** · reward 1 · done\n\n```text\ntests pass\n```');
  });

  it('keeps the texts of 8 trajectories per workflow and counts the others', () => {
    for (let i = 0; i < 12; i++) recordReset(`e1-p${i}-s0`, 'arith', `prompt ${i}`);
    const md = transcriptDetails();
    // One transcript from the test above plus 7 of these; the other 5 are counted, their text not kept.
    expect(md.match(/^### /gm)).toHaveLength(8);
    expect(md).toContain('_5 more trajectories in this workflow are not shown._');
  });

  it('the run table lists the newest step first with validation, staleness, in flight and suspension', () => {
    const row = (step: number): RunRow => ({ step, maxSteps: 20, version: step, reward: 0.25 * step, stalenessMean: 0.5, stalenessMax: 1, inFlight: 8, suspended: false });
    const rows = Array.from({ length: 12 }, (_, i) => row(i + 1));
    rows[11] = { ...row(12), validation: { steps: 10, rewardMean: 0.6 }, suspended: true };
    const md = runDetails(rows, { inFlight: 16, suspended: true });
    const lines = md.split('\n');
    expect(lines[0]).toBe('**Now:** 16 samples in flight · **suspended**');
    expect(lines[4]).toBe('| 12 of 20 | v12 | 3 | 0.600 (after step 10) | 0.500 / 1 | 8 | yes |');
    expect(lines.at(-3)).toBe('| 3 of 20 | v3 | 0.750 | – | 0.500 / 1 | 8 | no |'); // 10 rows kept
  });
});
