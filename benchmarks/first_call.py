"""First tool calls: the latency of the first ``env.step`` that calls each tool.

    python benchmarks/first_call.py [--all | --sample 100 --seed 0] [--args full|gold]
                                    [--env docusign--accounts] [--compare 200]

Argument validators are built on a tool's first call, so that call pays for turning the
tool's JSON Schema into a validator; with 150-200 KB schemas that once took seconds. For every
tool of the chosen environments this script builds the env as ``gym.make`` does, resets it,
clears the process-wide validator caches (so no other tool has warmed them) and times the
first and the second ``env.step`` calling the tool. Arguments:

- ``full`` (default): one synthesized call per tool that fills every argument at every depth
  from the schema: the costliest first call (a validator built lazily sees all of it). Calls
  the synthesizer cannot make valid are counted in the ``invalid`` column.
- ``gold``: the first concrete call of each tool in the tasks' gold chains (references such
  as ``"$0.id"`` resolved by replaying the chain): what a trained agent sends.

The sample is seeded; the environments holding the largest schemas are always added (see
``--largest``). The ten slowest first calls are timed three more times (fresh tools, caches
cleared) and the fastest is shown as ``retimed``: over thousands of samples on a shared
machine the raw maximum is often a scheduler pause, the re-timed one is the tool's own cost.

``--compare N`` also checks N calls (and corrupted variants of them: a leaf of the wrong type,
a required argument dropped, an unknown nested argument) against a reference validator
compiled by fastjsonschema from the whole schema: the decisions and the error (message, path,
value, rule) must be identical. Target: the worst first call over the whole catalog
under 200 ms, with no cache on disk.
"""

from __future__ import annotations

import argparse
import copy
import gc
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

import agentworld_gym  # noqa: F401  (registers the catalog)
from agentworld_gym import tools as tools_module
from agentworld_gym import validation
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import SpecError
from agentworld_gym.registry import list_envs
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import EnvSpec, ToolSpec

FORMAT_SAMPLES = {
    "date-time": "2026-08-05T09:00:00Z",
    "date": "2026-08-05",
    "time": "09:00:00Z",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "email": "ada@example.com",
    "uri": "https://example.com/a",
    "ipv4": "10.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
}
"""A valid string for each format fastjsonschema checks."""


@dataclass
class Sample:
    """One tool's first and second call."""

    env: str
    tool: str
    schema_kb: float
    first_ms: float
    second_ms: float
    invalid: bool
    folder: Path
    action: str
    task_id: str | None
    retimed_ms: float = float("nan")


def forget_validators() -> None:
    """Empty the process-wide validator caches, so the next first call builds from scratch."""
    validation.clear_caches()


def instance(schema: Any) -> Any:
    """A value for ``schema`` that fills every property at every depth (deterministic)."""
    if not isinstance(schema, dict):
        return "x"
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance(schema[key][0])
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return {k: instance(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        items = schema.get("items", {})
        if isinstance(items, list):
            return [instance(item) for item in items]
        count = max(1, schema.get("minItems", 0))
        return [instance(items) for _ in range(min(count, schema.get("maxItems", count)))]
    if kind in ("integer", "number"):
        low, high = (
            schema.get("minimum", 1),
            schema.get("maximum", max(1, schema.get("minimum", 1))),
        )
        value = max(low, min(high, 1))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = FORMAT_SAMPLES.get(schema.get("format", ""), "x")
    text = text.ljust(schema.get("minLength", 0), "x")
    return text[: schema["maxLength"]] if "maxLength" in schema else text


def corruptions(arguments: dict[str, Any], schema: dict[str, Any], rng: random.Random) -> list:
    """Variants of a valid call that the validator must refuse (or accept) exactly as before."""
    leaves: list[tuple[list[Any], Any]] = []

    def walk(value: Any, path: list[Any]) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, [*path, k])
        elif isinstance(value, list) and value:
            for i, v in enumerate(value):
                walk(v, [*path, i])
        elif path:
            leaves.append((path, value))

    walk(arguments, [])
    out = []
    for path, value in rng.sample(leaves, min(4, len(leaves))):
        bad = copy.deepcopy(arguments)
        target = bad
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = 12345 if isinstance(value, str) else "wrong"
        out.append(bad)
    required = schema.get("required", [])
    if required:
        out.append({k: v for k, v in arguments.items() if k != rng.choice(required)})
    nested = [k for k, v in arguments.items() if isinstance(v, dict)]
    if nested:
        bad = copy.deepcopy(arguments)
        bad[rng.choice(nested)]["no_such_field"] = 1
        out.append(bad)
    out.append({**arguments, "no_such_argument": 1})
    return out


def _outcome(validate: Any, arguments: Any) -> tuple[Any, ...]:
    try:
        validate(arguments)
    except fastjsonschema.JsonSchemaValueException as exc:
        return (exc.message, exc.name, repr(exc.value), exc.rule)
    return ("valid",)


def compare(tool: ToolSpec, arguments: dict[str, Any], rng: random.Random) -> list[str]:
    """Differences between the runtime's validator and one compiled from the whole schema."""
    schema = orjson.loads(orjson.dumps(tool.parameters, option=orjson.OPT_SORT_KEYS))
    reference = fastjsonschema.compile(schema, use_default=False)
    forget_validators()
    runtime = tools_module.Tool(tool, lambda ctx, **kw: None).validator
    diffs = []
    for variant in [arguments, *corruptions(arguments, schema, rng)]:
        want, got = _outcome(reference, variant), _outcome(runtime, variant)
        if want != got:
            diffs.append(f"{tool.name}: expected {want!r}, got {got!r}")
    return diffs


def _step_ms(env: AgentWorldEnv, action: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    obs = env.step(action)[0]
    return (time.perf_counter() - t0) * 1e3, obs


def first_call_ms(env: AgentWorldEnv, action: str, task_id: str | None) -> tuple[float, str]:
    """The first call of a tool in a fresh episode, with no validator cached in the process."""
    env.reset(seed=0, options={"task_id": task_id} if task_id else None)
    env.step('{"name": "-"}')  # the env's own first-step costs are not the tool's
    forget_validators()
    return _step_ms(env, action)


def retime(sample: Sample, repeats: int = 3) -> float:
    """The fastest of a few more first calls (fresh tools each time): the cost without the
    scheduler's noise, which picks the maximum over thousands of samples on a busy machine."""
    times = []
    for _ in range(repeats):
        env = AgentWorldEnv(EnvSpec.load(sample.folder), split="all", max_turns=10**9)
        times.append(first_call_ms(env, sample.action, sample.task_id)[0])
        env.close()
    return min(times)


def full_calls(spec: EnvSpec) -> list[tuple[str, dict[str, Any], str | None]]:
    """One synthesized call per tool (every property filled), in a fresh episode each."""
    return [(t.name, instance(t.parameters or {}), None) for t in spec.tools]


def gold_calls(env: AgentWorldEnv, spec: EnvSpec) -> list[tuple[str, dict[str, Any], str | None]]:
    """The first concrete gold call of each tool, found by replaying every gold chain."""
    found: dict[str, tuple[str, dict[str, Any], str | None]] = {}
    for task in spec.tasks:
        if not task.gold or task.gold.get("type") != "tool_chain":
            continue
        env.reset(options={"task_id": task.id})
        outputs: list[Any] = []
        for call in task.gold.get("calls", []):
            try:
                arguments = resolve_refs(call.get("arguments", {}), outputs)
            except SpecError:
                outputs.append(None)
                continue
            found.setdefault(call["name"], (call["name"], arguments, task.id))
            obs = env.step(orjson.dumps({"name": call["name"], "arguments": arguments}).decode())
            try:
                outputs.append(orjson.loads(obs[0]))
            except orjson.JSONDecodeError:
                outputs.append(obs[0])
    return list(found.values())


def measure_env(folder: Path, mode: str, compare_left: list[int], rng: random.Random) -> tuple:
    """Time the first and second call of each tool of one environment."""
    spec = EnvSpec.load(folder)
    sizes = {t.name: len(orjson.dumps(t.parameters)) / 1e3 for t in spec.tools}
    by_name = {t.name: t for t in spec.tools}
    calls = full_calls(spec) if mode == "full" else gold_calls(AgentWorldEnv(spec), spec)
    env = AgentWorldEnv(EnvSpec.load(folder), split="all", max_turns=10**9)  # fresh tools
    samples, diffs = [], []
    for name, arguments, task_id in calls:
        action = orjson.dumps({"name": name, "arguments": arguments}).decode()
        first, obs = first_call_ms(env, action, task_id)
        second, _ = _step_ms(env, action)
        invalid = obs.startswith("Invalid arguments")
        samples.append(
            Sample(spec.id, name, sizes[name], first, second, invalid, folder, action, task_id)
        )
        if compare_left[0] > 0:
            compare_left[0] -= 1
            diffs += compare(by_name[name], arguments, rng)
    env.close()
    return samples, diffs


def pick_envs(args: argparse.Namespace) -> list[Path]:
    entries = list_envs()
    if args.env:
        wanted = set(args.env)
        return [e.folder for e in entries if e.id in wanted or e.gym_id in wanted]
    if args.all:
        return [e.folder for e in entries]
    chosen = random.Random(args.seed).sample(entries, min(args.sample, len(entries)))
    largest = sorted(entries, key=lambda e: -(e.folder / "env.json").stat().st_size)
    chosen += [e for e in largest[: args.largest] if e not in chosen]
    return [e.folder for e in chosen]


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every catalog environment")
    parser.add_argument("--sample", type=int, default=100, help="environments drawn (seeded)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--largest", type=int, default=5, help="add the N largest env.json")
    parser.add_argument("--env", action="append", help="only this environment (repeatable)")
    parser.add_argument("--args", choices=("full", "gold"), default="full", dest="mode")
    parser.add_argument("--compare", type=int, default=0, help="calls checked vs a reference")
    args = parser.parse_args()

    folders = pick_envs(args)
    rng = random.Random(args.seed)
    compare_left = [args.compare]
    samples: list[Sample] = []
    diffs: list[str] = []
    gc.freeze()
    t0 = time.perf_counter()
    for folder in folders:
        env_samples, env_diffs = measure_env(folder, args.mode, compare_left, rng)
        samples += env_samples
        diffs += env_diffs
    wall = time.perf_counter() - t0

    worst = sorted(samples, key=lambda s: -s.first_ms)[:10]
    for s in worst:
        s.retimed_ms = retime(s)
    first = sorted(s.first_ms for s in samples)
    second = sorted(s.second_ms for s in samples)
    print(
        f"\n{len(folders)} environments, {len(samples)} tools, args={args.mode}, "
        f"{sum(s.invalid for s in samples)} invalid calls, {wall:.0f} s\n"
    )
    print(f"| {'measure':<22} | {'p50 ms':>8} | {'p95 ms':>8} | {'p99 ms':>8} | {'max ms':>9} |")
    print(f"|{'-' * 24}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 11}|")
    for label, values in (("first call (step)", first), ("second call (step)", second)):
        print(
            f"| {label:<22} | {statistics.median(values):>8.2f} | {_pct(values, 0.95):>8.2f} "
            f"| {_pct(values, 0.99):>8.2f} | {values[-1]:>9.2f} |"
        )
    print(
        f"\n| {'environment':<36} | {'tool':<40} | {'schema KB':>9} | {'first ms':>9} "
        f"| {'retimed ms':>10} | {'second ms':>9} |"
    )
    print(f"|{'-' * 38}|{'-' * 42}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 11}|")
    for s in worst:
        flag = " *" if s.invalid else ""
        print(
            f"| {s.env[:36]:<36} | {(s.tool + flag)[:40]:<40} | {s.schema_kb:>9.1f} "
            f"| {s.first_ms:>9.1f} | {s.retimed_ms:>10.1f} | {s.second_ms:>9.3f} |"
        )
    print(f"\nworst first call re-timed (min of 3): {max(s.retimed_ms for s in worst):.1f} ms")
    if args.compare:
        checked = min(args.compare, len(samples))
        print(f"\ncompared {checked} calls and their corruptions: {len(diffs)} differences")
        for line in diffs[:20]:
            print("  " + line)


if __name__ == "__main__":
    main()
