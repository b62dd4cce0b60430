"""`python -m rollflow_engines serve --role trainer` as a real process."""
from pathlib import Path

import httpx

from .helpers import group_batch


def test_sim_trainer_serves_train_step_over_http(serve_engine, tmp_path):
    served = serve_engine("--role", "trainer", "--backend", "sim", "--option", f"export_dir={tmp_path}",
                          "--option", "sim_seconds_per_sample=0.001")
    base = served.base
    assert served.health["role"] == "trainer"
    step = httpx.post(f"{base}/train_step", json={"step": 0, "batch": group_batch()}, timeout=30)
    assert step.status_code == 200 and step.json()["version"] == 1
    export = httpx.post(f"{base}/export_weights", json={"version": 1}, timeout=30).json()
    assert Path(export["path"]).is_dir()
    assert "rollflow_trainer_steps_total 1.0" in httpx.get(f"{base}/metrics", timeout=5).text
