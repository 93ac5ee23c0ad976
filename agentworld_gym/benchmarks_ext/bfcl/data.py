"""BFCL's multi-turn data as an :class:`~agentworld_gym.spec.EnvSpec`.

Everything is read from the installed ``bfcl-eval`` package, prepared the way BFCL's own
inference prepares it (``bfcl_eval.utils.populate_test_cases_with_predefined_functions``
and ``add_language_specific_hint_to_function_doc``, the OpenAI function-calling conversion
of ``bfcl_eval.model_handler.utils.convert_to_tool``): those modules pull in BFCL's heavy
dependencies, so the few lines that matter are ported here and tested against the data.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import importlib.util
import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bfcl_eval.constants.default_prompts import (
    DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
    MAXIMUM_STEP_LIMIT,
)
from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
)
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

from agentworld_gym.benchmarks_ext.bfcl import BFCL_VERSION, CATEGORIES, slug
from agentworld_gym.errors import ConfigError
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec

CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)
"""The API classes the multi-turn categories use (BFCL's memory/web-search ones are not)."""

PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
"""What BFCL appends to each function description it lists at the start of a task."""

SYSTEM_PROMPT = (
    "You are an agent that fulfils a user's requests with the functions you are given. The "
    "user may send several requests, one after another. For each request, call the functions "
    "it needs (read their results, and call more if needed). When you have done all you can "
    "for the current request, or need information only the user has, reply in plain text "
    "without calling a function: that ends your turn, and the user's next message follows."
)


@dataclass(frozen=True)
class BFCLTask:
    """One BFCL multi-turn test entry with its ground truth."""

    entry: dict[str, Any]
    """BFCL's test entry as in its data file (``missed_function`` holds names)."""
    ground_truth: list[list[str]]
    """Per user turn, the ground-truth calls as BFCL writes them (``cd(folder='x')``)."""
    category: str

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def long_context(self) -> bool:
        """BFCL loads ``long_context`` (and ``composite``) scenarios with extra filler."""
        return "long_context" in self.id or "composite" in self.id


def data_root() -> Path:
    """The ``data`` folder of the installed ``bfcl_eval`` package."""
    found = importlib.util.find_spec("bfcl_eval")
    if found is None or found.origin is None:
        raise ConfigError(
            f"bfcl-eval is not installed: pip install --no-deps bfcl-eval=={BFCL_VERSION}"
        )
    return Path(found.origin).parent / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@functools.cache
def load_category(category: str) -> dict[str, BFCLTask]:
    """The category's tasks by id, in the data file's order."""
    if category not in CATEGORIES:
        raise ConfigError(f"unknown BFCL multi-turn category {category!r}; known: {CATEGORIES}")
    root = data_root()
    name = f"BFCL_v4_multi_turn_{category}.json"
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(root / "possible_answer" / name)}
    return {e["id"]: BFCLTask(e, answers[e["id"]], category) for e in _jsonl(root / name)}


@functools.cache
def _docs(class_name: str) -> tuple[dict[str, Any], ...]:
    return tuple(
        _jsonl(data_root() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name])
    )


def function_docs(class_name: str) -> list[dict[str, Any]]:
    """BFCL's function docs of one API class (fresh copies)."""
    return copy.deepcopy(list(_docs(class_name)))


def _cast_to_openai_type(properties: dict[str, Any]) -> dict[str, Any]:
    """Port of ``bfcl_eval.model_handler.utils._cast_to_openai_type`` (GORILLA_TO_OPENAPI)."""
    mapping = GORILLA_TO_OPENAPI
    for value in properties.values():
        if "type" not in value:
            value["type"] = "string"
        else:
            var_type = value["type"]
            if var_type == "float":
                value["format"] = "float"
                value["description"] += " This is a float type value."
            value["type"] = mapping.get(var_type, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_to_openai_type(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = mapping[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = mapping[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_to_openai_type(items["properties"])
    return properties


def openai_tool(doc: dict[str, Any], hint: bool = True) -> dict[str, Any]:
    """An OpenAI function schema from a BFCL function doc, as BFCL's OpenAI handler sends
    it (``hint``: with the Python-syntax note BFCL adds to the functions listed at start)."""
    doc = copy.deepcopy(doc)
    parameters = doc["parameters"]
    parameters["type"] = "object"
    parameters["properties"] = _cast_to_openai_type(parameters.get("properties", {}))
    description = doc["description"] + (PYTHON_HINT if hint else "")
    return {
        "type": "function",
        "function": {"name": doc["name"], "description": description, "parameters": parameters},
    }


def task_tools(task: BFCLTask) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """The tools listed at the start, and those revealed at later turns (``miss_func``).

    As BFCL does: the docs of the involved classes in order; each held-out function's doc is
    taken out of the list (its first match) and appended when its turn comes, without the
    Python-syntax note (BFCL adds it only to the docs still listed).
    """
    docs = [d for c in task.entry["involved_classes"] for d in function_docs(c)]
    reveals: dict[int, list[dict[str, Any]]] = {}
    for turn, names in task.entry.get("missed_function", {}).items():
        for name in names:
            for i, doc in enumerate(docs):
                if doc["name"] == name:
                    reveals.setdefault(int(turn), []).append(openai_tool(docs.pop(i), hint=False))
                    break
    return [openai_tool(d) for d in docs], reveals


def _turn_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in messages)


def to_task_spec(task: BFCLTask) -> TaskSpec:
    """A TaskSpec: the first user message, one follow-up per later turn (a held-out turn of
    ``miss_func`` says BFCL's "I have updated some more functions ..." and reveals its
    functions), the ground truth as gold, a turn budget BFCL's per-turn step limit binds."""
    question = task.entry["question"]
    missed = task.entry.get("missed_function", {})
    turns = []
    for k, messages in enumerate(question[1:], start=1):
        if str(k) in missed:
            turns.append(
                {
                    "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
                    "reveal": missed[str(k)],
                }
            )
        else:
            turns.append({"content": _turn_text(messages)})
    return TaskSpec(
        id=task.id,
        instruction=_turn_text(question[0]),
        verifier={"type": "bfcl", "category": task.category},
        split="test",
        kind="bfcl",
        gold={"type": "bfcl_ground_truth", "turns": task.ground_truth},
        difficulty={
            "max_turns": len(question) * (MAXIMUM_STEP_LIMIT + 2),
            "user_turns": len(question),
        },
        provenance={
            "source": f"bfcl-eval=={BFCL_VERSION}",
            "benchmark": "BFCL V4 multi-turn",
            "category": task.category,
            "involved_classes": list(task.entry["involved_classes"]),
            "missed_function": dict(missed),
        },
        turns=turns,
    )


def build_spec(category: str) -> EnvSpec:
    """The EnvSpec of one category: every function of the eight classes as a tool (an
    episode lists only its task's), no database (the state is BFCL's class instances)."""
    from agentworld_gym.benchmarks_ext.bfcl import env  # noqa: F401  (the "bfcl" tool runtime)

    tools = []
    for class_name in CLASSES:
        for doc in function_docs(class_name):
            schema = openai_tool(doc)["function"]
            tools.append(
                ToolSpec(
                    name=schema["name"],
                    description=schema["description"],
                    parameters=schema["parameters"],
                    implementation={"type": "bfcl", "class": class_name},
                    kind="write",
                )
            )
    tasks = [to_task_spec(t) for t in load_category(category).values()]
    return EnvSpec(
        id=slug(category),
        name=f"BFCL V4 multi-turn ({category})",
        description=(
            f"The Berkeley Function Calling Leaderboard's multi-turn {category} category "
            f"(bfcl-eval {BFCL_VERSION}): stateful file system, messaging, posting, ticketing, "
            "trading, travel, vehicle and math APIs, several user turns per task, scored by "
            "BFCL's own multi-turn checker."
        ),
        tools=tools,
        version=0,
        taxonomy={"l1": "BFCL multi-turn", "l2": category, "l3": ""},
        provenance={"source": f"bfcl-eval=={BFCL_VERSION}", "license": "Apache-2.0"},
        runtime=RuntimeSpec(max_turns=5 * (MAXIMUM_STEP_LIMIT + 2), system_prompt=SYSTEM_PROMPT),
        tasks=tasks,
        records={},
    )


# -- calls as BFCL writes them --------------------------------------------------------------
def call_text(name: str, arguments: dict[str, Any]) -> str:
    """A call as BFCL's decoder writes it (``convert_to_function_call``): ``f(a=1,b='x')``."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


@functools.cache
def _signature(class_name: str, method: str) -> inspect.Signature:
    module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
    return inspect.signature(getattr(getattr(module, class_name), method))


def parse_call(text: str, classes: list[str]) -> dict[str, Any]:
    """A ground-truth call string as ``{"name", "arguments"}``, positional arguments named
    from the method's signature (``sort('a.txt')`` → ``{"file_name": "a.txt"}``)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a function call: {text!r}")
    name = node.func.id
    arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    if node.args:
        owner = next(
            (c for c in classes if name in {d["name"] for d in _docs(c)}),
            None,
        )
        if owner is None:
            raise ValueError(f"{name!r} is not a function of {classes}")
        params = [p for p in _signature(owner, name).parameters if p != "self"]
        for param, value in zip(params, node.args, strict=False):
            arguments[param] = ast.literal_eval(value)
    return {"name": name, "arguments": arguments}
