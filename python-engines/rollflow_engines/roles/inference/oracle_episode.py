"""One episode of the sim backend's scripted policy against an env object, without servers: the sim engine's chat
prompt (the tools first when the env hands them) read back as the policy reads it on a server, the request checked as
the server checks it, a new request seed each turn. For the oracle's tests and bench/engines/swe_oracle_resolve.py."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...envs.base import BaseEnv, EnvConfig, StepResult
from . import swe_oracle
from .engine import SamplingParams
from .metrics import InferenceMetrics
from .options import Options
from .sim import SimEngine, conversation, prompt_tools


@dataclass
class Episode:
    end: StepResult
    replies: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)  # the first, then one per reply


def play(env: BaseEnv, config: EnvConfig, policy: dict, seed: int, env_seed: int = 0, max_turns: int = 50) -> Episode:
    """Reset ``env`` with ``config``, answer with the policy (``options.sim.policy``) until done; the env is closed."""
    engine = SimEngine(Options(backend="sim", sim={"policy": policy}), InferenceMetrics())
    params = SamplingParams(max_tokens=4096)
    replies: list[str] = []
    try:
        observations = [env.reset(env_seed, config)]
        messages = env.first_messages(observations[0]) or [{"role": "user", "content": observations[0]}]
        for turn in range(max_turns):
            prompt = engine.chat_prompt(messages)
            engine.check_request(prompt, params)
            replies.append(swe_oracle.reply(engine.sim.policy, conversation(prompt), seed * 101 + turn, tools=prompt_tools(prompt)))
            result = env.step(replies[-1])
            observations.append(result.observation)
            if result.done:
                return Episode(result, replies, observations)
            messages += [{"role": "assistant", "content": replies[-1]}, {"role": "user", "content": result.observation}]
        raise RuntimeError(f"the episode did not end in {max_turns} turns")
    finally:
        env.close()
