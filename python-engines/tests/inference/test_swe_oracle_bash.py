"""The scripted policy in the bash scaffold (swe_oracle_bash.py, ``actions: bash``): its XML plans translated into one
```bash block each, over HTTP through the env server and the sim inference server as the bridge drives them: solvers
score 1 with no invalid action, flailers 0 with their unreadable replies counted; and the translation on its own."""
import pytest

from rollflow_engines.envs.swe_lite.actions import Bash, Invalid, Replace, Submit, View
from rollflow_engines.envs.swe_lite.bash_only import SENTINEL, parse_bash
from rollflow_engines.envs.swe_lite.env import BRIEF_BASH_FORMAT
from rollflow_engines.roles.inference.swe_oracle_bash import asks_for_bash, command_of, translate

from .served_swe import served_solvers_and_flailers


@pytest.mark.parametrize("xml, command", [
    ("I will read the code, then fix it.\n<view>board_lib/core.py</view>", "cat -n board_lib/core.py"),
    ('Next.\n<view start="2" end="5">a b.py</view>', "sed -n '2,5p' 'a b.py' | cat -n"),
    ("Trying.\n<bash>ls -la</bash>", "ls -la"),
    ("Done, I think.\n<submit/>", f"echo {SENTINEL}"),
])
def test_an_xml_reply_becomes_the_same_text_and_one_bash_block(xml, command):
    translated = translate(xml)
    assert translated.startswith(xml.split("<", 1)[0]) and parse_bash(translated) == Bash(command)


def test_an_unreadable_reply_stays_unreadable():
    for reply in ["Let me poke around. hmm, maybe <bash>ls", "no action"]:
        assert translate(reply) == reply and isinstance(parse_bash(reply), Invalid)


def test_the_bash_scaffold_is_recognised_in_full_and_in_brief():
    assert asks_for_bash(f"Task t1-000. Issue: x\n{BRIEF_BASH_FORMAT}")
    assert not asks_for_bash("Task t1-000. Issue: x\nReply <replace ...>, then <submit/>.")
    assert "```" not in command_of(Replace("a.py", "x", "y")) and command_of(Submit()) == f"echo {SENTINEL}"
    assert command_of(View("a.py")) == "cat -n a.py"


def test_served_bash_episodes_score_solvers_1_and_flailers_0(tmp_path):
    outcomes = served_solvers_and_flailers(tmp_path, "bash")
    for solver in outcomes[1.0]:
        assert solver["reward"] == 1.0 and solver["info"]["invalid_actions"] == 0 and solver["info"]["submitted"], solver
        assert solver["first_messages"] is None  # no tools: the observation is the user's message
        assert all(isinstance(parse_bash(r), Bash) for r in solver["replies"]) and any("python3 - <<" in r for r in solver["replies"])
    unreadable = 0
    for flailer in outcomes[0.0]:
        assert flailer["reward"] == 0.0 and flailer["info"]["submitted"], flailer
        invalid = sum(isinstance(parse_bash(r), Invalid) for r in flailer["replies"])
        assert flailer["info"]["invalid_actions"] == invalid, flailer
        unreadable += invalid
    assert unreadable > 0
