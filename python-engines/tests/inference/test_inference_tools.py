"""The inference server renders a leading tools message with the model's chat template (models/chat.py): the first
turn of a swe_lite episode with actions: tool_calls, its continuation, and the 400s of tools it cannot render."""
import pytest

from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.models import build_tiny_model, load_model
from rollflow_engines.models.chat import hf_chat_prompt
from rollflow_engines.models.tiny import TINY_PRESETS, TinyPreset

from .helpers import serve

pytestmark = pytest.mark.anyio


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    """The tools' declaration is ~1,900 characters, one token each: past the tiny presets' 512 positions."""
    monkeypatch.setitem(TINY_PRESETS, "tools-test", TinyPreset(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096))
    return build_tiny_model("tools-test", 0, tmp_path / "model")


def first_turn() -> list[dict[str, str]]:
    env = SweLiteEnv()
    try:
        return env.first_messages(env.reset(0, SweLiteConfig(task="t1-002", actions="tool_calls")))
    finally:
        env.close()


async def test_the_first_turn_and_its_continuation_render_the_tools(model_dir):
    messages = first_turn()
    _, tok = load_model(str(model_dir))
    call = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    async with serve("torch", model=str(model_dir)) as (client, _):
        r = await client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 2, "seed": 1})
        assert r.status_code == 200, r.text
        prompt = r.json()["prompt_token_ids"]
        assert prompt == hf_chat_prompt(tok, messages) and "# Tools" in tok.decode(prompt)
        history = [*messages, {"role": "assistant", "content": call}]
        r = await client.post("/v1/chat/continuation", json={"history": history, "messages": [{"role": "user", "content": "[exit 0]"}]})
        assert r.status_code == 200, r.text
        assert tok.decode(r.json()["token_ids"]) == "\n<|user|>[exit 0]\n<|assistant|>"


async def test_tools_a_model_cannot_take_are_400s_naming_messages(model_dir):
    messages = first_turn()
    async with serve("torch") as (client, _):  # tiny:default: 512 positions, fewer than the tools' declaration
        r = await client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 2})
        assert r.status_code == 400 and r.json()["problems"][0]["field"] == "max_tokens", r.text
    async with serve("torch", model=str(model_dir)) as (client, _):
        r = await client.post("/v1/chat/completions", json={"messages": [messages[1], messages[0]], "max_tokens": 2})
        assert r.status_code == 400 and "must be the first message" in r.json()["problems"][0]["message"], r.text
