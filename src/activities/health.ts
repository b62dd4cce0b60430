import { Context } from '@temporalio/activity';
import { engineHealth, EngineRejectedError, type EngineHealth, type EngineTarget } from '../gpu-bridge';

/** Asks one engine server for /health and checks it serves the role the config says. */
export async function checkEngineHealth(target: EngineTarget): Promise<EngineHealth> {
  const health = await engineHealth(target.url, { signal: Context.current().cancellationSignal });
  if (health.role !== target.role) {
    throw new EngineRejectedError(`${target.url} serves role "${health.role}", but the config lists it as "${target.role}"`, 409);
  }
  return health;
}
