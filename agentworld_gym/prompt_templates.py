"""The package's jinja2 prompt templates (``agentworld_gym/prompts/<family>/*.j2``).

One environment per family, shared by every caller: strict undefined variables (a template that
names a missing value fails loudly instead of sending the model a blank), no HTML escaping,
block-friendly whitespace, and a ``json`` filter for values quoted into prompts.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jinja2

PROMPTS = Path(__file__).resolve().parent / "prompts"


@functools.cache
def prompt_environment(family: str) -> jinja2.Environment:
    """The templates of ``prompts/<family>/`` (e.g. ``llm_env``, ``llm_programs``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS / family)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env
