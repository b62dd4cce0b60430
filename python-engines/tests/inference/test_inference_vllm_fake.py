"""The vllm backend's mapping of our protocol onto AsyncLLM, against a small fake of
the vLLM API (vllm is not installed here, and there is no GPU). This checks our
side only: which AsyncLLM calls we make and what we build from their outputs;
it says nothing about real vLLM behaviour."""
import asyncio
import importlib.machinery
import sys
import types
from dataclasses import dataclass, field

import pytest

from .helpers import as_export, serve, wait_until

pytestmark = pytest.mark.anyio


@dataclass
class Logprob:
    logprob: float


@dataclass
class Completion:
    token_ids: list
    logprobs: list
    finish_reason: str | None = None


@dataclass
class Output:
    outputs: list
    finished: bool = False


@dataclass
class FakeAsyncLLM:
    calls: list = field(default_factory=list)
    paused: str | None = None
    resumed: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: list = field(default_factory=list)  # (request_id, emitted tokens)
    pause_gate: asyncio.Event | None = None  # when set by a test, pause_generation returns only once it is set

    @classmethod
    def from_engine_args(cls, args):
        llm = cls()
        llm.calls.append(("from_engine_args", args.kwargs))
        FAKE["llm"] = llm
        return llm

    def get_tokenizer(self):
        return types.SimpleNamespace(
            decode=lambda ids, skip_special_tokens: "".join(chr(97 + t % 26) for t in ids),
            apply_chat_template=lambda messages, add_generation_prompt, tokenize: {"input_ids": [1] + [len(m["content"]) for m in messages]},
        )

    async def generate(self, prompt, sp, request_id):
        self.calls.append(("generate", request_id, prompt["prompt_token_ids"], sp.kwargs))
        slot = [request_id, 0]
        self.in_flight.append(slot)
        try:
            for k in range(sp.kwargs["max_tokens"]):
                while self.paused == "keep":
                    await self.resumed.wait()
                if self.paused == "abort":
                    yield Output([Completion([], None, "abort")], finished=True)
                    return
                await FAKE["permits"].get()  # the test releases decode steps one token at a time
                slot[1] += 1
                last = k == sp.kwargs["max_tokens"] - 1
                yield Output([Completion([100 + k], [{100 + k: Logprob(-0.5 - k)}], "length" if last else None)], finished=last)
        finally:
            self.in_flight.remove(slot)

    async def pause_generation(self, *, mode):
        self.calls.append(("pause_generation", mode))
        self.resumed.clear()
        self.paused = mode
        if self.pause_gate is not None:
            await self.pause_gate.wait()

    async def resume_generation(self):
        self.calls.append(("resume_generation",))
        self.paused = None
        self.resumed.set()

    async def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
        self.calls.append(("collective_rpc", method, args))

    def shutdown(self):
        self.calls.append(("shutdown",))


FAKE: dict = {}


class Recorded:
    def __init__(self, *args, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    modules = {name: types.ModuleType(name) for name in (
        "vllm", "vllm.engine", "vllm.engine.arg_utils", "vllm.v1", "vllm.v1.engine", "vllm.v1.engine.async_llm",
        "vllm.sampling_params")}
    modules["vllm"].__spec__ = importlib.machinery.ModuleSpec("vllm", None)  # so find_spec sees it installed
    modules["vllm"].SamplingParams = Recorded
    modules["vllm"].TokensPrompt = dict
    modules["vllm.engine.arg_utils"].AsyncEngineArgs = Recorded
    modules["vllm.v1.engine.async_llm"].AsyncLLM = FakeAsyncLLM
    modules["vllm.sampling_params"].RequestOutputKind = types.SimpleNamespace(DELTA="delta")
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    FAKE.clear()
    FAKE["permits"] = asyncio.Queue()
    yield FAKE


def permit(fake: dict, tokens: int) -> None:
    for _ in range(tokens):
        fake["permits"].put_nowait(None)


async def test_completions_map_onto_asyncllm_generate(fake_vllm):
    permit(fake_vllm, 4)
    async with serve("vllm", model="/models/policy", vllm={"gpu_memory_utilization": 0.5}) as (client, _):
        r = await client.post("/v1/completions", json={"prompt": [5, 6], "max_tokens": 3, "seed": 2, "stop_token_ids": [9]})
        chat = await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hey"}], "max_tokens": 1})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert (choice["token_ids"], choice["logprobs"], choice["finish_reason"]) == ([100, 101, 102], [-0.5, -1.5, -2.5], "length")
    assert choice["version_spans"] == [{"version": 0, "start": 0, "end": 3}] and choice["text"] == "wxy"
    assert chat.json()["prompt_token_ids"] == [1, 3]
    llm = fake_vllm["llm"]
    assert llm.calls[0] == ("from_engine_args", {"model": "/models/policy", "seed": 0, "max_num_seqs": 64, "gpu_memory_utilization": 0.5})
    _, _, prompt, sp = llm.calls[1]
    assert prompt == [5, 6] and sp["max_tokens"] == 3 and sp["logprobs"] == 0 and sp["stop_token_ids"] == [9]
    assert llm.calls[-1] == ("shutdown",)


async def test_keep_pause_update_and_resume_give_two_spans(fake_vllm, tmp_path):
    async with serve("vllm", model="/models/policy") as (client, engine):
        task = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1], "max_tokens": 4}))
        await wait_until(lambda: engine.state()["running"] == 1 and fake_vllm.get("llm") is not None, "the request to start")
        llm = fake_vllm["llm"]
        permit(fake_vllm, 1)
        await wait_until(lambda: bool(llm.in_flight) and llm.in_flight[0][1] == 1, "a first token")
        assert (await client.post("/pause", json={"mode": "keep"})).json()["frozen"] == 1
        held = asyncio.create_task(client.post("/v1/completions", json={"prompt": [2], "max_tokens": 1}))
        await wait_until(lambda: engine.state()["waiting"] == 1, "the new request to wait for resume")
        r = await client.post("/update_weights", json={"path": str(as_export(tmp_path, "vllm")), "version": 7})
        assert r.status_code == 200, r.text
        await client.post("/resume")
        permit(fake_vllm, 4)
        choice = (await task).json()["choices"][0]
        assert (await held).json()["choices"][0]["version_spans"] == [{"version": 7, "start": 0, "end": 1}]
    assert choice["version_spans"] == [{"version": 0, "start": 0, "end": 1}, {"version": 7, "start": 1, "end": 4}]
    assert ("collective_rpc", "update_config", ({"model_config": {"model": str(tmp_path)}},)) in llm.calls
    assert ("collective_rpc", "reload_weights", ()) in llm.calls
    assert ("pause_generation", "keep") in llm.calls


async def test_update_weights_while_running_is_a_conflict(fake_vllm, tmp_path):
    async with serve("vllm") as (client, _):
        r = await client.post("/update_weights", json={"path": str(tmp_path), "version": 1})
    assert r.status_code == 409 and r.json()["problems"][0]["field"] == "state"


async def test_a_pause_holds_requests_by_design_only_once_vllm_has_paused(fake_vllm):
    # /health excuses a paused server's waiting requests (holds_by_design); a pause vLLM has not finished (a drain, a
    # step that never returns) is no such hold, or a hung engine would be excused for as long as its pause waits.
    async with serve("vllm", model="/models/policy") as (client, engine):
        await wait_until(lambda: fake_vllm.get("llm") is not None, "the engine")
        llm = fake_vllm["llm"]
        llm.pause_gate = asyncio.Event()
        pause = asyncio.create_task(client.post("/pause", json={"mode": "wait"}))
        await wait_until(lambda: ("pause_generation", "wait") in llm.calls, "the pause to reach vLLM")
        assert engine.state()["paused"] and not engine.holds_by_design()
        llm.pause_gate.set()
        assert (await pause).status_code == 200
        assert engine.holds_by_design()
        await client.post("/resume")
        assert not engine.holds_by_design()
