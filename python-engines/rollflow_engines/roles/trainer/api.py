"""The trainer's HTTP endpoints over one backend.

Concurrency: one asyncio lock guards the weights. A train step that arrives
while another train step runs gets 409 at once (field ``step``) rather than
queueing behind it — a retried activity learns the trainer is busy and retries
later, when its step is either done (replayed) or runnable. /logprobs, /save,
/load and /export_weights wait for the lock instead, so they never see weights
halfway through an optimizer step.

Exactly-once steps: ``step`` must equal the trainer's version (train steps
applied). Repeating the last step with the same batch (same uids, in order)
returns the recorded response with ``replayed: true`` and trains nothing; any
other step number is a 409 naming ``step`` and the expected value.

Run binding: /reset and /load bind the trainer to the ``run_id`` they name.
Calls that name a run (train_step, save, export_weights) are refused while the
trainer holds another run (409, code ``trainer_held``) or none: a restarted
process holds none and is back at its launch weights, so it must never train,
save or export under a run at step n (409, code ``trainer_behind``; the caller
restores the run's trainer state and replays its batches, see
src/activities/trainer-recovery.ts). A step ahead of the weights is
``trainer_behind`` too; a busy trainer is ``trainer_busy`` (retry later). A step, save or export below the
weights' version is ``trainer_ahead`` (after a Temporal rollback: the caller loads an older state and replays).

Trainer states: written durably with a checksum of every file (state_files.py); /load verifies them before any
weight changes, and a state that fails is a 400 ``checkpoint_corrupt`` (the caller tries an older one). A write
that finds the disk full is a 507 ``disk_full`` naming the path, with nothing half-written left. A state's ``path`` may
be an s3:// ref: it is written through a local scratch directory to the object store, and read back through one
(store_states.py), with the same checks.

Exports: to ``<export_dir>/v<N>`` on this host, or, with ``export_dir`` an s3:// ref, through a local scratch
directory to the object store (store_exports.py); a store that cannot be reached is a 503 (retry later).
"""
from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Callable

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from ...durable import is_disk_full
from ...errors import ConflictError, InsufficientStorageError, NotFoundError, RequestError, UnavailableError
from ...exports import EXPORT_MANIFEST, write_export_manifest
from ...objects import ObjectStoreError
from .backend import RecordedStep, TrainerBackend, run_in_thread
from .batch import prepare_batch
from .batch_read import batch_fingerprint, check_samples, resolve_samples
from .contracts import (ResetRequest, ResetResponse, ExportWeightsRequest, ExportWeightsResponse, LoadRequest, LoadResponse, LogprobsRequest,
                        LogprobsResponse, SaveRequest, SaveResponse, TrainerState, TrainStepRequest, TrainStepResponse)
from .metrics import TrainerMetrics
from .state_files import CORRUPT, FILES_KEY, checksums, clean_stale_scratch, replace_dir, scratch_dir_for, verify_checksums
from .store_exports import default_scratch_dir, store_prefix, upload_export, version_ref
from .store_states import default_scratch_dir as default_state_scratch_dir, download_state, state_ref, upload_state
from .step_log import StepLog, new_lineage

CHECKPOINT_META = "rollflow_checkpoint.json"
HF_EXPORT_DIR = "hf"  # inside a checkpoint written with export_hf
ADAPTER_EXPORT_DIR = "adapter"  # beside it, when the trainer trains a LoRA adapter
# Codes of the 409s a caller acts on (see the module docstring).
BUSY, BEHIND, HELD = "trainer_busy", "trainer_behind", "trainer_held"
# The trainer's weights are past the step or version asked for (a Temporal rollback, or a stale call): the caller
# brings the trainer back to its version (loads an older state, replays its batches); never the run forward.
AHEAD = "trainer_ahead"
DISK_FULL = "disk_full"  # a write found no space: InsufficientStorageError (507)


def write_failure(e: Exception, field: str, what: str, given, otherwise: type[RequestError] = RequestError) -> BaseException:
    """The error to raise for a failed write: a full disk is ``disk_full`` (a 507: retry once space is freed)
    naming the path, an object store that failed a 503 (its trouble, not the request's: retry later), any other
    OSError ``otherwise``; anything else stays itself."""
    if is_disk_full(e):
        return InsufficientStorageError(field, f"disk full: {what}: {e}", given, DISK_FULL)
    if isinstance(e, ObjectStoreError):
        return UnavailableError(field, f"{what}: {e}", given)
    return otherwise(field, f"{what}: {e}", given) if isinstance(e, OSError) else e


class TrainerServer:
    """State of one trainer app: the backend, its lock, its metrics."""

    def __init__(self, make_backend: Callable[[], TrainerBackend], export_dir: str, step_log: str | None = None,
                 export_scratch_dir: str | None = None, state_scratch_dir: str | None = None):
        self._make_backend = make_backend
        self.backend = make_backend()
        # An s3:// export_dir: exports are written under the scratch directory, then uploaded there.
        self.export_store = store_prefix(export_dir)
        self.export_dir = Path(export_dir) if self.export_store is None else Path(export_scratch_dir or default_scratch_dir())
        self.lock = asyncio.Lock()
        self.training_step: int | None = None  # set while a train step runs
        self.run_id: str | None = None  # the run bound by /reset or /load; a restarted process holds none
        self.metrics = TrainerMetrics(self.backend)
        # Where a state saved to or loaded from the object store (an s3:// path) is written or fetched, then removed.
        self.state_scratch = Path(state_scratch_dir or default_state_scratch_dir()).absolute()
        clean_stale_scratch(self.export_dir)  # exports a killed trainer was writing (states are cleaned at each save)
        # The trainer's own record of the steps it applied (step_log.py); the lineage names these weights' history.
        self.step_log = StepLog(step_log) if step_log else None
        self.lineage = new_lineage()
        self._log_steps_of(self.backend)

    def _log_steps_of(self, backend: TrainerBackend) -> None:
        if self.step_log:
            log = self.step_log
            backend.on_commit.append(lambda response, batch: log.step(self.run_id, response.step, response.version, batch.fingerprint, self.lineage))

    def _log_event(self, event: str, version: int, **extra) -> None:
        if self.step_log:
            self.step_log.event(self.run_id, event, version, self.lineage, **extra)

    # ---- reset: a new run starts from the initial weights

    async def reset(self, req: ResetRequest) -> ResetResponse:
        """Rebuilds the backend from its launch options: initial weights, a fresh optimizer, version 0.
        A run calls it first, so runs on one long-lived trainer server do not depend on each other."""
        if self.training_step is not None:
            raise ConflictError("step", f"train step {self.training_step} is still running; reset when it is done", self.training_step, BUSY)
        async with self.lock:
            self.backend = await asyncio.to_thread(self._make_backend)
            self.metrics.attach(self.backend)
            self._log_steps_of(self.backend)
            self.run_id, self.lineage = req.run_id, new_lineage()
            self._log_event("reset", self.backend.version)
        return ResetResponse(version=self.backend.version)

    def check_holder(self, run_id: str | None) -> None:
        """A call that names a run reaches only that run's trainer (see the module docstring)."""
        if run_id is None or run_id == self.run_id:
            return
        if self.run_id is None:
            raise ConflictError("run_id", f"this trainer holds no run (it restarted?): its weights are version {self.backend.version}"
                                          f" from its launch options, not run {run_id}'s; load the run's trainer state first", run_id, BEHIND)
        raise ConflictError("run_id", f"this trainer is held by run {self.run_id}; run {run_id} cannot use it"
                                      " (two runs cannot share one trainer)", run_id, HELD)

    def status(self) -> TrainerState:
        return TrainerState(run_id=self.run_id, version=self.backend.version, busy_step=self.training_step, backend=self.backend.name)

    # ---- train step

    async def train_step(self, req: TrainStepRequest) -> TrainStepResponse:
        if self.training_step is not None:
            raise ConflictError("step", f"train step {self.training_step} is still running; retry when it is done", req.step, BUSY)
        self.check_holder(req.run_id)
        self.training_step = req.step
        self.metrics.busy.set(1)
        try:
            async with self.lock:
                return await self._train_step(req)
        finally:
            self.training_step = None
            self.metrics.busy.set(0)

    async def _train_step(self, req: TrainStepRequest) -> TrainStepResponse:
        b = self.backend
        samples, field = await asyncio.to_thread(resolve_samples, req)
        if req.step != b.version:
            last = b.last_step
            if last is not None and req.step == b.version - 1:
                if last.fingerprint == batch_fingerprint(samples):
                    return last.response
                raise ConflictError("step", f"step {req.step} was already trained on a different batch; the next step is {b.version}", req.step, AHEAD)
            raise ConflictError("step", f"the trainer's weights are at version {b.version}, so the next step is {b.version}"
                                        " (load a checkpoint to go back or forward)", req.step, BEHIND if req.step > b.version else AHEAD)
        batch = await asyncio.to_thread(self._checked_batch, samples, field, req)
        return await b.train_step(req, batch)

    def _checked_batch(self, samples, field: str, req: TrainStepRequest):
        check_samples(samples, field, self.backend.vocab_size)
        return prepare_batch(samples, req)

    # ---- checkpoints

    async def save(self, req: SaveRequest) -> SaveResponse:
        store = state_ref(req.path)
        target = Path(req.path).absolute() if store is None else self.state_scratch / "save"  # for a store, its scratch
        shown = str(target) if store is None else store
        self.check_holder(req.run_id)
        async with self.lock:
            if req.version is not None and req.version != self.backend.version:
                raise ConflictError("version", f"the trainer's weights are version {self.backend.version}, not {req.version}; not saving them as {req.version}",
                                    req.version, BEHIND if req.version > self.backend.version else AHEAD)
            try:
                tmp = await run_in_thread(scratch_dir_for, target, CHECKPOINT_META, "path")
            except OSError as e:
                raise write_failure(e, "path", f"cannot create a checkpoint at {target}", req.path) from e
            uploaded = False
            try:
                await self.backend.save_state(tmp)
                if req.export_hf:
                    await self._export_hf(tmp / HF_EXPORT_DIR, tmp / ADAPTER_EXPORT_DIR)
                meta = {**self.backend.describe(), "version": self.backend.version, "lineage": self.lineage,
                        "last_step": self.backend.last_step.to_json() if self.backend.last_step else None,
                        FILES_KEY: await run_in_thread(checksums, tmp, CHECKPOINT_META)}
                (tmp / CHECKPOINT_META).write_text(json.dumps(meta, indent=1))
                if store is None:
                    await run_in_thread(replace_dir, tmp, target)  # fsyncs every file, then the rename
                else:
                    await run_in_thread(upload_state, tmp, store, CHECKPOINT_META, "path")
                    uploaded = True
                self._log_event("save", self.backend.version, path=shown)
            except Exception as e:
                shutil.rmtree(tmp, ignore_errors=True)
                failure = write_failure(e, "path", f"cannot write the checkpoint to {shown}", req.path)
                if failure is e:
                    raise
                raise failure from e
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if uploaded:
                shutil.rmtree(tmp, ignore_errors=True)
            return SaveResponse(path=shown, version=self.backend.version)

    async def _export_hf(self, directory: Path, adapter_directory: Path) -> None:
        """The policy as a Hugging Face directory (and a LoRA run's adapter beside it); removed again if the
        backend wrote nothing (sim)."""
        directory.mkdir()
        await self.backend.export_hf(directory, adapter_directory)
        if not any(directory.iterdir()):
            directory.rmdir()

    async def load(self, req: LoadRequest) -> LoadResponse:
        store = state_ref(req.path)
        if store is None:
            path = Path(req.path).absolute()
            checked = await self._checked_state(path, req, str(path))  # before the lock: a bad state never waits for it
            async with self.lock:
                return await self._load_checked(path, checked, req, str(path))
        # Under the lock from the fetch on: the scratch is cleaned only by a writer holding it (scratch.py), and the
        # weights are about to be replaced anyway.
        async with self.lock:
            try:
                tmp = await run_in_thread(scratch_dir_for, self.state_scratch / "load", CHECKPOINT_META, "path")
            except OSError as e:
                raise write_failure(e, "path", f"cannot fetch {store} into state_scratch_dir {self.state_scratch}", req.path) from e
            try:
                await run_in_thread(download_state, store, tmp, CHECKPOINT_META, "path")
                return await self._load_checked(tmp, await self._checked_state(tmp, req, store), req, store)
            except OSError as e:  # the scratch's own disk
                raise write_failure(e, "path", f"cannot fetch {store} into state_scratch_dir {self.state_scratch}", req.path) from e
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # loaded (the backend holds what it read) or refused: gone

    async def _checked_state(self, path: Path, req: LoadRequest, shown: str) -> tuple[dict, int, RecordedStep | None]:
        """The meta, version and last step of the state in the directory ``path``, every file checked against the meta's
        checksums; ``shown`` is what messages name the state by (its ref, for a fetched one)."""
        if not path.is_dir():
            raise NotFoundError("path", f"no checkpoint directory at {path}", req.path)
        try:
            meta = json.loads((path / CHECKPOINT_META).read_text())
            version = int(meta["version"])
            last = RecordedStep.from_json(meta["last_step"]) if meta.get("last_step") else None
            if version < 0:
                raise ValueError("negative version")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise RequestError("path", f"{shown} is not a trainer checkpoint (no readable {CHECKPOINT_META}: {e})", req.path, CORRUPT) from e
        if meta.get("backend") != self.backend.name:
            raise RequestError("path", f"checkpoint was written by the {meta.get('backend')!r} backend; this trainer runs {self.backend.name!r}", req.path)
        await run_in_thread(verify_checksums, path, meta, "path", req.path, shown)  # before any weight changes
        return meta, version, last

    async def _load_checked(self, path: Path, checked: tuple[dict, int, RecordedStep | None], req: LoadRequest, shown: str) -> LoadResponse:
        """Loads a state _checked_state passed; the caller holds the lock."""
        meta, version, last = checked
        await self.backend.load_state(path, version, last)
        # A new lineage: these weights continue the saving lineage's at `version`, not this process's earlier ones.
        self.run_id, self.lineage = req.run_id, new_lineage()
        self._log_event("load", version, parent=meta.get("lineage"), path=shown)
        return LoadResponse(path=shown, version=version)

    async def export_weights(self, req: ExportWeightsRequest) -> ExportWeightsResponse:
        self.check_holder(req.run_id)
        async with self.lock:
            b = self.backend
            if req.version != b.version:
                raise ConflictError("version", f"the trainer's weights are version {b.version}; cannot label them {req.version}", req.version,
                                    BEHIND if req.version > b.version else AHEAD)
            target = (self.export_dir / f"v{req.version}").absolute()  # for a store export, its scratch
            try:
                tmp = await run_in_thread(scratch_dir_for, target, EXPORT_MANIFEST, "version")
            except OSError as e:
                raise write_failure(e, "version", f"cannot write under {'export_dir' if self.export_store is None else 'export_scratch_dir'} {self.export_dir}",
                                    req.version, ConflictError) from e
            path = str(target) if self.export_store is None else version_ref(self.export_store, req.version)
            try:
                await b.export_weights(tmp)
                if self.export_store is None:
                    write_export_manifest(tmp, b.describe(), b.version)
                    await run_in_thread(replace_dir, tmp, target)
                else:
                    write_export_manifest(tmp, b.describe(), b.version, await run_in_thread(checksums, tmp, EXPORT_MANIFEST))
                    await run_in_thread(upload_export, tmp, path)
            except Exception as e:
                failure = write_failure(e, "version", f"cannot write the export to {path}", req.version, ConflictError)
                if failure is e:
                    raise
                raise failure from e
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # renamed into place, uploaded, or failed: gone
            return ExportWeightsResponse(path=path, version=req.version)

    async def logprobs(self, req: LogprobsRequest) -> LogprobsResponse:
        async with self.lock:
            values = await self.backend.logprobs(req.sequences, req.temperature)
            return LogprobsResponse(logprobs=values, version=self.backend.version)


def parse_json(text: str | bytes):
    """json.loads, except that NaN and ±Infinity stay the strings "NaN"/"Infinity": the
    models then reject them as "not a number", and the error body stays valid JSON."""
    return json.loads(text, parse_constant=str)


class _FiniteJSONRequest(Request):
    async def json(self):
        if not hasattr(self, "_json"):
            self._json = parse_json(await self.body())
        return self._json


class FiniteJSONRoute(APIRoute):
    """Parses request bodies with ``parse_json`` (see there)."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def finite_json_handler(request: Request) -> Response:
            return await handler(_FiniteJSONRequest(request.scope, request.receive))

        return finite_json_handler


def register_endpoints(app: FastAPI, server: TrainerServer) -> None:
    app.state.trainer = server
    router = APIRouter(route_class=FiniteJSONRoute)

    @router.post("/train_step", response_model=TrainStepResponse)
    async def train_step(req: TrainStepRequest) -> TrainStepResponse:
        return await server.train_step(req)

    @router.post("/reset", response_model=ResetResponse)
    async def reset(req: ResetRequest) -> ResetResponse:
        return await server.reset(req)

    @router.get("/status", response_model=TrainerState)
    async def status() -> TrainerState:
        return server.status()

    @router.post("/logprobs", response_model=LogprobsResponse)
    async def logprobs(req: LogprobsRequest) -> LogprobsResponse:
        return await server.logprobs(req)

    @router.post("/save", response_model=SaveResponse)
    async def save(req: SaveRequest) -> SaveResponse:
        return await server.save(req)

    @router.post("/load", response_model=LoadResponse)
    async def load(req: LoadRequest) -> LoadResponse:
        return await server.load(req)

    @router.post("/export_weights", response_model=ExportWeightsResponse)
    async def export_weights(req: ExportWeightsRequest) -> ExportWeightsResponse:
        return await server.export_weights(req)

    @app.get("/metrics")
    def metrics() -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(content=server.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(router)


__all__ = ["TrainerServer", "register_endpoints"]
