"""Every pg_variant and advantage estimator through a real train step: the torch backend on the
tiny model (weights move, the step-start pass sees the pre-step weights, the value head and the
KL reference work), the sim backend's honest stand-ins, and the megatron module still compiling."""
import math
import py_compile
from pathlib import Path

import pytest

from rollflow_engines.algorithms import ADV_ESTIMATOR_NAMES, POLICY_LOSSES

from .helpers import client, group_batch, logprobs, ok, on_policy, torch_client


def seqs(batch: list[dict]) -> list[dict]:
    return [{"prompt_ids": s["prompt_ids"], "response_ids": s["response_ids"]} for s in batch]


def stale(c, batch: list[dict], shift: float) -> list[dict]:
    """The batch as if the behaviour policy gave every token ``shift`` nats less than the trainer's current
    weights: every ratio π_θ/π_old (and π_prox/π_old) starts at e^shift."""
    return [{**s, "old_logprobs": [v - shift for v in s["old_logprobs"]]} for s in on_policy(c, batch)]


def train(c, step: int, batch: list[dict], **fields) -> dict:
    return ok(c.post("/train_step", json={"step": step, "batch": batch, **fields}))["metrics"]


# group_batch(2, 2): responses of 2, 3, 3, 4 tokens with rewards 1, 0, 1, 0
LENGTHS, REWARDS = [2, 3, 3, 4], [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("variant", sorted(POLICY_LOSSES))
def test_every_pg_variant_trains_the_weights(model_cache, variant):
    c = torch_client(model_cache)
    batch = stale(c, group_batch(), 0.3)
    before = logprobs(c, seqs(batch))
    m = train(c, 0, batch, pg_variant=variant)
    assert logprobs(c, seqs(batch)) != before
    assert m["actor/optimizer_steps"] == 1.0 and m["grad_norm"] > 0
    assert m["losses/total"] == pytest.approx(m["losses/pg_loss"])  # no other term is switched on
    assert m["losses/entropy"] > 0  # reported from the logits, whatever the variant


def test_decoupled_ppo_proximal_logprobs_are_the_pre_step_weights(model_cache, monkeypatch):
    # 4 samples, one per micro-batch and per optimizer update: the step updates the weights 4 times, and
    # every micro-batch's π_prox must still be the weights before the first update.
    c = torch_client(model_cache, micro_batch_size=1, gradient_accumulation_steps=1)
    batch = stale(c, group_batch(), 0.3)
    pre_step = logprobs(c, seqs(batch))
    seen = []
    real = POLICY_LOSSES["decoupled_ppo"]

    def spy(x, params):
        seen.append(x.prox_logprobs.clone())
        return real(x, params)

    spy.needs = real.needs
    monkeypatch.setitem(POLICY_LOSSES, "decoupled_ppo", spy)
    m = train(c, 0, batch, pg_variant="decoupled_ppo")
    assert m["actor/optimizer_steps"] == 4.0 and len(seen) == 4
    for prox, expected in zip(seen, pre_step):
        assert prox[0, :len(expected)].tolist() == pytest.approx(expected, abs=1e-5)
    # behaviour weight π_prox/π_old = e^0.3 = 1.349859 on every token, below the cap 5
    assert m["actor/behav_weight_mean"] == pytest.approx(math.exp(0.3), rel=1e-4)
    assert m["actor/behav_dropfrac"] == 0.0
    assert logprobs(c, seqs(batch)) != pre_step


def test_gae_trains_a_value_head_from_zero(model_cache):
    c = torch_client(model_cache)
    fields = {"adv_estimator": "gae", "reward_norm": "none", "gamma": 1.0, "lambd": 1.0, "value_clip": 0.2}
    m0 = train(c, 0, on_policy(c, group_batch(prefix="a")), **fields)
    # V starts at 0, so with γ = λ = 1 every token's advantage and return is its response's reward.
    assert m0["critic/values_mean"] == 0.0
    assert (m0["advantages/max"], m0["advantages/min"]) == (1.0, 0.0)
    # value loss = token mean of ½·(0 − R)²: 5 of the 12 tokens have R = 1 -> ½·5/12 = 0.208333
    rewarded = sum(n for n, r in zip(LENGTHS, REWARDS) if r == 1.0)
    assert m0["losses/value_loss"] == pytest.approx(0.5 * rewarded / sum(LENGTHS), abs=1e-6)
    assert m0["losses/total"] == pytest.approx(m0["losses/pg_loss"] + 0.5 * m0["losses/value_loss"], abs=1e-6)
    m1 = train(c, 1, on_policy(c, group_batch(prefix="b")), **fields)
    assert m1["critic/values_mean"] != 0.0  # the head learned
    assert m1["losses/value_loss"] < m0["losses/value_loss"]


def test_kl_to_the_frozen_initial_weights(model_cache):
    c = torch_client(model_cache)
    fields = {"use_kl_loss": True, "kl_loss_coef": 0.5}
    m0 = train(c, 0, on_policy(c, group_batch(prefix="a")), **fields)
    assert m0["losses/kl"] == 0.0  # before the first update π_θ is the reference exactly: k3 = e^0 − 0 − 1
    m1 = train(c, 1, on_policy(c, group_batch(prefix="b")), **fields)
    assert m1["losses/kl"] > 0
    assert m1["losses/total"] == pytest.approx(m1["losses/pg_loss"] + 0.5 * m1["losses/kl"], abs=1e-6)


def test_entropy_bonus_is_subtracted(model_cache):
    c = torch_client(model_cache)
    m = train(c, 0, on_policy(c, group_batch()), entropy_loss_coef=0.01)
    assert m["losses/entropy"] > 0
    assert m["losses/total"] == pytest.approx(m["losses/pg_loss"] - 0.01 * m["losses/entropy"], abs=1e-6)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_train_infer_correction_weights_by_pi_train_over_pi_infer(model_cache, level):
    c = torch_client(model_cache)
    batch = stale(c, group_batch(), 0.5)  # π_train/π_infer = e^0.5 per token
    correction = {"is_weight": {"enabled": True, "weight_type": level, "upper_bound": 5.0}}
    m = train(c, 0, batch, train_infer_correction=correction)
    if level == "token":
        expected = math.exp(0.5)  # 1.648721 on every token
    else:  # one weight per response, min(e^(0.5·length), 5): e^1, e^1.5, e^1.5, min(e^2 = 7.39, 5), token-weighted
        weights = [min(math.exp(0.5 * n), 5.0) for n in LENGTHS]
        expected = sum(w * n for w, n in zip(weights, LENGTHS)) / sum(LENGTHS)
    assert m["actor/is_weight_mean"] == pytest.approx(expected, rel=1e-4)
    # ppo's ratio is taken against π_train (the weights at the step's start): exactly 1, nothing clipped
    assert m["actor/ratio_mean"] == pytest.approx(1.0, abs=1e-5) and m["actor/clipfrac"] == 0.0


def test_micro_batching_does_not_change_gae_with_whitening(model_cache):
    # Whitening runs over the whole batch's tokens, so splitting it into micro-batches changes nothing.
    fields = {"adv_estimator": "gae", "whiten_advantages": True, "reward_norm": "none", "value_clip": 0.2}
    whole, split = torch_client(model_cache, micro_batch_size=6), torch_client(model_cache, micro_batch_size=1)
    batch = on_policy(whole, group_batch(groups=2, size=3))
    a, b = train(whole, 0, batch, **fields), train(split, 0, batch, **fields)
    for key in ("losses/pg_loss", "losses/value_loss", "losses/total", "grad_norm", "advantages/std"):
        assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
    assert a["advantages/mean"] == pytest.approx(0.0, abs=1e-6)  # whitened


def test_the_value_head_is_checkpointed(model_cache, tmp_path):
    fields = {"adv_estimator": "gae", "reward_norm": "none"}
    a = torch_client(model_cache)
    train(a, 0, group_batch(prefix="s0-"), **fields)
    ok(a.post("/save", json={"path": str(tmp_path / "ckpt")}))
    after_save = train(a, 1, group_batch(prefix="s1-"), **fields)
    b = torch_client(model_cache)
    ok(b.post("/load", json={"path": str(tmp_path / "ckpt")}))
    resumed = train(b, 1, group_batch(prefix="s1-"), **fields)
    assert resumed["critic/values_mean"] != 0.0
    for key in ("critic/values_mean", "losses/value_loss", "losses/total", "grad_norm"):
        assert resumed[key] == after_save[key], key


@pytest.mark.parametrize("variant", sorted(POLICY_LOSSES))
@pytest.mark.parametrize("estimator", ADV_ESTIMATOR_NAMES)
def test_sim_runs_every_variant_and_estimator(variant, estimator):
    c = client()
    batch = group_batch()
    m = train(c, 0, batch, pg_variant=variant, adv_estimator=estimator, use_kl_loss=True, kl_loss_coef=0.1,
              train_infer_correction={"is_weight": {"enabled": True}})
    # π_θ := π_prox := π_ref := π_old in the sim: ratio and IS weight 1, KL 0
    assert (m["actor/ratio_mean"], m["actor/is_weight_mean"], m["losses/kl"]) == (1.0, 1.0, 0.0)
    assert math.isfinite(m["losses/total"]) and ("losses/value_loss" in m) == (estimator == "gae")


def test_megatron_backend_still_compiles(tmp_path):
    import rollflow_engines.roles.trainer as trainer

    py_compile.compile(str(Path(trainer.__file__).parent / "megatron_backend.py"), cfile=str(tmp_path / "m.pyc"), doraise=True)


@pytest.mark.parametrize("fields", [
    {"loss_agg_mode": "seq_mean_token_sum_norm", "loss_scale_factor": 8.0},
    {"use_kl_loss": True, "kl_loss_coef": 0.1, "kl_loss_type": "low_var_kl"},
    {"use_kl_loss": True, "kl_loss_coef": 0.1, "kl_loss_type": "k2"},
    {"add_token_level_kl": True, "init_kl_coef": 0.1, "kl_penalty": "mse"},
    {"train_infer_correction": {"filters": [{"enabled": True, "agg_type": "geometric", "ratio_low": 0.5, "ratio_high": 2.0}]}},
    {"adv_estimator": "rloo"},
    {"adv_estimator": "reinforce_plus_plus_baseline"},
], ids=["sum_norm", "low_var_kl", "k2", "kl_in_reward", "rejection", "rloo", "reinforce_plus_plus_baseline"])
def test_the_peer_options_train_towards_the_rewarded_responses(model_cache, fields):
    c = torch_client(model_cache)
    batch = on_policy(c, group_batch())
    good = [i for i, r in enumerate(REWARDS) if r == 1.0]
    before = logprobs(c, seqs(batch))
    m = train(c, 0, batch, **fields)
    after = logprobs(c, seqs(batch))
    mean = lambda rows: sum(sum(rows[i]) / len(rows[i]) for i in good) / len(good)  # noqa: E731
    assert mean(after) > mean(before)
    assert math.isfinite(m["losses/total"])
    if "train_infer_correction" in fields:
        assert m["actor/train_infer_rejected_frac"] == 0.0  # on-policy: every ratio is 1, nothing is rejected
