"""Training algorithms for agentworld-gym agents: multi-turn GRPO with an SFT warm start.

Everything here talks to environments through the Gymnasium API and the public package API
(``gymnasium.make``, ``agentworld_gym.load_spec``, ``agentworld_gym.replay.gold_trajectory``),
so another trainer can do what this one does. Importing this package imports no torch; the
modules that need it import it themselves.
"""
