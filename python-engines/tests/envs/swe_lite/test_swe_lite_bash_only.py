"""The bash-only scaffold (bash_only.py, ``actions: bash``), mini-SWE-agent's protocol: the parser against well-formed
and hostile replies, the observation's head and tail, and episodes in the sandbox that submit by the sentinel, or do not."""
import pytest
from pydantic import ValidationError

from rollflow_engines.envs.swe_lite.actions import MAX_REPLY_CHARS, Bash, Invalid
from rollflow_engines.envs.swe_lite.bash_only import SENTINEL, observation, parse_bash
from rollflow_engines.envs.swe_lite.env import SweLiteConfig
from rollflow_engines.sandbox import RunResult


def block(command: str, language: str = "bash") -> str:
    return f"```{language}\n{command}\n```"


# ---- the parser

@pytest.mark.parametrize("reply, command", [
    (block("ls -la"), "ls -la"),
    ("THOUGHT: look around first.\n\n" + block("  ls -la && cat board_lib/core.py  ") + "\nthen I will edit.", "ls -la && cat board_lib/core.py"),
    (block("cat > a.py <<'EOF'\nx = 1\nEOF"), "cat > a.py <<'EOF'\nx = 1\nEOF"),
    # a block of another language is the model's text; the one bash block is the command
    (block("print(1)", "python") + "\n" + block("python a.py"), "python a.py"),
    # a longer fence holds a line of three backticks as content
    ("````bash\nprintf '```\\n'\n```\necho done\n````", "printf '```\\n'\n```\necho done"),
    ("```bash extra words\nls\n```", "ls"),
])
def test_one_bash_block_is_its_command(reply, command):
    assert parse_bash(reply) == Bash(command)


@pytest.mark.parametrize("reply, named", [
    ("I will just think this time.", "no ```bash block found"),
    ("", "no ```bash block found"),
    (block("ls") + "\n" + block("cat a.py"), "found 2 ```bash blocks"),
    ("```bash\nls -la\n", "not closed"),
    ("```bash\nls -la ```", "not closed"),  # a fence closes only on a line of its own
    (block("print(1)", "python"), "no ```bash block found (found fenced blocks of 'python'"),
    (block("ls", "sh"), "'sh'"),
    (block("ls", ""), "'(no language)'"),
    ("`ls`", "no ```bash block found"),
    (block("   \n  "), "holds no command"),
    (block("echo a\x00b"), "NUL byte"),
    (block("echo \ud800"), "not valid text"),
    (block("x" * MAX_REPLY_CHARS), "characters long"),
    # a block of another language left open swallows the rest, as Markdown reads it
    ("```python\nx = 1\n" + block("ls"), "no ```bash block found"),
])
def test_anything_else_is_an_invalid_action_that_says_what_was_wrong(reply, named):
    parsed = parse_bash(reply)
    assert isinstance(parsed, Invalid) and named in parsed.why, parsed


def test_the_parse_is_linear_in_a_reply_of_unclosed_fences():
    import time
    t = time.monotonic()
    assert isinstance(parse_bash("```bash\n" * (MAX_REPLY_CHARS // 8)), Invalid)
    assert time.monotonic() - t < 1


def test_an_unknown_protocol_is_refused_naming_the_value_and_every_choice():
    with pytest.raises(ValidationError) as e:
        SweLiteConfig(actions="mini")
    err = e.value.errors()[0]
    assert err["loc"] == ("actions",) and err["input"] == "mini" and "'xml', 'tool_calls' or 'bash'" in err["msg"]


# ---- the observation

def result(stdout: str = "", stderr: str = "", exit_code: int | None = 0, timed_out=False, signal=None) -> RunResult:
    return RunResult(exit_code=exit_code, stdout=stdout, stderr=stderr, truncated=False, timed_out=timed_out, signal=signal)


def test_a_short_output_is_shown_whole_with_its_return_code():
    assert observation(result("a\n", "warn\n", 2), 4000, 20) == "<returncode>2</returncode>\n<output>\na\nwarn\n</output>"


@pytest.mark.parametrize("limit", [600, 1000, 4000])
def test_a_long_output_keeps_its_head_and_tail_within_the_limit(limit):
    """(Below the frame's ~420 characters, as observation_chars' least 200, the step's cut of every observation applies.)"""
    output = "".join(f"{i}\n" for i in range(20_000))
    shown = observation(result(output), limit, 20)
    assert len(shown) <= limit
    head = shown.split("<output_head>\n")[1].split("\n</output_head>")[0]
    tail = shown.split("<output_tail>\n")[1].split("\n</output_tail>")[0]
    elided = int(shown.split("<elided_chars>\n")[1].split(" ")[0])
    assert output.startswith(head) and output.endswith(tail) and len(head) == len(tail) and len(head) + elided + len(tail) == len(output)
    assert shown.startswith("<returncode>0</returncode>\n<warning>")


def test_a_timeout_and_a_signal_are_return_codes_as_subprocess_gives_them():
    assert observation(result("partial", exit_code=None, timed_out=True, signal=9), 4000, 5).startswith(
        "<returncode>-1</returncode>\n<exception>the command timed out after 5 s and was killed</exception>\n<output>\npartial")
    assert observation(result(exit_code=None, signal=11), 4000, 5).startswith("<returncode>-11</returncode>")


# ---- episodes in the sandbox

def start(env, **config):
    return env.reset(0, SweLiteConfig(task="t1-002", actions="bash", command_timeout_s=10, grading_timeout_s=60, **config))


def fix_command(env) -> str:
    """A sed of the task's one-line fix (t1-002's old and new lines hold no / or &)."""
    path, old, new = env.task.fix[0]
    assert "/" not in old + new and "&" not in old + new and "\n" not in old.strip("\n") + new.strip("\n")
    return f"sed -i 's/{old.strip()}/{new.strip()}/' {path}"


def test_the_first_observation_asks_for_one_bash_block_and_names_the_sentinel(env):
    obs = start(env)
    assert "```bash" in obs and SENTINEL in obs and "<submit/>" not in obs and "tool_call" not in obs and env.task.issue in obs
    assert env.first_messages(obs) is None  # the observation is the user's message, as with xml


def test_a_command_runs_with_bash_in_the_workspace_and_answers_its_code_and_output(env):
    start(env)
    r = env.step(block("[[ -d board_lib ]] && echo yes; ls board_lib; exit 3"))
    assert r.observation == "<returncode>3</returncode>\n<output>\nyes\n__init__.py\ncore.py\n</output>"
    assert not r.done and not r.info["invalid_action"] and r.info["turn"] == 1


def test_the_fix_then_the_sentinel_submits_and_is_graded_1(env):
    start(env)
    assert env.step(block(fix_command(env))).observation.startswith("<returncode>0</returncode>")
    end = env.step("Done.\n" + block(f"echo {SENTINEL}"))
    assert end.done and end.reward == 1.0 and end.info["submitted"] and end.observation == "Submitted. Hidden tests: all passed."


def test_a_command_that_edits_and_prints_the_sentinel_submits_what_it_did(env):
    """The sentinel printed by a command that does other things: the command runs first, its effects stay, then it submits."""
    start(env)
    end = env.step(block(f"{fix_command(env)} && echo {SENTINEL} && cat board_lib/core.py"))
    assert end.done and end.reward == 1.0 and end.info["submitted"]


def test_the_sentinel_alone_without_the_fix_is_graded_0(env):
    start(env)
    end = env.step(block(f"echo {SENTINEL}"))
    assert end.done and end.reward == 0.0 and end.info["submitted"] and end.observation == "Submitted. Hidden tests: not all passed."


@pytest.mark.parametrize("command", [
    f"echo working; echo {SENTINEL}",              # not the first line
    f"echo {SENTINEL}; exit 1",                    # a failing command does not submit (mini-swe-agent's rule)
    f"cat > notes.txt <<'EOF'\n{SENTINEL}\nEOF",   # in a heredoc written to a file: nothing printed
    f"echo {SENTINEL}x",                           # not the line itself
    f"printf '{SENTINEL}\\0\\n'",                  # a NUL byte after it: not the line itself
    f"echo {SENTINEL} >&2; false",                 # on stderr, of a failing command
])
def test_the_sentinel_anywhere_but_the_first_line_of_a_successful_command_does_not_submit(env, command):
    start(env)
    r = env.step(block(command))
    assert not r.done and not r.info["submitted"] and r.observation.startswith("<returncode>"), r


def test_the_sentinel_in_the_reply_outside_the_block_does_not_submit(env):
    start(env)
    r = env.step(f"I would run echo {SENTINEL} but first:\n" + block("ls"))
    assert not r.done and "board_lib" in r.observation


def test_a_file_holding_the_sentinel_submits_when_the_command_prints_it_first(env):
    """Documented: the output is what counts, so cat of a file whose first line is the sentinel submits."""
    start(env)
    assert not env.step(block(f"printf '{SENTINEL}\\nrest\\n' > notes.txt")).done
    assert env.step(block("cat notes.txt")).done


def test_invalid_replies_are_observations_that_count_against_the_budget(env):
    start(env, max_turns=3)
    first = env.step("no block at all")
    assert first.info["invalid_action"] and first.observation.startswith("Invalid action: no ```bash block found") and "```bash" in first.observation
    second = env.step(block("ls") + "\n" + block("ls"))
    assert second.info["invalid_action"] and not second.done
    third = env.step(block("print(1)", "python"))
    assert third.done and third.info["invalid_actions"] == 3 and not third.info["submitted"] and third.observation.startswith("Out of budget")


def test_huge_output_and_nul_bytes_come_back_within_the_observation_limit(env):
    start(env, observation_chars=1000)
    r = env.step(block("seq 1 200000; printf 'a\\0b'"))
    assert len(r.observation) <= 1000 and "<output_head>\n1\n2\n3\n" in r.observation and "characters elided" in r.observation
    r = env.step(block("printf 'a\\0b'"))
    assert r.observation == "<returncode>0</returncode>\n<output>\na\x00b</output>"


def test_a_command_past_its_time_is_a_timeout_observation(env):
    env.reset(0, SweLiteConfig(task="t1-002", actions="bash", command_timeout_s=1, grading_timeout_s=60))
    r = env.step(block("echo started; sleep 30"))
    assert r.observation.startswith("<returncode>-1</returncode>\n<exception>the command timed out after 1 s") and not r.done


def test_writes_outside_the_workspace_fail_inside_the_sandbox(env, tmp_path):
    start(env)
    target = tmp_path / "escaped"
    r = env.step(block(f"echo x > {target}; cat /etc/shadow; echo done"))
    assert not target.exists() and "done" in r.observation and not r.done


def test_brief_names_the_block_and_the_sentinel(env):
    obs = start(env, brief=True)
    assert "```bash" in obs and SENTINEL in obs and "\n" in obs and len(obs) < 400
    assert env.step("nothing").observation.startswith("Invalid action: no ```bash block found")
    assert "Reply with your reasoning" not in env.step("nothing").observation
