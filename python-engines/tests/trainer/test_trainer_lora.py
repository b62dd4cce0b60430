"""LoRA on the torch trainer (tiny model): only the adapter trains, the KL reference is the base
model with the adapter disabled, checkpoints keep the adapter and refuse another LoRA setting,
and a checkpoint's HF export is the merged policy with the adapter beside it."""
import pytest
import torch

from rollflow_engines.models import load_model
from rollflow_engines.models.lora import parse_target
from rollflow_engines.roles.trainer import Options
from rollflow_engines.roles.trainer.torch_backend import TorchTrainer

from .helpers import group_batch, logprobs, ok, problem_field, torch_client
from .test_trainer_torch import SEQUENCES, reference_logprobs, without_timing


def lora_client(model_cache, **options):
    return torch_client(model_cache, **{"lora_rank": 4, **options})


def backend_of(c) -> TorchTrainer:
    return c.app.state.trainer.backend


def base_weights(trainer: TorchTrainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" not in n}


def adapter_weights(trainer: TorchTrainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}


def test_a_step_changes_adapter_weights_only_and_the_optimizer_holds_only_them(model_cache):
    c = lora_client(model_cache)
    trainer = backend_of(c)
    base, adapter = base_weights(trainer), adapter_weights(trainer)
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    in_optimizer = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert in_optimizer == {id(p) for p in trainer.model.parameters() if p.requires_grad}

    batch = group_batch(groups=2, size=2)  # rewards 1, 0 in each group: nonzero GRPO advantages
    m = ok(c.post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    assert m["actor/optimizer_steps"] == 1.0 and m["grad_norm"] > 0
    after_base, after_adapter = base_weights(trainer), adapter_weights(trainer)
    assert all(torch.equal(base[n], after_base[n]) for n in base)  # bit-identical
    assert any(not torch.equal(adapter[n], after_adapter[n]) for n in adapter)


def test_the_kl_reference_is_the_base_model_with_the_adapter_disabled(model_cache):
    c = lora_client(model_cache, learning_rate=5e-2)
    trainer = backend_of(c)
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch(prefix="a-")}))
    base_model, _ = load_model("tiny:default", 0, model_cache)
    trained = logprobs(c, SEQUENCES)
    for seq, row in zip(SEQUENCES, trained):
        assert row != pytest.approx(reference_logprobs(base_model, seq), abs=1e-4)  # the adapter moved the policy
    with trainer._reference_model() as reference:
        for seq in SEQUENCES:
            assert reference_logprobs(reference, seq) == pytest.approx(reference_logprobs(base_model, seq), abs=1e-5)
    # A step with the KL loss measures KL to that base: nonzero now the adapter is trained, and no second model was loaded.
    m = ok(c.post("/train_step", json={"step": 1, "batch": group_batch(prefix="b-"), "use_kl_loss": True, "kl_loss_coef": 0.1}))["metrics"]
    assert m["losses/kl"] > 0
    assert trainer.reference is None


def test_lora_save_then_load_resumes_exactly_and_keeps_only_the_adapter(model_cache, tmp_path):
    a = lora_client(model_cache)
    b0, b1 = group_batch(prefix="s0-"), group_batch(prefix="s1-")
    ok(a.post("/train_step", json={"step": 0, "batch": b0}))
    ok(a.post("/save", json={"path": str(tmp_path / "ckpt")}))
    saved = torch.load(tmp_path / "ckpt" / "trainer_state.pt", weights_only=True)
    assert saved["model"] and all("lora_" in k for k in saved["model"])
    at_save = logprobs(a, SEQUENCES)
    next_step = ok(a.post("/train_step", json={"step": 1, "batch": b1}))

    b = lora_client(model_cache)
    assert ok(b.post("/load", json={"path": str(tmp_path / "ckpt")}))["version"] == 1
    assert logprobs(b, SEQUENCES) == at_save
    resumed = ok(b.post("/train_step", json={"step": 1, "batch": b1}))
    assert without_timing(resumed["metrics"]) == without_timing(next_step["metrics"])


@pytest.mark.parametrize("saved_with, loaded_with, words", [
    ({"lora_rank": 4}, {}, "written by a trainer with LoRA r=4"),
    ({}, {"lora_rank": 4}, "written by a trainer with full fine-tuning (lora_rank 0); this trainer runs LoRA r=4"),
    ({"lora_rank": 4}, {"lora_rank": 8}, "this trainer runs LoRA r=8"),
    ({"lora_rank": 4}, {"lora_rank": 4, "lora_target": "q_proj"}, "target_modules=['q_proj']"),
])
def test_a_checkpoint_of_another_lora_setting_is_refused_and_nothing_changes(model_cache, tmp_path, saved_with, loaded_with, words):
    a = torch_client(model_cache, **saved_with)
    ok(a.post("/train_step", json={"step": 0, "batch": group_batch()}))
    ok(a.post("/save", json={"path": str(tmp_path / "ckpt")}))
    b = torch_client(model_cache, **loaded_with)
    before = logprobs(b, SEQUENCES)
    r = b.post("/load", json={"path": str(tmp_path / "ckpt")})
    assert r.status_code == 400 and problem_field(r) == "path", r.text
    assert words in r.json()["error"]
    assert logprobs(b, SEQUENCES) == before
    assert ok(b.post("/logprobs", json={"sequences": SEQUENCES[:1]}))["version"] == 0


# peft's PeftModel.from_pretrained reads transformers' deprecated is_gradient_checkpointing.
@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")
def test_the_checkpoint_hf_export_is_the_merged_policy_with_the_adapter_beside_it(model_cache, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    c = lora_client(model_cache, learning_rate=5e-2)
    trainer = backend_of(c)
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
    base = base_weights(trainer)
    ok(c.post("/save", json={"path": str(tmp_path / "ckpt"), "export_hf": True}))
    trained = logprobs(c, SEQUENCES)

    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt" / "hf", local_files_only=True, dtype=torch.float32)
    assert not any("lora_" in n for n, _ in merged.named_parameters())
    for seq, row in zip(SEQUENCES, trained):
        assert reference_logprobs(merged, seq) == pytest.approx(row, abs=1e-5)
    # The adapter beside it applies to the base model to give the same policy.
    base_model, _ = load_model("tiny:default", 0, model_cache)
    adapted = PeftModel.from_pretrained(base_model, tmp_path / "ckpt" / "adapter")
    for seq, row in zip(SEQUENCES, trained):
        assert reference_logprobs(adapted, seq) == pytest.approx(row, abs=1e-5)
    # Merging worked on a copy: the trainer's base weights and its policy are untouched.
    assert all(torch.equal(base[n], p) for n, p in base_weights(trainer).items())
    assert logprobs(c, SEQUENCES) == trained


def test_lora_alpha_and_lora_target_set_the_adapter(model_cache):
    trainer = TorchTrainer(Options(backend="torch", model_cache_dir=str(model_cache), lora_rank=4, lora_alpha=2, lora_target="q_proj, v_proj"))
    adapted = {n.rsplit(".", 1)[-1] for n, m in trainer.model.named_modules() if hasattr(m, "lora_A")}
    assert adapted == {"q_proj", "v_proj"}
    assert {m.scaling["default"] for m in trainer.model.modules() if hasattr(m, "lora_A")} == {2 / 4}
    default = TorchTrainer(Options(backend="torch", model_cache_dir=str(model_cache), lora_rank=4))
    assert {m.scaling["default"] for m in default.model.modules() if hasattr(m, "lora_A")} == {2.0}  # α = 2r, as ROLL
    every_linear = {n.rsplit(".", 1)[-1] for n, m in default.model.named_modules() if hasattr(m, "lora_A")}
    assert every_linear == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    regex = TorchTrainer(Options(backend="torch", model_cache_dir=str(model_cache), lora_rank=2, lora_target=r".*layers\.0\..*(q|k)_proj"))
    assert sorted(n for n, m in regex.model.named_modules() if hasattr(m, "lora_A")) == [
        "base_model.model.model.layers.0.self_attn.k_proj", "base_model.model.model.layers.0.self_attn.q_proj"]


def test_lora_target_forms():
    assert parse_target(None) == parse_target("all") == parse_target("all-linear") == "all-linear"
    assert parse_target("v_proj,q_proj") == parse_target(["q_proj", "v_proj"]) == ("q_proj", "v_proj")
    assert parse_target(r".*\.q_proj$") == r".*\.q_proj$"


def test_a_lora_target_that_fits_no_module_is_an_error_naming_it(model_cache):
    with pytest.raises(ValueError, match="lora_target .*'nope'.* fits no module"):
        TorchTrainer(Options(backend="torch", model_cache_dir=str(model_cache), lora_rank=4, lora_target="nope"))


@pytest.mark.parametrize("options, words", [
    ({"backend": "torch", "lora_alpha": 16}, "lora_alpha is set but lora_rank is 0"),
    ({"backend": "torch", "lora_target": "q_proj"}, "lora_target is set but lora_rank is 0"),
    ({"backend": "sim", "lora_rank": 8}, "trained by the torch backend only, not sim"),
    ({"backend": "torch", "lora_rank": -1}, "greater than or equal to 0"),
])
def test_lora_options_that_would_not_act_are_refused(options, words):
    with pytest.raises(ValueError, match=words):
        Options(**options)
