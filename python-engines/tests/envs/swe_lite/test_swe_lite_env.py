"""The swe_lite env through its BaseEnv interface, on the real sandbox: actions, invalid actions,
budgets, truncation, paths that lead outside, a sandbox failure (the server's, never the model's)."""
import pytest

from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.errors import UnavailableError
from rollflow_engines.sandbox import SandboxError


def start(env, **config):
    return env.reset(0, SweLiteConfig(task="t1-002", **config))


def fix_actions(task):
    return [f'<replace path="{p}"><old>{old}</old><new>{new}</new></replace>' for p, old, new in task.fix]


def test_the_first_observation_names_the_task_issue_files_and_format(env):
    obs = start(env)
    assert "Task t1-002" in obs and env.task.issue in obs and "<submit/>" in obs
    assert all(path in obs for path in env.task.files)


def test_a_fixed_repository_submitted_scores_1_an_unfixed_one_0(env):
    start(env)
    for action in fix_actions(env.task):
        assert not env.step(f"I will fix it.\n{action}").done
    end = env.step("<submit/>")
    assert (end.reward, end.done, end.info["success"], end.info["tests_passed_fraction"], end.info["turn"]) == (1.0, True, True, 1.0, 2)
    other = SweLiteEnv()
    try:
        other.reset(0, SweLiteConfig(task="t1-002"))
        unfixed = other.step("<submit/>")
        assert (unfixed.reward, unfixed.done, unfixed.info["success"]) == (0.0, True, False)
        assert 0 < unfixed.info["tests_passed_fraction"] < 1  # the PASS_TO_PASS tests pass, the others do not
    finally:
        other.close()


@pytest.mark.parametrize("reply", ["", "I think the bug is in core.py", "<bash>ls</bash><bash>pwd</bash>", "<bash>ls", "<view start=\"5\" end=\"2\">a.py</view>", "\xff\x00" * 50])
def test_an_unreadable_reply_is_an_invalid_action_with_the_format_not_an_error(env, reply):
    start(env)
    r = env.step(reply)
    assert r.info["invalid_action"] and r.info["invalid_actions"] == 1 and not r.done
    assert r.observation.startswith("Invalid action:") and "<submit/>" in r.observation


def test_commands_run_in_the_workspace_and_their_failures_are_observations(env):
    start(env)
    assert "core.py" in env.step("<bash>ls */</bash>").observation
    failed = env.step("<bash>python -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=3)'</bash>").observation
    assert failed.startswith("[exit 1]") and "Error" in failed  # no network: the model's failure, shown to it


def test_long_output_is_cut_with_a_marker(env):
    start(env, observation_chars=500)
    obs = env.step("<bash>python -c \"print('x' * 10000)\"</bash>").observation
    assert len(obs) < 600 and "[… truncated:" in obs


def test_a_command_over_its_time_limit_is_cut_and_said_so(env):
    start(env, command_timeout_s=1)
    assert env.step("<bash>sleep 30</bash>").observation.startswith("[timed out]")


def test_paths_that_lead_outside_the_workspace_are_refused_and_planted_links_not_followed(env):
    start(env)
    assert env.step("<view>../../../etc/passwd</view>").observation.startswith("Error:")
    env.step("<bash>ln -s /etc/passwd leak.txt</bash>")
    assert "root:" not in env.step("<view>leak.txt</view>").observation
    assert "root:" not in env.step('<replace path="leak.txt"><old>root</old><new>x</new></replace>').observation


def test_replace_needs_the_old_text_exactly_once(env):
    start(env)
    path = next(p for p in env.task.files if p.endswith("core.py"))
    r = env.step(f'<replace path="{path}"><old>return</old><new>yield</new></replace>')
    assert "occurs" in r.observation and "exactly once" in r.observation and not r.info["invalid_action"]


def test_the_turn_budget_grades_the_episode_as_it_stands(env):
    start(env, max_turns=3)
    assert not env.step("<bash>true</bash>").done
    assert not env.step("hmm").done
    last = env.step("<bash>true</bash>")
    assert last.done and last.reward == 0.0 and not last.info["submitted"] and "Out of budget" in last.observation


def test_the_reply_character_budget_grades_too(env):
    start(env, max_episode_chars=100)
    r = env.step("<bash>true</bash>" + " " * 100)
    assert r.done and "Out of budget" in r.observation


def test_a_sandbox_failure_is_the_servers_503_and_changes_nothing(env, monkeypatch):
    start(env)
    def broken(*args, **kwargs):
        raise SandboxError("bwrap: cannot create namespace")
    monkeypatch.setattr(env.ws, "run", broken)
    with pytest.raises(UnavailableError, match="sandbox failed"):
        env.step("<bash>ls</bash>")
    assert (env.turn, env.invalid, env.info()["sandbox_errors"]) == (0, 0, 1)


def test_close_removes_the_workspace(env):
    start(env)
    path = env.ws.path
    assert path.exists()
    env.close()
    assert not path.exists()


def test_the_server_reports_turns_tests_passed_and_sandbox_errors_as_metrics(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from rollflow_engines.app import create_app
    from rollflow_engines.config import ServeConfig
    from rollflow_engines.envs.swe_lite.tasks import generate_task
    from rollflow_engines.sandbox.workspace import Workspace

    options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / "sandboxes")}
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as server:
        def episode(actions):
            session = server.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": "t1-002"}}).json()["session"]
            return [server.post("/step", json={"session": session, "index": i, "action": a}) for i, a in enumerate(actions)]
        episode([*fix_actions(generate_task("t1-002")), "<submit/>"])  # solved in 2 turns: every test passes
        episode(["<submit/>"])  # submitted unfixed: only the pass-to-pass tests pass
        def broken(*args, **kwargs):
            raise SandboxError("bwrap: cannot create namespace")
        monkeypatch.setattr(Workspace, "run", broken)
        failed = episode(["<bash>ls</bash>"])[0]
        metrics = server.get("/metrics").text
    assert failed.status_code == 503
    assert 'rollflow_env_episode_turns_count{env="swe_lite"} 2.0' in metrics
    assert 'rollflow_env_episode_turns_sum{env="swe_lite"} 3.0' in metrics
    assert 'rollflow_env_episode_tests_passed_fraction_count{env="swe_lite"} 2.0' in metrics
    assert 'rollflow_env_episode_tests_passed_fraction_bucket{env="swe_lite",le="0.99"} 1.0' in metrics  # the unfixed one
    assert 'rollflow_env_sandbox_errors_total{env="swe_lite"} 1.0' in metrics


def test_tasks_split_the_seeds_and_brief_keeps_the_first_observation_short(env):
    config = SweLiteConfig(tasks=["t1-003", "t1-007"], brief=True)
    first = env.reset(5, config)
    assert env.task.id == "t1-007"  # seed 5 of 2 tasks
    assert first.startswith("Task t1-007. Issue: ") and env.task.issue in first and len(first) < 250
    assert "<replace path=" in first and "<submit/>" in first
    assert env.step("no action here").observation == "Invalid action: no action found."  # no format text after it
    env.close()
    with pytest.raises(ValueError, match="t9-000"):
        SweLiteConfig(tasks=["t9-000"])


def test_a_grading_whose_runner_never_started_is_the_servers_503_not_a_0(env, monkeypatch):
    """The runner prints its nonce before any code of the repository runs; output without it is the sandbox's failure."""
    from rollflow_engines.envs.swe_lite import grading

    start(env)
    monkeypatch.setattr(grading, "RUNNER", "import sys\nsys.exit(0)\n")  # an interpreter that runs nothing
    with pytest.raises(UnavailableError, match="the grading interpreter did not start"):
        env.step("<submit/>")
    assert env.info()["turn"] == 0 and env.grade_result is None  # the episode is as it was: the retry grades it


def test_the_report_counts_each_test_once_and_refuses_entities():
    from rollflow_engines.envs.swe_lite.grading import parse_junit

    files = {"test_fail_to_pass.py"}
    case = '<testcase classname="tests.test_fail_to_pass" name="{}"/>'
    report = f"<testsuites><testsuite>{case.format('test_a')}{case.format('test_b')}{case.format('test_b')}" \
             '<testcase classname="tests.decoys" name="test_a"/></testsuite></testsuites>'
    assert parse_junit(report.encode(), files) == {("test_fail_to_pass.py", "test_a"): "passed", ("test_fail_to_pass.py", "test_b"): "failed"}
    assert parse_junit(b'<!DOCTYPE x [<!ENTITY a "b">]><testsuites>&a;</testsuites>', files) is None
    assert parse_junit(b"<testsuites", files) is None
