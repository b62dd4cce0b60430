"""Prometheus metrics of one env server (a registry per app, so apps in one process do not mix)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "rollflow_env_"


class EnvMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.sessions_open = Gauge(PREFIX + "sessions_open", "Env sessions open now.", ["env"], registry=r)
        self.sessions_resumable = Gauge(PREFIX + "sessions_resumable", "Open sessions whose episode goes on and has a saved snapshot: "
                                        "the ones a server that lost them could resume (snapshot_dir).", ["env"], registry=r)
        self.sessions_expired = Counter(PREFIX + "sessions_expired", "Sessions closed for being idle longer than session_ttl_s.", ["env"], registry=r)
        self.sessions_rejected = Counter(PREFIX + "sessions_rejected", "Resets refused because max_sessions were open.", registry=r)
        self.resets = Counter(PREFIX + "resets", "Episodes started (/reset).", ["env"], registry=r)
        self.restores = Counter(PREFIX + "restores", "Episodes resumed from a snapshot (/reset with restore).", ["env"], registry=r)
        self.steps = Counter(PREFIX + "steps", "Env steps (/step).", ["env"], registry=r)
        self.steps_replayed = Counter(PREFIX + "steps_replayed", "Retried steps answered with the recorded response of their index, not applied again.", registry=r)
        self.invalid_actions = Counter(PREFIX + "invalid_actions", "Steps whose action the env could not read.", ["env"], registry=r)
        self.episodes = Counter(PREFIX + "episodes_done", "Episodes that ended, by success.", ["env", "success"], registry=r)
        self.episode_turns = Histogram(PREFIX + "episode_turns", "Turns (actions) of an ended episode, for envs that report info.turn.", ["env"],
                                       registry=r, buckets=(1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50))
        self.episode_tests_passed = Histogram(PREFIX + "episode_tests_passed_fraction", "Share of the hidden tests an ended episode passed, for "
                                              "envs that grade with tests (info.tests_passed_fraction).", ["env"], registry=r,
                                              buckets=(0, 0.25, 0.5, 0.75, 0.99, 1))
        self.rewards_tampered = Counter(PREFIX + "rewards_tampered", "Episodes whose grading showed tampering (a canary test passed): scored 0.", ["env"], registry=r)
        self.episodes_over_limit = Counter(PREFIX + "episodes_over_limit", "Episodes ended because the workspace outgrew what the server reads (files, bytes, time): scored 0.", ["env"], registry=r)
        self.sandbox_errors = Counter(PREFIX + "sandbox_errors", "Env steps or resets the sandbox failed (answered 503: the server's failure, not the model's).", ["env"], registry=r)
        self.rewards = Counter(PREFIX + "rewards", "Responses scored (/reward).", ["domain", "verifier"], registry=r)
        self.reward_timeouts = Counter(PREFIX + "reward_timeouts", "Verifications cut by reward_timeout_s (scored 0).", ["domain", "verifier"], registry=r)
        self.reward_errors = Counter(PREFIX + "reward_errors", "Verifications that failed (scored 0, info.error).", ["domain", "verifier"], registry=r)
        self.reward_unscored = Counter(PREFIX + "reward_unscored", "Responses a verifier could not score (an LLM judge gave no readable grade): answered 422, never a 0.", ["domain", "verifier"], registry=r)
        self.reward_infra_errors = Counter(PREFIX + "reward_infra_errors", "Verifications the server could not run (its sandbox failed, a judge server was down): answered 503, not scored.", ["domain", "verifier"], registry=r)
        self.snapshots_reaped = Counter(PREFIX + "snapshots_reaped", "Episode snapshots the janitor removed for age (episodes nobody resumed).", registry=r)
        self.sandbox_workspaces_reaped = Counter(PREFIX + "sandbox_workspaces_reaped", "Sandbox workspaces the janitor removed (orphaned, over age, or left at shutdown).", registry=r)
        self.reward_seconds = Histogram(PREFIX + "reward_seconds", "Time to score one response, queueing included.", ["verifier"], registry=r,
                                        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
