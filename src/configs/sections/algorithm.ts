/** The RL algorithm's settings passed to every train step, and the loss aggregation modes they name. */
import { z } from 'zod';

/** How the trainer reduces token losses to one (loss_agg_mode). */
export const LOSS_AGG_MODES = ['token_mean', 'seq_mean_token_mean', 'seq_mean_token_sum', 'seq_mean_token_sum_norm'] as const;

// ---- algorithm settings passed to every train step (python-engines algorithms/); unset means the trainer's default
const unit = z.number().min(0).max(1);
export const AlgorithmSettings = z.strictObject({
  pg_clip: z.number().gt(0).optional().describe('PPO clip ε (both sides unless pg_clip_low/high are set); trainer default 0.2.'),
  pg_clip_low: z.number().gt(0).lt(1).optional().describe('PPO ratio lower bound 1 − pg_clip_low.'),
  pg_clip_high: z.number().gt(0).optional().describe('PPO ratio upper bound 1 + pg_clip_high (clip-higher when above pg_clip_low).'),
  dual_clip_loss: z.boolean().optional().describe('Dual clip for negative advantages (c = 1 + 2·pg_clip, as ROLL).'),
  loss_agg_mode: z
    .enum(LOSS_AGG_MODES)
    .optional()
    .describe('How per-token losses become one number: token_mean (every token weighs the same), seq_mean_token_mean (every sequence; GRPO), seq_mean_token_sum, seq_mean_token_sum_norm (Dr. GRPO: token sums over a constant, loss_scale_factor). Sequences without loss tokens do not count in the sequence means. Trainer default token_mean.'),
  loss_scale_factor: z.number().gt(0).optional().describe('seq_mean_token_sum_norm: the constant every sequence\'s token sum is divided by (verl\'s name); default actor_infer.generating_args.max_new_tokens.'),
  norm_mean_type: z.enum(['group', 'batch', 'none']).optional().describe('Reward normalisation mean level (ROLL); with norm_std_type it replaces reward_norm.'),
  norm_std_type: z.enum(['group', 'batch', 'none']).optional().describe('Reward normalisation std level (ROLL).'),
  whiten_advantages: z.boolean().optional().describe('Whiten advantages over the batch.'),
  tis_lower_bound: z.number().min(0).optional().describe('tis: lower clip of the IS ratio; default 0.'),
  tis_upper_bound: z.number().gt(0).optional().describe('tis: upper clip c of the IS ratio; default 1.'),
  cispo_epsilon_low: unit.optional().describe('cispo: ratio clipped below at 1 − ε_low; default 0.1.'),
  cispo_epsilon_high: z.number().min(0).optional().describe('cispo: ratio clipped above at 1 + ε_high; default 0.1.'),
  topr_positive_weight: z.number().min(0).optional().describe('topr: weight of positive-reward samples; default 1.'),
  topr_negative_weight: z.number().min(0).optional().describe('topr: weight of the other samples; default 1.'),
  behav_imp_weight_cap: z.number().gt(1).optional().describe('decoupled_ppo: drop tokens whose behaviour weight π_prox/π_old exceeds this cap; default 5.'),
  clip_cov_ratio: z.number().gt(0).max(1).optional().describe('clip_cov: share of loss tokens taken out of the gradient; default 0.0002.'),
  clip_cov_lb: z.number().optional().describe('clip_cov: lower bound of the advantage·logprob covariance band tokens are drawn from; default 1.'),
  clip_cov_ub: z.number().optional().describe('clip_cov: upper bound of that band; default 5.'),
  kl_cov_ratio: z.number().gt(0).max(1).optional().describe('kl_cov: share of loss tokens (largest covariance) given the KL penalty; default 0.0002.'),
  ppo_kl_coef: z.number().min(0).optional().describe('kl_cov: coefficient of |log π_θ/π_old| on those tokens; default 0.1.'),
  train_infer_correction: z
    .strictObject({
      is_weight: z
        .strictObject({
          enabled: z.boolean().default(false).describe('Apply the truncated IS weight min(π_train/π_infer, C).'),
          weight_type: z.enum(['token', 'sequence']).default('token').describe('Per token, or one weight per sequence.'),
          upper_bound: z.number().gt(0).default(5).describe('C.'),
        })
        .prefault({})
        .describe('The truncated importance weight.'),
      filters: z
        .array(
          z
            .strictObject({
              enabled: z.boolean().default(false).describe('Apply this filter.'),
              agg_type: z.enum(['token', 'sequence', 'geometric']).default('token').describe('The ratio tested: each token\'s; the product over the sequence; its geometric mean (sequence and geometric reject whole sequences).'),
              ratio_low: z.number().min(0).default(0.8).describe('Lowest π_train/π_infer kept.'),
              ratio_high: z.number().gt(0).default(1.2).describe('Highest π_train/π_infer kept.'),
            })
            .refine((f) => f.ratio_high >= f.ratio_low, { message: 'ratio_high must be at least ratio_low', path: ['ratio_high'] }),
        )
        .default([])
        .describe('Rejection masks (ROLL): tokens or sequences whose train/infer ratio falls outside [ratio_low, ratio_high] leave the loss, in order.'),
    })
    .optional()
    .describe('Correction for the mismatch between the trainer and inference engines.'),
  use_kl_loss: z.boolean().optional().describe('Add β·KL(π_θ ‖ π_ref) to the loss; π_ref is the initial weights.'),
  kl_loss_coef: z.number().min(0).optional().describe('β of the KL loss; default 0.'),
  kl_loss_type: z.enum(['k1', 'k2', 'k3', 'low_var_kl']).optional().describe('KL estimator: k1, k2 = ½(log ratio)², k3, or low_var_kl (k3 clamped to ±10, verl); default k3.'),
  add_token_level_kl: z.boolean().optional().describe('Fold a KL penalty to the initial weights into the reward before the advantages (ROLL; verl use_kl_in_reward): r − init_kl_coef·Σ_t KL_t.'),
  init_kl_coef: z.number().min(0).optional().describe('β of the KL folded into the reward (fixed); default 0.2.'),
  kl_penalty: z.enum(['kl', 'abs', 'mse', 'low_var_kl']).optional().describe('Estimator of the KL folded into the reward; default kl.'),
  entropy_loss_coef: z.number().min(0).optional().describe('Entropy bonus coefficient; default 0.'),
  gamma: unit.optional().describe('gae: discount γ; default 1.'),
  lambd: unit.optional().describe('gae: λ; default 0.95.'),
  value_loss_coef: z.number().min(0).optional().describe('gae: value loss coefficient; default 0.5.'),
  value_clip: z.number().gt(0).optional().describe('gae: clip of the value update; unset disables it.'),
});
