"""The env role's endpoints: /reset, /step, /close (gym-like sessions), /reward (verifiers by domain), /metrics."""
from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import asynccontextmanager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Response
from fastapi.exceptions import RequestValidationError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ValidationError

from ...envs import BaseEnv, get_env, known_envs, snapshots
from ...errors import ConflictError, NotFoundError, RequestError, UnavailableError, UnscoredError
from ...rewards import VERIFIERS, get_verifier, known_verifiers
from ...rewards.deadline import DeadlineExceeded, DeadlineRunner, default_threads
from ...rewards.isolation import IsolatedRunner, IsolationError, IsolationTimeout
from ...sandbox import SandboxError, SandboxSettings, SandboxUnavailable, check_sandbox, configure
from .janitor import Janitor
from .contracts import (CloseRequest, CloseResponse, ResetRequest, ResetResponse, RewardRequest, RewardResponse,
                        StepRequest, StepResponse)
from .metrics import EnvMetrics
from .sessions import Session, SessionStore, TooManySessionsError
from .steps import ActionLog, StepRecord, action_sha256, check_index

if TYPE_CHECKING:
    from .options import Options
    from ...liveness import Liveness

log = logging.getLogger(__name__)


def _validate_config(model: type[BaseModel], config: dict[str, Any]) -> BaseModel:
    """``model`` built from a request's ``config``; each bad key becomes a 400 naming ``config.<key>``."""
    try:
        return model.model_validate(config)
    except ValidationError as e:
        raise RequestValidationError([
            {"loc": ("body", "config", *err["loc"]), "msg": err["msg"], "input": err.get("input"), "type": err["type"]}
            for err in e.errors()
        ]) from None


class EnvRole:
    """State of one env server: sessions, metrics, the verifier worker pool."""

    def __init__(self, options: "Options"):
        self.options = options
        self.metrics = EnvMetrics()
        self.sessions = SessionStore(options.max_sessions, options.session_ttl_s, on_close=self._closed)
        self.action_log = ActionLog(options.action_log) if options.action_log is not None else None
        self.liveness: Liveness | None = None  # the app's (register_routes sets it): a step past its bound is a stall
        preload = tuple(dict.fromkeys(m for v in VERIFIERS.values() if v.isolated for m in v.preload))
        self.runner = IsolatedRunner(workers=options.reward_workers, memory_mb=options.reward_memory_mb, preload=preload)
        # Sandboxed verifiers wait on their sandboxes in server threads, each stopped at reward_timeout_s (rewards/deadline.py).
        self.deadlines = DeadlineRunner(threads=default_threads())
        self.sandbox = SandboxSettings(root=options.sandbox_root, mode=options.sandbox, max_age_s=options.sandbox_max_age_s,
                                       disk_mb=options.sandbox_disk_mb, max_inodes=options.sandbox_max_inodes)
        configure(self.sandbox)  # envs and verifiers of this process open their workspaces with these
        snapshots.configure(options.snapshot_dir)
        if options.sandbox == "none":
            log.warning("env server started with sandbox: none: model-written code will run UNSANDBOXED")
        else:  # refuse to start (SandboxUnavailable) rather than answer 503 to every sandboxed request later
            for line in check_sandbox(options.sandbox).lines():
                log.info("sandbox %s", line)
        self.janitor = Janitor(self.sandbox, options.snapshot_max_age_s, on_reaped=self.metrics.sandbox_workspaces_reaped.inc,
                               on_snapshots_reaped=self.metrics.snapshots_reaped.inc)

    def _closed(self, session: Session, why: str) -> None:
        self.metrics.sessions_open.labels(session.env_name).dec()
        self._set_resumable(session, False)
        if why == "expired":
            self.metrics.sessions_expired.labels(session.env_name).inc()

    def shutdown(self) -> None:
        self.sessions.close_all()
        self.runner.close()
        self.deadlines.close()
        self.janitor.stop()
        if self.action_log is not None:
            self.action_log.close()

    # ---- envs

    def reset(self, req: ResetRequest) -> ResetResponse:
        cls = get_env(req.env)
        if cls is None:
            raise RequestError("env", f"unknown env {req.env!r}; known envs: {', '.join(known_envs())}", req.env)
        config = _validate_config(cls.Config, req.config)
        if req.index and req.restore is None:
            raise RequestError("index", "a session starts at index 0 unless it is restored from a snapshot (restore)", req.index)
        env = cls()
        with self._counting_unavailable(req.env):
            observation = env.reset(req.seed, config)
        if req.restore is not None:
            if type(env).restore is BaseEnv.restore:
                env.close()
                raise RequestError("restore", f"env {req.env!r} saves no snapshots to restore", req.restore)
            try:
                env.restore(snapshots.load(req.restore))
            except BaseException:
                env.close()
                raise
        info = env.info()
        try:
            session = self.sessions.open(req.env, env, applied=req.index)
        except TooManySessionsError:
            self.metrics.sessions_rejected.inc()
            env.close()
            raise
        self.metrics.sessions_open.labels(req.env).inc()
        self.metrics.resets.labels(req.env).inc()
        if req.restore is not None:
            self.metrics.restores.labels(req.env).inc()
            self._set_resumable(session, True)
        return ResetResponse(session=session.id, observation=observation, info=info, on_env_loss=cls.on_env_loss,
                             step_timeout_s=env.step_timeout_s(), messages=env.first_messages(observation))

    def step(self, req: StepRequest) -> StepResponse:
        """Applies the step at ``req.index`` once; a retry of it is answered with the recorded response (steps.py)."""
        sha = action_sha256(req.action)
        try:
            session = self.sessions.get(req.session)
        except NotFoundError:  # the retry of the step that ended the episode, after the client closed the session
            ended = self.sessions.ended_step(req.session)
            if ended is None or ended.index != req.index:
                raise
            return self._replayed(req.session, check_index(req.index, ended.index + 1, ended, sha))
        with session.lock:  # a retry that arrives while its step runs waits here, then finds it applied
            if session.closed:
                raise NotFoundError("session", "session was closed", req.session)
            recorded = check_index(req.index, session.applied, session.last, sha)
            if recorded is not None:
                return self._replayed(session.id, recorded)
            if session.done:
                raise ConflictError("session", "the episode is over (a step returned done); /close it and /reset a new one", req.session)
            with self._counting_unavailable(session.env_name), self._bounded(session.env.step_timeout_s()):
                observation, reward, done, info = session.env.step(req.action)
            info = {"invalid_action": False, **info}
            response = StepResponse(observation=observation, reward=reward, done=done, info=info)
            session.done, session.applied = done, session.applied + 1
            session.last = StepRecord(session.env_name, req.index, sha, response)
            self._log(session.id, session.last)
            self._set_resumable(session, (session.resumable or bool(info.get("snapshot"))) and not done)
        self.sessions.touch(session)
        self.metrics.steps.labels(session.env_name).inc()
        if info["invalid_action"]:
            self.metrics.invalid_actions.labels(session.env_name).inc()
        if done:
            self._episode_ended(session.env_name, info)
        return response

    def _set_resumable(self, session: Session, resumable: bool) -> None:
        if resumable != session.resumable:
            session.resumable = resumable
            self.metrics.sessions_resumable.labels(session.env_name).inc(1 if resumable else -1)

    def _bounded(self, seconds: float):
        """A step past its env's own bound makes the server stalled (liveness.py): a supervisor then replaces it."""
        return self.liveness.bounded(seconds) if self.liveness is not None else nullcontext()

    def _replayed(self, session_id: str, record: StepRecord) -> StepResponse:
        self.metrics.steps_replayed.inc()
        if not record.logged:  # its first answer failed writing the log line: this answer must not go out without one
            self._log(session_id, record)
        return record.response

    def _log(self, session_id: str, record: StepRecord) -> None:
        """The action log's line for an applied step; a log that cannot be written fails the answer (503), not the step,
        which is recorded: the retry is answered from the record, and writes the line then."""
        if self.action_log is None:
            record.logged = True
            return
        try:
            self.action_log.append(session_id, record)
        except OSError as e:
            log.error("action log %s: cannot append: %s", self.action_log.path, e)
            raise UnavailableError("action_log", f"the env server cannot write its action log: {e}", None, code="action_log_failed") from e

    def _episode_ended(self, env_name: str, info: dict[str, Any]) -> None:
        self.metrics.episodes.labels(env_name, str(bool(info.get("success"))).lower()).inc()
        if isinstance(info.get("turn"), int):
            self.metrics.episode_turns.labels(env_name).observe(info["turn"])
        if isinstance(info.get("tests_passed_fraction"), (int, float)):
            self.metrics.episode_tests_passed.labels(env_name).observe(info["tests_passed_fraction"])
        if info.get("reward_tampered") is True:
            self.metrics.rewards_tampered.labels(env_name).inc()
        if info.get("workspace_over_limit") is True:
            self.metrics.episodes_over_limit.labels(env_name).inc()

    @contextmanager
    def _counting_unavailable(self, env_name: str):
        """Counts the env's own infrastructure failures (its sandbox failed: a 503) and lets them through."""
        try:
            yield
        except UnavailableError:
            self.metrics.sandbox_errors.labels(env_name).inc()
            raise

    def close(self, req: CloseRequest) -> CloseResponse:
        self.sessions.close(req.session)
        return CloseResponse(closed=True)

    # ---- rewards

    async def reward(self, req: RewardRequest) -> RewardResponse:
        if req.verifier is not None:
            name = req.verifier
            if get_verifier(name) is None:
                raise RequestError("verifier", f"unknown verifier {name!r}; known verifiers: {', '.join(known_verifiers())}", name)
        else:
            name = self.options.domains.get(req.domain)
            if name is None:
                raise RequestError("domain", f"unknown domain {req.domain!r}; known domains: {', '.join(sorted(self.options.domains))} "
                                   "(map more with --option domains.<domain>=<verifier>, or pass verifier)", req.domain)
        verifier = get_verifier(name)
        assert verifier is not None  # domains are checked against the registry at startup
        config = _validate_config(verifier.Config, req.config)
        args = (req.prompt, req.response, req.reference, config.model_dump())
        info: dict[str, Any] = {"verifier": name, "domain": req.domain, "timeout": False}
        started = time.perf_counter()
        try:
            if verifier.isolated:
                reward, extra = await self.runner.run(verifier.fn, args, self.options.reward_timeout_s)
            elif verifier.sandboxed:  # waits on sandboxed programs: off the event loop, stopped at the time limit it is given
                reward, extra = await self.deadlines.run(verifier.fn, args, self.options.reward_timeout_s)
            elif verifier.remote:  # waits on another server: off the event loop, bounded by the time limit it is given
                reward, extra = await asyncio.to_thread(verifier.fn, *args, self.options.reward_timeout_s)
            else:
                reward, extra = verifier.fn(*args)
            reward = float(reward)
            if not math.isfinite(reward):
                raise ValueError(f"verifier returned a non-finite reward {reward!r}")
            info.update(extra)
            if info["timeout"]:
                self.metrics.reward_timeouts.labels(req.domain, name).inc()
        except UnscoredError:
            self.metrics.reward_unscored.labels(req.domain, name).inc()
            raise  # no score exists for this response: a 422, never a made-up 0
        except UnavailableError:
            self.metrics.reward_infra_errors.labels(req.domain, name).inc()
            raise  # the server a remote verifier needs is down: a 503, retried, never a score
        except RequestError:
            raise  # the request itself is wrong (a malformed reference): a 4xx naming the field, not a score
        except (SandboxError, SandboxUnavailable) as e:  # the server failed, not the response: never a score
            log.error("verifier %s: the sandbox failed: %s", name, e)
            self.metrics.reward_infra_errors.labels(req.domain, name).inc()
            raise UnavailableError("sandbox", f"verifier {name} could not run the response: {e}", code="sandbox_failed") from e
        except (IsolationTimeout, DeadlineExceeded):  # the reply overran; a SandboxError its stop caused arrives as DeadlineExceeded
            reward = 0.0
            info.update(timeout=True, error=f"verification took longer than reward_timeout_s={self.options.reward_timeout_s:g} s")
            self.metrics.reward_timeouts.labels(req.domain, name).inc()
        except (IsolationError, Exception) as e:  # a verifier failure scores 0; it is not the client's fault
            log.warning("verifier %s failed: %s", name, e)
            reward = 0.0
            info["error"] = str(e) or type(e).__name__
            self.metrics.reward_errors.labels(req.domain, name).inc()
        self.metrics.reward_seconds.labels(name).observe(time.perf_counter() - started)
        self.metrics.rewards.labels(req.domain, name).inc()
        return RewardResponse(reward=reward, info=info)

    def render_metrics(self) -> bytes:
        self.sessions.sweep()
        return generate_latest(self.metrics.registry)


def register_routes(app: FastAPI, role: EnvRole) -> None:
    app.state.env_role = role
    role.liveness = app.state.liveness

    @app.post("/reset", response_model=ResetResponse)
    def reset(req: ResetRequest) -> ResetResponse:
        return role.reset(req)

    @app.post("/step", response_model=StepResponse)
    def step(req: StepRequest) -> StepResponse:
        return role.step(req)

    @app.post("/close", response_model=CloseResponse)
    def close(req: CloseRequest) -> CloseResponse:
        return role.close(req)

    @app.post("/reward", response_model=RewardResponse)
    async def reward(req: RewardRequest) -> RewardResponse:
        return await role.reward(req)

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(role.render_metrics(), media_type=CONTENT_TYPE_LATEST)

    # Close sessions, kill verifier workers and remove sandbox workspaces when the server stops.
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any):
        try:
            async with inner(a) as state:
                yield state
        finally:
            role.shutdown()

    app.router.lifespan_context = lifespan
