"""Task synthesis: tool graph, walks, programs, acceptance, splits (``synthesis.tasks``)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.ops import op_tool
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.spec import EnvSpec, RuntimeSpec
from agentworld_gym.synthesis.tasks import TaskSynthConfig, synthesize_tasks
from agentworld_gym.synthesis.tasks.model import build_model
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.graph import INDEPENDENT, STRONG, WEAK, ToolGraph
from agentworld_gym.synthesis.tasks.sample.walk import WalkConfig, Walker

NOTION = Path(__file__).resolve().parent.parent / "envs_generated" / "notion"
S = {"type": "string"}
INT = {"type": "integer"}


def make_op_env() -> EnvSpec:
    """A small tracker compiled the way API specs are: projects own tasks; settings apart."""
    projects = [
        {"id": f"p{i}", "name": f"Project {n}", "status": s, "owner": o}
        for i, (n, s, o) in enumerate(
            [
                ("Apollo", "active", "ada"),
                ("Borealis", "active", "bob"),
                ("Cygnus", "archived", "cy"),
                ("Draco", "active", "dee"),
            ],
            start=1,
        )
    ]
    statuses = ["open", "done", "open", "blocked"]
    tasks = [
        {
            "id": f"t{i:02d}",
            "title": f"Task {w}",
            "status": statuses[i % 4],
            "points": (i * 7) % 13 + 1,
            "project_id": f"p{(1, 1, 2, 1, 2, 3, 1, 2, 4, 1, 3, 2, 1, 4)[i]}",
            "assignee": ["ada", "bob", "cy"][i % 3],
        }
        for i, w in enumerate(
            "alpha bravo charlie delta echo foxtrot golf hotel india juliet "
            "kilo lima mike november".split()
        )
    ]
    settings = [{"id": "s1", "theme": "dark", "locale": "en"}]
    body = {"title": "title", "status": "status", "assignee": "assignee"}
    status = {"type": "string", "enum": ["open", "done", "blocked"]}
    tools = [
        op_tool("listProjects", "read", {}, [], {"op": "list", "collection": "projects"}),
        op_tool(
            "getProject",
            "read",
            {"projectId": S},
            ["projectId"],
            {"op": "get", "collection": "projects", "key": "projectId"},
        ),
        op_tool(
            "listProjectTasks",
            "read",
            {"projectId": S, "status": status},
            ["projectId"],
            {
                "op": "list",
                "collection": "tasks",
                "filters": {"status": "status"},
                "parents": [{"arg": "projectId", "field": "project_id", "collection": "projects"}],
            },
        ),
        op_tool("listTasks", "read", {}, [], {"op": "list", "collection": "tasks"}),
        op_tool(
            "getTask",
            "read",
            {"taskId": S},
            ["taskId"],
            {"op": "get", "collection": "tasks", "key": "taskId"},
        ),
        op_tool(
            "updateTask",
            "write",
            {"taskId": S, "title": S, "status": status, "assignee": S},
            ["taskId"],
            {"op": "update", "collection": "tasks", "key": "taskId", "body": body},
        ),
        op_tool(
            "createTask",
            "write",
            {"projectId": S, "title": S, "status": status, "points": INT},
            ["projectId", "title"],
            {
                "op": "create",
                "collection": "tasks",
                "body": {**body, "points": "points"},
                "parents": [{"arg": "projectId", "field": "project_id", "collection": "projects"}],
            },
        ),
        op_tool(
            "deleteTask",
            "write",
            {"taskId": S},
            ["taskId"],
            {"op": "delete", "collection": "tasks", "key": "taskId"},
        ),
        op_tool(
            "getSettings",
            "read",
            {"settingsId": S},
            ["settingsId"],
            {"op": "get", "collection": "settings", "key": "settingsId"},
        ),
    ]
    return EnvSpec(
        id="tracker",
        name="Tracker",
        description="Projects and their tasks.",
        tools=tools,
        collections={
            "projects": {"primary_key": "id"},
            "tasks": {"primary_key": "id", "references": {"project_id": "projects"}},
            "settings": {"primary_key": "id"},
        },
        records={"projects": projects, "tasks": tasks, "settings": settings},
        taxonomy={"l1": "L1-10 Productivity & Collaboration", "l2": "Tasks", "l3": "Tracker"},
        runtime=RuntimeSpec(max_turns=20),
    )


@pytest.fixture(scope="module")
def tracker() -> EnvSpec:
    spec = make_op_env()
    spec.tasks = synthesize_tasks(spec, n=16, seed=0)
    return spec


def _first_call_reward(env: AgentWorldEnv, task) -> float:
    env.reset(options={"task_id": task.id})
    call = task.gold["calls"][0]
    obs, *_ = env.step(orjson.dumps({"name": call["name"], "arguments": call["arguments"]}))
    submit = {"name": "submit", "arguments": {"answer": obs}}
    return float(env.step(orjson.dumps(submit).decode())[1])


# -- the graph ------------------------------------------------------------------------------
def test_graph_edges_follow_outputs_into_required_inputs():
    graph = ToolGraph(build_model(make_op_env()))
    e = graph.edge
    assert e("listProjects", "listProjectTasks").weight == STRONG  # project ids -> projectId
    assert e("listProjectTasks", "getProject").weight == STRONG  # tasks carry project_id
    assert e("getTask", "updateTask").weight == STRONG
    assert e("createTask", "listTasks").weight == WEAK  # same collection, nothing required
    assert e("listTasks", "createTask").weight == STRONG
    assert e("getSettings", "listTasks").weight == INDEPENDENT
    assert e("listTasks", "getSettings").weight == INDEPENDENT
    # no other tool returns settings ids, so getSettings starts walks too (from an anchor)
    assert set(graph.starts()) == {"listProjects", "listTasks", "getSettings"}
    assert graph.summary()["strong"] > graph.summary()["weak"] > 0


def test_walks_are_deterministic_and_fill_arguments_from_earlier_outputs():
    spec = make_op_env()
    model = build_model(spec)
    runner = Runner(spec)

    def walk(seed: int):
        walker = Walker(model, ToolGraph(model), runner, WalkConfig(max_length=6))
        w = walker.walk(random.Random(seed), "t", 6)
        return [(s.tool.name, s.args) for s in w.steps]

    first = walk(1)
    assert first == walk(1)
    assert len(first) >= 3
    assert any(walk(s) != first for s in range(2, 6))
    refs = [
        v for _, args in first for v in args.values() if isinstance(v, str) and v.startswith("$")
    ]
    assert refs, "later steps take earlier outputs as $<step>.<path> references"


# -- kept tasks -----------------------------------------------------------------------------
def test_every_kept_task_replays_to_one_and_is_not_trivial(tracker):
    kinds = {t.kind for t in tracker.tasks}
    assert kinds == {"graph", "program"}
    assert len(tracker.tasks) >= 10
    env = AgentWorldEnv(tracker, split="all")
    for task in tracker.tasks:
        result = replay_gold(env, task)
        assert result.ok, (task.id, result.errors, result.verification)
        assert score_answer(env, task, "") < 0.5, task.id
        assert _first_call_reward(env, task) < 0.5, task.id
        assert len(task.gold["calls"]) <= tracker.runtime.max_turns - 1


def test_requests_name_no_tool_and_leak_no_reported_value(tracker):
    names = [t.name.casefold() for t in tracker.tools]
    for task in tracker.tasks:
        text = task.instruction.casefold()
        assert not any(n in text for n in names), task.instruction
        if task.verifier["type"] == "rubric":
            for c in task.verifier["criteria"]:
                if c["check"]["type"] == "answer_contains" and isinstance(c["check"]["value"], str):
                    assert c["check"]["value"].casefold() not in text, task.instruction


def test_long_horizon_subset():
    spec = make_op_env()
    cfg = TaskSynthConfig(long_share=0.5, program_share=0.5)
    tasks = synthesize_tasks(spec, n=8, seed=2, config=cfg)
    long = [len(t.gold["calls"]) for t in tasks if t.difficulty.get("long_horizon")]
    assert long, "the tracker affords long tasks"
    assert min(long) >= 7 and all(n <= 19 for n in long)


def test_splits_share_no_request_or_gold_chain(tracker):
    train = [t for t in tracker.tasks if t.split == "train"]
    test = [t for t in tracker.tasks if t.split == "test"]
    assert train and test
    sig = lambda t: orjson.dumps(t.gold["calls"], option=orjson.OPT_SORT_KEYS)  # noqa: E731
    assert not {t.instruction for t in train} & {t.instruction for t in test}
    assert not {sig(t) for t in train} & {sig(t) for t in test}
    assert len({t.id for t in tracker.tasks}) == len(tracker.tasks)


def test_existing_tasks_are_not_repeated():
    spec = make_op_env()
    first = synthesize_tasks(spec, n=6, seed=5)
    spec.tasks = [t.__class__(**{**t.__dict__, "provenance": {"author": "someone"}}) for t in first]
    again = synthesize_tasks(spec, n=6, seed=5)
    assert not {t.instruction for t in again} & {t.instruction for t in first}


def test_notion_code_tools_get_graph_tasks(tmp_path):
    spec = EnvSpec.load(NOTION)
    spec.tasks = [t for t in spec.tasks] + synthesize_tasks(spec, n=10, seed=0)
    new = [t for t in spec.tasks if (t.provenance or {}).get("synthesizer") == "synth-tasks"]
    assert len(new) >= 10
    env = AgentWorldEnv(spec, split="all")
    for task in new:
        assert replay_gold(env, task).ok, task.id
        assert score_answer(env, task, "") < 0.5


# -- goal-stated requests, chained walks, the long-horizon rule, the turn budget -------------
def test_graph_requests_state_goals_not_steps(tracker):
    from agentworld_gym.synthesis import audit

    graph = [t for t in tracker.tasks if t.kind == "graph"]
    assert graph
    for task in graph:
        text = task.instruction
        assert not audit.numbered_steps(text), text
        assert "step " not in text.casefold(), text  # no "the task from step 2"
        assert not audit.placeholder_values(text), text


def test_graph_request_words_a_cancel_as_a_cancel():
    from agentworld_gym.synthesis.tasks.request.walk import GoalWriter
    from agentworld_gym.synthesis.tasks.sample.walk import Source, Step

    spec = make_op_env()
    spec.tools.append(
        op_tool(
            "CancelTask",
            "write",
            {"taskId": S, "status": S},
            ["taskId"],
            {"op": "update", "collection": "tasks", "key": "taskId", "body": {"status": "status"}},
        )
    )
    model = build_model(spec)
    step = Step(
        model.tools["CancelTask"],
        {"taskId": "t01"},
        {"taskId": Source("anchor", collection="tasks", field="id", value="t01")},
    )
    texts = {
        GoalWriter(model).write("Tracker", [step], [{}], [], random.Random(k))[0] for k in range(12)
    }
    assert len(texts) > 1, "several phrasings, chosen by seed"
    for text in texts:
        assert "cancel" in text.casefold() and "update" not in text.casefold(), text


def test_walks_are_chained_by_default():
    spec = make_op_env()
    model = build_model(spec)
    walker = Walker(model, ToolGraph(model), Runner(spec), WalkConfig(min_length=3, max_length=5))
    for k in range(10):
        w = walker.walk(random.Random(k), f"w{k}", 5)
        for step in w.steps[1:]:
            assert any(s.kind == "ref" for s in step.sources.values()), step.tool.name


def test_long_horizon_rule_wants_chained_calls_over_three_tools():
    from agentworld_gym.synthesis.tasks.candidate import chained, long_horizon

    keys = {("getTask", "taskId"), ("updateTask", "taskId")}
    listing = [{"id": f"t0{i}"} for i in range(1, 5)]
    calls = [{"name": "listTasks", "arguments": {}}]
    calls += [{"name": "getTask", "arguments": {"taskId": f"t0{i}"}} for i in range(1, 5)]
    calls += [
        {"name": "updateTask", "arguments": {"taskId": f"t0{i}", "title": "Q3 plan"}}
        for i in range(1, 4)
    ]
    outputs = [listing] + listing + listing[:3]
    writes = {"updateTask"}
    assert chained(calls, outputs, keys) and long_horizon(calls, outputs, keys, "", writes)
    batch = [{"name": "createTask", "arguments": {"title": f"Item {i}"}} for i in range(9)]
    assert not long_horizon(batch, [{}] * 9, keys), "one tool repeated is a batch"
    unrelated = (
        calls[:4] + [{"name": "getSettings", "arguments": {"settingsId": "main"}}] + calls[4:]
    )
    assert not chained(unrelated, outputs[:4] + [{"theme": "dark"}] + outputs[4:], keys)
    assert chained(
        unrelated, outputs[:4] + [{"theme": "dark"}] + outputs[4:], keys, "the main theme"
    )


def _hops(n: int) -> tuple[list[dict], list[dict]]:
    """``n`` chained reads: each looks up the record the previous one points to."""
    calls = [{"name": "getEpisode", "arguments": {"id": "ep-00"}}]
    calls += [
        {"name": "getPodcast" if i % 2 else "getEpisode", "arguments": {"id": f"${i - 1}.next"}}
        for i in range(1, n)
    ]
    outputs = [{"id": f"ep-{i:02d}", "next": f"ep-{i + 1:02d}", "title": "T"} for i in range(n)]
    return calls, outputs


def test_a_request_naming_a_record_deep_in_a_chain_needs_only_the_rest():
    from agentworld_gym.synthesis.tasks.candidate import long_horizon, needed

    calls, outputs = _hops(10)
    calls[-1] = {"name": "listReviews", "arguments": {"id": "$8.next"}}
    assert needed(calls, outputs, set(), "What do the reviews say?") == list(range(10))
    assert long_horizon(calls, outputs, set(), "What do the reviews say?", writes=set())
    # the request names the record step 7 returned: the agent starts there
    goal = 'What is the title of the review of "ep-08"?'
    assert needed(calls, outputs, set(), goal) == [8, 9]
    assert not long_horizon(calls, outputs, set(), goal, writes=set())
    # a program's reads may decide its branches: every call counts
    assert long_horizon(calls, outputs, set(), goal)


def test_a_repeated_read_is_not_needed_twice_and_writes_always_are():
    from agentworld_gym.synthesis.tasks.candidate import needed

    calls = [
        {"name": "listTasks", "arguments": {}},
        {"name": "getTask", "arguments": {"taskId": "$0.0.id"}},
        {"name": "listTasks", "arguments": {}},  # the same listing again: nothing new
        {"name": "getTask", "arguments": {"taskId": "$2.1.id"}},
        {"name": "updateTask", "arguments": {"taskId": "t01", "title": "Q3 plan"}},
        {"name": "listTasks", "arguments": {}},  # after a write: a fresh read
    ]
    listing = [{"id": "t01"}, {"id": "t02"}]
    outputs = [listing, {"id": "t01"}, listing, {"id": "t02"}, {"id": "t01"}, listing]
    keys = {("getTask", "taskId"), ("updateTask", "taskId")}
    assert needed(calls, outputs, keys, "Rename them", {"updateTask"}) == [0, 1, 3, 4, 5]
    # without the write known as one, a read of the same listing after it is a repeat
    assert 5 not in needed(calls, outputs, keys, "Rename them")


def test_long_tasks_get_a_turn_budget_to_recover(tracker):
    import math

    from agentworld_gym.synthesis.tasks.candidate import LONG_CALLS

    for task in tracker.tasks:
        calls = len(task.gold["calls"])
        assert task.difficulty["max_turns"] >= math.ceil(1.5 * (calls + 1))
        if task.difficulty.get("long_horizon"):
            assert calls >= LONG_CALLS
    task = max(tracker.tasks, key=lambda t: len(t.gold["calls"]))
    env = AgentWorldEnv(tracker, split="all")
    _, info = env.reset(options={"task_id": task.id})
    assert info["max_turns"] == env.max_turns == task.difficulty["max_turns"]
    assert (
        AgentWorldEnv(tracker, split="all", max_turns=3).reset(options={"task_id": task.id})[1][
            "max_turns"
        ]
        == 3
    )


def test_requests_read_as_one_goal_in_words_people_know(tracker):
    from agentworld_gym.synthesis import audit
    from agentworld_gym.synthesis.words import prose_words

    words = prose_words(tracker)
    for task in tracker.tasks:
        assert audit.unreadable(task.instruction, words) is None, task.instruction
        assert "again, this time" not in task.instruction


def test_graph_gold_looks_up_nothing_the_request_states(tracker):
    # a key the request quotes is given to the call that needs it, not read from an earlier
    # lookup: such a lookup is a call the agent never needs, and a long label it never earned
    for task in tracker.tasks:
        if task.kind != "graph":
            continue
        calls = task.gold["calls"]
        env = AgentWorldEnv(tracker, split="all")
        env.reset(options={"task_id": task.id})
        outputs = []
        for c in calls:
            args = {
                k: _resolve(v, outputs) if isinstance(v, str) and v.startswith("$") else v
                for k, v in c["arguments"].items()
            }
            obs, *_ = env.step(orjson.dumps({"name": c["name"], "arguments": args}).decode())
            outputs.append(orjson.loads(obs))
            for k, v in c["arguments"].items():
                if isinstance(v, str) and v.startswith("$"):
                    assert f'"{args[k]}"' not in task.instruction, (task.instruction, calls)


def _resolve(ref: str, outputs: list) -> object:
    step, _, path = ref[1:].partition(".")
    value = outputs[int(step)]
    for part in path.split(".") if path else []:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def test_a_google_style_parent_is_named_by_the_resource_above():
    from agentworld_gym.synthesis.tasks.model import generic_parent, parent_noun

    assert parent_noun("alloydb_projects_locations_backups_list", "backups") == "location"
    assert parent_noun("cloudtasks_projects_locations_queues_tasks_list", "tasks") == "queue"
    assert (
        parent_noun("baremetalsolution_projects_locations_provisioningQuotas_list", "quotas_x")
        is None
    )
    assert parent_noun("listBackups", "backups") is None  # nothing above: the field's word
    assert generic_parent("parent") and generic_parent("parentName")
    assert not generic_parent("project_id")


def test_no_walk_writes_one_field_of_one_record_twice():
    from agentworld_gym.synthesis.tasks.sample.walk import _written

    spec = make_op_env()
    model = build_model(spec)
    cfg = WalkConfig(min_length=4, max_length=8, max_writes=6)
    walker = Walker(model, ToolGraph(model), Runner(spec), cfg)
    for k in range(20):
        w = walker.walk(random.Random(k), f"w{k}", 8)
        seen: set = set()
        for i, step in enumerate(w.steps):
            marks = _written(type(w)(steps=[step]))
            assert not marks & seen, (k, i, step.args)
            seen |= marks


def test_a_nameless_listed_record_is_named_by_its_key_not_its_place():
    from agentworld_gym.synthesis.tasks.request.walk import GoalWriter
    from agentworld_gym.synthesis.tasks.sample.walk import Source, Step

    model = build_model(make_op_env())
    rows = [{"id": f"t0{i}", "status": "open"} for i in range(4)]  # no title: no name
    listing = Step(model.tools["listTasks"], {}, {}, record_path="2")
    get = Step(
        model.tools["getTask"],
        {"taskId": "$0.2.id"},
        {"taskId": Source("ref", 0, "2.id", "tasks", "id", "t02")},
    )
    writer = GoalWriter(model)
    assert writer.target(get, [listing, get], [rows, rows[2]], "task") == 'the task "t02"'
    assert not writer.problems


def test_a_record_found_in_one_scope_is_not_addressed_in_another():
    from types import SimpleNamespace as NS

    from agentworld_gym.synthesis.tasks.goal.walk import _moved
    from agentworld_gym.synthesis.tasks.model import KEY, SCOPE
    from agentworld_gym.synthesis.tasks.sample.walk import Source

    def tool(op: str, **roles: str) -> NS:
        return NS(op=op, params={n: NS(role=r) for n, r in roles.items()})

    # list the events of dag B, then update "the dag run of the event" in dag A
    events = NS(tool=tool("list", dag_id=SCOPE), sources={"dag_id": Source("given", value="B")})

    def update(dag: str) -> NS:
        sources = {"run_id": Source("ref", 0, "0.run_id"), "dag_id": Source("given", value=dag)}
        return NS(tool=tool("update", run_id=KEY, dag_id=SCOPE), sources=sources)

    assert _moved([events, update("A")])
    assert not _moved([events, update("B")])
    # a new record made in another scope from a found one is a copy, not a broken chain
    copy = NS(tool=tool("create", dag_id=SCOPE), sources=update("A").sources)
    assert not _moved([events, copy])


def test_a_walk_keeps_only_the_calls_after_the_record_its_request_names():
    from agentworld_gym.synthesis.tasks.goal.walk import GraphTaskBuilder
    from agentworld_gym.synthesis.tasks.request.walk import Fact

    spec = make_op_env()
    model = build_model(spec)
    runner = Runner(spec)
    walker = Walker(model, ToolGraph(model), runner, WalkConfig(min_length=3, max_length=5))
    builder = GraphTaskBuilder(model, runner, 0)
    shortened = 0
    for k in range(30):
        walk = walker.walk(random.Random(k), f"w{k}", 4)
        steps, last = walk.steps, len(walk.steps) - 1
        named = [(n, s) for n, s in steps[last].sources.items() if s.kind == "ref"]
        if len(named) != 1 or not isinstance(named[0][1].value, str) or walk.writes:
            continue
        name, ref = named[0]
        facts = [Fact(last, "count")]
        kept, facts = builder._start_at_named(steps, facts, "No record named.", walk.outputs)
        assert kept is steps  # nothing named: every call is needed
        request = f'Tell me about "{ref.value}".'  # names the record the last call reads from
        kept, facts = builder._start_at_named(steps, facts, request, walk.outputs)
        assert kept[-1].tool is steps[last].tool and facts[0].step == len(kept) - 1
        if kept[-1].sources[name].kind == "anchor":  # else the record's finder stays for more
            assert kept[-1].args[name] == ref.value
        feeds_others = any(
            s.kind == "ref" and s.step == ref.step
            for st in steps[:last]
            for s in st.sources.values()
        )
        if not feeds_others and ref.step == last - 1:
            assert len(kept) < len(steps)  # the call that found the named record is gone
            assert kept[-1].args[name] == ref.value
            shortened += 1
        replay = runner.run([{"name": s.tool.name, "arguments": s.args} for s in kept], "t")
        assert replay.ok and replay.outputs[-1] == walk.outputs[last]
    assert shortened >= 2


def test_a_field_that_disagrees_with_its_twin_is_never_a_condition_or_a_name():
    # specs that merge a request's and a response's spelling give records both ``status``
    # and ``Status``: "the ones whose status is "open"" could mean either
    from agentworld_gym.synthesis.tasks.model import profile, twinned

    rows = [
        {"id": f"r{i}", "status": s, "Status": t, "name": f"Item {i}", "Name": f"Item {i}"}
        for i, (s, t) in enumerate([("open", "closed"), ("open", "open"), ("done", "done")] * 2)
    ]
    assert twinned(rows) == {"status", "Status"}
    prof = profile(rows, "id", {})
    assert "status" not in prof.categorical and "Status" not in prof.categorical
    assert "name" in prof.labels  # twins that agree everywhere say the same thing
    assert twinned([{"id": "a", "friendly_name": "x", "FriendlyName": "y"}]) == {
        "friendly_name",
        "FriendlyName",
    }


def test_a_walk_gives_every_value_its_gold_passes(tracker):
    # "the location of the workspace of the job "catalog-west"" over a listing that needs the
    # job's workspace: a value neither the request nor an earlier call gives is a guess
    from types import SimpleNamespace

    from agentworld_gym.synthesis.tasks.candidate import given_in
    from agentworld_gym.synthesis.tasks.pipeline import EnvSynthesizer

    synth = EnvSynthesizer(make_op_env(), TaskSynthConfig(n=4))
    calls = [
        {"name": "listProjectTasks", "arguments": {"projectId": "p2"}},
        {"name": "getTask", "arguments": {"taskId": "$0.0.id"}},
    ]

    def walk(request: str) -> SimpleNamespace:
        task = SimpleNamespace(kind="graph", gold={"calls": calls}, instruction=request)
        return SimpleNamespace(task=task)

    assert synth._unsaid(walk('Who is assigned the open task in project "p2"?')) is None
    assert synth._unsaid(walk("Who is assigned the open task?")) is not None
    # every walk the synthesizer keeps passes only values its request states
    walks = [t for t in tracker.tasks if t.kind == "graph"]
    assert walks
    for t in walks:
        for call in t.gold["calls"]:
            for value in call["arguments"].values():
                if isinstance(value, str) and not value.startswith("$"):
                    assert given_in(value, t.instruction), (t.instruction, call)


def test_an_unsaid_value_is_refused_even_under_the_floor(monkeypatch):
    # the rounds that relax readability for an environment under its floor never keep a
    # walk whose request leaves out a value (a guess is no task): here every walk leaves one
    from agentworld_gym.synthesis.tasks.pipeline import EnvSynthesizer

    def unsaid(self, c):
        return "a value the request does not give" if c.task.kind == "graph" else None

    monkeypatch.setattr(EnvSynthesizer, "_unsaid", unsaid)
    cfg = TaskSynthConfig(min_tasks=20, attempts=1)
    made = synthesize_tasks(make_op_env(), n=20, seed=3, config=cfg)
    assert made and not [t for t in made if t.kind == "graph"]


def test_a_request_never_quotes_an_id_the_user_would_have_to_invent(tracker):
    # "create a calendar with id "id_42970f2b56"": people name what they create; an id-shaped
    # value a request quotes must be one the world holds (an order number, a key to find)
    from types import SimpleNamespace

    from agentworld_gym.synthesis.audit import id_shaped, quoted
    from agentworld_gym.synthesis.tasks.pipeline import EnvSynthesizer

    env = make_op_env()
    env.database.put("settings", {"id": "set_8f2a9c1e7b", "theme": "light", "locale": "fr"})
    synth = EnvSynthesizer(env, TaskSynthConfig(n=4))

    def ask(request: str) -> SimpleNamespace:
        return SimpleNamespace(task=SimpleNamespace(kind="program", instruction=request))

    assert synth._made_up_id(ask('Add a calendar with id "id_42970f2b56".')) is not None
    assert synth._made_up_id(ask('Add a calendar named "Spring Launch".')) is None
    # an id the world holds is one the user can quote (an order number, a key to find)
    assert synth._made_up_id(ask('Reset the settings "set_8f2a9c1e7b".')) is None
    world = make_op_env().database.snapshot_json().decode()
    for t in tracker.tasks:  # the synthesizer keeps none
        for v in quoted(t.instruction):
            assert not id_shaped(v) or v.isdigit() or v in world, (t.instruction, v)
