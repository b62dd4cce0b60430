"""The scripted SWE-lite policy of the sim backend, against the real env and sandbox: at solve_prob 1
it solves tasks of every tier (reward 1), at 0 it never does; a reply decodes to the text the
engine streams; the conversation is read back from the sim's chat tokens as the engine sees it."""
import pytest

from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.roles.inference import swe_oracle
from rollflow_engines.roles.inference.metrics import InferenceMetrics
from rollflow_engines.roles.inference.options import Options
from rollflow_engines.roles.inference.sim import SimEngine, conversation
from rollflow_engines.sandbox import SandboxSettings, configure, current


@pytest.fixture(autouse=True)
def sandbox_root(tmp_path):
    before = current()
    configure(SandboxSettings(root=tmp_path / "sandboxes"))
    yield
    configure(before)


def play(task: str, solve_prob: float, seed: int) -> tuple[float, int]:
    """One episode: the oracle answers what the engine's chat prompt says; returns (reward, turns)."""
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle", "solve_prob": solve_prob}}), InferenceMetrics())
    env = SweLiteEnv()
    try:
        messages = [{"role": "user", "content": env.reset(0, SweLiteConfig(task=task, max_turns=20))}]
        for turn in range(20):
            text = swe_oracle.reply(engine.sim.policy, conversation(engine.chat_prompt(messages)), seed)
            r = env.step(text)
            if r.done:
                return r.reward, turn + 1
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": r.observation}]
        raise AssertionError("the episode never ended")
    finally:
        env.close()


@pytest.mark.parametrize("task", ["t1-000", "t1-004", "t2-001", "t2-003", "t3-000", "t3-001", "t3-002"])
def test_at_solve_prob_1_it_solves_every_tier(task):
    assert play(task, 1.0, seed=5)[0] == 1.0


@pytest.mark.parametrize("task", ["t1-000", "t2-001", "t3-002"])
def test_at_solve_prob_0_it_never_solves(task):
    reward, turns = play(task, 0.0, seed=5)
    assert reward == 0.0 and turns > 1


def test_the_plan_is_drawn_per_seed_and_kept_across_turns():
    opts = swe_oracle.SweOracleOptions(solve_prob=0.5)
    first = {seed: swe_oracle.reply(opts, ["Task t1-000. Issue: x"], seed) for seed in range(40)}
    solvers = {s for s, text in first.items() if text.startswith(swe_oracle.SOLVER)}
    assert 5 < len(solvers) < 35  # both plans occur
    s = next(iter(solvers))
    later = swe_oracle.reply(opts, ["Task t1-000. Issue: x", first[s], "ok"], s + 1000)  # another seed at a later turn
    assert not later.startswith(swe_oracle.FLAILER)


def test_replies_stream_as_their_bytes_and_decode_back():
    engine = SimEngine(Options(backend="sim", sim={"policy": {"kind": "swe_oracle"}}), InferenceMetrics())
    text = "I will read the code, then fix it.\n<view>a/core.py</view>"
    ids = [8 + b for b in text.encode()] + [engine.eos_id]
    assert engine.decode(ids) == text
