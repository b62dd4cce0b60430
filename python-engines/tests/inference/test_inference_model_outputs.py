"""Model outputs as they come: token sequences whose bytes are not UTF-8, and garbage up to the
longest completion a server allows. Decoding never fails; each replaced byte run is counted."""
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from rollflow_engines.roles.inference.engine import hf_decode
from rollflow_engines.roles.inference.metrics import InferenceMetrics

from .helpers import serve

pytestmark = pytest.mark.anyio


def byte_level_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer whose token id is the byte itself (GPT-2's byte-to-character table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in printable}
    for b in (b for b in range(256) if b not in chars):
        chars[b] = chr(256 + len(chars) - len(printable))
    tokenizer = Tokenizer(models.BPE(vocab={c: b for b, c in chars.items()}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer)


def replaced(metrics: InferenceMetrics) -> float:
    return metrics.replacement_chars._value.get()


@pytest.mark.parametrize(("name", "token_ids", "text", "replacements"), [
    ("valid UTF-8", list("café ✓ 😀".encode()), "café ✓ 😀", 0),
    ("a character cut by max_tokens", list("caf".encode()) + [0xC3], "caf\ufffd", 1),
    ("a character cut at the start (a continuation after an abort)", [0xA9, *b"t\xc3\xa9"], "\ufffdté", 1),
    ("bytes never valid in UTF-8", [0xFF, 0xFE, 0x41], "\ufffd\ufffdA", 2),
    ("an overlong encoding of '/'", [0xC0, 0xAF], "\ufffd\ufffd", 2),
    ("a UTF-16 surrogate encoded as UTF-8", [0xED, 0xA0, 0x80], "\ufffd\ufffd\ufffd", 3),
    ("NUL and control bytes (valid UTF-8, kept)", [0x00, 0x07, 0x1B], "\x00\x07\x1b", 0),
    ("nothing", [], "", 0),
])
def test_bytes_that_are_not_utf8_decode_to_replacement_characters_and_are_counted(name, token_ids, text, replacements):
    metrics = InferenceMetrics()
    assert hf_decode(byte_level_tokenizer(), token_ids, metrics) == text, name
    assert replaced(metrics) == replacements, name
    if replacements:
        assert f"rollflow_inference_decode_replacement_chars_total {float(replacements)}" in metrics.render().decode()


async def test_garbage_at_the_longest_completion_decodes_and_serialises():
    # tiny:default has a 512-token context; every sample runs to it at temperature 2.
    async with serve("torch", max_n=4) as (client, engine):
        r = await client.post("/v1/completions", json={"prompt": [40], "max_tokens": 511, "n": 4, "temperature": 2.0,
                                                      "ignore_eos": True, "seed": 3})
        assert r.status_code == 200, r.text
        choices = r.json()["choices"]
        assert [len(c["token_ids"]) for c in choices] == [511] * 4
        assert all(c["text"] == engine.tokenizer.decode(c["token_ids"], skip_special_tokens=True) for c in choices)
        # The character-level tiny tokenizer has no partial characters to replace.
        assert "rollflow_inference_decode_replacement_chars_total 0.0" in (await client.get("/metrics")).text
