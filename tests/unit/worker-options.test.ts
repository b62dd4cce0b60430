// temporal.worker's workflow-side keys reach the SDK's worker options; an unset key leaves the SDK's default.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/configs';
import { workflowTaskOptions } from '../../src/worker';

const workerOf = (worker: Record<string, unknown>) => parseConfig({ temporal: { worker } }, 'test').config.temporal.worker;

describe('workflow task options', () => {
  it('passes each key that is set, and only those', () => {
    expect(workflowTaskOptions(workerOf({ max_concurrent_workflow_tasks: 8, max_cached_workflows: 50, non_sticky_poll_ratio: 1 }))).toMatchObject({
      maxConcurrentWorkflowTaskExecutions: 8,
      maxCachedWorkflows: 50,
      nonStickyToStickyPollRatio: 1,
    });
    const defaults = workflowTaskOptions(workerOf({}));
    expect(Object.keys(defaults)).toEqual(['maxConcurrentLocalActivityExecutions']);
  });

  it.each([0, 1.5, -0.2])('refuses non_sticky_poll_ratio %s, naming the key', (ratio) => {
    try {
      workerOf({ non_sticky_poll_ratio: ratio });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems.map((p) => p.path)).toContain('temporal.worker.non_sticky_poll_ratio');
    }
  });
});
