"""model_args.dtype on the torch backends: the model is loaded in the dtype asked, a bf16 trainer
trains, fp16 training on CPU is refused, and a wrong value names the key, the value and the choices."""
import pytest
import torch

from rollflow_engines.config import ConfigError, load_config

from .helpers import group_batch, logprobs, ok, torch_client
from .test_trainer_torch import SEQUENCES


@pytest.mark.parametrize("dtype, expected", [("bf16", torch.bfloat16), ("bfloat16", torch.bfloat16), ("fp32", torch.float32)])
def test_the_trainer_loads_its_model_in_the_dtype_asked(model_cache, dtype, expected):
    c = torch_client(model_cache, dtype=dtype)
    assert {p.dtype for p in c.app.state.trainer.backend.model.parameters()} == {expected}


def test_a_bf16_step_runs_and_changes_the_weights(model_cache):
    c = torch_client(model_cache, dtype="bf16", learning_rate=1e-2)
    model = c.app.state.trainer.backend.model
    before = [p.detach().clone() for p in model.parameters()]
    lp_before = logprobs(c, SEQUENCES)
    m = ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))["metrics"]
    assert m["actor/optimizer_steps"] == 1.0 and m["grad_norm"] > 0
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert logprobs(c, SEQUENCES) != lp_before


def test_a_lora_adapter_on_a_bf16_base_trains_in_float32(model_cache):
    c = torch_client(model_cache, dtype="bf16", lora_rank=4, learning_rate=1e-2)
    model = c.app.state.trainer.backend.model
    assert {p.dtype for n, p in model.named_parameters() if "lora_" not in n} == {torch.bfloat16}
    assert {p.dtype for n, p in model.named_parameters() if "lora_" in n} == {torch.float32}  # peft keeps adapters in fp32
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))


def options_error(**options) -> str:
    flags = [f"{k}={v}" for k, v in options.items()]
    with pytest.raises(ConfigError) as e:
        load_config(None, {"role": "trainer", "backend": "torch"}, flags)
    return str(e.value)


def test_fp16_training_on_cpu_is_refused():
    assert "dtype 'fp16': the torch trainer does not train in float16 on CPU or GPU" in options_error(dtype="fp16")


def test_a_wrong_dtype_names_the_key_the_value_and_the_choices():
    message = options_error(dtype="fp64")
    assert "options.dtype" in message and "'fp64'" in message
    assert "'fp32', 'bf16', 'fp16', 'float32', 'bfloat16' or 'float16'" in message
