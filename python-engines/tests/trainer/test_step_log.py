"""The trainer's step log (roles/trainer/step_log.py): a line per applied step and none for a replayed
retry; a restarted trainer that loads a state starts a new lineage whose parent is the saving one, and
marks the steps it re-applies as recovered."""
from __future__ import annotations

import hashlib
import json

from .helpers import client, group_batch, ok


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def fingerprint(batch: list[dict]) -> str:
    return hashlib.sha256("\n".join(s["uid"] for s in batch).encode()).hexdigest()


def test_a_line_per_applied_step_and_none_for_a_retried_one(tmp_path):
    log = tmp_path / "steps.jsonl"
    c = client(step_log=str(log))
    ok(c.post("/reset", json={"run_id": "run-a"}))
    b0, b1 = group_batch(), group_batch(prefix="x")
    ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": b0}))
    assert ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": b0}))["replayed"] is True  # a retry: nothing applied
    ok(c.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": b1}))
    reset, *steps = lines(log)
    assert {k: reset[k] for k in ("run_id", "event", "version")} == {"run_id": "run-a", "event": "reset", "version": 0}
    assert [(s["run_id"], s["step"], s["version_after"], s["uids_sha256"], s["lineage"]) for s in steps] == [
        ("run-a", 0, 1, fingerprint(b0), reset["lineage"]), ("run-a", 1, 2, fingerprint(b1), reset["lineage"])]
    assert not any("recovered" in s for s in steps)


def test_a_restarted_trainer_replays_on_a_new_lineage_and_marks_the_replays(tmp_path):
    log, state = tmp_path / "steps.jsonl", tmp_path / "state-v1"
    batches = [group_batch(prefix=p) for p in ("a", "b", "c")]
    first = client(step_log=str(log))
    ok(first.post("/reset", json={"run_id": "run-a"}))
    ok(first.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": batches[0]}))
    ok(first.post("/save", json={"path": str(state), "run_id": "run-a"}))
    ok(first.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": batches[1]}))
    # The process dies; a new one (same log file) loads the state at v1, replays step 1 and goes on with step 2.
    second = client(step_log=str(log))
    ok(second.post("/load", json={"path": str(state), "run_id": "run-a"}))
    ok(second.post("/train_step", json={"step": 1, "run_id": "run-a", "batch": batches[1]}))
    ok(second.post("/train_step", json={"step": 2, "run_id": "run-a", "batch": batches[2]}))
    records = lines(log)
    events = [(r["event"], r["version"]) for r in records if "event" in r]
    assert events == [("reset", 0), ("save", 1), ("load", 1)]
    reset, save, load = (r for r in records if "event" in r)
    assert save["lineage"] == reset["lineage"] and load["parent"] == reset["lineage"] and load["lineage"] != reset["lineage"]
    steps = [(r["step"], r["lineage"] == load["lineage"], r.get("recovered", False)) for r in records if "step" in r]
    assert steps == [(0, False, False), (1, False, False), (1, True, True), (2, True, False)]


def test_no_step_log_by_default_and_a_bad_path_is_refused_at_start(tmp_path):
    c = client(export_dir=str(tmp_path))
    ok(c.post("/reset", json={"run_id": "run-a"}))
    ok(c.post("/train_step", json={"step": 0, "run_id": "run-a", "batch": group_batch()}))
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("")
    try:
        client(step_log=str(tmp_path / "file" / "steps.jsonl"))
    except OSError as e:
        assert "step_log" in str(e) and "steps.jsonl" in str(e)
    else:
        raise AssertionError("a step_log under a regular file must not start")
