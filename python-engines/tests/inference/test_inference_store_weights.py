"""Weights across hosts through the object store (a real versitygw): a torch trainer exports to an s3:// ref, and a
torch inference server that shares no path with it (its own working directory and weights cache; the trainer's
scratch is gone) updates to the export by its ref and generates with the trained weights. An export that is damaged
or incomplete in the store is refused with a 4xx naming the object, and the server goes on serving its old weights."""
import uuid

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import load_config
from rollflow_engines.exports import EXPORT_MANIFEST
from rollflow_engines.objects import delete_object

from .helpers import serve

pytestmark = pytest.mark.anyio

PROMPT = [1, 40, 41, 42]
GREEDY = {"prompt": PROMPT, "max_tokens": 6, "temperature": 0, "ignore_eos": True}


def batch(seed: int) -> list[dict]:
    """Four samples of one group; ``seed`` varies the responses, so two batches train to different weights."""
    return [{"uid": f"s{seed}-{i}", "group_id": "g", "prompt_ids": PROMPT, "response_ids": [50 + seed + i, 60 + i, 2],
             "old_logprobs": [-1.0] * 3, "reward": float(i == 0)} for i in range(4)]


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def torch_trainer(export_dir: str, scratch) -> TestClient:
    flags = [f"export_dir={export_dir}", f"export_scratch_dir={scratch}", "learning_rate=0.05", "micro_batch_size=4", "torch_threads=1"]
    return TestClient(create_app(load_config(None, {"role": "trainer", "backend": "torch"}, flags)))


def train_and_export(trainer: TestClient, step: int, seed: int) -> str:
    ok(trainer.post("/train_step", json={"step": step, "batch": batch(seed)}))
    return ok(trainer.post("/export_weights", json={"version": step + 1}))["path"]


async def generate(client) -> dict:
    return ok(await client.post("/v1/completions", json=GREEDY))["choices"][0]


async def update(client, path: str, version: int):
    ok(await client.post("/pause", json={"mode": "abort"}))
    r = await client.post("/update_weights", json={"path": path, "version": version})
    ok(await client.post("/resume"))
    return r


def key_of(ref: str) -> str:
    return ref.removeprefix("s3://rollflow/")


@pytest.fixture
def hosts(object_store, tmp_path, monkeypatch):
    """(the export prefix, the trainer's scratch dir); the test then runs in the inference host's working directory."""
    (tmp_path / "inference-host").mkdir()
    monkeypatch.chdir(tmp_path / "inference-host")
    return object_store.ref(f"weights/{uuid.uuid4().hex[:8]}"), tmp_path / "trainer-host" / "scratch"


async def test_an_inference_server_on_another_host_updates_to_a_store_export_and_generates_with_it(hosts):
    prefix, scratch = hosts
    trainer = torch_trainer(prefix, scratch)
    v1 = train_and_export(trainer, 0, seed=0)
    assert v1 == f"{prefix}/v1"
    assert list(scratch.iterdir()) == [], "nothing of the export is left on the trainer's disk"
    async with serve("torch", weights_cache_dir="weights-cache", torch_threads=1) as (client, engine):
        before = await generate(client)
        assert ok(await update(client, v1, 1))["version"] == 1
        after = await generate(client)
        # The trainer's version-1 weights: the server's logprobs of its own reply are the trainer's (T=1 when greedy).
        trained = ok(trainer.post("/logprobs", json={"sequences": [{"prompt_ids": PROMPT, "response_ids": after["token_ids"]}]}))
        assert after["version_spans"] == [{"version": 1, "start": 0, "end": 6}]
        assert after["logprobs"] == pytest.approx(trained["logprobs"][0], abs=1e-4)
        assert after["logprobs"] != before["logprobs"]

        # A new run on the trainer exports version 1 again, other weights under the same ref: pulled again, not reused.
        ok(trainer.post("/reset", json={}))
        assert train_and_export(trainer, 0, seed=7) == v1
        assert ok(await update(client, v1, 1))["version"] == 1
        rerun = await generate(client)
        assert rerun["logprobs"] != after["logprobs"]
        v2 = train_and_export(trainer, 1, seed=8)
        assert ok(await update(client, v2, 2))["version"] == 2
        cache = engine.weights_cache.root
    # The cache keeps the export being served and the one before it; nothing else, no scratch.
    entries = sorted(p.name for p in cache.iterdir())
    assert len(entries) == 2 and entries[0].startswith(f"{key_of(prefix).replace('/', '_')}_v1-"), entries
    assert entries[1].startswith(f"{key_of(prefix).replace('/', '_')}_v2-")
    assert cache.parent == scratch.parents[1] / "inference-host"


async def test_a_damaged_or_incomplete_export_is_refused_naming_the_object_and_the_old_weights_serve_on(hosts, object_store):
    prefix, scratch = hosts
    trainer = torch_trainer(prefix, scratch)
    good, flipped, no_manifest, missing_file = (train_and_export(trainer, step, seed=step) for step in range(4))
    data = object_store.file_of(f"{key_of(flipped)}/model.safetensors")
    damaged = bytearray(data.read_bytes())
    damaged[len(damaged) // 2] ^= 0x01  # inside the tensor data: still a loadable safetensors file
    data.write_bytes(bytes(damaged))
    delete_object(f"{no_manifest}/{EXPORT_MANIFEST}")
    delete_object(f"{missing_file}/model.safetensors")
    refusals = [
        (flipped, 400, f"{flipped}/model.safetensors is corrupt: its body has sha256"),
        (no_manifest, 400, f"{no_manifest} is incomplete: it has"),
        (missing_file, 400, f"{missing_file} is incomplete: its manifest lists {missing_file}/model.safetensors"),
        (f"{prefix}/v9", 404, f"no export at {prefix}/v9"),
    ]
    async with serve("torch", weights_cache_dir="weights-cache", torch_threads=1) as (client, engine):
        ok(await update(client, good, 1))
        serving = await generate(client)
        for path, status, words in refusals:
            r = await update(client, path, 5)
            assert r.status_code == status, (path, r.text)
            [problem] = r.json()["problems"]
            assert (problem["field"], problem["given"]) == ("path", path)
            assert words in problem["message"], problem["message"]
            assert engine.state()["version"] == 1
            assert await generate(client) == serving, f"after {path}: the version-1 weights serve on"
        cache = engine.weights_cache.root
    names = [p.name for p in cache.iterdir()]
    assert len(names) == 1 and names[0].startswith(key_of(good).replace("/", "_") + "-"), f"a refused pull leaves nothing: {names}"
