"""Garbage in gets a 4xx naming the field, never a 500."""

import pytest

from .helpers import client, group_batch, problem_field, sample


def with_sample(**changes) -> dict:
    return {"step": 0, "batch": [sample("a", reward=1.0), {**sample("b"), **changes}]}


TRAIN_STEP_CASES = [
    ("no batch", {"step": 0}, 400, "batch"),
    ("both batch and ref", {"step": 0, "batch": group_batch(), "batch_ref": "/tmp/x.jsonl"}, 400, "batch_ref"),
    ("empty batch", {"step": 0, "batch": []}, 400, "batch"),
    ("batch not a list", {"step": 0, "batch": {"uid": "a"}}, 400, "batch"),
    ("reward a string", with_sample(reward="1.0"), 400, "batch.1.reward"),
    ("token id a string", with_sample(response_ids=["12", 13]), 400, "batch.1.response_ids.0"),
    ("token id a float", with_sample(response_ids=[12.5, 13]), 400, "batch.1.response_ids.0"),
    ("negative token id", with_sample(prompt_ids=[-1, 2]), 400, "batch.1.prompt_ids.0"),
    ("empty response", with_sample(response_ids=[], old_logprobs=[]), 400, "batch.1.response_ids"),
    ("old_logprobs too short", with_sample(old_logprobs=[-1.0]), 400, "batch[1].old_logprobs"),
    ("loss_mask too long", with_sample(loss_mask=[1, 1, 1]), 400, "batch[1].loss_mask"),
    ("loss_mask not 0/1", with_sample(loss_mask=[1, 2]), 400, "batch.1.loss_mask.1"),
    ("versions too short", with_sample(versions=[3]), 400, "batch[1].versions"),
    ("span past the end", with_sample(version_spans=[{"version": 1, "start": 0, "end": 9}]), 400, "batch[1].version_spans[0]"),
    ("missing uid", {"step": 0, "batch": [{k: v for k, v in sample("a").items() if k != "uid"}]}, 400, "batch.0.uid"),
    ("duplicate uid", with_sample(uid="a"), 400, "batch[1].uid"),
    ("typo in a sample", with_sample(rewrd=1.0), 400, "batch.1.rewrd"),
    ("nothing to train", {"step": 0, "batch": [sample("a", loss_mask=[0, 0])]}, 400, "batch"),
    ("unknown pg_variant", {**with_sample(), "pg_variant": "grpo++"}, 400, "pg_variant"),
    ("unknown adv_estimator", {**with_sample(), "adv_estimator": "vtrace"}, 400, "adv_estimator"),
    ("tis bounds crossed", {**with_sample(), "tis_lower_bound": 0.5, "tis_upper_bound": 0.2}, 400, "tis_upper_bound"),
    ("behaviour-weight cap not above 1", {**with_sample(), "behav_imp_weight_cap": 1.0}, 400, "behav_imp_weight_cap"),
    ("unknown kl_loss_type", {**with_sample(), "kl_loss_type": "k4"}, 400, "kl_loss_type"),
    ("gamma above 1", {**with_sample(), "gamma": 1.5}, 400, "gamma"),
    ("running norm is not implemented", {**with_sample(), "norm_mean_type": "running"}, 400, "norm_mean_type"),
    ("unknown IS weight level", {**with_sample(), "train_infer_correction": {"is_weight": {"weight_type": "geometric"}}}, 400,
     "train_infer_correction.is_weight.weight_type"),
    ("typo in the correction", {**with_sample(), "train_infer_correction": {"is_weigth": {}}}, 400, "train_infer_correction.is_weigth"),
    ("unknown reward_norm", {**with_sample(), "reward_norm": "zscore"}, 400, "reward_norm"),
    ("unknown loss_agg_mode", {**with_sample(), "loss_agg_mode": "sum"}, 400, "loss_agg_mode"),
    ("typo in a parameter", {**with_sample(), "pg_clp": 0.3}, 400, "pg_clp"),
    ("negative step", {**with_sample(), "step": -1}, 400, "step"),
    ("step a string", {**with_sample(), "step": "0"}, 400, "step"),
    ("dual clip below 1", {**with_sample(), "dual_clip": 0.5}, 400, "dual_clip"),
    ("negative temperature", {**with_sample(), "temperature": -1}, 400, "temperature"),
    ("zero ppo epochs", {**with_sample(), "ppo_epochs": 0}, 400, "ppo_epochs"),
]


@pytest.mark.parametrize("case, body, status, field", TRAIN_STEP_CASES, ids=[c[0] for c in TRAIN_STEP_CASES])
def test_train_step_rejects(case, body, status, field):
    r = client().post("/train_step", json=body)
    assert r.status_code == status, r.text
    assert problem_field(r) == field


@pytest.mark.parametrize("raw, field", [
    ('{"step": 0, "batch": [{"uid": "a", "group_id": "g", "prompt_ids": [1], "response_ids": [2], '
     '"old_logprobs": [-1.0], "reward": NaN}]}', "batch.0.reward"),
    ('{"step": 0, "batch": [{"uid": "a", "group_id": "g", "prompt_ids": [1], "response_ids": [2], '
     '"old_logprobs": [-Infinity], "reward": 1}]}', "batch.0.old_logprobs.0"),
    ("not json at all", None),
])
def test_non_finite_numbers_and_non_json_are_rejected(raw, field):
    r = client().post("/train_step", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    if field:
        assert problem_field(r) == field


@pytest.mark.parametrize("path, body, field", [
    ("/logprobs", {"sequences": []}, "sequences"),
    ("/logprobs", {"sequences": [{"prompt_ids": [], "response_ids": [1]}]}, "sequences.0.prompt_ids"),
    ("/logprobs", {"sequences": [{"prompt_ids": [1], "response_ids": [1]}], "temperature": -0.1}, "temperature"),
    ("/save", {}, "path"),
    ("/save", {"path": ""}, "path"),
    ("/load", {"path": 7}, "path"),
    ("/export_weights", {"version": -1}, "version"),
    ("/export_weights", {"version": "1"}, "version"),
])
def test_other_endpoints_reject(path, body, field):
    r = client().post(path, json=body)
    assert r.status_code == 400, r.text
    assert problem_field(r) == field


def test_megatron_without_megatron_exits_2_before_serving(serve_cli):
    proc = serve_cli("--role", "trainer", "--backend", "megatron", "--port", "1")
    assert proc.returncode == 2, proc.stderr
    assert "options.backend" in proc.stderr and "megatron-core" in proc.stderr
