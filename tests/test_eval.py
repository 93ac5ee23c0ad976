"""``agentworld eval`` end to end against a fake OpenAI-compatible server playing gold solutions."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from agentworld_gym.cli import main  # noqa: E402
from agentworld_gym.integrations import GoldPolicy, Trajectory  # noqa: E402
from agentworld_gym.integrations.openai_eval import (  # noqa: E402
    evaluate,
    format_table,
    select_tasks,
    summarize,
)
from agentworld_gym.registry import load_spec  # noqa: E402


class GoldServer:
    """``POST /v1/chat/completions`` answered by the gold policy of the task in the chat.

    ``fail_first`` requests get a 500 first (the client must retry); model ``"wrong"`` answers
    every task with a wrong final answer straight away; ``"slow"`` takes 2.5 s per request.
    """

    def __init__(self, fail_first: int = 0) -> None:
        self.policy = GoldPolicy(load_spec("notion"))
        self.fail_left = fail_first
        self.requests = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests += 1
                    fail = server.fail_left > 0
                    server.fail_left -= int(fail)
                if fail or body["model"] == "broken":
                    self.send_error(500)
                    return
                if body["model"] == "slow":  # past the client's timeout
                    import time

                    time.sleep(2.5)
                assert body["tools"][-1]["function"]["name"] == "submit"
                if body["model"] == "wrong":
                    message = {"role": "assistant", "content": "No idea, sorry."}
                else:
                    message = server.policy(body["messages"], body["tools"])
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = json.dumps(
                    {
                        "id": "chatcmpl-gold",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def gold_server() -> Iterator[GoldServer]:
    server = GoldServer(fail_first=2)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_eval_cli_gold_model_scores_every_test_task(gold_server, tmp_path, capsys):
    out = tmp_path / "traj.jsonl"
    argv = ["eval", "--base-url", gold_server.url, "--model", "gold", "--envs", "notion"]
    argv += ["--split", "test", "--concurrency", "4", "--output", str(out), "-q"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(load_spec("notion").tasks_in("test")) == 12
    assert all(row["reward"] == 1.0 and row["success"] and row["error"] is None for row in lines)
    assert all(row["messages"][0]["role"] == "system" for row in lines)
    assert {row["category"] for row in lines} == {"L1-17 Document & Design"}
    table = printed.splitlines()
    assert table[0].split()[:4] == ["group", "name", "tasks", "success"]
    assert "AgentWorld/notion-v0" in printed and "100.0%" in printed
    all_row = next(line for line in table if line.startswith("all"))
    assert all_row.split()[2:4] == ["12", "100.0%"]
    # the two 500s were retried by the client: 12 episodes, no errors
    assert gold_server.requests > 12


def test_eval_wrong_answers_and_broken_server(gold_server, tmp_path, capsys):
    out = tmp_path / "wrong.jsonl"
    argv = ["eval", "--base-url", gold_server.url, "--model", "wrong", "--envs", "notion"]
    assert main(argv + ["--limit", "3", "--output", str(out), "-q"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and not any(r["success"] for r in rows)
    assert all(r["terminated"] and r["turns"] == 1 for r in rows)

    broken = tmp_path / "broken.jsonl"
    argv = ["eval", "--base-url", gold_server.url, "--model", "broken", "--envs", "notion"]
    assert main(argv + ["--limit", "2", "--retries", "0", "--output", str(broken), "-q"]) == 0
    rows = [json.loads(line) for line in broken.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [0.0, 0.0] and all(r["error"] for r in rows)
    assert "InternalServerError" in rows[0]["error"] or "500" in rows[0]["error"]


def test_evaluate_in_process_matches_task_order():
    refs = select_tasks(["notion"], split="train", limit=5)
    report = evaluate(refs, lambda env_id: GoldPolicy(load_spec(env_id)), concurrency=3)
    assert [t.task_id for t in report.trajectories] == [r.task_id for r in refs]
    assert report.rows[-1].success_rate == 1.0 and report.rows[-1].episodes == 5


def test_summarize_groups_by_env_and_category():
    def traj(env: str, category: str, reward: float) -> Trajectory:
        return Trajectory(env, "t", category=category, reward=reward, success=reward == 1.0)

    rows = summarize(
        [traj("A", "L1-x", 1.0), traj("A", "L1-x", 0.5), traj("B", "L1-y", 0.0)]
        + [Trajectory("B", "t2", category="L1-y", error="boom")]
    )
    by = {(r.group, r.name): r for r in rows}
    assert by[("env", "A")].success_rate == 0.5 and by[("env", "A")].mean_reward == 0.75
    assert by[("category", "L1-y")].errors == 1 and by[("category", "L1-y")].episodes == 2
    assert by[("all", "all")].episodes == 4 and by[("all", "all")].mean_reward == 0.375
    assert "L1-y" in format_table(rows)
    assert select_tasks(["notion"], "test", limit=1)[0].env_id == "AgentWorld/notion-v0"


def test_a_timed_out_server_gives_error_rows_and_the_run_finishes(gold_server, tmp_path, capsys):
    out = tmp_path / "slow.jsonl"
    argv = ["eval", "--base-url", gold_server.url, "--model", "slow", "--envs", "notion"]
    argv += ["--limit", "5", "--timeout", "1", "--retries", "0", "--concurrency", "5"]
    assert main(argv + ["--output", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 5 and all(r["error"].startswith("LLM request to") for r in rows)
    assert sum("Request timed out (timeout 1.0s" in r["error"] for r in rows) >= 3  # 2 are 500s
    assert not any(".." in r["error"] for r in rows)
    all_row = next(line for line in printed.splitlines() if line.startswith("all"))
    assert all_row.split()[-1] == "5"  # the errors column
    assert "5 episodes run (0 resumed, 5 errors)" in printed and "episodes/min" in printed


def test_resume_runs_only_the_missing_episodes(gold_server, tmp_path, capsys):
    out = tmp_path / "resume.jsonl"
    argv = ["eval", "--base-url", gold_server.url, "--model", "gold", "--envs", "notion"]
    argv += ["--limit", "4", "--output", str(out), "-q"]
    assert main(argv) == 0
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])  # killed while writing
    before = gold_server.requests
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.endswith("}")]
    assert len(rows) == 4
    assert sorted(r["task_id"] for r in rows) == sorted(json.loads(x)["task_id"] for x in lines)
    assert "2 episodes run (2 resumed, 0 errors)" in printed
    assert gold_server.requests > before
    all_row = next(line for line in printed.splitlines() if line.startswith("all"))
    assert all_row.split()[2:4] == ["4", "100.0%"]


def test_no_empty_file_is_left_when_nothing_finishes(tmp_path):
    out = tmp_path / "none.jsonl"
    report = evaluate([], lambda env_id: None, jsonl=out)
    assert report.trajectories == [] and not out.exists()


def test_ctrl_c_keeps_the_finished_episodes(tmp_path):
    spec = load_spec("notion")
    gold = GoldPolicy(spec)
    seen: set[str] = set()

    def policy(messages, tools):
        seen.add(messages[1]["content"])
        if len(seen) > 2:
            raise KeyboardInterrupt
        return gold(messages, tools)

    out = tmp_path / "stopped.jsonl"
    refs = select_tasks(["notion"], split="test", limit=5)
    report = evaluate(refs, lambda env_id: policy, concurrency=1, jsonl=out)
    assert report.interrupted and len(report.trajectories) == 2
    assert len(out.read_text().splitlines()) == 2
    assert report.rows[-1].episodes == 2
