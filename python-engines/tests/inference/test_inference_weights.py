"""update_weights refuses a path that is not the trainer's export of the served model, naming
``path``, before it changes anything: the server keeps serving its old weights and version."""
import json

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.errors import ConflictError
from rollflow_engines.exports import EXPORT_MANIFEST, HF_EXPORTERS, ServedModel, check_export_fits

from .helpers import as_export, serve

pytestmark = pytest.mark.anyio


def refusals(tmp_path, backend: str) -> list[tuple[str, object, int, str]]:
    """(what, path, status, words of the message) of weights a ``backend`` server must refuse."""
    a_file = tmp_path / "model.safetensors"
    a_file.write_bytes(b"\0" * 16)
    empty = tmp_path / "empty"
    empty.mkdir()
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / EXPORT_MANIFEST).write_text("{not json")
    a_list = tmp_path / "a-list"
    a_list.mkdir()
    (a_list / EXPORT_MANIFEST).write_text(json.dumps(["backend", "sim"]))
    other = "torch" if backend == "sim" else "sim"
    return [
        ("a regular file", a_file, 400, "is a file; expected a directory"),
        ("an empty directory", empty, 400, f"has no {EXPORT_MANIFEST}"),
        ("a manifest that is not JSON", garbled, 400, "is not readable JSON"),
        ("a manifest that is not an object", a_list, 400, "holds a list; expected an object"),
        ("another trainer backend's export", as_export(tmp_path / "other-backend", backend, backend=other), 409,
         f"exported by the '{other}' trainer backend"),
        ("another vocabulary", as_export(tmp_path / "other-vocab", backend, vocab_size=7), 409, "vocabulary of 7 tokens"),
    ]


@pytest.mark.parametrize("backend", ["sim", "torch"])
async def test_weights_that_are_not_an_export_of_the_served_model_are_refused_and_nothing_changes(backend, tmp_path):
    request = {"prompt": [5, 6], "max_tokens": 4, "seed": 1, **({"temperature": 0} if backend == "torch" else {})}
    async with serve(backend) as (client, engine):
        before = (await client.post("/v1/completions", json=request)).json()["choices"]
        await client.post("/pause", json={"mode": "abort"})
        for what, path, status, words in refusals(tmp_path, backend):
            r = await client.post("/update_weights", json={"path": str(path), "version": 5})
            assert r.status_code == status, (what, r.text)
            problem = r.json()["problems"][0]
            assert problem["field"] == "path" and problem["given"] == str(path), (what, r.text)
            assert words in problem["message"], (what, problem["message"])
            assert engine.state()["version"] == 0, what
        await client.post("/resume")
        after = (await client.post("/v1/completions", json=request)).json()["choices"]
    assert after == before


def test_a_tiny_preset_other_than_the_served_one_is_refused_by_name_and_a_warm_start_of_it_is_not():
    served = ServedModel("torch", HF_EXPORTERS, "tiny:small", vocab_size=None)
    with pytest.raises(ConflictError, match="the weights are of model 'tiny:default'; this server serves 'tiny:small'"):
        check_export_fits("/w", {"backend": "torch", "model": "tiny:default"}, served)
    check_export_fits("/w", {"backend": "megatron", "model": "tiny:small+warm:add"}, served)  # same shapes
    # A path names where a model lives, not which: not compared.
    check_export_fits("/w", {"backend": "torch", "model": "/trainer/host/models/policy"}, served)


async def test_the_sim_trainers_export_loads_into_a_sim_inference_server(tmp_path):
    trainer = TestClient(create_app(ServeConfig(role="trainer", options={"export_dir": str(tmp_path)})))
    exported = trainer.post("/export_weights", json={"version": 0}).json()
    assert json.loads((tmp_path / "v0" / EXPORT_MANIFEST).read_text()) == {"backend": "sim", "vocab_size": None, "seed": 0, "version": 0}
    async with serve("sim") as (client, engine):
        await client.post("/pause", json={"mode": "abort"})
        r = await client.post("/update_weights", json={"path": exported["path"], "version": 1})
        assert r.status_code == 200, r.text
        assert engine.state()["version"] == 1


async def test_an_update_whose_server_was_resumed_while_the_weights_were_fetched_is_refused_as_not_paused(tmp_path):
    """A pull from the object store takes a while, off the event loop; weights load only between a pause and a resume."""
    exported = as_export(tmp_path / "v1", "sim")
    async with serve("sim") as (client, engine):
        await client.post("/pause", json={"mode": "abort"})
        fetch = engine.check_weights

        def resumed_meanwhile(path: str):
            engine.pause_mode = None  # what a /resume during the fetch leaves
            return fetch(path)

        engine.check_weights = resumed_meanwhile
        r = await client.post("/update_weights", json={"path": str(exported), "version": 1})
        assert r.status_code == 409 and r.json()["code"] == "not_paused", r.text
        assert engine.state()["version"] == 0
