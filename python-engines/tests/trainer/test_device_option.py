"""The torch backends' ``device`` option: validated before a port is bound (a device this machine lacks, a
malformed name, a backend that places no torch model), honoured by both torch servers (model, value head
and a train step's tensors on it), and reported by the trainer. The CUDA half runs in bench/gpu (docs/gpu.md)."""
import pytest
import torch

from rollflow_engines.config import ConfigError, load_config
from rollflow_engines.models.tiny import tiny_model_dir

from .helpers import group_batch, ok, torch_client


def config_error(role: str, backend: str, **options) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(None, {"role": role, "backend": backend}, [f"{k}={v}" for k, v in options.items()])
    return str(e.value)


@pytest.mark.parametrize("role", ["inference", "trainer"])
def test_a_malformed_device_is_refused_naming_the_choices(role):
    message = config_error(role, "torch", device="gpu")
    assert "options.device" in message and "expected cpu, cuda or cuda:<index>" in message


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
@pytest.mark.parametrize("role", ["inference", "trainer"])
def test_cuda_on_a_machine_without_one_is_refused_before_serving(role):
    assert "device 'cuda:1': torch sees no CUDA device on this machine" in config_error(role, "torch", device="cuda:1")


@pytest.mark.parametrize("role, backend", [("inference", "sim"), ("trainer", "sim")])
def test_a_backend_without_a_torch_model_refuses_device(role, backend):
    assert "only the torch backend takes device" in config_error(role, backend, device="cpu")


def test_the_trainer_keeps_model_and_value_head_on_its_device_and_trains(model_cache):
    c = torch_client(model_cache, device="cpu")
    backend = c.app.state.trainer.backend
    assert {p.device.type for p in backend.model.parameters()} == {"cpu"}
    assert backend.value_head.weight.device.type == "cpu"
    assert backend.describe()["device"] == "cpu"
    assert ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))["metrics"]["grad_norm"] > 0


def test_the_qwen2_preset_builds_a_qwen2_model(tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_model_dir("qwen2-small", 0, tmp_path))
    assert config.model_type == "qwen2" and config.tie_word_embeddings and config.hidden_size == 128
