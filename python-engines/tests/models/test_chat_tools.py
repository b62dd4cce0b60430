"""Tools through the chat template (models/chat.py): a leading ``tools`` message becomes apply_chat_template(tools=…),
the tiny models' template renders them as Qwen2.5's does, and the whole path runs: the env's first turn, the
template, a forced model output with a <tool_call>, the env's parse of it, the next turn's continuation."""
import json

import pytest
import torch

from rollflow_engines.envs.swe_lite.actions import Bash, Replace, Submit, View
from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.envs.swe_lite.tool_calls import TOOLS, parse_hermes
from rollflow_engines.errors import RequestError
from rollflow_engines.models import load_model
from rollflow_engines.models.chat import TOOLS_ROLE, hf_chat_continuation, hf_chat_prompt, split_tools
from rollflow_engines.models.tiny import CHAT_TEMPLATE, TINY_PRESETS, TOOL_MESSAGE_BRANCH, TinyPreset, build_tiny_model, build_tokenizer

# The tiny template before it rendered tools: every conversation without tools must still render exactly so.
OLD_TINY_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                     "{% if add_generation_prompt %}<|assistant|>{% endif %}")

# Qwen2.5-Instruct's chat template (tokenizer_config.json of Qwen/Qwen2.5-*-Instruct), written out here because
# nothing is downloaded and transformers ships no copy: the tools in the system turn, calls as <tool_call> JSON,
# tool results as <tool_response> in a user turn. Checked byte for byte (2,507 characters) against the
# tokenizer_config.json chat_template quoted in the Berkeley Function Calling Leaderboard's Qwen handler (bfcl).
QWEN25_TEMPLATE = (
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n        {{- \"\\n\" }}\n        {{- tool | tojson }}\n    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": <args-json-object>}"
    "\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n            {{- '\\n' + message.content }}\n        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n        {%- endfor %}\n        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n        {%- endif %}\n        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n"
)

TOOLS_MESSAGE = {"role": TOOLS_ROLE, "content": json.dumps(TOOLS)}


def tokenizer(template: str = CHAT_TEMPLATE):
    tok = build_tokenizer()
    tok.chat_template = template
    return tok


def text(tok, messages, **kwargs) -> str:
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kwargs)


# ---- the tiny template

@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "2+2"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2"}, {"role": "assistant", "content": "4"}, {"role": "user", "content": "3+3"}],
])
def test_without_tools_the_tiny_template_renders_exactly_as_before(messages):
    assert text(tokenizer(), messages) == text(tokenizer(OLD_TINY_TEMPLATE), messages)


def test_with_tools_the_tiny_template_lists_them_in_a_system_turn_the_tokenizer_can_spell():
    tok = tokenizer()
    messages = [{"role": "system", "content": "Fix bugs."}, {"role": "user", "content": "go"}]
    rendered = text(tok, messages, tools=TOOLS)
    assert rendered.startswith("<|system|>Fix bugs.\n\n# Tools\n") and rendered.endswith("</tool_call>\n<|user|>go\n<|assistant|>")
    assert rendered.count("<|system|>") == 1  # the conversation's system message leads the tools' turn, not a second one
    listed = rendered.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line) for line in listed] == TOOLS
    ids = tok.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True, tokenize=True)["input_ids"]
    assert tok.pad_token_id not in ids and tok.decode(ids) == rendered  # no character fell outside the vocabulary


def test_a_cached_tiny_model_built_before_tools_loads_with_the_template_that_renders_them(tmp_path):
    _, tok = load_model("tiny:default", 0, cache_dir=tmp_path)
    saved = tmp_path / "tiny-default-seed0" / "tokenizer_config.json"
    old = json.loads(saved.read_text())
    saved.write_text(json.dumps({**old, "chat_template": OLD_TINY_TEMPLATE}))
    (tmp_path / "tiny-default-seed0" / "chat_template.jinja").unlink(missing_ok=True)
    _, again = load_model("tiny:default", 0, cache_dir=tmp_path)
    assert again.chat_template == CHAT_TEMPLATE


CONVERSATIONS_WITHOUT_TOOL_MESSAGES = [
    [{"role": "user", "content": "2+2"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2"}, {"role": "assistant", "content": "4"}, {"role": "user", "content": "3+3"}],
    [{"role": "user", "content": "go"}, {"role": "assistant", "content": "<bash>ls</bash>"}, {"role": "user", "content": "[exit 0]\nboard_lib"},
     {"role": "assistant", "content": "```bash\nls\n```"}, {"role": "user", "content": "<returncode>0</returncode>"}],
]


@pytest.mark.parametrize("messages", CONVERSATIONS_WITHOUT_TOOL_MESSAGES)
def test_a_conversation_without_tool_messages_renders_as_before_tool_messages_existed(messages):
    """Without tools exactly as the template before tools; with tools exactly as the template before tool messages."""
    before_tool_messages = CHAT_TEMPLATE.replace(TOOL_MESSAGE_BRANCH, "").replace("{% elif not (tools", "{% if not (tools")
    assert before_tool_messages != CHAT_TEMPLATE
    assert text(tokenizer(), messages) == text(tokenizer(OLD_TINY_TEMPLATE), messages)
    assert text(tokenizer(), messages, tools=TOOLS) == text(tokenizer(before_tool_messages), messages, tools=TOOLS)


def test_tool_messages_render_as_qwen25s_a_tool_response_in_a_user_turn_one_turn_for_a_run():
    conversation = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "<tool_call>a</tool_call>"},
                    {"role": "tool", "content": "[exit 0]\nA"}, {"role": "tool", "content": "B"},
                    {"role": "assistant", "content": "<tool_call>b</tool_call>"}, {"role": "tool", "content": "C"}]
    tiny = text(tokenizer(), conversation, tools=TOOLS).split("</tool_call>\n", 1)[1]  # after the tools' system turn
    assert tiny == ("<|user|>go\n<|assistant|><tool_call>a</tool_call>\n<|user|>\n<tool_response>\n[exit 0]\nA\n</tool_response>\n"
                    "<tool_response>\nB\n</tool_response>\n<|assistant|><tool_call>b</tool_call>\n"
                    "<|user|>\n<tool_response>\nC\n</tool_response>\n<|assistant|>")
    qwen = text(tokenizer(QWEN25_TEMPLATE), conversation, tools=TOOLS)
    assert ("<|im_start|>user\n<tool_response>\n[exit 0]\nA\n</tool_response>\n<tool_response>\nB\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>b</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nC\n</tool_response><|im_end|>\n") in qwen
    ids = tokenizer().apply_chat_template(conversation, tools=TOOLS, add_generation_prompt=True, tokenize=True)["input_ids"]
    assert tokenizer().pad_token_id not in ids  # the tiny tokenizer spells every character of it


@pytest.mark.parametrize("template, between", [
    (CHAT_TEMPLATE, "\n<|user|>\n<tool_response>\n[exit 0]\nboard_lib\n</tool_response>\n<|assistant|>"),
    (QWEN25_TEMPLATE, "<|im_end|>\n<|im_start|>user\n<tool_response>\n[exit 0]\nboard_lib\n</tool_response><|im_end|>\n<|im_start|>assistant\n"),
])
def test_a_tool_message_continues_a_conversation_with_tools_and_its_ids_are_the_rendered_difference(template, between):
    tok = tokenizer(template)
    reply = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    history = [TOOLS_MESSAGE, {"role": "user", "content": "Fix it."}, {"role": "assistant", "content": reply}]
    assert tok.decode(hf_chat_continuation(tok, history, [{"role": "tool", "content": "[exit 0]\nboard_lib"}])) == between


# ---- the tools message

@pytest.mark.parametrize("messages, named", [
    ([{"role": "user", "content": "hi"}, TOOLS_MESSAGE], "must be the first message"),
    ([{"role": TOOLS_ROLE, "content": "[{"}, {"role": "user", "content": "hi"}], "not JSON"),
    ([{"role": TOOLS_ROLE, "content": "[]"}, {"role": "user", "content": "hi"}], "JSON array of 1 to"),
    ([{"role": TOOLS_ROLE, "content": "{}"}, {"role": "user", "content": "hi"}], "JSON array of 1 to"),
    ([{"role": TOOLS_ROLE, "content": '[{"name": "bash"}]'}, {"role": "user", "content": "hi"}], "tool 0 of the tools message is not"),
    ([{"role": TOOLS_ROLE, "content": "[" * 50_000}, {"role": "user", "content": "hi"}], "not JSON"),
])
def test_a_bad_tools_message_is_a_request_error_naming_it(messages, named):
    with pytest.raises(RequestError) as e:
        hf_chat_prompt(tokenizer(), messages)
    assert e.value.field == "messages" and named in e.value.message


def test_a_request_without_tools_is_the_plain_template_call_and_one_with_tools_renders_them():
    tok, user = tokenizer(), [{"role": "user", "content": "hi"}]
    assert split_tools(user) == (None, user)
    assert hf_chat_prompt(tok, user) == tok.apply_chat_template(user, add_generation_prompt=True, tokenize=True)["input_ids"]
    assert tok.decode(hf_chat_prompt(tok, [TOOLS_MESSAGE, *user])) == text(tok, user, tools=TOOLS)


def test_a_template_that_ignores_tools_is_refused_rather_than_asked_for_calls_it_never_showed():
    with pytest.raises(RequestError, match="does not render tools"):
        hf_chat_prompt(tokenizer(OLD_TINY_TEMPLATE), [TOOLS_MESSAGE, {"role": "user", "content": "hi"}])


# ---- Qwen2.5's template

@pytest.mark.parametrize("name, arguments, action", [
    ("bash", {"command": "grep -n 'best' board_lib/core.py"}, Bash("grep -n 'best' board_lib/core.py")),
    ("view", {"path": "board_lib/core.py", "start": 1, "end": 20}, View("board_lib/core.py", 1, 20)),
    ("edit", {"path": "board_lib/core.py", "old_str": "        if x < best:", "new_str": "        if x > best:"},
     Replace("board_lib/core.py", "        if x < best:", "        if x > best:")),
    ("submit", {}, Submit()),
])
def test_the_parser_reads_the_calls_qwen25s_template_writes(name, arguments, action):
    tok = tokenizer(QWEN25_TEMPLATE)
    messages = [{"role": "user", "content": "Fix it."},
                {"role": "assistant", "content": "Let me act.", "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}]
    rendered = tok.apply_chat_template(messages, tools=TOOLS, tokenize=False)
    assert "# Tools" in rendered and all(json.dumps(t) in rendered for t in TOOLS)
    reply = rendered.split("<|im_start|>assistant\n", 1)[1].removesuffix("<|im_end|>\n")
    assert reply.startswith("Let me act.\n<tool_call>\n{") and parse_hermes(reply) == action


def test_qwen25s_template_takes_the_tools_message_and_keeps_turns_for_continuations():
    tok = tokenizer(QWEN25_TEMPLATE)
    first = [TOOLS_MESSAGE, {"role": "user", "content": "Fix it."}]
    assert "<tools>\n" + json.dumps(TOOLS[0]) in tok.decode(hf_chat_prompt(tok, first))
    reply = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    ids = hf_chat_continuation(tok, [*first, {"role": "assistant", "content": reply}], [{"role": "user", "content": "[exit 0]\nboard_lib"}])
    assert tok.decode(ids) == "<|im_end|>\n<|im_start|>user\n[exit 0]\nboard_lib<|im_end|>\n<|im_start|>assistant\n"


# ---- the whole path on a tiny model

@pytest.fixture
def long_context_tiny(tmp_path, monkeypatch):
    """A tiny model with room for the tools: their declaration alone is ~1,900 characters, one token each, past
    the 512 positions of the tiny presets (the reason it is built here and not a preset's)."""
    monkeypatch.setitem(TINY_PRESETS, "tools-test", TinyPreset(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                                               num_key_value_heads=1, max_position_embeddings=4096))
    return load_model(str(build_tiny_model("tools-test", 0, tmp_path / "model")))


def test_the_env_template_model_and_parser_make_one_path(long_context_tiny):
    model, tok = long_context_tiny
    env = SweLiteEnv()
    try:
        obs = env.reset(0, SweLiteConfig(task="t1-002", actions="tool_calls"))
        messages = env.first_messages(obs)
        prompt = hf_chat_prompt(tok, messages)
        assert '{"name": "edit"' in tok.decode(prompt) and obs in tok.decode(prompt)
        (path, old, new), = env.task.fix
        # The model's output, forced: the token ids of the call an oracle would make, run through the model as the
        # trainer scores a response, and decoded as the inference server returns its text.
        reply = '<tool_call>\n' + json.dumps({"name": "edit", "arguments": {"path": path, "old_str": old, "new_str": new}}) + '\n</tool_call>'
        reply_ids = tok.encode(reply, add_special_tokens=False)
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([prompt + reply_ids])).logits
        assert logits.shape[1] == len(prompt) + len(reply_ids) and torch.isfinite(logits).all()
        decoded = tok.decode(reply_ids, skip_special_tokens=True)
        assert decoded == reply
        step = env.step(decoded)
        assert step.observation == f"Replaced 1 occurrence in {path}." and not step.info["invalid_action"]
        # The next turn: the observation, the call's result, continues the conversation as a tool message (the rollout's
        # observationRole), the tools still leading its history.
        history = [*messages, {"role": "assistant", "content": decoded}]
        continuation = tok.decode(hf_chat_continuation(tok, history, [{"role": "tool", "content": step.observation}]))
        assert continuation == f"\n<|user|>\n<tool_response>\n{step.observation}\n</tool_response>\n<|assistant|>"
        bad = env.step(tok.decode(tok.encode('<tool_call>{"name": "edit", "arguments": {"path": "x"}}</tool_call>', add_special_tokens=False)))
        assert bad.info["invalid_action"] and "edit is missing argument old_str, new_str" in bad.observation
        end = env.step('<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
        assert end.done and end.reward == 1.0
    finally:
        env.close()
