"""The trackers process (python -m rollflow_engines track) fed as the worker feeds it, read back with each
library's own reader: tensorboard's EventAccumulator, wandb's protobuf records."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from .wandb_log import config as wandb_config
from .wandb_log import history as wandb_history

CONFIG = {"exp_name": "trk", "max_steps": 3, "actor_infer": {"generating_args": {"temperature": 0.9}}, "tags": ["a", "b"]}


def feed(tmp: Path, track_with: str, kwargs: dict, lines: list[dict]) -> list[dict]:
    cmd = [sys.executable, "-m", "rollflow_engines", "track", "--run-id", "trk-1", "--run-dir", str(tmp), "--track-with", track_with, "--kwargs", json.dumps(kwargs)]
    r = subprocess.run(cmd, input="".join(json.dumps(m) + "\n" for m in lines), capture_output=True, text=True, timeout=300,
                       cwd=Path(__file__).parents[2])
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def steps(n: int) -> list[dict]:
    return [{"kind": "record", "file": "metrics.jsonl", "record": {"run_id": "trk-1", "step": s, "version": s + 1, "rollout/reward_mean": 0.25 * s, "wall_s": 1.5 * s}} for s in range(n)]


def test_tensorboard_and_wandb_get_every_record_and_the_config(tmp_path: Path):
    val = {"kind": "record", "file": "validation.jsonl", "record": {"run_id": "trk-1", "step": 3, "version": 3, "val/reward_mean": 0.5}}
    answers = feed(tmp_path, "tensorboard,wandb", {"project": "proj"}, [{"kind": "config", "config": CONFIG}, *steps(3), val])
    assert answers == [{"ok": True, "errors": []}] * 5

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    reward = events.Scalars("rollout/reward_mean")
    assert [(e.step, e.value) for e in reward] == [(0, 0.0), (1, 0.25), (2, 0.5)]
    assert [(e.step, e.value) for e in events.Scalars("val/reward_mean")] == [(3, 0.5)]
    # The validation record's version is its own series, not a point among the steps' versions.
    assert [(e.step, e.value) for e in events.Scalars("version")] == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert [(e.step, e.value) for e in events.Scalars("val/version")] == [(3, 3.0)]
    assert "config/text_summary" in events.Tags()["tensors"]

    [log] = list((tmp_path / "wandb").glob("offline-run-*-trk-1/run-trk-1.wandb"))
    hist = wandb_history(log)
    assert [(h["_step"], h.get("rollout/reward_mean")) for h in hist if "rollout/reward_mean" in h] == [(0, 0.0), (1, 0.25), (2, 0.5)]
    assert [h["val/reward_mean"] for h in hist if "val/reward_mean" in h] == [0.5]
    cfg = wandb_config(log)
    assert cfg["exp_name"] == "trk"
    assert cfg["actor_infer"] == {"generating_args": {"temperature": 0.9}}


def test_a_failing_tracker_is_reported_and_dropped_the_others_go_on(tmp_path: Path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    answers = feed(tmp_path, "tensorboard,wandb", {"log_dir": str(blocked / "tb")}, [{"kind": "config", "config": CONFIG}, *steps(2)])
    # The first answer carries the opening error; tensorboard is then gone and wandb keeps logging.
    assert answers[0]["ok"] is False and answers[0]["errors"][0]["tracker"] == "tensorboard"
    assert answers[1:] == [{"ok": True, "errors": []}] * 2


def test_an_unreadable_line_is_an_error_answer_not_an_exit(tmp_path: Path):
    cmd = [sys.executable, "-m", "rollflow_engines", "track", "--run-id", "x", "--run-dir", str(tmp_path), "--track-with", "tensorboard"]
    r = subprocess.run(cmd, input="{not json\n" + json.dumps(steps(1)[0]) + "\n", capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).parents[2])
    assert r.returncode == 0, r.stderr
    first, second = [json.loads(line) for line in r.stdout.splitlines()]
    assert first["ok"] is False and "unreadable line" in first["errors"][0]["error"]
    assert second == {"ok": True, "errors": []}


def test_library_output_on_stdout_never_reaches_the_answers(tmp_path: Path):
    # A tracker that prints, and a child process writing to the inherited fd 1 (as wandb's service could):
    # both must land on stderr, or the worker would take them for answers and misorder every later one.
    script = (
        "import os, sys\n"
        "from rollflow_engines.trackers import main, sinks\n"
        "log = sinks.TensorboardSink.log\n"
        "def noisy(self, step, scalars):\n"
        "    print(7); os.system('echo 8'); log(self, step, scalars)\n"
        "sinks.TensorboardSink.log = noisy\n"
        "main.TensorboardSink = sinks.TensorboardSink\n"
        "sys.exit(main.main(sys.argv[1:]))\n"
    )
    cmd = [sys.executable, "-c", script, "--run-id", "x", "--run-dir", str(tmp_path), "--track-with", "tensorboard"]
    r = subprocess.run(cmd, input="".join(json.dumps(m) + "\n" for m in steps(2)), capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).parents[2])
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"ok": True, "errors": []}] * 2
    assert r.stderr.split().count("7") == 2 and r.stderr.split().count("8") == 2
