"""The swe env with the bash scaffold (``actions: bash``, envs/swe_lite/bash_only.py): mini-SWE-agent's way to
solve an SWE-bench instance, the gold patch applied by git in one ```bash block and submitted by the sentinel,
through the same sandbox (the prepared environment on PATH, read-only) and the same grading."""
import os

from rollflow_engines.envs.swe_lite.bash_only import SENTINEL

from .helpers import play


def block(command: str) -> str:
    return f"```bash\n{command}\n```"


def test_the_gold_patch_applied_by_git_then_the_sentinel_scores_1(built):
    row = built.row("tally__tally-1")
    steps = play(built, "tally__tally-1", [
        block(f"cat > /tmp/fix.patch <<'EOF_PATCH'\n{row['patch']}EOF_PATCH\ngit apply /tmp/fix.patch && echo applied"),
        "THOUGHT: the fix is in; submit.\n" + block(f"echo {SENTINEL}"),
    ], actions="bash")
    assert steps[0].observation == "<returncode>0</returncode>\n<output>\napplied\n</output>", steps[0].observation
    assert (steps[-1].reward, steps[-1].done, steps[-1].info["submitted"]) == (1.0, True, True), steps[-1]


def test_the_command_runs_with_the_prepared_environment_and_cannot_write_it(built):
    steps = play(built, "tally__tally-1", [
        block("python -c 'import sys; print(sys.prefix)'"),
        block(f"touch {os.path.dirname(built.python)}/x"),
        block(f"echo {SENTINEL}"),
    ], actions="bash")
    assert steps[0].observation.split("<output>\n", 1)[1].strip().removesuffix("</output>").strip() == os.path.dirname(os.path.dirname(built.python))
    assert "Read-only" in steps[1].observation and not steps[1].observation.startswith("<returncode>0<")
    assert (steps[-1].reward, steps[-1].info["submitted"], steps[-1].info["fail_to_pass"][0]) == (0.0, True, 0)


def test_a_reply_without_one_bash_block_is_an_invalid_action(built):
    steps = play(built, "tally__tally-1", ["<bash>ls</bash>", block("ls") + "\n" + block("ls")], actions="bash")
    assert all(s.info["invalid_action"] and s.observation.startswith("Invalid action:") for s in steps)
