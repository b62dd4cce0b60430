"""The trainer endpoints on the sim backend: step rules, concurrency, checkpoints, exports, metrics, batch files."""
import asyncio
import json

import httpx
import pytest

from .helpers import client, group_batch, make_app, ok, problem_field, sample

REQUIRED_METRICS = {"losses/pg_loss", "losses/total", "actor/clipfrac", "actor/approxkl", "actor/ratio_mean", "grad_norm",
                    "tokens", "samples", "advantages/mean", "rewards/mean", "timing/train_s"}


def test_train_step_reports_batch_statistics_and_the_loss_under_pi_old():
    c = client()
    # group g: rewards {1, 0} -> grpo advantages ±1/sqrt(2) = ±0.707107 (its group normalisation, once)
    batch = [sample("a", old=[-1.0, -1.0], reward=1.0), sample("b", response=[14], old=[-0.5], reward=0.0)]
    body = ok(c.post("/train_step", json={"step": 0, "batch": batch, "pg_variant": "vanilla"}))
    m = body["metrics"]
    assert REQUIRED_METRICS <= set(m)
    assert (body["step"], body["version"], body["replayed"]) == (0, 1, False)
    assert (m["samples"], m["tokens"], m["rewards/mean"]) == (2.0, 3.0, 0.5)
    # advantages/* are over loss tokens, as the loss sees them: (0.7071·2 − 0.7071·1) / 3 = 0.235702
    assert m["advantages/mean"] == pytest.approx(0.5 ** 0.5 / 3, abs=1e-6)
    # vanilla with log π := log π_old: token mean of −A·old = (0.7071·1 · 2 − 0.7071·0.5) / 3 = 0.353553
    assert m["losses/pg_loss"] == pytest.approx(0.353553, abs=1e-5)
    assert (m["actor/ratio_mean"], m["actor/clipfrac"], m["actor/approxkl"]) == (1.0, 0.0, 0.0)


def test_steps_run_in_order_and_a_retried_step_is_replayed_not_trained_twice():
    c = client()
    batch = group_batch()
    first = ok(c.post("/train_step", json={"step": 0, "batch": batch}))
    again = ok(c.post("/train_step", json={"step": 0, "batch": batch}))
    assert again["replayed"] and again["metrics"] == first["metrics"] and again["version"] == 1
    assert "rollflow_trainer_steps_total 1.0" in c.get("/metrics").text

    other = c.post("/train_step", json={"step": 0, "batch": group_batch(prefix="x")})
    assert other.status_code == 409 and problem_field(other) == "step"
    ahead = c.post("/train_step", json={"step": 5, "batch": batch})
    assert ahead.status_code == 409 and "next step is 1" in ahead.json()["error"]
    assert ok(c.post("/train_step", json={"step": 1, "batch": group_batch(prefix="y")}))["version"] == 2


@pytest.mark.anyio
async def test_a_concurrent_train_step_gets_409_and_a_cancelled_step_changes_nothing():
    app = make_app(sim_seconds_per_sample=600)  # long enough that only cancellation ends it
    server = app.state.trainer
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as c:
        first = asyncio.create_task(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
        while server.training_step is None:  # wait until the first step is inside the trainer
            assert not first.done(), first.result().text
            await asyncio.sleep(0)
        second = await c.post("/train_step", json={"step": 0, "batch": group_batch()})
        assert second.status_code == 409 and problem_field(second) == "step" and second.json()["code"] == "trainer_busy"
        assert "rollflow_trainer_busy 1.0" in (await c.get("/metrics")).text

        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert server.backend.version == 0 and not server.lock.locked() and server.training_step is None
        assert "rollflow_trainer_busy 0.0" in (await c.get("/metrics")).text


def test_logprobs_are_deterministic_per_version():
    c = client(seed=3)
    req = {"sequences": [{"prompt_ids": [1, 2], "response_ids": [3, 4, 5]}, {"prompt_ids": [1], "response_ids": [9]}]}
    a, b = ok(c.post("/logprobs", json=req)), ok(c.post("/logprobs", json=req))
    assert a == b and a["version"] == 0 and [len(x) for x in a["logprobs"]] == [3, 1]
    assert all(-3.05 <= v <= -0.05 for row in a["logprobs"] for v in row)


def test_save_and_load_restore_the_version_and_the_recorded_step(tmp_path):
    c = client()
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch(prefix="a")}))
    second = ok(c.post("/train_step", json={"step": 1, "batch": group_batch(prefix="b")}))
    saved = ok(c.post("/save", json={"path": str(tmp_path / "ckpt")}))
    assert saved == {"path": str(tmp_path / "ckpt"), "version": 2}
    ok(c.post("/save", json={"path": str(tmp_path / "ckpt")}))  # replacing our own checkpoint is fine

    fresh = client()
    assert ok(fresh.post("/load", json={"path": str(tmp_path / "ckpt")}))["version"] == 2
    replay = ok(fresh.post("/train_step", json={"step": 1, "batch": group_batch(prefix="b")}))
    assert replay["replayed"] and replay["metrics"] == second["metrics"]
    assert ok(fresh.post("/train_step", json={"step": 2, "batch": group_batch(prefix="c")}))["version"] == 3


def test_load_and_save_errors_name_the_path(tmp_path):
    c = client()
    missing = c.post("/load", json={"path": str(tmp_path / "nope")})
    assert missing.status_code == 404 and problem_field(missing) == "path"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("mine")
    not_ckpt = c.post("/load", json={"path": str(tmp_path / "junk")})
    assert not_ckpt.status_code == 400 and problem_field(not_ckpt) == "path"
    clobber = c.post("/save", json={"path": str(tmp_path / "junk")})
    assert clobber.status_code == 409 and problem_field(clobber) == "path"
    assert (tmp_path / "junk" / "notes.txt").read_text() == "mine"

    (tmp_path / "torchy").mkdir()
    (tmp_path / "torchy" / "rollflow_checkpoint.json").write_text(json.dumps({"backend": "torch", "version": 1}))
    other = c.post("/load", json={"path": str(tmp_path / "torchy")})
    assert other.status_code == 400 and "'torch' backend" in other.json()["error"]


def test_export_writes_a_manifest_dir_and_checks_the_version(tmp_path):
    c = client(export_dir=str(tmp_path / "weights"))
    body = ok(c.post("/export_weights", json={"version": 0}))
    assert body == {"path": str(tmp_path / "weights" / "v0"), "version": 0}
    assert json.loads((tmp_path / "weights" / "v0" / "rollflow_export.json").read_text())["version"] == 0
    ok(c.post("/export_weights", json={"version": 0}))  # a retried export replaces its own directory
    wrong = c.post("/export_weights", json={"version": 1})
    assert wrong.status_code == 409 and problem_field(wrong) == "version"
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["v0"]  # no temp dirs left


def test_metrics_count_steps_samples_and_tokens():
    c = client()
    batch = group_batch()
    ok(c.post("/train_step", json={"step": 0, "batch": batch}))
    text = c.get("/metrics").text
    tokens = sum(len(s["response_ids"]) for s in batch)
    for line in ("rollflow_trainer_steps_total 1.0", f"rollflow_trainer_samples_total {float(len(batch))}",
                 f"rollflow_trainer_tokens_total {float(tokens)}", "rollflow_trainer_busy 0.0", "rollflow_trainer_version 1.0"):
        assert line in text
    assert "rollflow_trainer_last_loss" in text and "rollflow_trainer_last_grad_norm" in text


@pytest.mark.parametrize("fmt", ["jsonl", "json", "json-object"])
def test_batch_ref_files(tmp_path, fmt):
    batch = group_batch()
    path = tmp_path / ("batch.jsonl" if fmt == "jsonl" else "batch.json")
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(s) for s in batch) + "\n\n")
    else:
        path.write_text(json.dumps(batch if fmt == "json" else {"samples": batch}))
    c = client()
    inline = ok(client().post("/train_step", json={"step": 0, "batch": batch}))["metrics"]
    by_ref = ok(c.post("/train_step", json={"step": 0, "batch_ref": str(path)}))["metrics"]
    assert {k: v for k, v in by_ref.items() if k != "timing/train_s"} == {k: v for k, v in inline.items() if k != "timing/train_s"}


@pytest.mark.parametrize("content, name, status, field", [
    (None, "missing.jsonl", 404, "batch_ref"),
    ("", "empty.jsonl", 400, "batch_ref"),
    ('{"uid": "a"\n', "broken.jsonl", 400, "batch_ref"),
    ("[1, 2", "broken.json", 400, "batch_ref"),
    ('{"rows": []}', "shape.json", 400, "batch_ref"),
    (json.dumps(sample("a")) + "\n" + json.dumps({**sample("b"), "reward": "high"}), "types.jsonl", 400, "batch_ref[1].reward"),
    (json.dumps([sample("a", old=[-1.0])]), "lengths.json", 400, "batch_ref[0].old_logprobs"),
])
def test_bad_batch_files_name_the_field(tmp_path, content, name, status, field):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    r = client().post("/train_step", json={"step": 0, "batch_ref": str(path)})
    assert r.status_code == status, r.text
    assert problem_field(r) == field


def test_reset_returns_to_version_zero_so_a_new_run_can_start():
    from fastapi.testclient import TestClient

    from rollflow_engines.app import create_app
    from rollflow_engines.config import load_config

    client = TestClient(create_app(load_config(None, {"role": "trainer", "backend": "sim"})))
    sample = {"uid": "u0", "group_id": "g0", "prompt_ids": [1], "response_ids": [2], "old_logprobs": [-1.0], "reward": 1.0}
    assert client.post("/train_step", json={"step": 0, "batch": [sample]}).status_code == 200
    assert client.post("/train_step", json={"step": 0, "batch": [{**sample, "uid": "u1"}]}).status_code == 409
    assert client.post("/reset", json={}).json() == {"version": 0}
    again = client.post("/train_step", json={"step": 0, "batch": [{**sample, "uid": "u1"}]})
    assert again.status_code == 200 and again.json()["version"] == 1
    assert "rollflow_trainer_version 1.0" in client.get("/metrics").text
