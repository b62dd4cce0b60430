"""math_verify: is the response's final answer mathematically equal to the reference?

Uses Hugging Face's ``math_verify`` (``parse`` + ``verify``), with its own
signal-based timeouts off (``parsing_timeout=None``, ``timeout_seconds=None``);
the env role runs this in a worker process under ``reward_timeout_s`` instead
(see ``isolation.py``).

What is accepted as the response's answer (math-verify's default extraction,
LaTeX first, then plain expressions):

1. the content of ``\\boxed{…}``, e.g. ``\\boxed{\\frac{1}{2}}`` (several boxes are read
   together as one set of answers, so hedging with two boxes does not match one reference);
2. otherwise LaTeX in ``$…$``, ``\\(…\\)``, ``\\[…\\]`` or after "final answer is";
3. otherwise a plain number or expression: the one after "answer is" / "answer:"
   if there is one ("The answer is 5, from 2 and 3" -> 5), else the last one
   ("so x = 1/2" -> 1/2, "4 or 9" -> 9);
4. failing all that, a reply of at most 200 characters without delimiters is
   read as one LaTeX expression, e.g. ``\\frac{\\sqrt{2}}{2}``.

The reference is taken as a bare LaTeX expression (``0.5``, ``\\frac{\\sqrt2}{2}``,
``(x+1)^2``) unless it contains its own delimiters (``$``, ``\\boxed``,
``\\(``, ``\\[``), in which case it is parsed like a response. Equivalent
forms match: ``1/2``, ``0.5``, ``\\frac{1}{2}``; ``x^2+2x+1`` and ``(x+1)^2``;
``3`` and ``x=3``. Reward 1 on a match, else 0; ``info.answer`` and
``info.reference_answer`` are the strings math-verify extracted (None if
nothing parsed), and an unparsable reference gives ``info.error``.
"""
from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from .registry import Verifier, VerifierConfig, register_verifier

_DELIMITERS = ("$", "\\boxed", "\\(", "\\[")
_BARE_MAX = 200  # a reply this short with no delimiters is also tried as one LaTeX expression


class MathVerifyConfig(VerifierConfig):
    float_rounding: int = Field(default=6, ge=0, le=15, description="Decimal places floats are rounded to before comparing.")
    numeric_precision: int = Field(default=15, ge=1, le=100, description="Significant digits of numeric comparisons.")
    strict: bool = Field(default=True, description="Variables must match by name, and sets are not tuples.")


def _parse(text: str) -> list:
    from math_verify import parse

    return parse(text, parsing_timeout=None)


def _matched(parsed: list) -> str | None:
    # parse returns [sympy object, the matched text] (or [text] when only the fallback matched).
    return str(parsed[-1]) if parsed else None


def verify_math(prompt: str, response: str, reference: str, config: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    from math_verify import verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns that its own timeouts are off
    cfg = MathVerifyConfig.model_validate(config)
    ref = reference.strip()
    gold = _parse(ref) if any(d in ref for d in _DELIMITERS) else (_parse(f"\\boxed{{{ref}}}") or _parse(ref))
    if not gold:
        return 0.0, {"answer": None, "reference_answer": None, "error": "the reference could not be parsed"}
    pred = _parse(response)
    short = response.strip()
    if not pred and len(short) <= _BARE_MAX and not any(d in short for d in _DELIMITERS):
        pred = _parse(f"${short}$")  # a short bare LaTeX reply, e.g. "\\frac{1}{2}"
    info: dict[str, Any] = {"answer": _matched(pred), "reference_answer": _matched(gold)}
    if not pred:
        return 0.0, info
    ok = verify(gold, pred, float_rounding=cfg.float_rounding, numeric_precision=cfg.numeric_precision,
                strict=cfg.strict, timeout_seconds=None)
    return (1.0 if ok else 0.0), info


register_verifier(Verifier(
    name="math_verify", fn=verify_math, Config=MathVerifyConfig, isolated=True,
    description="1 if the response's final answer equals the reference mathematically (math-verify), else 0.",
    preload=("math_verify", "sympy", "latex2sympy2_extended", __name__),
))
