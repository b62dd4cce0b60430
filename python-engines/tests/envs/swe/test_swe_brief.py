"""The swe env's ``brief`` first observation (envs/swe/brief.py) on the checked-in real tasks (inflection 0.5.1):
what it says, that it is what reset sends, and that two turns of tiny:small fit its 512 positions with it."""
import pytest

from rollflow_engines.envs.swe.brief import BRIEF_MAX_CHARS, brief_observation, named_function, observed_failure
from rollflow_engines.envs.swe.env import SweConfig, SweEnv
from rollflow_engines.envs.swe.instances import Fields, Instance, parse_row
from rollflow_engines.envs.swe_lite.env import BRIEF_FORMAT, replaced
from rollflow_engines.models.chat import hf_chat_continuation
from rollflow_engines.models.tiny import TINY_PRESETS, build_tokenizer

from .sample_tasks import ROWS, episode_config

REPLY_TOKENS = 96  # learn-swe-mined.yaml's max_tokens_per_step; each reply also ends with <eos>
INSTANCES = [parse_row(row, Fields(), with_split=True) for row in ROWS]


def test_it_names_the_task_the_file_the_function_and_one_failure():
    dasherize, _, tableize = INSTANCES
    assert brief_observation(dasherize) == (
        f"Task {dasherize.instance_id}. Fix dasherize in inflection/__init__.py. Fails: "
        "AssertionError: assert 'person_street_ad...\n" + BRIEF_FORMAT)  # cut to fit
    assert "Fails: AssertionError: assert None == 'child_toys'\n" in brief_observation(tableize)  # not its "where" lines


def test_what_it_cannot_read_it_leaves_out_and_a_long_failure_is_cut():
    assert named_function("code in `inflection` misbehaves", "inflection/__init__.py") is None  # a private function
    assert named_function("`pkg.sub.f` misbehaves", "pkg/other.py") == "pkg.sub.f"             # another module: in full
    assert observed_failure("Calling f(2) returns 5.\nIt should be 4.") == "Calling f(2) returns 5."  # not a mined statement
    long = Instance("x" * 30, "o/r", "0" * 40, "`m.f` misbehaves\n\nWhat I see (…):\n\n    " + "E" * 500, "+++ b/m.py\n", "", ("t.py::a",), ())
    first = brief_observation(long)
    assert len(first) == BRIEF_MAX_CHARS and "EEE...\n" in first and first.endswith(BRIEF_FORMAT)


@pytest.mark.parametrize("answer", [replaced("p" * 27 + ".py"), "Invalid action: the <replace> action is not complete or not well formed.",
                                    f"Error: the old text occurs 0 times in {'p' * 27}.py; it must occur exactly once."])
def test_two_turns_fit_tiny_small_with_the_longest_brief(answer):
    """The first observation at its longest, two replies at their cap, and the env's longest usual answer to the first
    (a path as long as the longest mined file's, dateutil/parser/_parser.py, and a few more) stay inside the 512
    positions. (learn-swe-mined-1 ran with 240 characters: a second turn of 417 + 96 was refused, its group failed.)"""
    tok = build_tokenizer()
    first = "x" * BRIEF_MAX_CHARS
    messages = [{"role": "user", "content": first}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    prompt = prompt["input_ids"] if hasattr(prompt, "keys") else prompt
    reply = "r" * REPLY_TOKENS
    messages.append({"role": "assistant", "content": reply})
    between = hf_chat_continuation(tok, messages, [{"role": "user", "content": answer}])
    assert len(prompt) + 2 * (REPLY_TOKENS + 1) + len(between) <= TINY_PRESETS["small"].max_position_embeddings


def test_reset_sends_the_brief_observation_and_an_invalid_action_no_format(inflection, tmp_path):
    env = SweEnv()
    try:
        first = env.reset(0, SweConfig.model_validate({**episode_config(inflection, ROWS[0], tmp_path), "brief": True}))
        assert first == brief_observation(env.instance) and len(first) <= BRIEF_MAX_CHARS
        assert env.step("no action here").observation == "Invalid action: no action found."
    finally:
        env.close()
