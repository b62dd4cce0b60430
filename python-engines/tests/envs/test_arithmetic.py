"""arithmetic: one question, right / wrong / unparsable answers, deterministic by seed."""
import pytest

from rollflow_engines.envs import get_env
from rollflow_engines.envs.arithmetic import ArithmeticConfig, ArithmeticEnv, parse_integer


def make(seed: int = 0, **config) -> tuple[ArithmeticEnv, str]:
    env = ArithmeticEnv()
    return env, env.reset(seed, ArithmeticConfig(**config))


def test_registered_under_its_name():
    assert get_env("arithmetic") is ArithmeticEnv


def test_question_is_a_function_of_the_seed():
    assert make(5)[1] == make(5)[1]
    assert len({make(s)[1] for s in range(20)}) > 10
    env, observation = make(5)
    assert observation.startswith(f"What is {env.question}?")


def test_right_answer_scores_one_and_ends():
    env, _ = make(1)
    observation, reward, done, info = env.step(f"<answer>{env.answer}</answer>")
    assert (reward, done, info["success"], info["invalid_action"]) == (1.0, True, True, False)
    assert observation.startswith("Correct")


def test_wrong_answer_scores_zero_and_ends():
    env, _ = make(1)
    observation, reward, done, info = env.step(str(env.answer + 1))
    assert (reward, done, info["success"], info["invalid_action"]) == (0.0, True, False, False)
    assert info["expected"] == env.answer and info["answer"] == env.answer + 1


@pytest.mark.parametrize("action", ["nineteen", "", "19.0", "<answer>?</answer>", "1 2", "1e3", "\x00"])
def test_unparsable_answer_is_an_invalid_action(action):
    env, _ = make(1, format_penalty=0.5)
    observation, reward, done, info = env.step(action)
    assert (reward, done, info["invalid_action"], info["success"]) == (-0.5, True, True, False)
    assert observation.startswith("Invalid answer")


@pytest.mark.parametrize("text, value", [
    ("19", 19), (" -7 ", -7), ("+3", 3), ("1,234", 1234), ("<answer>42</answer>", 42), ("$42$", 42), ("42.", 42),
    ("x <answer>1</answer> <answer>2</answer>", 2), ("1,23", None), ("19.5", None), ("0x10", None), ("9" * 100, None),
])
def test_integer_parsing(text, value):
    assert parse_integer(text) == value


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_each_operator_is_exact(op):
    for seed in range(30):
        env, observation = make(seed, ops=[op], max_operand=50)
        a, shown_op, b = env.question.split()
        assert shown_op == op
        a, b = int(a), int(b)
        if op == "/":
            assert b != 0 and a % b == 0 and env.answer == a // b
        else:
            assert env.answer == (a + b if op == "+" else a - b if op == "-" else a * b)
        assert env.step(str(env.answer)).reward == 1.0


@pytest.mark.parametrize("config", [{"ops": []}, {"ops": ["%"]}, {"max_operand": 0}, {"bogus": 1}])
def test_bad_config_is_rejected(config):
    with pytest.raises(ValueError):
        ArithmeticConfig(**config)


def test_compact_prompt_is_the_bare_question():
    env, observation = make(5, prompt="compact", ops=["-"])
    a, b = env.question.split(" - ")
    assert observation == f"{a}-{b}=" and make(5, ops=["-"])[0].answer == env.answer
    assert env.step(str(env.answer)).reward == 1.0
