/**
 * What happens to an episode whose env server lost its env (the server
 * restarted, or the session expired): replay rebuilds it (a fresh session at
 * the same seed, the recorded actions applied again; deterministic envs),
 * restart starts the episode over from turn 0 (nothing of the lost episode is
 * trained), drop fails the trajectory as an infrastructure failure.
 * custom_envs.<tag>.on_env_loss chooses; unset, the env's own declaration
 * (EnvReset.onLoss) does.
 */
export const ENV_LOSS_POLICIES = ['replay', 'restart', 'drop'] as const;
export type EnvLossPolicy = (typeof ENV_LOSS_POLICIES)[number];
