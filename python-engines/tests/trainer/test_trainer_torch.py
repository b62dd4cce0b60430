"""The torch backend on the tiny model: it learns, its logprobs follow the convention,
micro-batching is exact, checkpoints resume exactly, exports load with from_pretrained."""
import json
import math

import pytest
import torch

from rollflow_engines.models import load_model
from rollflow_engines.roles.trainer.state_files import checksums

from .helpers import group_batch, logprobs, ok, on_policy, problem_field, sample, torch_client

SEQUENCES = [  # different lengths, so a micro-batch needs padding
    {"prompt_ids": [1, 20, 30], "response_ids": [50, 60, 70, 2]},
    {"prompt_ids": [1, 21], "response_ids": [51]},
    {"prompt_ids": [1, 22, 31, 40, 41], "response_ids": [52, 62]},
]


def reference_logprobs(model, seq: dict, temperature: float = 1.0) -> list[float]:
    """The convention by hand, one unpadded sequence: log softmax(logits / T) at the position before each token."""
    ids = torch.tensor([seq["prompt_ids"] + seq["response_ids"]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    p = len(seq["prompt_ids"])
    logp = torch.log_softmax(logits[p - 1:-1] / temperature, dim=-1)
    return logp.gather(-1, ids[0, p:, None]).squeeze(-1).tolist()


def without_timing(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith("timing/")}


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_logprobs_follow_the_convention_whatever_the_padding(model_cache, padding_side):
    c = torch_client(model_cache, padding_side=padding_side, micro_batch_size=3)
    model, _ = load_model("tiny:default", 0, model_cache)
    for temperature in (1.0, 0.5):
        got = logprobs(c, SEQUENCES, temperature)
        for seq, row in zip(SEQUENCES, got):
            assert row == pytest.approx(reference_logprobs(model, seq, temperature), abs=1e-5)
    assert logprobs(c, SEQUENCES, 0.0) == logprobs(c, SEQUENCES, 1.0)  # greedy reports temperature 1


def test_two_steps_make_rewarded_responses_more_likely(model_cache):
    c = torch_client(model_cache, learning_rate=3e-3)
    batch = group_batch(groups=2, size=2)
    seqs = [{"prompt_ids": s["prompt_ids"], "response_ids": s["response_ids"]} for s in batch]
    good = [i for i, s in enumerate(batch) if s["reward"] == 1.0]
    bad = [i for i, s in enumerate(batch) if s["reward"] == 0.0]

    def mean_logprob(rows, which):
        return sum(sum(rows[i]) / len(rows[i]) for i in which) / len(which)

    before = logprobs(c, seqs)
    losses = []
    for step in range(2):
        fresh = [{**s, "uid": f"{step}-{s['uid']}"} for s in on_policy(c, batch)]
        m = ok(c.post("/train_step", json={"step": step, "batch": fresh, "pg_variant": "ppo"}))["metrics"]
        assert m["actor/ratio_mean"] == pytest.approx(1.0, abs=1e-5)  # on-policy: π_old is π_θ
        assert m["actor/optimizer_steps"] == 1.0 and m["grad_norm"] > 0
        losses.append(m)
    after = logprobs(c, seqs)
    assert mean_logprob(after, good) > mean_logprob(before, good)
    assert mean_logprob(after, bad) < mean_logprob(before, bad)

    # The REINFORCE objective on the fixed batch, −Σ A·mean log π, went down.
    adv = {i: (1 if i in good else -1) for i in range(len(batch))}
    objective = lambda rows: -sum(adv[i] * sum(rows[i]) / len(rows[i]) for i in adv)  # noqa: E731
    assert objective(after) < objective(before)


def test_the_ratio_is_measured_against_the_given_old_logprobs(model_cache):
    c = torch_client(model_cache)
    batch = on_policy(c, group_batch(groups=2, size=2))
    # Pretend the behaviour policy gave every token 0.5 nats less: r = e^0.5 = 1.6487 on every token.
    stale = [{**s, "old_logprobs": [v - 0.5 for v in s["old_logprobs"]]} for s in batch]
    m = ok(c.post("/train_step", json={"step": 0, "batch": stale, "pg_variant": "ppo"}))["metrics"]
    assert m["actor/ratio_mean"] == pytest.approx(math.exp(0.5), rel=1e-4)
    assert m["actor/approxkl"] == pytest.approx(math.exp(0.5) - 1 - 0.5, rel=1e-3)  # 0.148721
    # r > 1 + 0.2 is clipped exactly where A > 0: the rewarded responses' share of tokens.
    good_tokens = sum(len(s["response_ids"]) for s in batch if s["reward"] == 1.0)
    assert m["actor/clipfrac"] == pytest.approx(good_tokens / sum(len(s["response_ids"]) for s in batch), abs=1e-6)


def test_micro_batching_does_not_change_the_step(model_cache):
    batch = group_batch(groups=2, size=3)
    whole, split = torch_client(model_cache, micro_batch_size=6), torch_client(model_cache, micro_batch_size=1)
    batch = on_policy(whole, batch)
    a = ok(whole.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    b = ok(split.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    for key in ("losses/pg_loss", "grad_norm", "actor/ratio_mean", "actor/approxkl"):
        assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
    for x, y in zip(logprobs(whole, SEQUENCES), logprobs(split, SEQUENCES)):
        assert y == pytest.approx(x, abs=1e-4)


def test_gradient_accumulation_and_epochs_set_the_number_of_optimizer_steps(model_cache):
    c = torch_client(model_cache, micro_batch_size=1, gradient_accumulation_steps=2)
    body = ok(c.post("/train_step", json={"step": 0, "batch": group_batch(groups=2, size=2), "ppo_epochs": 2}))
    # 4 samples / (1 × 2 per update) = 2 updates per epoch, 2 epochs
    assert body["metrics"]["actor/optimizer_steps"] == 4.0


def test_loss_mask_removes_tokens_from_the_loss(model_cache):
    c = torch_client(model_cache)
    batch = group_batch(groups=1, size=2)
    batch[1]["loss_mask"] = [1] + [0] * (len(batch[1]["response_ids"]) - 1)
    m = ok(c.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    assert m["actor/loss_tokens"] == len(batch[0]["response_ids"]) + 1
    assert m["tokens"] == sum(len(s["response_ids"]) for s in batch)


def test_save_then_load_resumes_exactly(model_cache, tmp_path):
    a = torch_client(model_cache)
    b0, b1 = group_batch(prefix="s0-"), group_batch(prefix="s1-")
    ok(a.post("/train_step", json={"step": 0, "batch": b0}))
    ok(a.post("/save", json={"path": str(tmp_path / "ckpt")}))
    at_save = logprobs(a, SEQUENCES)
    next_step = ok(a.post("/train_step", json={"step": 1, "batch": b1}))
    after = logprobs(a, SEQUENCES)

    b = torch_client(model_cache)
    assert logprobs(b, SEQUENCES) != at_save  # a fresh trainer starts from the initial weights
    assert ok(b.post("/load", json={"path": str(tmp_path / "ckpt")})) == {"path": str(tmp_path / "ckpt"), "version": 1}
    assert logprobs(b, SEQUENCES) == at_save
    resumed = ok(b.post("/train_step", json={"step": 1, "batch": b1}))
    assert without_timing(resumed["metrics"]) == without_timing(next_step["metrics"])  # optimizer state came back too
    assert logprobs(b, SEQUENCES) == after


def test_load_rejects_a_checkpoint_that_does_not_fit(model_cache, tmp_path):
    c = torch_client(model_cache)
    bad = tmp_path / "bad"
    bad.mkdir()
    torch.save({"model": {"w": torch.zeros(2)}, "optimizer": {}, "torch_rng": torch.get_rng_state()}, bad / "trainer_state.pt")
    files = checksums(bad, "rollflow_checkpoint.json")  # intact, so the load gets as far as the weights
    (bad / "rollflow_checkpoint.json").write_text(json.dumps({"backend": "torch", "version": 3, "files": files}))
    r = c.post("/load", json={"path": str(bad)})
    assert r.status_code == 400 and problem_field(r) == "path" and "does not fit" in r.json()["error"]
    assert ok(c.post("/logprobs", json={"sequences": SEQUENCES[:1]}))["version"] == 0  # nothing changed


def test_exported_weights_load_with_from_pretrained(model_cache, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    c = torch_client(model_cache, export_dir=str(tmp_path / "weights"))
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
    body = ok(c.post("/export_weights", json={"version": 1}))
    assert body == {"path": str(tmp_path / "weights" / "v1"), "version": 1}
    exported = AutoModelForCausalLM.from_pretrained(body["path"], local_files_only=True, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(body["path"], local_files_only=True)
    assert tokenizer.decode(tokenizer.encode("2+2=4", add_special_tokens=False)) == "2+2=4"
    assert any(p.suffix == ".safetensors" for p in (tmp_path / "weights" / "v1").iterdir())
    trained = logprobs(c, SEQUENCES)
    for seq, row in zip(SEQUENCES, trained):
        assert reference_logprobs(exported, seq) == pytest.approx(row, abs=1e-5)


def test_token_ids_outside_the_vocabulary_are_a_400(model_cache):
    c = torch_client(model_cache)
    r = c.post("/train_step", json={"step": 0, "batch": [sample("a", response=[12, 10_000])]})
    assert r.status_code == 400 and problem_field(r) == "batch[0].response_ids"
    r = c.post("/logprobs", json={"sequences": [{"prompt_ids": [99_999], "response_ids": [1]}]})
    assert r.status_code == 400 and problem_field(r) == "sequences[0].prompt_ids"


def test_a_micro_batch_of_mixed_lengths_trains_in_width_parts_to_the_same_step(model_cache):
    """Long and short responses in one micro-batch go through separate padded passes (widths.py);
    the step equals one with every sample alone in its micro-batch (no padding at all)."""
    from types import SimpleNamespace

    from rollflow_engines.roles.trainer.torch_backend import TorchTrainer

    batch = [sample(f"s{i}", f"g{i % 2}", (1, 20, 30), [40 + (j % 30) for j in range(n)], reward=float(i % 3 == 0))
             for i, n in enumerate((2, 45, 3, 40, 2, 4))]
    fake = SimpleNamespace(samples=[SimpleNamespace(**s) for s in batch])
    assert TorchTrainer._width_parts(fake, list(range(6))) == [[0, 4, 2, 5], [3, 1]]  # 5-7 tokens | 43-48 tokens
    parts, alone = torch_client(model_cache, micro_batch_size=6), torch_client(model_cache, micro_batch_size=1)
    batch = on_policy(alone, batch)
    a = ok(parts.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    b = ok(alone.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    for key in ("losses/pg_loss", "grad_norm", "actor/ratio_mean"):
        assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key
    for x, y in zip(logprobs(parts, SEQUENCES), logprobs(alone, SEQUENCES)):
        assert y == pytest.approx(x, abs=1e-4)
