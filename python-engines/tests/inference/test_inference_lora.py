"""A LoRA inference server applies only an adapter trained for its own LoRA settings and base
weights; anything else is refused naming ``path``, and the server keeps serving what it had.
Its dtype option loads the model in that dtype."""
from pathlib import Path

import pytest

from rollflow_engines.exports import write_export_manifest
from rollflow_engines.roles.trainer import Options as TrainerOptions
from rollflow_engines.roles.trainer.torch_backend import TorchTrainer

from .helpers import serve

pytestmark = pytest.mark.anyio
REQUEST = {"prompt": [5, 6, 7], "max_tokens": 6, "temperature": 0, "ignore_eos": True}


def export(directory: Path, manifest_of: dict | None = None, **options) -> Path:
    """The trainer's export for ``options``; with ``manifest_of``, a manifest claiming those options instead."""
    trainer = TorchTrainer(TrainerOptions(backend="torch", **options))
    directory.mkdir()
    trainer._export(directory)
    described = TorchTrainer(TrainerOptions(backend="torch", **manifest_of)).describe() if manifest_of else trainer.describe()
    write_export_manifest(directory, described, 1)
    return directory


async def test_an_adapter_for_other_lora_settings_or_another_base_is_refused(tmp_path):
    cases = [
        ("a whole model", export(tmp_path / "full"), 409, "the export is a whole model"),
        ("another rank", export(tmp_path / "r8", lora_rank=8), 409, "r 8 (this server: 4)"),
        ("another alpha", export(tmp_path / "alpha", lora_rank=4, lora_alpha=32), 409, "lora_alpha 32.0 (this server: 8.0)"),
        ("other targets", export(tmp_path / "targets", lora_rank=4, lora_target="q_proj"), 409, "target_modules ['q_proj']"),
        ("another base", export(tmp_path / "base", lora_rank=4, model_seed=1), 409, "base '"),
        ("rank-8 tensors under a rank-4 manifest", export(tmp_path / "lying", {"lora_rank": 4}, lora_rank=8), 400, "(another lora_rank?)"),
    ]
    async with serve("torch", lora_rank=4) as (client, engine):
        before = (await client.post("/v1/completions", json=REQUEST)).json()["choices"]
        await client.post("/pause", json={"mode": "abort"})
        for what, path, status, words in cases:
            r = await client.post("/update_weights", json={"path": str(path), "version": 5})
            assert r.status_code == status, (what, r.text)
            problem = r.json()["problems"][0]
            assert problem["field"] == "path" and words in problem["message"], (what, problem["message"])
            assert engine.state()["version"] == 0, what
        await client.post("/resume")
        assert (await client.post("/v1/completions", json=REQUEST)).json()["choices"] == before


async def test_a_server_without_lora_refuses_an_adapter(tmp_path):
    adapter = export(tmp_path / "adapter", lora_rank=4)
    async with serve("torch") as (client, engine):
        await client.post("/pause", json={"mode": "abort"})
        r = await client.post("/update_weights", json={"path": str(adapter), "version": 1})
        assert r.status_code == 409, r.text
        assert "the export is a LoRA adapter (r=4); this server loads whole models" in r.json()["problems"][0]["message"]
        assert engine.state()["version"] == 0


@pytest.mark.parametrize("options, words", [
    ({"backend": "sim", "lora_rank": 4}, "only the torch backend applies LoRA adapters, not sim"),
    ({"backend": "sim", "dtype": "bf16"}, "only the torch backend takes dtype"),
    ({"backend": "torch", "dtype": "fp64"}, "'fp32', 'bf16', 'fp16', 'float32', 'bfloat16' or 'float16'"),
])
def test_model_options_a_backend_would_ignore_or_cannot_read_are_refused(options, words):
    from rollflow_engines.roles.inference.options import Options

    with pytest.raises(ValueError, match=words):
        Options(**options)


@pytest.mark.parametrize("dtype, expected", [("bf16", "bfloat16"), ("fp16", "float16")])
async def test_the_server_loads_its_model_in_the_dtype_asked_and_generates(dtype, expected):
    async with serve("torch", dtype=dtype) as (client, engine):
        assert {str(p.dtype) for p in engine.model.parameters()} == {f"torch.{expected}"}
        r = await client.post("/v1/completions", json=REQUEST)
        assert r.status_code == 200, r.text
        assert len(r.json()["choices"][0]["token_ids"]) == REQUEST["max_tokens"]
