"""Multi-turn GRPO for tool-using LLM agents.

Read in this order: :mod:`.objective` (the math, pure functions), :mod:`.rollout` (episodes
through the Gymnasium API, token bookkeeping), :mod:`.logprobs` (log-probabilities of the
policy's own tokens), :mod:`.trainer` (the loop: rollout → advantages → loss → step → log).
"""
