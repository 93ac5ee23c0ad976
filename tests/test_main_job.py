"""The main job's episode budgets fit the gold episodes of its catalog pool.

A gold tool call cut at ``max_new_tokens`` is a malformed call, and an episode with no turn
left for its answer fails however good the policy is: the default ``conf/train.yaml`` once
evaluated with 96 new tokens per turn while gold calls with identifiers took up to 115.
Measured with the embedded model's own tokenizer on the committed catalog.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch").set_num_threads(1)
pytest.importorskip("transformers")
pytest.importorskip("hydra")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from agentworld_gym.llm.chat_format import ChatFormat  # noqa: E402
from algorithms.pipeline import TrainConfig, budget_problems, register_configs  # noqa: E402
from algorithms.pool import TaskPool  # noqa: E402
from algorithms.sft import encode_gold, gold_budget  # noqa: E402

register_configs()


def _embedded_tokenizer():
    from transformers import AutoTokenizer

    from agentworld_gym.errors import ConfigError
    from agentworld_gym.llm import embedded

    converted = embedded.cache_root() / embedded.EMBEDDED_NAME
    if (converted / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(converted)
    try:
        gguf = embedded.gguf_path()
    except ConfigError as exc:
        pytest.skip(str(exc))
    pytest.importorskip("gguf")
    return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def test_train_config_budgets_fit_the_pools_gold_episodes():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg: TrainConfig = OmegaConf.to_object(compose(config_name="train"))
    pool = TaskPool(cfg.env_pool)
    try:
        fmt = ChatFormat(_embedded_tokenizer(), cfg.model.tool_format, cfg.model.chat_template)
        budget = gold_budget(encode_gold(fmt, pool, pool.config.train_split, 1 << 30))
    finally:
        pool.close()
    assert budget.examples >= 50 and budget.most_turns >= 2
    assert budget_problems(budget, cfg) == []
    # one token short of the longest gold turn is reported, for evaluation and for GRPO
    short = dataclasses.replace(cfg.eval, max_new_tokens=budget.longest_turn - 1)
    problems = budget_problems(budget, dataclasses.replace(cfg, eval=short))
    assert any("eval.max_new_tokens" in p for p in problems), problems
    rollout = dataclasses.replace(cfg.algo.rollout, max_turns=budget.most_turns - 1)
    algo = dataclasses.replace(cfg.algo, rollout=rollout)
    assert any(
        "algo.rollout.max_turns" in p
        for p in budget_problems(budget, dataclasses.replace(cfg, algo=algo))
    )


def test_lora_last_layers_puts_adapters_on_the_top_layers_only():
    from agentworld_gym.errors import ConfigError
    from algorithms.models import ModelConfig, load_policy

    policy = load_policy(ModelConfig(name="tiny", lora_last_layers=1, device="cpu"))
    trained = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trained and all(".layers.1." in n for n in trained)  # tiny has layers 0 and 1
    with pytest.raises(ConfigError, match="lora_last_layers must be in 1..2"):
        load_policy(ModelConfig(name="tiny", lora_last_layers=3, device="cpu"))


def test_demo_evaluates_held_out_sets_fully_and_caps_the_training_envs_set():
    from algorithms import heldout

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg: TrainConfig = OmegaConf.to_object(compose(config_name="train"))
    pool = TaskPool(cfg.env_pool)
    sets = heldout.eval_sets(pool, cfg.eval)
    try:
        caps = {s.name.split(" (")[0]: s.config.max_tasks for s in sets}
        assert caps == {
            "train-envs": cfg.eval.train_max_tasks,
            "held-out envs": cfg.eval.max_tasks,
            "held-out category": cfg.eval.max_tasks,
        }
        assert cfg.eval.max_tasks >= 50  # the bar: >= 50 episodes per held-out set
        held = {e for s in sets[1:] for e in s.pool.env_ids}
        assert held and not held & set(pool.env_ids)  # training never sees them
    finally:
        heldout.close_sets(sets)
        pool.close()


def test_the_call_grammar_keeps_every_token_of_the_pools_gold_turns():
    """Decoding held to the tools (on in rollouts and evaluation) must never push the policy
    off a gold path: every token of every gold assistant turn of the demo's training pool and
    held-out sets, with the embedded tokenizer, is one the grammar keeps as drawn."""
    from agentworld_gym.llm.call_grammar import ConstrainedRows, Vocabulary
    from algorithms.catalog_split import Part

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg: TrainConfig = OmegaConf.to_object(compose(config_name="train"))
    tokenizer = _embedded_tokenizer()
    fmt = ChatFormat(tokenizer, cfg.model.tool_format, cfg.model.chat_template)
    vocab = Vocabulary(tokenizer)
    checked = calls = 0
    for part in (Part.train, Part.heldout_envs):
        rule = dataclasses.replace(cfg.env_pool.rule, part=part)
        pool = TaskPool(dataclasses.replace(cfg.env_pool, rule=rule))
        try:
            tools = {}
            for task in pool.tasks("all"):
                if task.env_id not in tools:
                    env = pool.acquire(task.env_id, "all")
                    tools[task.env_id] = env.reset(options={"task_id": task.task_id})[1]["tools"]
                    pool.release(env, task.env_id, "all")
            for example in encode_gold(fmt, pool, "all", 1 << 30):
                for start, end in example.turns():
                    rows = ConstrainedRows(vocab, fmt.eos_token_id, [tools[example.env_id]])
                    for token in example.token_ids[start:end]:
                        kept, _ = rows.fix(0, token, None, 0.0, None)
                        assert kept == token and rows.states[0] is not None, (
                            example.task_id,
                            tokenizer.decode(example.token_ids[start:end]),
                        )
                    assert rows.redrawn == 0
                    checked += 1
                    calls += "<tool_call>" in tokenizer.decode(example.token_ids[start:end])
        finally:
            pool.close()
    assert checked >= 600 and calls >= 400, (checked, calls)  # 870 and 574 at this writing
