"""Chat templates of Hugging Face tokenizers, as rollouts lay out multi-turn conversations: the inference
backends (torch, vllm) and the warm-start's synthetic conversations share this, so it sits with the models.

Tools: a message of role ``tools`` (TOOLS_ROLE), first in the conversation, holds a JSON array of OpenAI-format
function schemas; it is taken out of the messages and handed to the template as ``apply_chat_template(tools=…)``,
which renders them where the model expects them (Qwen2.5: in the system turn). It travels as a message so that
the requests' existing ``messages``/``history`` fields carry it through a whole episode (an env's first turn,
envs/base.py first_messages), and a request without one renders exactly as before.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import RequestError

TOOLS_ROLE = "tools"
MAX_TOOLS = 64


def split_tools(messages: list[dict[str, str]]) -> tuple[list[dict[str, Any]] | None, list[dict[str, str]]]:
    """(the tools of a leading ``tools`` message, or None; the other messages). RequestError for a tools message
    anywhere but first, or one that is not a JSON array of function schemas."""
    misplaced = [i for i, m in enumerate(messages) if m["role"] == TOOLS_ROLE and i != 0]
    if misplaced:
        raise RequestError("messages", f"message {misplaced[0]} has role {TOOLS_ROLE!r}: the tools must be the first message")
    if not messages or messages[0]["role"] != TOOLS_ROLE:
        return None, messages
    try:
        tools = json.loads(messages[0]["content"])
    except (ValueError, RecursionError) as e:
        raise RequestError("messages", f"the {TOOLS_ROLE} message is not JSON: {e}") from None
    if not isinstance(tools, list) or not 1 <= len(tools) <= MAX_TOOLS:
        raise RequestError("messages", f"the {TOOLS_ROLE} message must be a JSON array of 1 to {MAX_TOOLS} tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (isinstance(tool, dict) and tool.get("type") == "function" and isinstance(function, dict)
                and isinstance(function.get("name"), str) and function["name"]):
            raise RequestError("messages", f"tool {i} of the {TOOLS_ROLE} message is not "
                               '{"type": "function", "function": {"name": …, "parameters": {…}}}')
    return tools, messages[1:]


def render_chat(tokenizer, messages: list[dict[str, str]], tools: list[dict[str, Any]] | None, **kwargs):
    """``apply_chat_template`` with ``tools`` when there are any. A template that does not render them (the output
    is the same without them) is refused: the model would be asked for calls to tools it was never shown."""
    if not tools:  # exactly the call of a request without tools, as before tools existed
        return tokenizer.apply_chat_template(messages, **kwargs)
    text = {**kwargs, "tokenize": False}
    if tokenizer.apply_chat_template(messages, tools=tools, **text) == tokenizer.apply_chat_template(messages, **text):
        raise RequestError("messages", "this model's chat template does not render tools (apply_chat_template ignores tools=); "
                           "use a model whose template does, as Qwen2.5's and rollflow's tiny models' do")
    return tokenizer.apply_chat_template(messages, tools=tools, **kwargs)


def hf_chat_prompt(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    """The token ids of ``messages`` (a leading tools message rendered by the template) and a generation prompt."""
    tools, rest = split_tools(messages)
    try:
        out = render_chat(tokenizer, rest, tools, add_generation_prompt=True, tokenize=True)
    except RequestError:
        raise
    except Exception as e:  # a template may reject a conversation (e.g. role order)
        raise RequestError("messages", f"chat template failed: {e}") from e
    ids = out["input_ids"] if hasattr(out, "keys") else out
    return [int(t) for t in ids]


def hf_chat_continuation(tokenizer, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
    """Chat-template continuation for Hugging Face tokenizers (torch, vllm backends).

    Renders the conversation up to the last assistant turn's content, and the
    whole conversation with the new messages and a generation prompt; the ids of
    the text between the two are the continuation. Templates that rewrite
    earlier turns (so the first text is not a prefix of the second) are refused:
    their multi-turn token ids cannot be kept end to end. A tools message leads
    ``history`` (it came with the first turn) and is rendered in both.
    """
    if history[-1]["role"] != "assistant":
        raise RequestError("history", "must end with the assistant turn just generated")
    tools, history = split_tools(history)
    if any(m["role"] == TOOLS_ROLE for m in messages):
        raise RequestError("messages", f"a {TOOLS_ROLE} message belongs first in the history, not in the new turns")
    try:
        head = render_chat(tokenizer, history[:-1], tools, add_generation_prompt=True, tokenize=False) + history[-1]["content"]
        full = render_chat(tokenizer, history + messages, tools, add_generation_prompt=True, tokenize=False)
    except RequestError:
        raise
    except Exception as e:  # a template may reject a conversation (e.g. role order)
        raise RequestError("messages", f"chat template failed: {e}") from e
    if not full.startswith(head):
        raise RequestError("history", "this chat template re-renders earlier turns, so continuation tokens cannot be isolated")
    return [int(t) for t in tokenizer.encode(full[len(head):], add_special_tokens=False)]
