"""BFCL V4 multi-turn environments: BFCL's own checker decides, through our episodes.

``benchmarks/bfcl_replay.py`` replays all 800 ground truths; here a seeded subset, the
wrong-policy comparison with BFCL's checker run directly, the miss_func / miss_param turns,
and the Gymnasium contract.
"""

from __future__ import annotations

import json
import random
import uuid

import gymnasium as gym
import pytest

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (  # noqa: E402
    multi_turn_checker,
)
from gymnasium.utils.env_checker import check_env  # noqa: E402

from agentworld_gym.benchmarks_ext.bfcl import CATEGORIES, env_id  # noqa: E402
from agentworld_gym.benchmarks_ext.bfcl.data import load_category  # noqa: E402
from agentworld_gym.benchmarks_ext.bfcl.env import episode_state  # noqa: E402
from agentworld_gym.benchmarks_ext.bfcl.replay import (  # noqa: E402
    KNOWN_EXCEPTIONS,
    MUTATIONS,
    TURN_DONE,
    bfcl_execution,
    gold_script,
    play,
    wrong_script,
)
from agentworld_gym.registry import list_envs, load_spec  # noqa: E402
from agentworld_gym.suites import get_suite  # noqa: E402

EXPECTED_ERRORS = {
    "multi_turn_base_173": "multi_turn:empty_turn_model_response",
    "multi_turn_miss_func_173": "multi_turn:empty_turn_model_response",
    "multi_turn_miss_param_173": "multi_turn:empty_turn_model_response",
    "multi_turn_long_context_173": "multi_turn:empty_turn_model_response",
    "multi_turn_miss_func_49": "multi_turn:execution_response_mismatch",
}
"""BFCL's verdict on the ground truth of each known data exception (see KNOWN_EXCEPTIONS)."""


def _env(category: str = "base"):
    return gym.make(env_id(category))


def _sample(category: str, n: int, seed: int) -> list:
    tasks = list(load_category(category).values())
    return random.Random(seed).sample(tasks, n)


def test_known_exceptions_are_documented():
    assert set(EXPECTED_ERRORS) == set(KNOWN_EXCEPTIONS)


def test_registered_lazily_held_out_and_as_suites():
    ids = {env_id(c) for c in CATEGORIES}
    assert ids <= set(gym.registry)
    assert not ids & {e.gym_id for e in list_envs()}  # never in a pool of "every env"
    spec = load_spec("bfcl-multi-turn-miss-func")
    assert len(spec.tasks) == 200 and {t.split for t in spec.tasks} == {"test"}
    suite = get_suite("bfcl-multi-turn")
    assert list(suite.envs.values()) == list(CATEGORIES) and suite.requires is None
    assert get_suite("bfcl-multi-turn-long-context").envs == {
        env_id("long_context"): "long_context"
    }


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_replay_scores_100_on_a_seeded_subset(category):
    env = _env(category)
    tasks = _sample(category, 12, seed=15)
    tasks += [load_category(category)[t] for t in KNOWN_EXCEPTIONS if category + "_" in t]
    for task in tasks:
        script = gold_script(task)
        played = play(env, task.id, script)
        if task.id in KNOWN_EXCEPTIONS:
            assert not played.success and played.refused
            assert played.verification["bfcl"]["error_type"] == EXPECTED_ERRORS[task.id]
            continue
        assert played.success, (task.id, played.verification)
        assert played.terminated and played.reward == 1.0 and not played.refused
        assert played.observations == bfcl_execution(task, script)  # what BFCL shows


def _bfcl_direct(task, script) -> bool:
    """BFCL's own evaluation of a model that made these calls, one step per turn: the
    responses decoded as BFCL's FC decoder does (``convert_to_function_call``), empty
    decodes dropped (``_evaluate_single_multi_turn_entry``), then ``multi_turn_checker``."""
    decoded = []
    for calls in script:
        response = [{c["name"]: json.dumps(c["arguments"])} for c in calls]
        step = []
        for item in response:
            for name, arguments in item.items():
                args = json.loads(arguments)
                step.append(f"{name}({','.join(f'{k}={repr(v)}' for k, v in args.items())})")
        decoded.append([step] if step else [])
    name = f"direct_{uuid.uuid4().hex}"
    try:
        result = multi_turn_checker(decoded, task.ground_truth, task.entry, "x", name)
    finally:
        for key in [k for k in vars(multi_turn_utils) if k.startswith(name)]:
            del vars(multi_turn_utils)[key]
    return bool(result["valid"])


def test_a_wrong_policy_scores_what_bfcl_scores_for_the_same_calls():
    outcomes = []
    for category in CATEGORIES:
        env = _env(category)
        for i, task in enumerate(_sample(category, 8, seed=4)):
            if task.id in KNOWN_EXCEPTIONS:
                continue
            script = wrong_script(gold_script(task), MUTATIONS[i % len(MUTATIONS)], seed=i)
            played = play(env, task.id, script)
            assert not played.refused
            outcomes.append((task.id, played.success, _bfcl_direct(task, script)))
    assert len(outcomes) >= 20
    assert [o[1] for o in outcomes] == [o[2] for o in outcomes], outcomes
    successes = sum(o[1] for o in outcomes)
    assert 0 < successes < len(outcomes)  # both verdicts occur


def test_miss_func_reveals_its_functions_at_the_held_out_turn():
    task = load_category("miss_func")["multi_turn_miss_func_0"]  # sort held out until turn 3
    env = _env("miss_func")
    _, info = env.reset(options={"task_id": task.id})
    names = [t["function"]["name"] for t in info["tools"]]
    assert "sort" not in names and "mv" in names
    turn_of = {}
    for k in range(3):
        obs, _, _, _, info = env.step({"name": "sort", "arguments": {"file_name": "x"}})
        assert info["tool_results"][0]["error"] == "unknown_tool"
        obs, _, terminated, _, info = env.step(TURN_DONE)
        turn_of[k] = obs
    assert info["user_turn"] == 3 and "I have updated some more functions" in obs
    assert [t["function"]["name"] for t in info["tools"]][-1] == "sort"
    obs, *_ = env.step({"name": "sort", "arguments": {"file_name": "final_report.pdf"}})
    assert "error" in json.loads(obs)  # it runs now (no such file in the root)
    assert json.loads(obs)["error"] != {"type": "unknown_tool"}


def test_miss_param_turn_asks_and_the_next_turn_gives_the_value():
    task = next(t for t in load_category("miss_param").values() if [] in t.ground_truth)
    empty = task.ground_truth.index([])
    script = gold_script(task)
    script[empty] = []  # the agent asks instead of calling: nothing to check at that turn
    played = play(_env("miss_param"), task.id, script)
    assert played.success


def test_step_contract_errors_leave_state_unchanged_and_never_raise():
    env = _env("base")
    task = load_category("base")["multi_turn_base_0"]
    env.reset(options={"task_id": task.id})
    before = episode_state(env)
    bad = [
        '<tool_call>{"name": "ls", "arguments": {</tool_call>',  # malformed
        {"name": "no_such_tool", "arguments": {}},
        {"name": "ls", "arguments": {"a": "yes"}},  # wrong type
        {"name": "cd", "arguments": {}},  # missing argument
        {"name": "cd", "arguments": {"folder": "x", "extra": 1}},
    ]
    codes = []
    for action in bad:
        _, reward, terminated, truncated, info = env.step(action)
        codes.append(info["tool_results"][0]["error"])
        assert not (terminated or truncated) and reward == 0.0
        assert episode_state(env) == before
    assert codes == [
        "malformed_action",
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
        "invalid_arguments",
    ]
    unknown = next(m for m in env.unwrapped.messages if m.get("name") == "no_such_tool")
    assert "Unknown tool 'no_such_tool'" in unknown["content"]


def test_a_raising_tool_is_an_error_observation_and_is_rolled_back(monkeypatch):
    env = _env("base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    fs = env.unwrapped.episode.instances["GorillaFileSystem"]

    def broken(folder):
        fs._current_dir = None  # private: BFCL does not compare it
        fs.long_context = "changed"  # public state changed, then a crash
        raise RuntimeError("boom")

    monkeypatch.setattr(fs, "cd", broken)
    before = episode_state(env)
    obs, reward, terminated, _, info = env.step({"name": "cd", "arguments": {"folder": "a"}})
    assert info["tool_results"] == [{"name": "cd", "ok": False, "error": "tool_execution_error"}]
    assert "Error during execution: boom" in obs
    assert episode_state(env) == before and not terminated
    assert env.unwrapped.episode.decoded() == [[]]  # kept from BFCL's checker


def test_step_limit_per_turn_ends_the_episode_as_bfcl_force_quits():
    env = _env("base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    for _ in range(20):
        *_, terminated, truncated, info = env.step({"name": "pwd", "arguments": {}})
        assert not (terminated or truncated)
    _, reward, terminated, truncated, info = env.step({"name": "pwd", "arguments": {}})
    assert truncated and not terminated and reward == 0.0
    assert info["verification"]["bfcl"]["error_type"] == "multi_turn:force_terminated"


def test_resets_are_seeded_fresh_and_leave_no_checker_state():
    env = _env("long_context")
    first = env.reset(seed=7)
    task = load_category("long_context")[first[1]["task_id"]]
    played = play(env, task.id, gold_script(task))
    assert played.success
    again = env.reset(seed=7)
    assert again[0] == first[0] and again[1]["task_id"] == first[1]["task_id"]
    fresh = _env("long_context")
    fresh.reset(seed=7)
    assert episode_state(env) == episode_state(fresh)  # the played episode left nothing
    assert not [k for k in vars(multi_turn_utils) if k.startswith("agentworld_")]


def test_check_env_passes():
    env = _env("miss_func").unwrapped
    check_env(env, skip_render_check=True)


def test_eval_suite_cli_prints_per_category_table(tmp_path, capsys):
    pytest.importorskip("openai")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from agentworld_gym.benchmarks_ext.bfcl.replay import BFCLGoldPolicy
    from agentworld_gym.cli import main

    policy = BFCLGoldPolicy("miss_param")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body["model"] == "slow" and len(body["messages"]) > 3:
                import time

                time.sleep(1.5)
            message = policy(body["messages"], body["tools"])
            payload = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        argv = ["eval", "--base-url", url, "--suite", "bfcl-multi-turn-miss-param", "-q"]
        argv += ["--limit", "3", "--output", str(tmp_path / "a.jsonl")]
        assert main([*argv, "--model", "gold"]) == 0
        printed = capsys.readouterr().out
        assert "suite bfcl-multi-turn-miss-param" in printed
        row = next(line for line in printed.splitlines() if line.startswith("miss_param"))
        assert row.split()[1:3] == ["3", "100.0%"] and "[" in row
        argv[argv.index("--output") + 1] = str(tmp_path / "b.jsonl")
        slow = [*argv, "--model", "slow", "--timeout", "1", "--retries", "0"]
        assert main(slow) == 0  # timed-out requests are error rows, not an aborted run
        printed = capsys.readouterr().out
        row = next(line for line in printed.splitlines() if line.startswith("miss_param"))
        assert row.split()[1:3] == ["3", "0.0%"] and row.split()[-1] == "3"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_suite_is_the_held_out_pool_of_training_evaluation():
    pytest.importorskip("torch")
    from agentworld_gym.benchmarks_ext.bfcl.replay import BFCLGoldPolicy
    from algorithms.evaluate import EvalConfig, evaluate

    class Backend:  # a chat backend that plays the ground truth
        policy = BFCLGoldPolicy("base")

        def chat(self, messages, tools=None, **sampling):
            return self.policy(messages, tools)

    config = EvalConfig(suite="bfcl-multi-turn-base", max_tasks=4, max_turns=60, batch_size=2)
    result, trajs = evaluate(Backend(), None, config)  # type: ignore[arg-type]
    assert result.episodes == 4 and result.success == 1.0
    assert set(result.per_category) == {"base"}
    assert result.per_category["base"]["success_ci95_low"] > 0.4


def test_replay_script_runs_in_a_tiny_mode():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    argv = [sys.executable, "benchmarks/bfcl_replay.py", "--limit", "2", "--wrong"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    total = next(line for line in proc.stdout.splitlines() if line.startswith("all"))
    assert total.split()[1:3] == ["8", "8"] and total.split()[5] == total.split()[7] == "40"
