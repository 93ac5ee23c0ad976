"""Fuzz ``AgentWorldEnv.step`` with what LLMs and fuzzers send, and count what must not happen.

    python benchmarks/fuzz_step.py [--actions 100000] [--envs 110] [--seed 0] [--workers 2]

Each action comes from one of the generators below (the causes of issue 14 and their
relatives): lone surrogates in answers, written values and keys; JSON nested hundreds or
thousands deep; integers past 64 bits, NaN and Infinity; sets, bytes, tuples, self-referencing
lists, objects whose ``repr`` fails; OpenAI messages with odd ``content``; non-string keys;
wrong types for every argument of real tools; unknown tools; Hermes ``<tool_call>`` text with
broken JSON; dozens to hundreds of calls in one action; plausible valid calls (with ids taken
from the database, so writes succeed and surrogate-laden values reach the state before a final
answer is verified). Environments: ``notion``, a seeded sample of the catalog, and the shared
release-format sample imported into a temporary folder (its tools run sandboxed), unless
``--no-release``.

Counted per generator, all of which must stay 0:

- ``raised``: exceptions out of ``step`` (or ``reset``);
- ``changed``: state changes (``env.db.fingerprint()``) across a step whose tool results were
  all errors;
- ``non-text``: observations that are not ``str``;
- ``bad chat``: episodes whose ``info["messages"]`` could not be JSON-encoded (checked at the
  end of each episode).

``ok calls`` (tool calls that succeeded) and ``terminated`` (episodes ended by a final answer,
each verified) show that the success paths are exercised too; ``slow`` counts steps over
``SLOW_S`` (informational, since it depends on the machine's load), and the slowest step is
printed with its action.

Runs on ``--workers`` processes (one environment per task, load-balanced); prints the table,
the first examples of any failure, and actions/s.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

RELEASE_SAMPLE = Path("/work/shared/fixtures/agentworld_release_sample")
RELEASE_ENV = "9900001"
"""The well-behaved release sample (Harbor Tasks); the Trap Box's tools hang by design."""
COUNTS = ("actions", "raised", "changed", "non-text", "bad chat", "ok calls", "terminated", "slow")
SLOW_S = 1.0
"""A step slower than this is counted as ``slow`` (informational: it depends on the load)."""


# -- generators ------------------------------------------------------------------------------
@dataclass
class Context:
    """What a generator may use: a seeded RNG, the env's tools and ids from its database."""

    rng: random.Random
    tools: list[tuple[str, dict[str, Any]]]
    """``(name, parameters schema)`` of every tool."""
    ids: list[str]

    def tool(self) -> tuple[str, dict[str, Any]]:
        return self.rng.choice(self.tools)


_SURROGATES = ["\udcff", "\ud800", "\udfff", "\ud83d", "\ude00"]
_ODD_TEXT = ["\x00", "\u202e", "\ufeff", "😀", "\U0010ffff", "é", "\n", '"', "\\", "<tool_call>"]


def nest(depth: int, leaf: Any = None, kind: str = "list") -> Any:
    """``[[[...leaf...]]]`` (or dicts) ``depth`` levels deep, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def odd_text(rng: random.Random, n: int = 12) -> str:
    alphabet = "abc xyz019" + "".join(_ODD_TEXT) + "".join(_SURROGATES)
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))
    if rng.random() < 0.3:
        text += "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(3))
    return text


def value_for(schema: Any, ctx: Context, mode: str, key: str = "") -> Any:
    """A value for one argument: ``valid``-looking, with ``surrogate`` text, or ``wrong``."""
    rng = ctx.rng
    if not isinstance(schema, dict):
        schema = {}
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if mode == "wrong":
        choices: list[Any] = [
            None,
            True,
            -1,
            2**64,
            1.5,
            "x",
            [],
            {},
            [1, "a"],
            {"k": [None]},
            "9" * 30,
        ]
        wrong = [c for c in choices if _json_kind(c) != kind]
        return rng.choice(wrong)
    if isinstance(schema.get("enum"), list) and schema["enum"] and rng.random() < 0.8:
        return rng.choice(schema["enum"])
    if kind == "integer":
        return rng.choice([0, 1, 5, 10, rng.randint(-3, 100)])
    if kind == "number":
        return rng.choice([0.5, 1, 3.25, -2.0])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        items = schema.get("items", {})
        return [value_for(items, ctx, mode) for _ in range(rng.randint(0, 2))]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: value_for(v, ctx, mode, k) for k, v in props.items() if rng.random() < 0.6}
    if key.lower().endswith("id") and ctx.ids and rng.random() < 0.8:
        return rng.choice(ctx.ids)
    text = rng.choice(["Roadmap", "Plan Q3", "done", "ada@example.com", "2026-08-05", "x"])
    if mode == "surrogate":
        cut = rng.randint(0, len(text))
        text = text[:cut] + rng.choice(_SURROGATES) + text[cut:]
    return text


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    names = {float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), "other")


def arguments_for(ctx: Context, schema: dict[str, Any], mode: str) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    return {
        k: value_for(v, ctx, mode, k)
        for k, v in props.items()
        if k in required or ctx.rng.random() < 0.4
    }


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def call_text(name: str, arguments_text: str) -> str:
    """A tool call as JSON text around raw (possibly broken) arguments text."""
    return '{"name": ' + orjson.dumps(name).decode() + ', "arguments": ' + arguments_text + "}"


def gen_valid_call(ctx: Context) -> Any:
    name, schema = ctx.tool()
    action = call(name, arguments_for(ctx, schema, "valid"))
    return orjson.dumps(action).decode() if ctx.rng.random() < 0.7 else action


def gen_write_surrogate(ctx: Context) -> Any:
    name, schema = ctx.tool()
    arguments = arguments_for(ctx, schema, "surrogate")
    if ctx.rng.random() < 0.3:
        arguments["k\udcff"] = "v"
    shape = ctx.rng.random()
    if shape < 0.5:
        return call(name, arguments)
    if shape < 0.8:  # the same as text: surrogates travel raw in the Python str
        return f"Saving. <tool_call>{json.dumps(call(name, arguments), ensure_ascii=False)}"
    return call_text(name, '{"q": "\\udcff \\ud83d\\ude00"}')


def gen_wrong_types(ctx: Context) -> Any:
    name, schema = ctx.tool()
    props = schema.get("properties") or {}
    arguments = {k: value_for(v, ctx, "wrong", k) for k, v in props.items()}
    if not props or ctx.rng.random() < 0.2:
        arguments = ctx.rng.choice([[], "text", 5, None, [{"a": 1}], True])
    return call(name, arguments)


def gen_deep_args(ctx: Context) -> Any:
    name, schema = ctx.tool()
    depth = ctx.rng.choice([63, 64, 65, 256, 300, 1000, 5000])
    kind = ctx.rng.choice(["list", "dict"])
    key = next(iter(schema.get("properties") or {}), "x")
    arguments = {key: nest(depth, 1, kind)}
    shape = ctx.rng.random()
    if shape < 0.4:
        return call(name, arguments)
    opening, closing = ("[", "]") if kind == "list" else ('{"a":', "}")
    text = "{" + orjson.dumps(key).decode() + ": " + opening * depth + "1" + closing * depth + "}"
    if shape < 0.7:
        return call_text(name, text)
    function = {"name": name, "arguments": text}
    return {"role": "assistant", "content": None, "tool_calls": [{"function": function}]}


def gen_deep_list(ctx: Context) -> Any:
    depth = ctx.rng.choice([100, 1000, 10_000, 100_000])
    leaf = ctx.rng.choice([None, "x", call("submit", {})])
    return nest(depth, leaf, ctx.rng.choice(["list", "dict"]))


def _random_json(rng: random.Random, depth: int) -> Any:
    """A random JSON value up to ``depth`` deep (iterative: a stack of open containers)."""
    root: list[Any] = []
    stack = [root]
    for _ in range(rng.randint(1, 40)):
        top = stack[-1]
        roll = rng.random()
        if roll < 0.25 and len(stack) < depth:
            child: Any = [] if rng.random() < 0.5 else {}
            _put(top, child, rng)
            stack.append(child)
        elif roll < 0.35 and len(stack) > 1:
            stack.pop()
        else:
            leaf = rng.choice(
                [None, True, 0, -7, 2**63 - 1, 1.5e308, "", "s", odd_text(rng, 5), 10**30]
            )
            _put(top, leaf, rng)
    return root


def _put(container: Any, value: Any, rng: random.Random) -> None:
    if isinstance(container, list):
        container.append(value)
    else:
        container[rng.choice(["a", "name", "arguments", "content", "id", "x"])] = value


def gen_random_json(ctx: Context) -> Any:
    value = _random_json(ctx.rng, ctx.rng.choice([2, 8, 70, 300]))
    name, _ = ctx.tool()
    roll = ctx.rng.random()
    if roll < 0.4:
        return call(name, value)
    if roll < 0.7:
        return call(name, {"x": value})
    try:
        text = orjson.dumps(call(name, value)).decode()
    except TypeError:
        return call(name, value)
    return text if roll < 0.9 else text[: ctx.rng.randint(0, len(text))]


def gen_huge_numbers(ctx: Context) -> Any:
    name, schema = ctx.tool()
    key = next(iter(schema.get("properties") or {}), "n")
    number = ctx.rng.choice(
        [2**64, -(2**63) - 1, 10**400, float("nan"), float("inf"), -float("inf"), 2**1000]
    )
    roll = ctx.rng.random()
    if roll < 0.6:
        return call(name, {key: number})
    literal = ctx.rng.choice(["18446744073709551616", "1e400", "NaN", "Infinity", "-0", "1" * 500])
    return call_text(name, "{" + orjson.dumps(key).decode() + ": " + literal + "}")


def gen_unknown_tool(ctx: Context) -> Any:
    name, _ = ctx.tool()
    fake = ctx.rng.choice(
        [name + "x", name.upper(), name[:-1], "", " ", odd_text(ctx.rng), "a" * 5000, "submit "]
    )
    roll = ctx.rng.random()
    if roll < 0.5:
        return call(fake, {})
    if roll < 0.7:
        return {"name": ctx.rng.choice([None, 5, ["x"], {"a": 1}]), "arguments": {}}
    return {"tool_calls": [{"function": {"name": fake, "arguments": "{}"}}], "content": ""}


def gen_hermes_broken(ctx: Context) -> Any:
    name, _ = ctx.tool()
    body = ctx.rng.choice(
        [
            call_text(name, "{"),
            call_text(name, '{"a": NaN}'),
            "{'name': 'x'}",
            "",
            call_text(name, '"{not json"'),
            call_text(name, "[" * 2000),
            call_text(name, '{"a": "\\ud800"}'),
            "[1, 2]",
            "null",
        ]
    )
    closing = ctx.rng.choice(["</tool_call>", "", "</tool_call><tool_call>"])
    return f"Let me check. <tool_call>{body}{closing} and more {odd_text(ctx.rng, 4)}"


def gen_odd_content(ctx: Context) -> Any:
    name, schema = ctx.tool()
    content = ctx.rng.choice(
        [
            5,
            1.5,
            True,
            {"text": "x"},
            ["a", 5],
            [{"type": "text", "text": "part"}],
            [{"type": "image_url"}],
            None,
            "",
            "\udcff",
            nest(200),
        ]
    )
    calls: list[Any] = []
    if ctx.rng.random() < 0.5:
        args = orjson.dumps(arguments_for(ctx, schema, "valid")).decode()
        calls = [{"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
    if ctx.rng.random() < 0.3:
        del message["tool_calls"]
    if ctx.rng.random() < 0.2:
        message["tool_calls"] = ctx.rng.choice([5, "x", {"function": {}}, [None]])
    return message


def gen_nonstr_key(ctx: Context) -> Any:
    name, schema = ctx.tool()
    arguments: dict[Any, Any] = arguments_for(ctx, schema, "valid")
    arguments[ctx.rng.choice([1, 2.5, None, True, ("a", 1), frozenset({1})])] = "v"
    if ctx.rng.random() < 0.3:
        return {ctx.rng.choice([1, None]): name, "name": name, "arguments": {}}
    return call(name, arguments)


def gen_many_calls(ctx: Context) -> Any:
    count = ctx.rng.choice([33, 40, 100, 500])
    calls = []
    for _ in range(count):
        name, schema = ctx.tool()
        calls.append(call(name, arguments_for(ctx, schema, "valid")))
    if ctx.rng.random() < 0.2:
        calls.append(call("submit", {"answer": "done"}))
    if ctx.rng.random() < 0.5:
        return calls
    return "".join(f"<tool_call>{orjson.dumps(c).decode()}</tool_call>" for c in calls)


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def gen_py_objects(ctx: Context) -> Any:
    name, _ = ctx.tool()
    loop: list[Any] = [1]
    loop.append(loop)
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    value = ctx.rng.choice(
        [
            {1, 2},
            frozenset(),
            b"bytes",
            bytearray(b"\xff"),
            (1, (2, (3,))),
            object(),
            _BadRepr(),
            loop,
            cycle,
            complex(1, 2),
            range(3),
            Path("/etc"),
            int,
            print,
        ]
    )
    roll = ctx.rng.random()
    if roll < 0.6:
        return call(name, {"x": value})
    if roll < 0.8:
        return value
    return [call(name, {}), value]


def gen_misc(ctx: Context) -> Any:
    return ctx.rng.choice(
        [
            None,
            0,
            -1,
            1.5,
            float("nan"),
            True,
            b'{"name": "x"}',
            b"\xff\xfe",
            bytearray(b"hi"),
            [],
            {},
            "",
            " ",
            "```json\n{broken\n```",
            '{"name": 5}',
            '[{"name": "a"}, 3]',
            '{"tool_calls": "x"}',
            '{"role": "assistant", "content": [1]}',
            "x" * 200_000,
        ]
    )


def gen_final_surrogate(ctx: Context) -> Any:
    return ctx.rng.choice(["\udcff", "answer \ud800 42", odd_text(ctx.rng, 30), "\x00"])


def gen_submit_odd(ctx: Context) -> Any:
    answer = ctx.rng.choice(
        [nest(300), nest(64), "\udcff", {1, 2}, 2**64, float("nan"), [1, "2"], None, {"a": 1}]
    )
    fields = ctx.rng.choice([None, {"x": 2**64}, {"x": "\udcff"}, {"x": nest(100)}, {"x": 3}])
    arguments: dict[str, Any] = {"answer": answer}
    if fields is not None:
        arguments["fields"] = fields
    return call("submit", arguments)


def gen_long_text(ctx: Context) -> Any:
    """Long inputs that once made a parser or the answer reader backtrack (1k-99k chars)."""
    size = ctx.rng.choice([1_000, 5_000, 20_000, 99_000])
    unit = ctx.rng.choice(
        ["1a-", "2024-01-01 ", " ", "1,", "1.", "$1", "three ", "\n", "1:", '"', "a", "-", "[", "{"]
    )
    body = unit * (size // len(unit))
    shape = ctx.rng.random()
    if shape < 0.4:
        return body
    if shape < 0.6:
        return "```" + body
    if shape < 0.8:
        return "<tool_call>" + body
    name, _ = ctx.tool()
    return call(name, {"q": body[: size // 2]})


GENERATORS: dict[str, tuple[int, Callable[[Context], Any]]] = {
    "valid_call": (14, gen_valid_call),
    "write_surrogate": (10, gen_write_surrogate),
    "wrong_types": (10, gen_wrong_types),
    "deep_args": (6, gen_deep_args),
    "deep_list": (3, gen_deep_list),
    "random_json": (8, gen_random_json),
    "huge_numbers": (8, gen_huge_numbers),
    "unknown_tool": (6, gen_unknown_tool),
    "hermes_broken": (6, gen_hermes_broken),
    "odd_content": (6, gen_odd_content),
    "nonstr_key": (5, gen_nonstr_key),
    "many_calls": (3, gen_many_calls),
    "py_objects": (5, gen_py_objects),
    "misc": (3, gen_misc),
    "final_surrogate": (2, gen_final_surrogate),
    "submit_odd": (3, gen_submit_odd),
    "long_text": (1, gen_long_text),
}
"""name → (weight, generator)."""


# -- running -----------------------------------------------------------------------------------
@dataclass
class Tally:
    """Counts per generator, plus the first few examples of each failure."""

    counts: dict[str, Counter] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    envs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    slowest: tuple[float, str] = (0.0, "")

    def add(self, generator: str, what: str, example: str | None = None) -> None:
        self.counts.setdefault(generator, Counter())[what] += 1
        if example is not None and len(self.examples) < 20:
            self.examples.append(example)

    def merge(self, other: Tally) -> None:
        for name, counter in other.counts.items():
            self.counts.setdefault(name, Counter()).update(counter)
        self.examples += other.examples[: 20 - len(self.examples)]
        self.envs += other.envs
        self.seconds += other.seconds
        self.slowest = max(self.slowest, other.slowest)

    def total(self, what: str) -> int:
        return sum(c[what] for c in self.counts.values())


def _short(action: Any) -> str:
    from agentworld_gym.jsonsafe import preview

    return preview(action, 160)


def _make(env_id: str) -> Any:
    """A catalog env through ``gym.make``, or a release env folder (``path:...``)."""
    import gymnasium as gym

    import agentworld_gym  # noqa: F401  (registers the catalog)
    from agentworld_gym.env import AgentWorldEnv

    if env_id.startswith("path:"):
        return AgentWorldEnv(env_id[5:], split="all")
    return gym.make(env_id)


def fuzz_env(job: tuple[str, int, int]) -> Tally:
    """Play ``n`` fuzzed actions on one environment; episodes restart every 5-40 steps."""
    env_id, n, seed = job
    tally = Tally(envs=[env_id])
    started = time.perf_counter()
    rng = random.Random(f"{seed}:{env_id}")
    names = list(GENERATORS)
    weights = [GENERATORS[k][0] for k in names]
    try:
        env = _make(env_id)
        base = env.unwrapped
        tools = [(t.name, t.parameters or {}) for t in base.spec_data.tools]
        db = base.spec_data.database
        ids = [k for c in db.collections for k in list(db._base.records.get(c, {}))[:20]]
    except Exception:
        tally.add("(setup)", "raised", f"{env_id}: setup failed\n{traceback.format_exc()}")
        return tally
    ctx = Context(rng, tools or [("none", {})], ids or ["1"])
    need_reset, budget, fingerprint = True, 0, ""
    for _ in range(n):
        if need_reset:
            try:
                env.reset(seed=rng.randrange(2**31))
            except Exception:
                tally.add("(reset)", "raised", f"{env_id} reset\n{traceback.format_exc()}")
                continue
            need_reset, budget = False, rng.randint(5, 40)
            fingerprint = base.db.fingerprint()  # a fresh episode: the initial state
        generator = rng.choices(names, weights)[0]
        action = GENERATORS[generator][1](ctx)
        tally.add(generator, "actions")
        stepped = time.perf_counter()
        try:
            obs, _, terminated, truncated, info = env.step(action)
        except Exception:
            tally.add(
                generator,
                "raised",
                f"{env_id} {generator}: {_short(action)}\n{traceback.format_exc(limit=-4)}",
            )
            need_reset = True
            continue
        seconds = time.perf_counter() - stepped
        if seconds > SLOW_S:
            tally.add(generator, "slow")
        if seconds > tally.slowest[0]:
            tally.slowest = (seconds, f"{env_id} {generator}: {_short(action)}")
        if not isinstance(obs, str):
            tally.add(generator, "non-text", f"{env_id} {generator}: obs {type(obs).__name__}")
        results = info.get("tool_results") or []
        succeeded = sum(1 for r in results if r["ok"])
        if succeeded:
            tally.counts[generator]["ok calls"] += succeeded
        try:
            after = base.db.fingerprint()
        except Exception:  # a state the verifiers could not read either
            tally.add(
                generator,
                "raised",
                f"{env_id} {generator}: state unreadable after "
                f"{_short(action)}\n{traceback.format_exc(limit=-2)}",
            )
            need_reset = True
            continue
        if results and not any(r["ok"] for r in results) and after != fingerprint:
            tally.add(generator, "changed", f"{env_id} {generator}: {_short(action)} {results}")
        fingerprint = after
        budget -= 1
        if terminated or truncated or budget <= 0:
            if terminated:
                tally.add(generator, "terminated")
            try:
                orjson.dumps(list(info["messages"]))
            except TypeError as exc:
                tally.add(generator, "bad chat", f"{env_id} {generator}: messages: {exc}")
            need_reset = True
    env.close()
    tally.seconds = time.perf_counter() - started
    return tally


def release_envs(folder: Path) -> list[str]:
    """Import the shared release-format sample (sandboxed tools) into ``folder``."""
    from agentworld_gym.release import ImportOptions, import_release

    options = ImportOptions(out=folder, only=[RELEASE_ENV], register=False, gate=False)
    import_release(RELEASE_SAMPLE, options)
    return [f"path:{p.parent}" for p in sorted(folder.glob("*/env.json"))]


def pick_envs(count: int, seed: int) -> list[str]:
    from agentworld_gym.registry import list_envs

    ids = sorted(e.gym_id for e in list_envs() if Path(e.root).name == "envs_generated")
    notion = [i for i in ids if i == "AgentWorld/notion-v0"]
    others = [i for i in ids if i not in notion]
    return notion + random.Random(seed).sample(others, min(count - len(notion), len(others)))


def print_table(tally: Tally, wall: float) -> None:
    header = f"| {'generator':<16} | " + " | ".join(f"{c:>10}" for c in COUNTS) + " |"
    print(header)
    print("|" + "-" * 18 + "|" + "|".join("-" * 12 for _ in COUNTS) + "|")
    for name in sorted(tally.counts):
        row = tally.counts[name]
        print(f"| {name:<16} | " + " | ".join(f"{row[c]:>10,}" for c in COUNTS) + " |")
    totals = " | ".join(f"{tally.total(c):>10,}" for c in COUNTS)
    print(f"| {'total':<16} | {totals} |")
    actions = tally.total("actions")
    print(
        f"\n{actions:,} actions over {len(tally.envs)} environments in {wall:.1f} s wall "
        f"({actions / max(wall, 1e-9):,.0f} actions/s; "
        f"{actions / max(tally.seconds, 1e-9):,.0f} per worker-second)"
    )
    print(f"slowest step: {tally.slowest[0]:.3f} s ({tally.slowest[1]})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=100_000, help="fuzzed actions in all")
    parser.add_argument("--envs", type=int, default=110, help="catalog environments (notion too)")
    parser.add_argument("--seed", type=int, default=0, help="seed of env choice and actions")
    parser.add_argument(
        "--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes"
    )
    parser.add_argument(
        "--no-release", action="store_true", help="skip the release-format (sandboxed) sample"
    )
    args = parser.parse_args(argv)
    envs = pick_envs(args.envs, args.seed)
    with tempfile.TemporaryDirectory(prefix="fuzz-release-") as tmp:
        if not args.no_release:
            envs += release_envs(Path(tmp))
        per_env = math.ceil(args.actions / len(envs))
        jobs = [(env_id, per_env, args.seed) for env_id in envs]
        tally = Tally()
        started = time.perf_counter()
        if args.workers > 1:
            with mp.get_context("fork").Pool(args.workers, maxtasksperchild=20) as pool:
                for part in pool.imap_unordered(fuzz_env, jobs):
                    tally.merge(part)
        else:
            for job in jobs:
                tally.merge(fuzz_env(job))
        wall = time.perf_counter() - started
    print_table(tally, wall)
    failures = sum(tally.total(c) for c in ("raised", "changed", "non-text", "bad chat"))
    for example in tally.examples:
        print("\n" + example, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
