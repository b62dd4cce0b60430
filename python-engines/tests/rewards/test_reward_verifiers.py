"""The built-in verifiers, called directly (the server runs math_verify in a worker process)."""
import pytest

from rollflow_engines.rewards import get_verifier, known_verifiers
from rollflow_engines.rewards.exact_match import ExactMatchConfig, exact_match
from rollflow_engines.rewards.math_verifier import MathVerifyConfig, verify_math


def math(response: str, reference: str, **config) -> tuple[float, dict]:
    return verify_math("", response, reference, MathVerifyConfig(**config).model_dump())


def test_registry_has_the_built_ins():
    assert {"exact_match", "math_verify"} <= set(known_verifiers())
    assert get_verifier("math_verify").isolated and not get_verifier("exact_match").isolated
    assert get_verifier("nope") is None


@pytest.mark.parametrize("response, reference", [
    ("\\boxed{1/2}", "0.5"),
    ("The answer is \\boxed{\\frac{1}{2}}.", "0.5"),
    ("\\boxed{0.5}", "\\frac{1}{2}"),
    ("\\frac{1}{2}", "1/2"),  # a short bare LaTeX reply
    ("so x = 1/2", "$\\frac{1}{2}$"),
    ("First 3, then finally 7", "7"),
    ("The answer is $\\frac{\\sqrt{2}}{2}$", "\\frac{\\sqrt2}{2}"),
    ("\\boxed{x^2+2x+1}", "(x+1)^2"),
    ("\\boxed{3}", "x=3"),
])
def test_equivalent_forms_score_one(response, reference):
    reward, info = math(response, reference)
    assert reward == 1.0, info
    assert info["answer"] is not None and info["reference_answer"] is not None


@pytest.mark.parametrize("response, reference", [
    ("\\boxed{3}", "4"),
    ("\\boxed{0.51}", "1/2"),
    ("\\boxed{x^2+1}", "(x+1)^2"),
    ("\\boxed{-1/2}", "\\frac{1}{2}"),
    ("\\boxed{1} or maybe \\boxed{42}", "42"),  # several boxes are read together: hedging does not pay
])
def test_wrong_answers_score_zero(response, reference):
    assert math(response, reference)[0] == 0.0


@pytest.mark.parametrize("response", ["", "   ", "no idea", "\\boxed{", "}}}{{{", "\\frac{", "$$$$", "\x00\x01", "<answer></answer>"])
def test_garbage_scores_zero_without_raising(response):
    reward, info = math(response, "4")
    assert reward == 0.0
    assert info["reference_answer"] == "4"


def test_unparsable_reference_scores_zero_with_an_error():
    reward, info = math("\\boxed{4}", "")
    assert reward == 0.0 and "reference" in info["error"]


@pytest.mark.parametrize("response, reference, config, reward", [
    (" 42 \n", "42", {}, 1.0),
    ("42", "  42", {}, 1.0),
    ("Paris", "paris", {}, 0.0),
    ("Paris", "paris", {"ignore_case": True}, 1.0),
    ("4 2", "42", {}, 0.0),
    ("", "", {}, 1.0),
])
def test_exact_match_strips_whitespace_and_compares(response, reference, config, reward):
    assert exact_match("", response, reference, ExactMatchConfig(**config).model_dump())[0] == reward


def test_verifier_configs_forbid_unknown_keys():
    with pytest.raises(ValueError):
        ExactMatchConfig(ignorecase=True)
    with pytest.raises(ValueError):
        MathVerifyConfig(float_rounding=-1)
