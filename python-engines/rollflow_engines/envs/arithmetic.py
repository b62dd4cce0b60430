"""A single-turn verifiable task: "What is 12 + 7?", answered with an integer.

Operands are drawn from the seed in [0, ``max_operand``]; the operator from
``ops`` (``+``, ``-``, ``*``, and ``/``, which is always exact: the dividend
is drawn as divisor × quotient, the divisor in [1, ``max_operand``]).

The answer is the whole reply or the content of its last ``<answer>…</answer>``,
and must be an integer: optional sign, digits, optionally grouped by commas
(``1,234``); surrounding whitespace, ``$`` and a final ``.`` are ignored.
Anything else (words, ``19.0``, an empty reply) is an invalid action, rewarded
``-format_penalty`` (0 by default). Reward 1 for the right integer, 0 for a
wrong one. The episode ends after one step, whatever the answer.

The question reads "What is 12 + 7? Reply with a single integer, …"
(``prompt: text``, the default) or just ``12+7=`` (``prompt: compact``): a
model built from code with a few hundred thousand parameters finds the
operands far sooner at the end of a 5-token prompt than inside a 70-token one.
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from .base import BaseEnv, EnvConfig, StepResult, extract_answer, preview
from .registry import register_env
from .rng import SplitMix64

Op = Literal["+", "-", "*", "/"]
_INTEGER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)")


class ArithmeticConfig(EnvConfig):
    max_operand: int = Field(default=100, ge=1, le=10**7, description="Largest operand (and quotient, for /); results stay exact in JSON numbers.")
    ops: list[Op] = Field(default_factory=lambda: ["+", "-", "*"], min_length=1, description="Operators to draw from.")
    format_penalty: float = Field(default=0.0, ge=0, description="An unparsable answer is rewarded -format_penalty.")
    prompt: Literal["text", "compact"] = Field(default="text", description="text: 'What is 12 + 7? Reply with …'; compact: '12+7='.")


def parse_integer(text: str) -> int | None:
    """The integer ``text`` answers with, or None (see the module doc)."""
    word = extract_answer(text).strip().strip("$").strip()
    if word.endswith("."):
        word = word[:-1].rstrip()
    if len(word) > 64 or not _INTEGER.fullmatch(word):
        return None
    return int(word.replace(",", ""))


@register_env
class ArithmeticEnv(BaseEnv):
    name = "arithmetic"
    Config = ArithmeticConfig
    description = "One integer arithmetic question; reward 1 for the exact answer."
    # The question is drawn from the seed alone: the same seed and actions rebuild the same episode.
    on_env_loss = "replay"

    def reset(self, seed: int, config: ArithmeticConfig) -> str:
        self.config = config
        rng = SplitMix64(seed)
        op = rng.choice(config.ops)
        if op == "/":
            b = rng.between(1, config.max_operand)
            self.answer = rng.between(0, config.max_operand)
            a = b * self.answer
        else:
            a, b = rng.between(0, config.max_operand), rng.between(0, config.max_operand)
            self.answer = a + b if op == "+" else a - b if op == "-" else a * b
        self.question = f"{a} {op} {b}"
        self.turn = 0
        self.done = False
        self.success = False
        if config.prompt == "compact":
            return f"{a}{op}{b}="
        return f"What is {self.question}? Reply with a single integer, e.g. <answer>42</answer>."

    def info(self) -> dict[str, Any]:
        return {"turn": self.turn, "max_turns": 1, "success": self.success, "question": self.question}

    def step(self, action: str) -> StepResult:
        self.turn += 1
        self.done = True
        given = parse_integer(action)
        if given is None:
            reward = 0.0 - self.config.format_penalty  # never -0.0
            observation = f"Invalid answer {preview(action)!r}: expected a single integer. The answer to {self.question} is {self.answer}."
        elif given == self.answer:
            self.success, reward = True, 1.0
            observation = f"Correct: {self.question} = {self.answer}."
        else:
            reward = 0.0
            observation = f"Wrong: {self.question} = {self.answer}, not {given}."
        info = {**self.info(), "invalid_action": given is None, "answer": given, "expected": self.answer}
        return StepResult(observation, reward, True, info)
