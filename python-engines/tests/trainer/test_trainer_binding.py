"""Run binding: a restarted trainer (no run) or one held by another run never trains, saves or exports
under a run's name; each refusal carries the code the bridge acts on."""
from __future__ import annotations

from .helpers import client, group_batch, ok


def refusal(response, code: str) -> dict:
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == code, body
    return body


def bound(run_id: str = "run-a"):
    c = client()
    ok(c.post("/reset", json={"run_id": run_id}))
    return c


def test_status_names_the_run_the_reset_bound():
    c = client()
    assert ok(c.get("/status")) == {"run_id": None, "version": 0, "busy_step": None, "backend": "sim"}
    ok(c.post("/reset", json={"run_id": "run-a"}))
    ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}))
    assert ok(c.get("/status")) == {"run_id": "run-a", "version": 1, "busy_step": None, "backend": "sim"}


def test_a_trainer_holding_no_run_refuses_a_runs_step_as_behind():
    c = client()  # a fresh process: what a restarted trainer looks like
    body = refusal(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}), "trainer_behind")
    assert "holds no run" in body["error"]
    assert ok(c.get("/status"))["version"] == 0  # nothing was trained


def test_a_trainer_held_by_another_run_names_the_holder():
    c = bound("run-a")
    for path, body in [("/train_step", {"step": 0, "batch": group_batch()}), ("/export_weights", {"version": 0}),
                       ("/save", {"path": "/tmp/never-written"})]:
        refused = refusal(c.post(path, json={**body, "run_id": "run-b"}), "trainer_held")
        assert "held by run run-a" in refused["error"]
    assert ok(c.get("/status")) == {"run_id": "run-a", "version": 0, "busy_step": None, "backend": "sim"}


def test_a_step_ahead_of_the_weights_is_behind_and_an_old_one_is_ahead():
    c = bound()
    refusal(c.post("/train_step", json={"step": 3, "run_id": "run-a", "batch": group_batch()}), "trainer_behind")
    ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}))
    ok(c.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": group_batch(prefix="x")}))
    refusal(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}), "trainer_ahead")
    # the last step again on another batch: the trainer's version 2 is not the lineage the caller has
    refusal(c.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": group_batch(prefix="y")}), "trainer_ahead")
    refusal(c.post("/export_weights", json={"version": 1, "run_id": "run-a"}), "trainer_ahead")
    assert ok(c.get("/status"))["version"] == 2  # nothing changed


def test_save_refuses_a_version_the_trainer_does_not_have(tmp_path):
    c = bound()
    refusal(c.post("/save", json={"path": str(tmp_path / "s"), "version": 4, "run_id": "run-a"}), "trainer_behind")
    assert not (tmp_path / "s").exists()
    assert ok(c.post("/save", json={"path": str(tmp_path / "s"), "version": 0, "run_id": "run-a"}))["version"] == 0


def test_load_binds_the_run_it_names(tmp_path):
    c = bound()
    ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}))
    ok(c.post("/save", json={"path": str(tmp_path / "v1"), "run_id": "run-a"}))
    fresh = client()
    ok(fresh.post("/load", json={"path": str(tmp_path / "v1"), "run_id": "run-a"}))
    assert ok(fresh.get("/status")) == {"run_id": "run-a", "version": 1, "busy_step": None, "backend": "sim"}
    ok(fresh.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": group_batch(prefix="y")}))


def test_calls_without_a_run_id_are_not_bound(tmp_path):
    c = client(export_dir=str(tmp_path))
    ok(c.post("/reset", json={"run_id": "run-a"}))
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
    ok(c.post("/export_weights", json={"version": 1}))
