"""tau2-bench's own prompt texts, as its agent, orchestrator and user simulator use them.

Copied rather than imported: the modules that hold them import tau2's LLM client at import
time. (The NL-assertion judge's prompt is read from the checkout instead:
:meth:`~agentworld_gym.tau2.checkout.Tau2Checkout.nl_assertion_prompt`.)
"""

from __future__ import annotations

__all__ = ["AGENT_INSTRUCTION", "AGENT_SYSTEM_PROMPT", "GREETING", "USER_SYSTEM_PROMPT"]

GREETING = "Hi! How can I help you today?"
"""tau2's first agent message (``orchestrator.DEFAULT_FIRST_AGENT_MESSAGE``)."""

AGENT_INSTRUCTION = """
You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.
""".strip()
"""tau2's ``agent.llm_agent.AGENT_INSTRUCTION`` (that module imports tau2's LLM client)."""

AGENT_SYSTEM_PROMPT = """
<instructions>
{agent_instruction}
</instructions>
<policy>
{domain_policy}
</policy>
""".strip()
"""tau2's ``agent.llm_agent.SYSTEM_PROMPT``."""

USER_SYSTEM_PROMPT = """
{global_user_sim_guidelines_with_persona}

<scenario>
{instructions}
</scenario>
""".strip()
"""tau2's ``user.user_simulator.SYSTEM_PROMPT``."""
