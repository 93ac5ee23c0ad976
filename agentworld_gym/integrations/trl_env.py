"""TRL: any AgentWorld environment as ``GRPOTrainer(..., environment_factory=...)``.

TRL 1.16's contract (``trl/trainer/grpo_trainer.py``): the factory is called with no argument
and returns one environment instance per concurrent rollout (instances are pooled and reused);
``reset(**row)`` receives the dataset row's columns and may return text appended to the last
user message; every public method other than ``reset`` and ``get_reward`` is a tool, described
to the model from its signature and Google-style docstring (``transformers.get_json_schema``)
and called with the model's arguments as keywords; a method that raises becomes
``{"error": ...}``; ``get_reward()`` (no argument) scores the finished rollout.

:func:`environment_class` builds such a class from an environment's tool schemas: one method
per tool, named as the tool (``API-get-user`` stays ``API-get-user`` for the model; the Python
attribute is ``API_get_user``), with type hints and a docstring generated from the JSON Schema
(nested schemas are spelled out in the argument's description, since type hints cannot carry
them). The call goes through ``env.step``, so validation, errors and the verifier are exactly
those of the Gymnasium environment.

**Final answers.** TRL does not pass the model's closing text to ``get_reward``, so answers go
through the ``submit`` tool, which every class has (the system prompt in :func:`make_dataset`
says so). Without a ``submit`` call, ``get_reward`` judges the state reached with an empty
answer, as the Gymnasium environment does at the turn budget.

**Models whose template has no tool support** (the embedded SmolLM2's ChatML):
:func:`tool_calling_tokenizer` gives the tokenizer a ChatML + Hermes template that renders
exactly what our own GRPO trains on (``agentworld_gym.llm.chat_format``) and TRL's Hermes
response parser; :func:`embedded_model` loads the embedded model with it.

>>> cls = environment_class("AgentWorld/notion-v0")
>>> env = cls()
>>> env.reset(task_id="notion-r01") is None
True
>>> "results" in env.API_post_search(query="Tasks")
True
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any, ClassVar, Literal

import orjson

from agentworld_gym.actions import SUBMIT_SCHEMA, SUBMIT_TOOL
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import load_spec
from agentworld_gym.spec import EnvSpec, ToolSpec

SUBMIT_HINT = (
    " Give that final answer by calling the submit tool: only a submitted answer is scored."
)
_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool}


class AgentWorldToolEnv:
    """Base of the generated classes: one AgentWorld episode per instance, reused across rollouts.

    Subclasses set ``spec``, ``split`` and ``max_turns`` and get one method per tool from
    :func:`environment_class`. Public methods are tools for TRL, so helpers here are private.
    """

    spec: ClassVar[EnvSpec]
    split: ClassVar[str] = "train"
    max_turns: ClassVar[int | None] = None

    def __init__(self) -> None:
        self._env = AgentWorldEnv(self.spec, split=self.split, max_turns=self.max_turns)
        self._reward: float | None = None
        """Set when the episode ends (``submit`` or the turn budget)."""
        self._started = False

    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> str | None:
        """Start the episode of ``task_id`` (a dataset column) or one drawn with ``seed``.

        Returns ``None`` when the row names its task (its prompt already holds the
        instruction, see :func:`make_dataset`), else the drawn task's instruction, which TRL
        appends to the prompt.
        """
        options = {"task_id": task_id} if task_id else None
        instruction, _ = self._env.reset(seed=seed, options=options)
        self._reward = None
        self._started = True
        return None if task_id else instruction

    def get_reward(self) -> float:
        """The verifier's reward: of the submitted answer, else of the state reached."""
        if self._reward is not None:
            return self._reward
        return self._env.verify("").reward if self._started else 0.0

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._started:
            raise RuntimeError("reset() must be called before the tools")
        if self._reward is not None:
            return orjson.dumps(
                {"error": {"type": "episode_over", "message": "The episode has ended."}}
            ).decode()
        obs, reward, terminated, truncated, _ = self._env.step(
            {"name": name, "arguments": arguments}
        )
        if terminated or truncated:
            self._reward = float(reward)
        return obs

    @property
    def _messages(self) -> list[dict[str, Any]]:
        return self._env.messages


def _python_name(name: str, taken: set[str]) -> str:
    py = re.sub(r"\W", "_", name)
    if not py or py[0].isdigit():
        py = f"p_{py}"
    if keyword.iskeyword(py) or py == "self":
        py += "_"
    while py in taken:
        py += "_"
    taken.add(py)
    return py


def _hint(schema: Any) -> Any:
    """A type hint that ``transformers.get_json_schema`` turns back into (most of) ``schema``."""
    if not isinstance(schema, dict):
        return Any
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int | float) for v in enum):
        return Literal[tuple(enum)]
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        item = _hint(schema.get("items"))
        return list[item] if item is not Any else list
    if kind == "object" or "properties" in schema:
        return dict
    return Any


def _complex(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if any(k in schema for k in ("oneOf", "anyOf", "allOf", "properties")):
        return True
    items = schema.get("items")
    return isinstance(items, dict) and _complex(items) or _hint(items) is dict


def _one_line(text: str) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return re.sub(r"\b(Args|Returns|Raises):", r"\1 :", text)  # would end the description


def _docstring(description: str, params: list[tuple[str, str, dict[str, Any]]]) -> str:
    lines = [_one_line(description) or "(no description)", ""]
    if params:
        lines.append("Args:")
        for py, json_name, schema in params:
            text = _one_line(schema.get("description", "")) or json_name
            if json_name != py:
                text += f" (JSON name: {json_name})"
            if _complex(schema):
                text += " JSON Schema: " + orjson.dumps(_without_descriptions(schema)).decode()
            lines.append(f"    {py}: {text}")
        lines.append("")
    lines += ["Returns:", "    The tool's JSON result, or an error object to recover from."]
    return "\n".join(lines)


def _without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_without_descriptions(v) for v in schema]
    return schema


def _tool_method(tool: ToolSpec) -> tuple[str, Any]:
    """``(python attribute, function)`` of one tool: signature, hints, docstring from the schema."""
    parameters = tool.parameters or {}
    properties: dict[str, Any] = parameters.get("properties", {}) or {}
    required = set(parameters.get("required", []))
    taken: set[str] = set()
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    documented = []
    to_json: dict[str, str] = {}
    for json_name, schema in properties.items():
        py = _python_name(json_name, taken)
        hint = _hint(schema)
        optional = json_name not in required
        annotations[py] = hint | None if optional and hint is not Any else hint
        default = None if optional else inspect.Parameter.empty
        signature.append(
            inspect.Parameter(
                py, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[py]
            )
        )
        documented.append((py, json_name, schema if isinstance(schema, dict) else {}))
        to_json[py] = json_name
    name = tool.name

    def method(self: AgentWorldToolEnv, **kwargs: Any) -> str:
        arguments = {to_json.get(k, k): v for k, v in kwargs.items() if v is not None}
        return self._call(name, arguments)

    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = _docstring(tool.description, documented)
    method.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**annotations, "return": str}
    return _python_name(name, set()), method


def _submit_tool() -> ToolSpec:
    fn = SUBMIT_SCHEMA["function"]
    return ToolSpec(SUBMIT_TOOL, fn["description"], fn["parameters"], {"type": "builtin"})


def environment_class(
    env: str | EnvSpec, *, split: str = "train", max_turns: int | None = None
) -> type[AgentWorldToolEnv]:
    """A class to pass as ``environment_factory``: one instance per rollout, tools as methods.

    Args:
        env: a registered environment (``"notion"``, ``"AgentWorld/notion-v0"``) or an EnvSpec.
        split: tasks drawn when a row names no ``task_id``.
        max_turns: turn budget of an episode (default: the environment's own).
    """
    spec = env if isinstance(env, EnvSpec) else load_spec(env)
    namespace: dict[str, Any] = {
        "spec": spec,
        "split": split,
        "max_turns": max_turns,
        "__doc__": f"{spec.name}: {_one_line(spec.description)}",
        "__module__": __name__,
    }
    taken = set(dir(AgentWorldToolEnv))
    for tool in [*spec.tools, _submit_tool()]:
        attribute, method = _tool_method(tool)
        while attribute in taken:
            attribute += "_"
        taken.add(attribute)
        namespace[attribute] = method
    class_name = re.sub(r"\W", "", spec.name.title()) or "AgentWorld"
    return type(f"{class_name}Env", (AgentWorldToolEnv,), namespace)


def environment_factories(
    envs: list[str], *, max_turns: int | None = None
) -> dict[str, type[AgentWorldToolEnv]]:
    """``{name: class}`` for a multi-environment run (rows carry an ``environment`` column)."""
    return {name: environment_class(name, max_turns=max_turns) for name in envs}


def dataset_rows(
    envs: list[str], split: str = "train", *, multi: bool | None = None
) -> list[dict[str, Any]]:
    """One row per task: ``prompt`` (system + user messages), ``task_id`` (and ``environment``).

    Args:
        envs: environment names, as for :func:`environment_factories`.
        split: ``train``, ``test`` or ``all``.
        multi: add the ``environment`` column TRL needs with a dict of factories (default:
            when more than one environment is given).
    """
    multi = len(envs) > 1 if multi is None else multi
    rows = []
    for name in envs:
        spec = load_spec(name)
        probe = AgentWorldEnv(spec, split="all")
        for task in spec.tasks_in(split):
            probe.reset(options={"task_id": task.id})
            system = probe.messages[0]["content"] + SUBMIT_HINT
            row = {
                "prompt": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": task.instruction},
                ],
                "task_id": task.id,
            }
            if multi:
                row["environment"] = name
            rows.append(row)
    return rows


def make_dataset(envs: list[str], split: str = "train", *, multi: bool | None = None) -> Any:
    """:func:`dataset_rows` as a ``datasets.Dataset`` (what ``GRPOTrainer`` takes)."""
    from datasets import Dataset

    return Dataset.from_list(dataset_rows(envs, split, multi=multi))


CHATML_HERMES = "chat/chatml_hermes.j2"
"""The ChatML + Hermes tool-calling template (under ``agentworld_gym/prompts``)."""


def chatml_hermes_template() -> str:
    """The text of :data:`CHATML_HERMES`."""
    from importlib.resources import files

    return (files("agentworld_gym.prompts") / CHATML_HERMES).read_text(encoding="utf-8")


def tool_calling_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` ready for ``GRPOTrainer(..., environment_factory=...)``: its own chat
    template when that renders tool calls, else ChatML + Hermes with TRL's Hermes response
    parser (the same text our GRPO renders for such a model)."""
    from trl.chat_template_utils import supports_tool_calling

    if getattr(tokenizer, "chat_template", None) and supports_tool_calling(tokenizer):
        return tokenizer
    from trl import chat_template_utils as ctu

    tokenizer.chat_template = chatml_hermes_template()
    if getattr(ctu, "_SUPPORTS_RESPONSE_TEMPLATE", False):
        tokenizer.response_template = ctu.qwen3_template  # Hermes <tool_call> JSON blocks
    else:
        tokenizer.response_schema = ctu.qwen3_schema
    return tokenizer


def embedded_model(dtype: str = "auto") -> tuple[Any, Any]:
    """The embedded SmolLM2-135M and its tokenizer, ready for TRL's GRPO with tools."""
    from agentworld_gym.llm.embedded import load_embedded

    model, tokenizer = load_embedded(dtype)
    return model, tool_calling_tokenizer(tokenizer)
