"""Program templates for the shapes generated APIs have: records named by key, one lookup that
decides a write, children per parent, create-only and write-only APIs; their scripts; and the
catalog rules (seed tasks that fail acceptance are dropped, small environments still get ten)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import orjson
import pytest
from test_synth_tasks import S, _first_call_reward, make_op_env

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.ops import op_tool
from agentworld_gym.registry import build_index
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.sandbox import run_function
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec
from agentworld_gym.synthesis import audit
from agentworld_gym.synthesis.tasks import synthesize_tasks
from agentworld_gym.synthesis.tasks.catalog import synthesize_catalog
from agentworld_gym.synthesis.tasks.gate.accept import reward_of
from agentworld_gym.synthesis.tasks.model import build_model
from agentworld_gym.synthesis.tasks.pipeline import TaskSynthConfig
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.programs import Caller, capabilities
from agentworld_gym.synthesis.tasks.sample.templates.given import batch_update
from agentworld_gym.synthesis.tasks.sample.templates.lookup_create import (
    create_batch,
    lookup_branch,
)
from agentworld_gym.synthesis.tasks.sample.templates.reconcile import reconcile
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs
from agentworld_gym.synthesis.tasks.verifier.scripts import script

INT = {"type": "integer", "minimum": 1, "maximum": 900}
STATE = {
    "projects": [
        {"id": "p1", "name": "Apollo", "status": "active", "budget": 40},
        {"id": "p2", "name": "Borealis", "status": "archived", "budget": 90},
    ],
    "tasks": [
        {"id": "t1", "status": "open", "points": 3, "project_id": "p1", "owner": "ada"},
        {"id": "t2", "status": "done", "points": 8, "project_id": "p1", "owner": "bob"},
        {"id": "t3", "status": "open", "points": 5, "project_id": "p2", "owner": "ada"},
    ],
}


def _verify(kind: str, params: dict, final: dict, answer: str) -> float:
    result = run_function(script(kind, params), "verify", [STATE, final, answer])
    assert result.ok, result.error
    return reward_of(result.value)


def _with(coll: str, changes: dict[str, dict], new: list[dict] = ()) -> dict:
    rows = [{**r, **changes.get(r["id"], {})} for r in STATE[coll]]
    return {**STATE, coll: [r for r in rows if "_gone" not in r] + list(new)}


# -- scripts --------------------------------------------------------------------------------
def test_cond_script_follows_the_branch_the_initial_state_takes():
    # "Look up project p1. If its status is "active", set task t2's owner to cy; otherwise
    #  delete t2. Tell me its status."
    p = {
        "c": "projects",
        "k": "id",
        "ka": "p1",
        "f": "status",
        "if": "eq",
        "v": "active",
        "tc": "tasks",
        "tk": "id",
        "then": ["t2", ["owner", "cy"]],
        "else": ["t2", None],
    }
    assert _verify("cond", p, _with("tasks", {"t2": {"owner": "cy"}}), "active") == 1.0
    assert _verify("cond", p, _with("tasks", {"t2": {"_gone": 1}}), "active") == pytest.approx(0.3)
    both = _with("tasks", {"t2": {"owner": "cy"}, "t3": {"owner": "cy"}})
    assert _verify("cond", p, both, "active") == 0.0  # a record outside the branch changed
    other = {**p, "v": "archived"}  # now the else branch: delete t2
    assert _verify("cond", other, _with("tasks", {"t2": {"_gone": 1}}), "active") == 1.0
    # two records compared: the one with the greater budget (p2) gets its value
    cmp = {**p, "if": "cmp", "ka": "p1", "kb": "p2", "f": "budget", "tc": "projects"}
    cmp.update({"then": ["p1", ["name", "X"]], "else": ["p2", ["name", "Y"]]})
    assert _verify("cond", cmp, _with("projects", {"p2": {"name": "Y"}}), "90") == 1.0
    assert _verify("cond", cmp, _with("projects", {"p1": {"name": "X"}}), "90") == 0.0


def test_made_script_matches_new_records_by_their_fields_and_link():
    batch = {
        "c": "projects",
        "k": "id",
        "all": [["status", "active"]],
        "want": [[["name", "Cygnus"], ["budget", 5]], [["name", "Draco"], ["budget", 7]]],
        "n": 2,
    }
    new = [
        {"id": "x1", "name": "Cygnus", "budget": 5, "status": "active"},
        {"id": "x2", "name": "Draco", "budget": 7, "status": "active"},
    ]
    assert _verify("made", batch, _with("projects", {}, new), "added 2") == 1.0
    assert _verify("made", batch, _with("projects", {}, new[:1]), "2") == pytest.approx(0.65)
    extra = new + [{"id": "x3", "name": "Extra", "budget": 1, "status": "active"}]
    assert _verify("made", batch, _with("projects", {}, extra), "2") == 0.0
    assert _verify("made", batch, _with("projects", {"p1": {"budget": 1}}, new), "2") == 0.0
    # a chain: a new project, then tasks linked to the key the API gave it
    chain = {
        "c": "tasks",
        "k": "id",
        "pc": "projects",
        "pk": "id",
        "pw": [["name", "Cygnus"]],
        "pf": "project_id",
        "all": [],
        "want": [[["owner", "cy"]], [["owner", "dee"]]],
        "n": 2,
    }
    final = {
        "projects": STATE["projects"] + [{"id": "gen-9", "name": "Cygnus"}],
        "tasks": STATE["tasks"]
        + [{"id": "t8", "owner": "cy", "project_id": "gen-9"}]
        + [{"id": "t9", "owner": "dee", "project_id": "gen-9"}],
    }
    assert _verify("made", chain, final, "I added 2 tasks.") == 1.0
    final["tasks"][-1]["project_id"] = "p1"  # linked to an old project: not this one
    assert _verify("made", chain, final, "2") == pytest.approx(0.35 + 0.3)


def test_which_branch_and_children_scripts():
    which = {"c": "tasks", "k": "id", "w": [["owner", "ada"]], "ks": ["t1", "t2"], "lf": "id"}
    assert _verify("which", which, STATE, "Just t1.") == 1.0
    assert _verify("which", which, STATE, "t1 and t2") == 0.0  # t2 is not ada's
    # "for each of t1..t3: if its owner is ada set status done, otherwise blocked; how many done"
    branch = {"c": "tasks", "k": "id", "w": [], "ks": ["t1", "t2", "t3"], "g": "status"}
    branch.update(wc=[["owner", "ada"]], a="done", b="blocked")
    final = _with("tasks", {"t1": {"status": "done"}, "t2": {"status": "blocked"}})
    final["tasks"][2]["status"] = "done"
    assert _verify("branch", branch, final, "2 of them") == 1.0
    children = {"c": "tasks", "k": "id", "w": [["status", "open"]], "nf": "points", "op": "sum"}
    children.update(tol=0.01, pf="project_id", pks=["p2"])
    assert _verify("aggregate", children, STATE, "5") == 1.0
    assert _verify("aggregate", children, STATE, "8") == 0.0
    # numbers inside ids are not answers; a dump of many numbers is not an answer either
    count = {**children, "op": "count", "nf": "", "pks": ["p1", "p2"]}
    assert _verify("aggregate", count, STATE, "id 7c2be11e-fc27") == 0.0
    assert _verify("aggregate", count, STATE, "There are 2.") == 1.0


def test_tend_script_needs_every_parent_updated_and_given_one_child():
    # "Find all active projects, set their status to "paused" and add a task with owner "cy"
    #  under each; tell me how many projects."
    p = {"c": "tasks", "k": "id", "g": "owner", "v": "cy", "pc": "projects", "pk": "id"}
    p.update(pw=[["status", "active"]], pf="project_id", pg="status", pv="paused")
    child = {"id": "t9", "status": "open", "points": 1, "project_id": "p1", "owner": "cy"}
    done = _with("tasks", {}, [child])
    done["projects"] = [{**STATE["projects"][0], "status": "paused"}, STATE["projects"][1]]
    assert _verify("tend", p, done, "1 project") == 1.0
    assert _verify("tend", p, done, "") == pytest.approx(0.7)  # the count is part of the ask
    no_child = {**STATE, "projects": done["projects"]}
    assert _verify("tend", p, no_child, "1") == pytest.approx(0.65)  # half the writes
    assert _verify("tend", p, _with("tasks", {}, [child]), "1") == pytest.approx(0.65)
    stray = _with("tasks", {}, [child, {**child, "id": "t10", "project_id": "p2"}])
    stray["projects"] = done["projects"]
    assert _verify("tend", p, stray, "1") == 0.0  # a child under a parent not asked for
    both = {**done, "projects": [done["projects"][0], {**STATE["projects"][1], "status": "x"}]}
    assert _verify("tend", p, both, "1") == 0.0  # a parent outside the condition changed
    assert _verify("tend", p, STATE, "1") == pytest.approx(0.3)  # nothing done


def test_sweep_script_deletes_the_matching_and_sets_the_rest():
    # "Among the tasks, delete the done ones and set the owner of the rest to "cy"; how many
    #  did you delete?"
    p = {"c": "tasks", "k": "id", "w": [], "wc": [["status", "done"]], "g": "owner", "v": "cy"}
    done = _with("tasks", {"t1": {"owner": "cy"}, "t2": {"_gone": 1}, "t3": {"owner": "cy"}})
    assert _verify("sweep", p, done, "I deleted 1 task.") == 1.0
    assert _verify("sweep", p, done, "") == pytest.approx(0.7)  # the count is part of the ask
    assert _verify("sweep", p, done, "3") == pytest.approx(0.7)  # every task is not the ask
    kept = _with("tasks", {"t1": {"owner": "cy"}, "t2": {"owner": "cy"}, "t3": {"owner": "cy"}})
    # the done task updated instead of deleted
    assert _verify("sweep", p, kept, "1") == pytest.approx(0.3 + 0.7 * 2 / 3)
    wiped = _with("tasks", {"t1": {"_gone": 1}, "t2": {"_gone": 1}, "t3": {"_gone": 1}})
    assert _verify("sweep", p, wiped, "1") < 0.6  # deleting everything is not the clean-up
    assert _verify("sweep", p, STATE, "1") == pytest.approx(0.3)  # nothing done
    # in a scope: records outside it must stay as they were
    scoped = {**p, "w": [["project_id", "p1"]]}
    inside = _with("tasks", {"t1": {"owner": "cy"}, "t2": {"_gone": 1}})
    assert _verify("sweep", scoped, inside, "1") == 1.0
    outside = _with("tasks", {"t1": {"owner": "cy"}, "t2": {"_gone": 1}, "t3": {"owner": "cy"}})
    assert _verify("sweep", scoped, outside, "1") == 0.0


def test_reconcile_script_wants_exactly_the_listed_names():
    # "The tasks in project p1 should be exactly these: "Task bravo" and "Task new", each with
    #  assignee "cy"; delete any others, add the missing ones. How many did you delete?"
    part = {"c": "tasks", "k": "id", "w": [["project_id", "p1"]], "nf": "title"}
    part |= {"names": ["Task new", "T2"], "add": ["Task new"], "g": "owner", "v": "cy"}
    part["all"] = [["project_id", "p1"], ["owner", "cy"]]
    state = {**STATE, "tasks": [{**r, "title": f"T{r['id'][1]}"} for r in STATE["tasks"]]}
    p = {"parts": [part]}

    def verify(final: dict, answer: str) -> float:
        result = run_function(script("reconcile", p), "verify", [state, final, answer])
        assert result.ok, result.error
        return reward_of(result.value)

    t1, t2, t3 = state["tasks"]
    new = {"id": "t9", "title": "Task new", "project_id": "p1", "owner": "cy", "status": "open"}
    done = {**state, "tasks": [{**t2, "owner": "cy"}, t3, new]}
    assert verify(done, "I deleted 1 task.") == 1.0
    assert verify(done, "") == pytest.approx(0.7)  # the count is part of the ask
    assert verify(state, "1") == pytest.approx(0.3)  # nothing done
    # everything deleted and the list created afresh: the kept task is gone
    fresh = {**state, "tasks": [t3, new, {**new, "id": "t8", "title": "T2"}]}
    assert verify(fresh, "2") == 0.0  # and a record was made that the list did not need
    assert verify({**state, "tasks": [t3, new]}, "2") < 0.6
    # the new task without the setting every one should carry
    assert verify({**state, "tasks": [{**t2, "owner": "cy"}, t3, {**new, "owner": "x"}]}, "1") < 1
    # a task outside the project touched
    assert verify({**state, "tasks": [{**t2, "owner": "cy"}, new]}, "1") == 0.0
    # two parts (a configuration of two collections): the count is over both
    other = {"c": "projects", "k": "id", "w": [], "nf": "name", "names": ["Apollo"], "add": []}
    other |= {"all": [], "g": "", "v": None}
    p = {"parts": [part, other]}
    both = {**done, "projects": [STATE["projects"][0]]}
    assert verify(both, "I deleted 2 in all.") == 1.0
    assert verify(done, "2") < 1.0  # the second collection left as it was
    # two scopes of one collection: each part's records are the other's to change
    p2 = {**part, "w": [["project_id", "p2"]], "names": ["T3"], "add": [], "g": "", "v": None}
    p = {"parts": [part, {**p2, "all": [["project_id", "p2"]]}]}
    assert verify(done, "1") == 1.0
    assert verify({**done, "tasks": [{**t2, "owner": "cy"}, new]}, "2") < 0.6  # p2's task gone


def _two_part_reconciles(spec: EnvSpec) -> tuple[list, Runner]:
    """Long reconcile instances of two parts over 40 seeds, and the runner to play them."""
    model, runner = build_model(spec), Runner(spec)
    caps = capabilities(model, runner)
    made = [
        reconcile(model, caps, random.Random(seed), Knobs(long=True, min_calls=8))
        for seed in range(40)
    ]
    return [p for p in made if p is not None and len(p.params["parts"]) == 2], runner


def test_long_reconcile_of_one_collection_sets_up_two_scopes():
    spec = make_full_env()
    two, runner = _two_part_reconciles(spec)
    assert two
    facts = audit.env_facts(spec.to_dict())
    for prog in two[:3]:
        a, b = prog.params["parts"]
        assert a["c"] == b["c"] == "tasks" and a["w"] != b["w"]
        caller = Caller(runner, "t", 19)
        answer = prog.run(caller)
        task = {"instruction": prog.request, "gold": {"calls": caller.calls}}
        assert not audit.verb_mismatches(task, facts), prog.request  # each write worded so
        result = run_function(
            script("reconcile", prog.params),
            "verify",
            [runner.base.snapshot(), caller.ctx.db.snapshot(), str(answer)],
        )
        assert result.ok and reward_of(result.value) == 1.0, (result, prog.request)


# -- templates, end to end ------------------------------------------------------------------
def make_full_env() -> EnvSpec:
    """The tracker with create and update tools for projects (parents can be created, then
    children; a parent's status set while a child is added)."""
    spec = make_op_env()
    spec.tools.append(
        op_tool(
            "createProject",
            "write",
            {"name": S, "status": {"type": "string", "enum": ["active", "archived"]}},
            ["name"],
            {
                "op": "create",
                "collection": "projects",
                "body": {"name": "name", "status": "status"},
            },
        )
    )
    for rec, tier in zip(
        spec.records["projects"], ["gold", "silver", "gold", "silver"], strict=True
    ):
        rec["tier"] = tier
    spec.tools.append(
        op_tool(
            "updateProject",
            "write",
            {"projectId": S, "status": {"type": "string", "enum": ["active", "archived"]}},
            ["projectId"],
            {
                "op": "update",
                "collection": "projects",
                "key": "projectId",
                "body": {"status": "status"},
            },
        )
    )
    return spec


def make_write_only_env() -> EnvSpec:
    """An API that can only write: owners and their campaigns, created and updated."""
    owners = [{"id": f"o{i}", "name": f"Owner {i}"} for i in range(1, 5)]
    channels = ["mail", "web", "phone"]
    campaigns = [
        {"id": f"c{i}", "title": f"Campaign {i}", "budget": 50 * i, "channel": channels[i % 3]}
        | {"owner_id": f"o{i % 4 + 1}"}
        for i in range(1, 9)
    ]
    channel = {"type": "string", "enum": channels}
    tools = [
        op_tool(
            "createOwner",
            "write",
            {"name": S},
            ["name"],
            {"op": "create", "collection": "owners", "body": {"name": "name"}},
        ),
        op_tool(
            "createCampaign",
            "write",
            {"ownerId": S, "title": S, "budget": INT, "channel": channel},
            ["ownerId", "title"],
            {
                "op": "create",
                "collection": "campaigns",
                "body": {"ownerId": "owner_id", "title": "title", "budget": "budget"}
                | {"channel": "channel"},
            },
        ),
        op_tool(
            "updateCampaign",
            "write",
            {"campaignId": S, "channel": channel, "title": S},
            ["campaignId"],
            {
                "op": "update",
                "collection": "campaigns",
                "key": "campaignId",
                "body": {"channel": "channel", "title": "title"},
            },
        ),
    ]
    return EnvSpec(
        id="mailer",
        name="Mailer",
        description="Campaigns and their owners, write-only.",
        tools=tools,
        collections={
            "owners": {"primary_key": "id"},
            "campaigns": {"primary_key": "id", "references": {"owner_id": "owners"}},
        },
        records={"owners": owners, "campaigns": campaigns},
        taxonomy={"l1": "L1-10 Productivity & Collaboration", "l2": "Mail", "l3": "Mailer"},
        runtime=RuntimeSpec(max_turns=20),
    )


def _check_all(spec: EnvSpec, tasks: list[TaskSpec]) -> None:
    env = AgentWorldEnv(spec, split="all")
    for task in tasks:
        result = replay_gold(env, task)
        assert result.ok, (task.id, task.instruction, result.errors, result.verification)
        assert score_answer(env, task, "") < 0.5, task.id
        assert _first_call_reward(env, task) < 0.5, task.id


NEW = (
    "lookup_branch",
    "children_agg",
    "batch_read",
    "batch_update",
    "create_each",
    "create_batch",
    "create_chain",
    "update_create_each",
    "sweep",
    "reconcile",
)


@pytest.mark.parametrize("template", NEW)
def test_each_new_template_yields_verified_tasks(template):
    spec = make_full_env()
    cfg = TaskSynthConfig(long_share=0.0, min_tasks=0)
    made = synthesize_tasks(spec, n=4, seed=1, program_share=1.0, patterns=(template,), config=cfg)
    tasks = [t for t in made if t.kind == "program"]
    assert tasks, template
    assert {t.provenance["method"] for t in tasks} == {template}
    names = [t.name.casefold() for t in spec.tools]
    for t in tasks:
        assert not any(n in t.instruction.casefold() for n in names), t.instruction
    spec.tasks = tasks
    _check_all(spec, tasks)


def test_long_reconcile_sets_up_two_collections_and_verifies():
    spec = make_full_env()
    spec.tools.append(
        op_tool(
            "deleteProject",
            "write",
            {"projectId": S},
            ["projectId"],
            {"op": "delete", "collection": "projects", "key": "projectId"},
        )
    )
    two, runner = _two_part_reconciles(spec)
    assert two
    prog = two[0]
    caller = Caller(runner, "t", 19)
    answer = prog.run(caller)
    tools = {c["name"] for c in caller.calls}
    assert {"listProjects", "createProject", "deleteProject", "createTask", "deleteTask"} <= tools
    assert len(caller.calls) >= 8
    names = [n for part in prog.params["parts"] for n in part["names"]]
    assert all(f'"{n}"' in prog.request for n in names)  # the request states the end state
    result = run_function(
        script("reconcile", prog.params),
        "verify",
        [runner.base.snapshot(), caller.ctx.db.snapshot(), str(answer)],
    )
    assert result.ok and reward_of(result.value) == 1.0, (result, prog.request)


def test_lookup_branch_writes_the_branch_the_data_takes():
    spec = make_full_env()
    model, runner = build_model(spec), Runner(spec)
    caps = capabilities(model, runner)
    records = {c: {str(r[m.pk]): r for r in m.records} for c, m in model.collections.items()}
    seen = set()
    for seed in range(60):
        prog = lookup_branch(model, caps, random.Random(seed), Knobs())
        if prog is None:
            continue
        caller = Caller(runner, "t", 19)
        prog.run(caller)
        p = prog.params
        x = records[p["c"]][p["ka"]][p["f"]]
        if p["if"] == "eq":
            yes = str(x) == str(p["v"])
        elif p["if"] == "gt":
            yes = x > p["v"]
        else:
            yes = x > records[p["c"]][p["kb"]][p["f"]]
        target, act = p["then"] if yes else p["else"]
        write = caller.calls[-1]
        assert target in orjson.dumps(write["arguments"]).decode()
        if act is not None:
            assert act[1] in write["arguments"].values()
        seen.add(p["if"])
    assert {"eq", "gt", "cmp"} <= seen


def test_create_batch_rule_sets_the_computed_field():
    spec = make_write_only_env()
    model, runner = build_model(spec), Runner(spec)
    caps = capabilities(model, runner)
    ruled = 0
    for seed in range(40):
        prog = create_batch(model, caps, random.Random(seed), Knobs())
        if prog is None or " above " not in prog.request:
            continue
        caller = Caller(runner, "t", 19)
        answer = prog.run(caller)
        t = int(prog.request.split(" above ")[1].split()[0].rstrip(",;."))
        budgets = [c["arguments"]["budget"] for c in caller.calls]
        channels = [c["arguments"]["channel"] for c in caller.calls]
        high = {ch for b, ch in zip(budgets, channels, strict=True) if b > t}
        low = {ch for b, ch in zip(budgets, channels, strict=True) if b <= t}
        assert len(high) == 1 and len(low) == 1 and high != low
        assert str(sum(b > t for b in budgets)) in answer
        ruled += 1
    assert ruled


def test_write_only_env_gets_ten_program_tasks():
    spec = make_write_only_env()
    tasks = synthesize_tasks(spec, n=12, seed=0)
    assert len(tasks) >= 10
    assert {t.kind for t in tasks} == {"program"}  # walks need reads: the quota moved
    methods = {t.provenance["method"] for t in tasks}
    assert {"create_batch", "create_chain", "batch_write"} <= methods
    chains = [t for t in tasks if t.provenance["method"] == "create_chain"]
    assert all(
        str(c["arguments"].get("ownerId", "")).startswith("$0.")
        for t in chains
        for c in t.gold["calls"][1:]
    )
    # a batch over records the request lists one by one: the user knows how many there are,
    # so no count is asked and the state alone is checked
    listed = [t for t in tasks if t.provenance["method"] in ("batch_write", "create_chain")]
    assert listed and all("how many" not in t.instruction.lower() for t in listed)
    assert all([c["check"]["type"] for c in t.verifier["criteria"]] == ["state"] for t in listed)
    spec.tasks = tasks
    _check_all(spec, tasks)


# -- the catalog ----------------------------------------------------------------------------
def test_catalog_drops_seed_tasks_that_fail_acceptance(tmp_path):
    spec = make_op_env()
    lookup = TaskSpec(
        id="tracker-0001",
        instruction="Look up the task t01 and tell me its status.",
        kind="graph",
        reference_answer="done",
        verifier={
            "type": "rubric",
            "criteria": [
                {"text": "says done", "check": {"type": "answer_contains", "value": "done"}}
            ],
        },
        gold={"type": "tool_chain", "calls": [{"name": "getTask", "arguments": {"taskId": "t01"}}]},
        provenance={"synthesizer": "synth-envs/seed-tasks", "round": 0},
    )
    person = dataclasses.replace(lookup, id="tracker-0002", provenance={"author": "person"})
    spec.tasks = [lookup, person]
    spec.save(tmp_path / "tracker")
    build_index(tmp_path)
    report = synthesize_catalog([tmp_path / "tracker"], TaskSynthConfig(n=12), write=True)
    totals = report.totals()
    assert totals["other_tasks_dropped"] == {"trivial: first call alone scores >= 0.5": 1}
    ids = [t["id"] for t in orjson.loads((tmp_path / "tracker" / "tasks.json").read_bytes())]
    assert "tracker-0001" not in ids and "tracker-0002" in ids
    assert totals["tasks_per_env"]["min"] >= 10


# -- wording --------------------------------------------------------------------------------
def _requests(template: str, seed: int) -> list[str]:
    spec = make_full_env()
    cfg = TaskSynthConfig(long_share=0.0, min_tasks=0)
    made = synthesize_tasks(
        spec, n=4, seed=seed, program_share=1.0, patterns=(template,), config=cfg
    )
    return [t.instruction for t in made if t.kind == "program"]


@pytest.mark.parametrize("template", NEW)
def test_requests_read_as_goals_and_vary_with_the_seed(template):
    first = _requests(template, 1)
    assert first == _requests(template, 1)  # same seed, same text
    seen = set(first)
    for seed in (2, 3, 4):
        seen |= set(_requests(template, seed))
    for text in seen:
        assert "whose is " not in text and " is true" not in text and " is false" not in text
        assert not audit.numbered_steps(text), text
    assert len({audit.opening(t)[:12] for t in seen}) >= 2, seen  # more than one opening


def test_an_action_tool_is_worded_with_its_own_verb():
    """A create tool that publishes: the request says "publish", never "add"/"set"."""
    spec = make_write_only_env()
    tool = next(t for t in spec.tools if t.name == "createCampaign")
    tool.name = "publishCampaign"
    tool.description = "Publish a campaign for an owner."
    texts = [
        t.instruction
        for seed in range(3)
        for t in synthesize_tasks(spec, n=6, seed=seed, program_share=1.0)
        if any(c["name"] == "publishCampaign" for c in t.gold["calls"])
    ]
    assert texts
    for text in texts:
        assert "publish" in text.casefold(), text


def test_a_threshold_is_a_round_number_that_splits_the_data_the_same_way():
    from agentworld_gym.synthesis.tasks.sample.templates.shapes import round_cut

    assert round_cut(438, [120, 438, 512]) == 500  # "over 500", not "over 438"
    assert round_cut(1999, [1999, 2400]) == 2000
    assert round_cut(438, [438, 439]) == 438  # nothing rounder splits them
    for t, values in ((438, [120, 438, 512]), (64, [64, 70, 2000]), (7, [3, 7, 9])):
        r = round_cut(t, values)
        assert [v > r for v in values] == [v > t for v in values]


def test_setting_a_field_inside_an_object_keeps_the_objects_other_fields():
    # "set the format of the rules' targets to xlsx": an object argument sent with the format
    # alone would replace the target and wipe its url, which the request never asked for
    from agentworld_gym.synthesis.tasks.sample.programs import setting

    spec = EnvSpec.load(Path(__file__).resolve().parent.parent / "envs_generated" / "ably-control")
    model = build_model(spec)
    caps = capabilities(model, Runner(spec))["rules"]
    fmt = next(w for w in caps.writable if w.path == "target.format")
    rule = next(r for r in caps.coll.records if isinstance(r.get("target"), dict))
    args = setting(caps.updater, caps.coll, rule, fmt, "xlsx")
    assert args["target"] == {**rule["target"], "format": "xlsx"}
    status = next(w for w in caps.writable if w.path == "status")
    assert setting(caps.updater, caps.coll, rule, status, "disabled")["status"] == "disabled"
    # ruleType's one-value enum ["http"] is the API's constant: no task writes it
    assert not any(w.path == "ruleType" for w in caps.writable)


def test_a_long_batch_update_is_a_clean_up_its_script_grades_per_record():
    # "Of the tasks A, B, C and D: delete the done ones and set the status of the others": a
    # long errand over named records reads each, deletes some and updates the rest
    spec = make_full_env()
    model, runner = build_model(spec), Runner(spec)
    caps = capabilities(model, runner)
    made = [
        batch_update(model, caps, random.Random(s), Knobs(long=True, min_calls=8))
        for s in range(40)
    ]
    sweeps = [p for p in made if p is not None and p.kind == "sweep"]
    # where the collection affords one (tasks can be deleted and updated), a long errand is one
    assert sweeps and all(p.kind == "sweep" for p in made if p and p.params["c"] == "tasks")
    prog = sweeps[0]
    caller = Caller(runner, "t", 19)
    answer = prog.run(caller)
    tools = {c["name"] for c in caller.calls}
    assert {"getTask", "updateTask", "deleteTask"} <= tools, prog.request
    base, final = runner.base.snapshot(), caller.ctx.db.snapshot()

    def verify(state: dict, said: str) -> float:
        result = run_function(script("sweep", prog.params), "verify", [base, state, said])
        assert result.ok, result.error
        return reward_of(result.value)

    assert verify(final, str(answer)) == 1.0
    # a lazy clean-up that deletes and skips the updates, or touches a record it was not given
    p = prog.params
    kept = [
        r
        for r in base[p["c"]]
        if r[p["k"]] in p["ks"] and any(r[p["k"]] == x[p["k"]] for x in final[p["c"]])
    ]
    lazy = {
        **final,
        p["c"]: [
            next((r for r in base[p["c"]] if r[p["k"]] == x[p["k"]]), x) for x in final[p["c"]]
        ],
    }
    assert kept and verify(lazy, str(answer)) < 1.0
    other = next(r for r in final[p["c"]] if r[p["k"]] not in p["ks"])
    stray = {**final, p["c"]: [x for x in final[p["c"]] if x is not other]}
    assert verify(stray, str(answer)) == 0.0


def test_the_encore_adds_long_tasks_that_use_more_tools(monkeypatch):
    # the extra long tasks an environment may add past its quota exercise it: beyond
    # ENCORE_THIN of them, none repeats a three-tool loop
    from agentworld_gym.synthesis.tasks import pipeline

    def thin(long_extra: int) -> tuple[int, int]:
        cfg = TaskSynthConfig(long_extra=long_extra)
        made = synthesize_tasks(make_full_env(), n=18, seed=0, config=cfg)
        longs = [t for t in made if t.difficulty.get("long_horizon")]
        return sum(t.difficulty["distinct_tools"] < 4 for t in longs), len(longs)

    before, n_before = thin(0)
    assert thin(10)[0] > before  # the default cap lets a few more through
    monkeypatch.setattr(pipeline, "ENCORE_THIN", 0)
    after, n_after = thin(10)
    assert after <= before and n_after > n_before


def test_a_bulk_purge_never_stands_in_for_deleting_one_record():
    # "documents:purge" empties a parent: a request deleting one document must not use it
    spec = make_op_env()
    purge = op_tool(
        "purgeTasks",
        "write",
        {"taskId": S},
        ["taskId"],
        {"op": "delete", "collection": "tasks", "key": "taskId"},
        description="POST /v1/{parent}/tasks:purge",
    )
    spec.tools.insert(0, purge)
    model, runner = build_model(spec), Runner(spec)
    assert capabilities(model, runner)["tasks"].deleter.name == "deleteTask"
