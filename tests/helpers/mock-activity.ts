// @temporalio/testing's MockActivityEnvironment logs through a DefaultLogger of its own, straight to stderr, unless
// given one: here it gets the runtime's, the test logger of tests/setup.ts, so an activity that fails on purpose
// prints nothing unless its test fails (its warnings are in .state/test-reports/temporal-sdk.log either way).
import { MockActivityEnvironment as Base, type MockActivityEnvironmentOptions } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';

export class MockActivityEnvironment extends Base {
  constructor(info?: ConstructorParameters<typeof Base>[0], opts?: MockActivityEnvironmentOptions) {
    super(info, { logger: Runtime.instance().logger, ...opts });
  }
}
