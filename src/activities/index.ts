// Every activity the worker registers. Workflows see these only as types,
// through proxyActivities<typeof activities>.
export { checkEngineHealth } from './health';
