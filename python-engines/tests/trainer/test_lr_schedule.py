"""The learning-rate schedule: transformers' curves by train step, on the torch trainer, across a checkpoint."""
import math

import pytest

from rollflow_engines.config import ConfigError, load_config
from rollflow_engines.roles.trainer.schedule import lr_factor

from .helpers import group_batch, ok, torch_client


# Hand-computed: warmup w = 2, total T = 10. Warmup is step / w; then linear (T - s) / (T - w),
# cosine ½(1 + cos(π (s - w) / (T - w))), constant 1.
@pytest.mark.parametrize(
    "name, step, expected",
    [
        ("constant_with_warmup", 0, 0.0),
        ("constant_with_warmup", 1, 0.5),
        ("constant_with_warmup", 2, 1.0),
        ("constant_with_warmup", 9, 1.0),
        ("linear", 1, 0.5),
        ("linear", 2, 1.0),
        ("linear", 6, 0.5),
        ("linear", 10, 0.0),
        ("cosine", 1, 0.5),
        ("cosine", 2, 1.0),
        ("cosine", 4, 0.5 * (1 + math.cos(math.pi * 2 / 8))),  # 0.853553
        ("cosine", 6, 0.5),
        ("cosine", 10, 0.0),
    ],
)
def test_factor_table(name, step, expected):
    assert lr_factor(name, 2, 10, step) == pytest.approx(expected, abs=1e-12)


def test_constant_is_the_base_rate_at_every_step():
    assert [lr_factor("constant", 0, None, s) for s in (0, 1, 100)] == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["lr_scheduler_type=constant", "warmup_steps=3"], "warmup_steps 3 needs a schedule with warmup; lr_scheduler_type constant has none"),
        (["lr_scheduler_type=cosine"], "lr_scheduler_type cosine decays over lr_total_steps, which is unset"),
        (["lr_scheduler_type=polynomial"], "lr_scheduler_type"),
        (["warmup_steps=-1"], "warmup_steps"),
    ],
)
def test_a_schedule_that_cannot_act_is_refused(flags, expected):
    with pytest.raises(ConfigError) as e:
        load_config(None, {"role": "trainer", "backend": "sim"}, flags)
    assert expected in str(e.value)


def test_each_train_step_uses_its_steps_rate_and_a_restored_trainer_goes_on_with_it(model_cache, tmp_path):
    schedule = {"learning_rate": 1e-3, "lr_scheduler_type": "cosine", "warmup_steps": 1, "lr_total_steps": 5}
    a = torch_client(model_cache, **schedule)
    rates = []
    for step in range(4):
        m = ok(a.post("/train_step", json={"step": step, "batch": group_batch(prefix=f"s{step}-")}))["metrics"]
        rates.append(m["actor/lr"])
        if step == 1:
            ok(a.post("/save", json={"path": str(tmp_path / "ckpt")}))
    # step 0 is warmup's 0/1; then ½(1 + cos(π (s − 1) / 4)) × 1e-3
    assert rates == pytest.approx([0.0, 1e-3, 0.5e-3 * (1 + math.cos(math.pi / 4)), 0.5e-3], abs=1e-12)

    b = torch_client(model_cache, **schedule)
    ok(b.post("/load", json={"path": str(tmp_path / "ckpt")}))
    resumed = ok(b.post("/train_step", json={"step": 2, "batch": group_batch(prefix="s2-")}))["metrics"]
    assert resumed["actor/lr"] == pytest.approx(rates[2], abs=1e-15)
