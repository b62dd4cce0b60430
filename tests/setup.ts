// Keep the Temporal SDK's per-worker INFO chatter out of test output; warnings still show.
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('WARN') });
