"""Parallel rollouts on local Ray actors (2 CPUs)."""

from __future__ import annotations

import os
import threading

import pytest

ray = pytest.importorskip("ray")

from agentworld_gym.integrations import GoldPolicy, TaskRef  # noqa: E402
from agentworld_gym.integrations.ray_rollout import RayRolloutPool  # noqa: E402
from agentworld_gym.llm import LLMConfig  # noqa: E402
from agentworld_gym.registry import load_spec  # noqa: E402


@pytest.fixture(scope="module")
def pool():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    with RayRolloutPool(["notion"], num_workers=2) as pool:
        yield pool
    ray.shutdown()


def test_gold_policy_on_two_workers(pool):
    spec = load_spec("notion")
    refs = [TaskRef(spec.gym_id, t.id) for t in spec.tasks_in("test")]
    trajectories = pool.run(GoldPolicy(spec), refs + [(spec.gym_id, "notion-r01", 3)])
    assert [t.task_id for t in trajectories] == [r.task_id for r in refs] + ["notion-r01"]
    assert all(t.success and t.reward == 1.0 for t in trajectories)
    pids = ray.get([w.ping.remote() for w in pool._workers])
    assert len(set(pids)) == 2 and os.getpid() not in pids


def test_llm_config_policy_and_errors(pool):
    from test_eval import GoldServer

    server = GoldServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        config = LLMConfig(model="gold", base_url=server.url, temperature=0.0)
        refs = [("AgentWorld/notion-v0", task) for task in ("notion-r01", "notion-r02")] * 2
        trajectories = pool.run(config, refs)
        assert [t.reward for t in trajectories] == [1.0] * 4
        broken = LLMConfig(model="broken", base_url=server.url, max_retries=0)
        failed = pool.run(broken, refs[:2], retries=1)
        assert all(t.error and t.reward == 0.0 and t.attempts == 2 for t in failed)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
