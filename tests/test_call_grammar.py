"""Decoding held to the environment's tools (agentworld_gym.llm.call_grammar): what a call may
say, that a model set on a wrong call still writes a real one, and that the redraw samples
the restricted distribution."""

from __future__ import annotations

import json
import math
import string
import sys
from pathlib import Path

import pytest

from agentworld_gym.llm.call_grammar import ConstrainedRows, Vocabulary, grammar_for
from agentworld_gym.llm.chat_format import parse_tool_calls

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "getFeed",
            "parameters": {
                "type": "object",
                "properties": {
                    "feedId": {"type": "string"},
                    "mode": {"type": "string", "enum": ["full", "short"]},
                    "limit": {"type": "integer"},
                    "filter": {"description": "any JSON"},
                },
                "required": ["feedId"],
            },
        },
    },
    {"type": "function", "function": {"name": "allFeeds", "parameters": {"type": "object"}}},
]

CALL = '<tool_call>\n{"name": "getFeed", "arguments": {%s}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('I will look. <tool_call>\n{"name": "allFeeds", "arguments": {}}\n</tool_call>', True),
        (CALL % '"feedId": "a\\"b", "limit": 5, "mode": "short"', True),
        (CALL % '"feedId": "x", "filter": [1, {"deep": null}]', True),  # values stay free
        ('<tool_call>{"arguments": {"feedId": "x"}, "name": "getFeed"}', True),
        ('<tool_call>\n{"name": "getFeeds", "arguments": {}}', False),  # no such tool
        ('<tool_call>\n{"name": "Feed"', False),
        ('<tool_call>\n{"tool": "getFeed"', False),  # the call's keys are name, arguments
        (CALL % "", False),  # the required feedId left out
        (CALL % '"feedID": "1"', False),  # another spelling of a key
        (CALL % '"feedId": "1", "feedId": "2"', False),  # a key twice
        (CALL % '"feedId": "1", "mode": "full", "limit": 2,', False),  # no key left
        (CALL % '"feedId": "1", "mode": "long"', False),  # not a member of the enum
        (CALL % '"feedId": 7', False),  # a number for a string
        (CALL % '"feedId": "7", "limit": "5"', False),  # a string for an integer
        (CALL % '"feedId": "7", "limit": 10000000000000000000000', False),  # runaway number
        (CALL % '"feedId": "7", "limit": -1.5e3', True),
        (CALL % '"feedId": "7", "limit": tru', False),  # not a literal
        ('<tool_call>\n{"name": "allFeeds", "arguments": {"x": 1}}', False),  # takes none
        ('<tool_call>\n{"name": "allFeeds", "arguments": 3}', False),
        ('<tool_call>\n{"name": "allFeeds", "arguments": "{}"}', False),
        ('<tool_call>\n{"name": "allFeeds", "arguments": {}} junk', False),  # run-on text
        ('<tool_call>\n{"name": "allFeeds"}\n</tool_call>', False),  # no arguments
        ('<tool_call>\n{"name": "allFeeds",, "arguments": {}}', False),  # not JSON
    ],
)
def test_a_call_names_a_real_tool_and_only_its_parameters(text: str, ok: bool) -> None:
    assert grammar_for(TOOLS).start().feed(text) is ok


def test_the_turn_may_end_only_outside_an_unfinished_call() -> None:
    state = grammar_for(TOOLS).start()
    assert state.feed("Let me check.") and state.may_end
    assert state.feed('<tool_call>\n{"name": "allFeeds", "arguments": {}') and not state.may_end
    assert state.feed("}") and not state.may_end
    assert state.feed("\n</tool_call>") and state.may_end


def _char_tokenizer(extra: list[str]):
    """Single characters plus a few longer pieces, decoding by plain concatenation."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
    chars = [c for c in string.printable if c not in "\x0b\x0c"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys([*specials, *extra, *chars]))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(specials)
    return PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<pad>", unk_token="<unk>"
    ), vocab


def test_a_model_set_on_a_wrong_call_still_writes_one_the_environment_runs() -> None:
    """The model's favourite text is a broken call (a made-up tool, another key's spelling,
    the end of the turn mid-call); each refused token is redrawn from what the grammar
    allows, and the turn becomes a call with a real tool and its required argument."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tokenizer, ids = _char_tokenizer(["<tool_call>", "get", "Feed", '"name"', '":'])
    vocab = Vocabulary(tokenizer)
    eos = ids["<|im_end|>"]
    rows = ConstrainedRows(vocab, eos, [TOOLS])
    wanted = '<tool_call>\n{"name": "Feed", "arguments": {"feedID": 7, "mode": "all"'
    generator = torch.Generator().manual_seed(0)
    noise = torch.Generator().manual_seed(1)
    text = ""
    for _ in range(400):
        logits = torch.rand(len(tokenizer), generator=noise)
        if len(text) < len(wanted):
            logits[ids[wanted[len(text)]]] = 10.0  # what the model would write
        else:
            logits[eos], logits[ids['"']], logits[ids["}"]] = 10.0, 9.0, 8.0
        token, _ = rows.fix(0, int(logits.argmax()), logits, 0.0, generator)
        if token == eos:
            break
        text += vocab.text[token]
    else:
        pytest.fail(f"the turn never ended: {text!r}")
    call = parse_tool_calls(text)["tool_calls"][0]["function"]
    arguments = json.loads(call["arguments"])
    assert call["name"] in {"getFeed", "allFeeds"}, text
    if call["name"] == "getFeed":
        assert "feedId" in arguments and set(arguments) <= {"feedId", "mode", "limit", "filter"}
        assert arguments.get("mode", "full") in {"full", "short"}, text
    else:
        assert arguments == {}, text
    assert rows.redrawn > 0


def test_a_redraw_samples_the_distribution_restricted_to_allowed_tokens() -> None:
    """Kept draws plus redraws give exactly p(t) / p(allowed): here two allowed next letters
    of the tool name with logits 1 and 0 under a refused favourite."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    tokenizer, ids = _char_tokenizer([])
    vocab = Vocabulary(tokenizer)
    tools = [{"type": "function", "function": {"name": n}} for n in ("ab", "ac")]
    logits = torch.full((len(tokenizer),), -30.0)
    logits[ids["x"]], logits[ids["b"]], logits[ids["c"]] = 2.0, 1.0, 0.0
    generator = torch.Generator().manual_seed(0)
    counts = {"b": 0, "c": 0}
    n = 4000
    for _ in range(n):
        rows = ConstrainedRows(vocab, ids["<|im_end|>"], [tools])
        rows.states[0].feed('<tool_call>{"name": "a')
        draw = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)[0])
        token, logprob = rows.fix(0, draw, logits, 1.0, generator)
        counts[vocab.text[token]] += 1
        if token != draw:
            expected = {"b": 1.0, "c": 0.0}[vocab.text[token]] - math.log(math.e + 1.0)
            assert logprob == pytest.approx(expected, abs=1e-5)
    share = counts["b"] / n
    assert share == pytest.approx(math.e / (math.e + 1.0), abs=0.025)  # 0.731; sd ~0.007


def test_constrained_generation_runs_in_the_batched_engine() -> None:
    """tools= through TransformersBackend.generate: rows held and free rows side by side,
    the same tokens on a rerun (the redraw uses the seeded generator)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from agentworld_gym.llm.transformers_backend import Sampling, TransformersBackend
    from algorithms.models import build_tiny

    tokenizer, ids = _char_tokenizer(["<tool_call>"])
    model, tokenizer = build_tiny(seed=0, tokenizer=tokenizer)

    class Head(torch.nn.Module):  # a model that often opens a call and otherwise babbles
        def forward(self, hidden):
            out = hidden.new_zeros((*hidden.shape[:-1], len(ids)))
            out[..., ids["<tool_call>"]] = 3.0
            return out

    model.lm_head = Head()
    backend = TransformersBackend(model, tokenizer)
    prompt = backend.chat_format.encode(
        "<|im_start|>user\nfeeds?<|im_end|>\n<|im_start|>assistant\n"
    )
    sampling = Sampling(max_new_tokens=60, temperature=1.0, seed=3)
    first = backend.generate([prompt, prompt], sampling, tools=[TOOLS, None])
    again = backend.generate([prompt, prompt], sampling, tools=[TOOLS, None])
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    for gen in first:
        assert len(gen.logprobs) == len(gen.token_ids)
    held = grammar_for(TOOLS).start()
    assert held.feed(first[0].text)  # the held row never left the grammar
    with pytest.raises(ValueError, match="tools has 1 entries for 2 prompts"):
        backend.generate([prompt, prompt], sampling, tools=[TOOLS])
    assert backend.constrains_calls  # what `agentworld llm serve` asks before passing tools
    assert not TransformersBackend(model, tokenizer, prefix_cache=False).constrains_calls
