"""``agentworld synth env``: an LLM writes a code-implemented environment from a theme.

Stages (prompts in ``agentworld_gym/prompts/llm_env/``):

1. **material** — the user's local documents and API specs, condensed (:mod:`.materials`);
2. **design** — the LLM designs the database: collections, fields, realistic records;
3. **tools** — it writes each tool as Python in the Agent-World release contract (a module per
   tool over ``MCP_DB_DIR`` files, in-band errors), so the release runtime runs them;
4. **tests** — it writes unit tests for every tool, and tasks with verified tool chains;
   every test runs in the isolated worker and a tool is kept only when it loads and passes
   more than ``threshold`` of its tests (:mod:`.testing`);
5. **emit** — with at least one kept tool and one passing test, the environment is written in
   the release layout and imported (:mod:`agentworld_gym.release.importer`): the chains of its
   tasks are replayed and the environment lands in a catalog root, validated.

A stage whose reply is unusable is asked again (``max_attempts``) with the reasons; when it
still fails, or nothing survives the tests, the result is a rejection with every reason, never
an exception. Each stage is one chat request; seeds and temperature are passed to the server.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.base import LLMBackend, Message
from agentworld_gym.prompt_templates import prompt_environment
from agentworld_gym.release.importer import ImportOptions, import_release
from agentworld_gym.sandbox import SandboxLimits
from agentworld_gym.spec import DEFAULT_CLOCK
from agentworld_gym.synthesis.llm_env.materials import Material, gather
from agentworld_gym.synthesis.llm_env.parse import (
    Design,
    Parsed,
    TaskDraft,
    TestDraft,
    ToolDraft,
    check_design,
    check_tasks,
    check_tests,
    check_tools,
    extract_json,
)
from agentworld_gym.synthesis.llm_env.testing import HEADER, ToolVerdict, run_tests, tool_source
from agentworld_gym.taxonomy import L1_CATEGORIES, KeywordClassifier

SOURCE = "llm-synthesis"


def default_synth_root() -> Path:
    """``$XDG_CACHE_HOME/agentworld/synth``: a catalog root of its own, like the release's."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "agentworld" / "synth"


@dataclass
class LLMEnvConfig:
    """Settings of ``agentworld synth env``."""

    theme: str
    """What the environment is about ("a veterinary clinic's appointment system")."""
    sources: list[Path] = field(default_factory=list)
    """Local documents / API-spec files (or folders) to ground the design in."""
    out: Path = field(default_factory=default_synth_root)
    """Catalog root the environment is emitted into."""
    threshold: float = 0.5
    """A tool is kept when it passes more than this fraction of its tests."""
    max_attempts: int = 2
    """Requests per stage: a retry says what was wrong with the previous reply."""
    temperature: float = 0.7
    max_tokens: int = 6000
    seed: int | None = 0
    clock: str = DEFAULT_CLOCK
    """The pinned clock of tests and episodes."""
    limits: dict[str, float] = field(
        default_factory=lambda: {"wall_s": 5.0, "cpu_s": 5.0, "memory_mb": 1024}
    )
    """Per-call sandbox limits of tools and tests."""
    material_chars: int = 12_000
    collections: tuple[int, int] = (2, 6)
    records: tuple[int, int] = (5, 30)
    tools: tuple[int, int] = (3, 10)
    tests: tuple[int, int] = (2, 4)
    tasks: tuple[int, int] = (2, 5)

    def __post_init__(self) -> None:
        if not self.theme or not self.theme.strip():
            raise ConfigError("synth env needs a --theme")
        if not 0.0 <= self.threshold < 1.0:
            raise ConfigError(f"threshold must be in [0, 1), got {self.threshold}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1, got {self.max_attempts}")


@dataclass
class StageLog:
    stage: str
    attempts: int = 0
    ok: bool = False
    reasons: list[str] = field(default_factory=list)


@dataclass
class SynthResult:
    """The outcome: an emitted environment, or a rejection and every reason for it."""

    theme: str
    model: str = ""
    accepted: bool = False
    reasons: list[str] = field(default_factory=list)
    stages: list[StageLog] = field(default_factory=list)
    tools: list[ToolVerdict] = field(default_factory=list)
    tasks: dict[str, str] = field(default_factory=dict)
    gym_id: str = ""
    folder: str = ""
    threshold: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for tool, verdict in zip(data["tools"], self.tools, strict=True):
            tool["pass_rate"] = verdict.pass_rate
        return data

    def summary(self) -> str:
        head = f"ACCEPTED {self.gym_id} -> {self.folder}" if self.accepted else "REJECTED"
        lines = [f"{head}  (theme: {self.theme!r}, model: {self.model or '?'})"]
        for s in self.stages:
            state = "ok" if s.ok else "failed"
            lines.append(f"  stage {s.stage:<7} {state} after {s.attempts} request(s)")
            lines += [f"      - {r}" for r in s.reasons[:12]]
        if self.tools:
            lines.append(f"  tools (kept when passing > {self.threshold:.0%} of their tests):")
        for t in self.tools:
            lines.append(f"    [{'kept' if t.kept else 'drop'}] {t.name:<28} {t.reason}")
            lines += [f"        x {r.name}: {r.error}" for r in t.tests if not r.passed][:4]
        for task_id, why in self.tasks.items():
            lines.append(f"  task {task_id}: {why}")
        lines += [f"  reason: {r}" for r in self.reasons]
        return "\n".join(lines)


class _Conversation:
    """One stage's requests: the prompt, and retries that quote what was wrong."""

    def __init__(self, synth: _Synthesizer, stage: str, prompt: str) -> None:
        self.synth, self.log = synth, StageLog(stage)
        system = synth.render("system.j2", stage=stage)
        self.messages: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        synth.result.stages.append(self.log)

    def ask(self, key: str, check: Any) -> Parsed:
        """Request until ``check(json)`` yields a value without fatal reasons."""
        cfg = self.synth.config
        parsed = Parsed(None, ["no request was made"])
        for _ in range(cfg.max_attempts):
            self.log.attempts += 1
            text, failure = self.synth.chat(self.messages)
            if failure is not None:
                parsed = Parsed(None, [failure])
                self.log.reasons.append(f"attempt {self.log.attempts}: {failure}")
                continue
            parsed = extract_json(text, key)
            if parsed.value is not None:
                parsed = check(parsed.value)
            if parsed.value:
                self.log.ok = True
                self.log.reasons += parsed.reasons
                return parsed
            self.log.reasons += [f"attempt {self.log.attempts}: {r}" for r in parsed.reasons]
            retry = self.synth.render("retry.j2", reasons=parsed.reasons[:10])
            self.messages += [
                {"role": "assistant", "content": text[:4000]},
                {"role": "user", "content": retry},
            ]
        return Parsed(None, parsed.reasons)


class _Synthesizer:
    def __init__(self, config: LLMEnvConfig, backend: LLMBackend, model: str) -> None:
        self.config, self.backend = config, backend
        self.templates = prompt_environment("llm_env")
        self.result = SynthResult(config.theme, model, threshold=config.threshold)

    def render(self, template: str, /, **values: Any) -> str:
        return self.templates.get_template(template).render(**values)

    def chat(self, messages: list[Message]) -> tuple[str, str | None]:
        cfg = self.config
        sampling = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        if cfg.seed is not None:
            sampling["seed"] = cfg.seed
        try:
            reply = self.backend.chat(messages, **sampling)
        except ConfigError:
            raise  # the endpoint is misconfigured: that is the user's to fix, not a rejection
        except Exception as exc:  # noqa: BLE001 - an HTTP 500 or a timeout rejects this stage
            return "", f"the LLM request failed: {type(exc).__name__}: {exc}"
        return str(reply.get("content") or ""), None

    def reject(self, *reasons: str) -> SynthResult:
        self.result.reasons += list(reasons)
        return self.result

    # -- the stages ---------------------------------------------------------------------------
    def run(self) -> SynthResult:
        cfg = self.config
        materials = gather(cfg.sources, cfg.material_chars)
        design = self.design(materials)
        if design is None:
            return self.reject("the design stage produced no usable database")
        tools = self.write_tools(design)
        if not tools:
            return self.reject("the tools stage produced no usable tool")
        drafts = self.write_tests(design, tools)
        if drafts is None:
            return self.reject("the tests stage produced no usable test")
        tests, tasks = drafts
        collections = {c["name"]: c["records"] for c in design.collections}
        limits = SandboxLimits(**{**asdict(SandboxLimits()), **cfg.limits})
        verdicts = run_tests(
            collections, tools, tests, clock=cfg.clock, limits=limits, threshold=cfg.threshold
        )
        self.result.tools = verdicts
        kept = {v.name for v in verdicts if v.kept}
        passing = [t for v in verdicts if v.kept for t in v.tests if t.passed]
        if not kept or not passing:
            return self.reject(
                f"{len(kept)} tool(s) kept and {len(passing)} passing test(s): an environment "
                "needs at least one of each"
            )
        return self.emit(design, [t for t in tools if t.name in kept], tests, tasks, verdicts)

    def design(self, materials: list[Material]) -> Design | None:
        cfg = self.config
        prompt = self.render(
            "design.j2",
            theme=cfg.theme,
            materials=materials,
            min_collections=cfg.collections[0],
            max_collections=cfg.collections[1],
            min_records=cfg.records[0],
            max_records=cfg.records[1],
        )
        return _Conversation(self, "design", prompt).ask("collections", check_design).value

    def write_tools(self, design: Design) -> list[ToolDraft]:
        cfg = self.config
        prompt = self.render(
            "tools.j2",
            name=design.name,
            description=design.description,
            collections=design.collections,
            header=HEADER.strip(),
            min_tools=cfg.tools[0],
            max_tools=cfg.tools[1],
        )
        return _Conversation(self, "tools", prompt).ask("tools", check_tools).value or []

    def write_tests(
        self, design: Design, tools: list[ToolDraft]
    ) -> tuple[list[TestDraft], list[TaskDraft]] | None:
        cfg = self.config
        prompt = self.render(
            "tests.j2",
            name=design.name,
            description=design.description,
            collections=design.collections,
            tools=tools,
            clock=cfg.clock,
            min_tests=cfg.tests[0],
            max_tests=cfg.tests[1],
            min_tasks=cfg.tasks[0],
            max_tasks=cfg.tasks[1],
        )
        found: dict[str, list] = {}

        def check(data: dict[str, Any]) -> Parsed:
            tests = check_tests(data, tools, cfg.tests[1])
            tasks = check_tasks(data, cfg.tasks[1])
            found["tasks"] = tasks.value or []
            return Parsed(tests.value, tests.reasons + tasks.reasons)

        tests = _Conversation(self, "tests", prompt).ask("tests", check).value
        return (tests, found.get("tasks", [])) if tests else None

    # -- emission -----------------------------------------------------------------------------
    def emit(
        self,
        design: Design,
        tools: list[ToolDraft],
        tests: list[TestDraft],
        tasks: list[TaskDraft],
        verdicts: list[ToolVerdict],
    ) -> SynthResult:
        cfg = self.config
        names = {t.name for t in tools}
        usable = []
        for i, task in enumerate(tasks):
            unknown = sorted({s["tool"] for s in task.chain} - names)
            if unknown:
                self.result.tasks[f"draft-{i}"] = f"dropped: uses tools not kept {unknown}"
            else:
                usable.append(task)
        env_id = "synth-" + hashlib.sha256(f"{cfg.theme}|{design.name}".encode()).hexdigest()[:8]
        staging = Path(tempfile.mkdtemp(prefix="agentworld-synth-"))
        try:
            _write_release(staging, env_id, design, tools, usable)
            provenance = {
                "theme": cfg.theme,
                "model": self.result.model,
                "threshold": cfg.threshold,
                "sources": [str(p) for p in cfg.sources],
                "tools_kept": len(tools),
                "tests_passed": sum(r.passed for v in verdicts for r in v.tests),
            }
            options = ImportOptions(
                out=Path(cfg.out),
                clock=cfg.clock,
                limits=dict(cfg.limits),
                source=SOURCE,
                provenance=provenance,
                allow_default_root=True,
            )
            report = import_release(staging, options)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        env = report.envs[0]
        self.result.tasks.update(env.tasks)
        self.result.accepted, self.result.gym_id, self.result.folder = True, env.gym_id, env.folder
        if not env.reproducible:
            self.result.reasons.append(
                "no task chain replays: the environment has tools but no training task yet"
            )
        folder = Path(env.folder)
        kept_tests = [asdict(t) for t in tests if t.tool in names]
        (folder / "tests.json").write_text(json.dumps(kept_tests, indent=2), encoding="utf-8")
        report_file = folder / "synthesis_report.json"
        report_file.write_text(json.dumps(self.result.to_dict(), indent=2), encoding="utf-8")
        return self.result


def _write_release(
    root: Path, env_id: str, design: Design, tools: list[ToolDraft], tasks: list[TaskDraft]
) -> None:
    """The environment in the release layout, so the release importer takes it from here."""
    mix = root / "environment_mix"
    (mix / env_id).mkdir(parents=True)
    (mix / "questions").mkdir()
    for col in design.collections:
        data = json.dumps(col["records"], indent=2, ensure_ascii=False)
        (mix / env_id / f"{col['name']}.json").write_text(data, encoding="utf-8")
    readme = [f"# {design.name}", "", design.description, ""]
    readme += [f"### `{c['name']}.json` — {c['description']}" for c in design.collections]
    (mix / env_id / "README.md").write_text("\n".join(readme) + "\n", encoding="utf-8")
    fields = {
        "name": design.name,
        "description": design.description,
        "collections": [c["name"] for c in design.collections],
    }
    found = KeywordClassifier().classify(fields)
    taxonomy = {
        "L1_id": found.l1,
        "L1_name": L1_CATEGORIES.get(found.l1, ""),
        "L2_name": found.l2,
        "L3_name": design.name,
    }
    metadata = {
        "env_id": env_id,
        "name": design.name,
        "description": design.description,
        "taxonomy": taxonomy,
        "database_dir_env_var": "MCP_DB_DIR",
    }
    schemas = [
        {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "implementation": tool_source(t),
        }
        for t in tools
    ]
    checkpoint = {"metadata": metadata, "data": {"ToolDesignAgent": {"tool_schemas": schemas}}}
    (mix / f"{env_id}_step4_checkpoint.json").write_text(json.dumps(checkpoint, indent=2))
    (mix / "index.json").write_text(json.dumps([{**metadata, "n_tools": len(tools)}], indent=2))
    questions = {
        "env_id": env_id,
        "name": design.name,
        "tasks": [
            {
                "task": t.task,
                "reference_answer": "",
                "grading_rubric": {"success_criteria": t.criteria, "verified_tool_chain": t.chain},
            }
            for t in tasks
        ],
    }
    (mix / "questions" / f"{env_id}.json").write_text(json.dumps(questions, indent=2))


def synthesize_env(config: LLMEnvConfig, backend: LLMBackend, model: str = "") -> SynthResult:
    """Synthesize one environment from ``config.theme`` with ``backend``; see the module doc.

    Returns:
        A :class:`SynthResult`: ``accepted`` with the Gymnasium id and folder, or a rejection
        whose ``reasons``, ``stages`` and ``tools`` say what was wrong.

    Raises:
        ConfigError: a source path is missing, or the endpoint is unreachable / misconfigured.
    """
    return _Synthesizer(config, backend, model).run()
