/**
 * Every seed a run derives, and every constant that derives one, in one
 * place. Workflow code may not use Math.random for anything a replay or a
 * resume must reproduce, so each seed is a pure function of the run's seed
 * and where the sample sits: the same config gives the same prompts, the
 * same sampling seeds and the same retries on any machine, which is what
 * makes "skip the consumed positions" exact on resume.
 *
 * The derivations (a group at `position` of epoch `epoch`, member i of G):
 *   prompt (env seed)   epochOrder(datasetSize, runSeed, epoch)[position]
 *   group sampling      ⌊splitmix32(runSeed ^ (epoch·7919 + position))·2³¹⌋
 *   member sampling     group sampling + 1_000_003·i
 *   turn t              member sampling + t, every request of the turn: a continuation (after an
 *                       abort, a lost server or a retried activity) sends the same seed, and the
 *                       torch server keys each draw on the token's position, so it draws what the
 *                       uncut generation would have (docs/exactly-once.md)
 *   choice i of an n-request, continuation k: group sampling + 104_729·i + 7919·(k + 1)
 *   validation group i  env seed VAL_SEED_BASE + i, sampling runSeed + 7919·i
 */
import type { GroupRef } from './ids';

/** Validation episode seeds start here: training draws seeds 0..dataset_size-1. */
export const VAL_SEED_BASE = 2 ** 30;

/** Primes that spread neighbouring indices far apart in seed space. */
const POSITION_STRIDE = 7919;
const MEMBER_STRIDE = 1_000_003;
const CHOICE_STRIDE = 104_729;
const ATTEMPT_STRIDE = 7919;

/** splitmix32: a small, well-mixed 32-bit generator; returns floats in [0, 1). */
export function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** The dataset indices 0..size-1 in the order epoch `epoch` of a run seeded `seed` visits them (Fisher–Yates). */
export function epochOrder(size: number, seed: number, epoch: number): number[] {
  const order = Array.from({ length: size }, (_, i) => i);
  const next = splitmix32((Math.imul(seed >>> 0, 0x27d4eb2d) ^ Math.imul(epoch + 1, 0x165667b1)) >>> 0);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}

/** The sampling seed of the group at `ref`. */
export const groupSamplingSeed = (runSeed: number, ref: GroupRef): number => Math.floor(splitmix32(runSeed ^ (ref.epoch * POSITION_STRIDE + ref.position))() * 2 ** 31);

/** Member i's sampling seed in a group whose seed is `groupSeed`. */
export const memberSamplingSeed = (groupSeed: number, member: number): number => groupSeed + MEMBER_STRIDE * member;

/** The seed of every request of turn `turn`, its continuations included (see the derivations above). */
export const turnSeed = (seed: number, turn: number): number => seed + turn;

/**
 * Continuation `attempt` of choice `choice` of an n-request seeded `seed`. A continuation is a new n = 1
 * request, so it cannot draw what choice `choice` of the n-request would have: a cut choice differs from an
 * uncut one (prompt replication, the default, has no such difference).
 */
export const choiceSeed = (seed: number, choice: number, attempt: number): number => seed + CHOICE_STRIDE * choice + ATTEMPT_STRIDE * (attempt + 1);

/** Validation group i: the same prompts every validation, far from the training order's 0..N-1. */
export const validationSeeds = (runSeed: number, i: number) => ({ envSeed: VAL_SEED_BASE + i, samplingSeed: runSeed + POSITION_STRIDE * i });
