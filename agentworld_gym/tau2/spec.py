"""A τ² domain described as an :class:`~agentworld_gym.spec.EnvSpec`, for the package's
registry and evaluation (task lists, splits, tool schemas); episodes run in
:class:`~agentworld_gym.tau2.env.Tau2Env`, never in ``AgentWorldEnv``."""

from __future__ import annotations

from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec
from agentworld_gym.tau2.checkout import Tau2Checkout

__all__ = ["build_spec"]


def build_spec(checkout: str, domain: str) -> EnvSpec:
    """The domain's tools (tau2's schemas) and tasks (``split``: ``test`` when tau2's
    ``test`` split holds the task, else ``train``)."""
    source = Tau2Checkout.open(checkout)
    dom = source.domain(domain)
    if dom.spec is not None:
        return dom.spec
    env = dom.new_environment()
    test = set(dom.splits.get("test", []))
    tools = []
    for tool in env.get_tools():
        fn = tool.openai_schema["function"]
        kind = env.tools.tool_type(tool.name).value
        tools.append(
            ToolSpec(
                name=fn["name"],
                description=fn["description"],
                parameters=fn["parameters"],
                implementation={"type": "tau2"},
                kind="write" if kind == "write" else "read",
            )
        )
    tasks = [
        TaskSpec(
            id=task.id,
            instruction=str(task.user_scenario),
            verifier={
                "type": "tau2",
                "reward_basis": [b.value for b in task.evaluation_criteria.reward_basis]
                if task.evaluation_criteria
                else [],
            },
            split="test" if task.id in test else "train",
            kind="tau2",
        )
        for task in dom.tasks
    ]
    dom.spec = EnvSpec(
        id=f"tau2-{domain}",
        name=f"τ²-bench {domain}",
        description=f"τ²-bench's {domain} domain ({source.path}), scored by tau2's evaluators.",
        tools=tools,
        taxonomy={"l1": "tau2-bench", "l2": domain, "l3": ""},
        provenance={"source": str(source.path), "license": "MIT"},
        runtime=RuntimeSpec(max_turns=50),
        tasks=tasks,
        records={},
    )
    return dom.spec
