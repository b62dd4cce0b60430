"""Chat templates of Hugging Face tokenizers, as rollouts lay out multi-turn conversations: the inference
backends (torch, vllm) and the warm-start's synthetic conversations share this, so it sits with the models.
"""
from __future__ import annotations

from ..errors import RequestError


def hf_chat_continuation(tokenizer, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
    """Chat-template continuation for Hugging Face tokenizers (torch, vllm backends).

    Renders the conversation up to the last assistant turn's content, and the
    whole conversation with the new messages and a generation prompt; the ids of
    the text between the two are the continuation. Templates that rewrite
    earlier turns (so the first text is not a prefix of the second) are refused:
    their multi-turn token ids cannot be kept end to end.
    """
    if history[-1]["role"] != "assistant":
        raise RequestError("history", "must end with the assistant turn just generated")
    try:
        head = tokenizer.apply_chat_template(history[:-1], add_generation_prompt=True, tokenize=False) + history[-1]["content"]
        full = tokenizer.apply_chat_template(history + messages, add_generation_prompt=True, tokenize=False)
    except Exception as e:  # a template may reject a conversation (e.g. role order)
        raise RequestError("messages", f"chat template failed: {e}") from e
    if not full.startswith(head):
        raise RequestError("history", "this chat template re-renders earlier turns, so continuation tokens cannot be isolated")
    return [int(t) for t in tokenizer.encode(full[len(head):], add_special_tokens=False)]
