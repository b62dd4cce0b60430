"""llm_judge: a model grades the response, asked through any OpenAI-compatible chat server.

The verifier config (the dataset env's ``verifier_config``) names the judge server (``url``: a rollflow
inference server, vLLM, or any ``/v1/chat/completions``), the prompt (``template``, with ``{prompt}``,
``{response}`` and ``{reference}`` filled in; ``system`` optional) and how to read the grade:
``grade_pattern`` is a regular expression whose first group is the grade, the **last** match in the
judge's reply wins (judges reason first, then conclude), and the grade must be a number within
``[min_grade, max_grade]``, which maps linearly onto the reward ``[0, 1]``.

A reply with no readable grade is asked again, up to ``attempts`` times (each attempt its own seed,
so a sampling judge answers differently). If no attempt gives a grade the response is **unscored**:
the server answers 422 with code ``reward_unscored`` and counts it; the run fails that sample's group
(never trained) and counts it apart, never as a 0. A judge server that cannot be reached or fails
(5xx, a timeout) is the infrastructure's failure: a 503 with code ``judge_unavailable``, retried by
the run, never a score.

``info``: ``grade``, ``attempts`` (replies read), ``judge_reply`` (the last one, cut to 400
characters).
"""
from __future__ import annotations

import re
from typing import Any

import httpx
from pydantic import Field, field_validator, model_validator

from ..errors import RequestError, UnavailableError, UnscoredError, excerpt
from .registry import Verifier, VerifierConfig, register_verifier

PLACEHOLDERS = ("prompt", "response", "reference")
REPLY_EXCERPT = 400


class LlmJudgeConfig(VerifierConfig):
    url: str = Field(pattern=r"^https?://", description="The judge server's base URL (it serves /v1/chat/completions).")
    template: str = Field(min_length=1, description="The judge's user message; {prompt}, {response} and {reference} are filled in "
                                                    "(write {{ and }} for literal braces).")
    system: str | None = Field(default=None, description="An optional system message before the template.")
    grade_pattern: str = Field(default=r"(-?\d+(?:\.\d+)?)", description="Regular expression whose first group is the grade; "
                                                                          "the last match in the reply wins.")
    min_grade: float = Field(default=0.0, description="The grade that maps to reward 0.")
    max_grade: float = Field(default=10.0, description="The grade that maps to reward 1.")
    attempts: int = Field(default=3, ge=1, le=10, description="Replies asked for before the response is unscored.")
    max_tokens: int = Field(default=64, ge=1, description="Tokens the judge may write per reply.")
    temperature: float = Field(default=0.0, ge=0, description="The judge's sampling temperature (0: greedy).")
    seed: int = Field(default=0, description="Attempt k samples with seed + k.")
    timeout_s: float = Field(default=60.0, gt=0, description="Longest wait for one reply; past it the judge counts as unavailable.")
    model: str | None = Field(default=None, description="Sent as the request's model (servers that route by it need it).")

    @field_validator("template")
    @classmethod
    def _known_placeholders(cls, template: str) -> str:
        try:
            template.format(**{p: "" for p in PLACEHOLDERS})
        except (KeyError, IndexError) as e:
            raise ValueError(f"unknown placeholder {{{e.args[0]}}}; the template may use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}") from e
        except ValueError as e:
            raise ValueError(f"not a valid template ({e}); write {{{{ and }}}} for literal braces") from e
        return template

    @field_validator("grade_pattern")
    @classmethod
    def _one_group(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"not a regular expression: {e}") from e
        if compiled.groups < 1:
            raise ValueError("needs a group around the grade, e.g. 'Grade: (\\d+)'")
        return pattern

    @model_validator(mode="after")
    def _range(self) -> "LlmJudgeConfig":
        if self.max_grade <= self.min_grade:
            raise ValueError(f"max_grade ({self.max_grade:g}) must be above min_grade ({self.min_grade:g})")
        return self


def read_grade(reply: str, config: LlmJudgeConfig) -> float | None:
    """The grade in a judge's reply (the last match of grade_pattern), or None if there is none in range."""
    matches = list(re.finditer(config.grade_pattern, reply))
    if not matches:
        return None
    try:
        grade = float(matches[-1].group(1))
    except (TypeError, ValueError):
        return None
    return grade if config.min_grade <= grade <= config.max_grade else None


def _ask(client: httpx.Client, config: LlmJudgeConfig, messages: list[dict[str, str]], attempt: int) -> str:
    body: dict[str, Any] = {"messages": messages, "max_tokens": config.max_tokens, "temperature": config.temperature, "seed": config.seed + attempt}
    if config.model is not None:
        body["model"] = config.model
    url = config.url.rstrip("/") + "/v1/chat/completions"
    try:
        r = client.post(url, json=body)
    except httpx.HTTPError as e:
        raise UnavailableError("config.url", f"the judge at {config.url} did not answer: {e}", config.url, code="judge_unavailable") from e
    if r.status_code >= 500 or r.status_code == 429:
        raise UnavailableError("config.url", f"the judge at {config.url} failed: HTTP {r.status_code} {excerpt(r.text)}", config.url, code="judge_unavailable")
    if r.status_code >= 400:  # our request is wrong for this judge (a bad model name, max_tokens over its cap): the config's fault
        raise RequestError("config", f"the judge at {config.url} refused the request: HTTP {r.status_code} {excerpt(r.text)}", None, code="judge_refused")
    try:
        return r.json()["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise UnavailableError("config.url", f"the judge at {config.url} answered something that is not a chat completion: {excerpt(r.text)}",
                               config.url, code="judge_unavailable") from e


def judge(prompt: str, response: str, reference: str, config: dict[str, Any], timeout_s: float) -> tuple[float, dict[str, Any]]:
    c = LlmJudgeConfig(**config)
    messages = ([{"role": "system", "content": c.system}] if c.system else []) + [
        {"role": "user", "content": c.template.format(prompt=prompt, response=response, reference=reference)}]
    reply = ""
    with httpx.Client(timeout=min(c.timeout_s, timeout_s)) as client:
        for attempt in range(c.attempts):
            reply = _ask(client, c, messages, attempt)
            grade = read_grade(reply, c)
            if grade is not None:
                reward = (grade - c.min_grade) / (c.max_grade - c.min_grade)
                return reward, {"grade": grade, "attempts": attempt + 1, "judge_reply": reply[:REPLY_EXCERPT]}
    raise UnscoredError("response", f"the judge gave no readable grade in {c.attempts} replies (grade_pattern {c.grade_pattern!r}, "
                        f"range [{c.min_grade:g}, {c.max_grade:g}]); last reply: {reply[:REPLY_EXCERPT]!r}", code="reward_unscored")


register_verifier(Verifier(
    name="llm_judge", fn=judge, Config=LlmJudgeConfig, isolated=False, remote=True,
    description="Asks a judge model (an OpenAI-compatible chat server) to grade the response with the configured template; "
                "the last grade in its reply maps onto [0, 1]; no readable grade after the attempts is unscored (422), not 0.",
))
