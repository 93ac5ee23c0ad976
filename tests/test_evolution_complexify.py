"""Complexified databases keep the env's constraints; old gold solutions are re-derived."""

from __future__ import annotations

import dataclasses
import re

import pytest
from toy_env import make_spec

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.evolution.coevolve import evolve_env
from agentworld_gym.evolution.complexify import check_constraints, complexify, infer_constraints
from agentworld_gym.evolution.config import ComplexifyConfig, EvolutionConfig
from agentworld_gym.evolution.fallback import FallbackSynthesizer
from agentworld_gym.evolution.protocols import Guidelines
from agentworld_gym.evolution.rederive import rederive_tasks, replay
from agentworld_gym.evolution.toy_catalog import REGIONS, ROLES, make_env
from agentworld_gym.replay import validate
from agentworld_gym.spec import TaskSpec

RICH = ComplexifyConfig(
    extra_record_fraction=0.5, near_duplicates=3, edge_cases=2, relations=3, max_new_records=40
)


@pytest.fixture(scope="module")
def team_env():
    return make_env("teams-x", "L1-07 Software Development", seed=7, n_tasks=10)


def _version(spec, records):
    return dataclasses.replace(spec, version=spec.version + 1, records=records, root=None, tasks=[])


def test_complexified_database_satisfies_the_constraints(team_env):
    result = complexify(team_env, RICH, seed=11, distractors=1)
    assert result.violations == []
    assert set(result.kinds) == {"plain", "near_duplicate", "edge", "relation"}
    teams, members = result.records["teams"], result.records["members"]
    old = team_env.database.snapshot()
    assert teams[: len(old["teams"])] == old["teams"]  # nothing old is changed or removed
    assert members[: len(old["members"])] == old["members"]
    assert len(members) > len(old["members"]) + 5 and len(teams) > len(old["teams"])
    for rows in (teams, members):
        assert len({r["id"] for r in rows}) == len(rows)  # unique primary keys
    team_ids = {t["id"] for t in teams}
    assert all(m["teamId"] in team_ids for m in members)  # references resolve
    assert all(m["role"] in ROLES for m in members) and all(t["region"] in REGIONS for t in teams)
    emails = [m["email"] for m in members]
    assert len(set(emails)) == len(emails)  # the create tool's unique field stays unique
    assert all(re.fullmatch(r"[^@\s]+@[^@\s]+\.\w+", e) for e in emails)  # formats kept
    assert all(re.fullmatch(r"m\d{3}", m["id"]) for m in members)
    assert all(re.fullmatch(r"t\d+", t["id"]) for t in teams)
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["joined"]) for m in members if "joined" in m)
    assert all(isinstance(m["level"], int) for m in members if "level" in m)
    names = [m["name"] for m in members]
    assert len(set(names)) == len(names)
    assert any(n.startswith(o["name"]) and n != o["name"] for n in names for o in old["members"])
    # the tools work on the new records
    new = _version(team_env, result.records)
    fresh = result.added["members"][-1]
    env = AgentWorldEnv(dataclasses.replace(new, tasks=team_env.tasks), split="all")
    env.reset(options={"task_id": team_env.tasks[0].id})
    _, _, _, _, info = env.step({"name": "get_member", "arguments": {"memberId": fresh}})
    assert info["tool_results"][0]["ok"]


def test_check_constraints_reports_each_kind_of_violation(team_env):
    cons = infer_constraints(team_env)
    assert cons.references["members"] == {"teamId": "teams"}
    assert set(cons.enums["members"]["role"]) == set(ROLES)
    assert "email" in cons.unique["members"]
    base = team_env.database.snapshot()
    rows = {"teams": list(base["teams"]), "members": list(base["members"])}
    good = dict(base["members"][0])
    bad = [
        {**good},  # duplicate primary key
        {**good, "id": "m900", "teamId": "t99", "email": "a@b.org", "name": "n1"},
        {**good, "id": "m901", "role": "intern", "email": "c@d.org", "name": "n2"},
        {**good, "id": "m902", "email": "not an email", "name": "n3"},
        {**good, "id": "m903", "email": "e@f.org", "name": "n4", "salary": 1},
    ]
    problems = check_constraints(cons, {**rows, "members": rows["members"] + bad}, rows)
    text = "\n".join(problems)
    assert "duplicate primary key" in text and "matches no teams record" in text
    assert "'intern' not one of" in text and "has format text" in text
    assert "field 'salary' is new" in text and "is not unique" in text
    assert check_constraints(cons, rows, rows) == []


def test_old_gold_solutions_are_rederived_not_reused():
    spec = make_spec()  # toy tracker: count-open answers 2 open items
    result = complexify(spec, ComplexifyConfig(near_duplicates=2, edge_cases=1), seed=3)
    assert result.violations == []
    new = _version(spec, {**result.records, "settings": {"owner": "ada"}})
    n_open = sum(1 for r in result.records["items"] if r["status"] == "open")
    assert n_open != 2
    old_task = spec.task("count-open")
    assert replay(new, old_task).result.reward < 1.0  # reusing it blindly would be wrong
    kept, outcomes = rederive_tasks(spec, new)
    status = {o.task_id: o.status for o in outcomes}
    assert status == {"close-i1": "kept", "count-open": "rederived", "script-new": "dropped"}
    task = next(t for t in kept if t.id == "count-open")
    checks = [c["check"] for c in task.verifier["criteria"]]
    assert checks[0]["value"] == n_open and checks[1]["equals"] == n_open
    assert task.reference_answer == str(n_open) and task.gold["answer"] == str(n_open)
    assert task.verifier["criteria"][0]["text"] == f"answer is {n_open}"
    assert task.provenance["rederived"]
    assert old_task.verifier["criteria"][0]["check"]["value"] == 2  # the old version is untouched
    assert all(r.ok for r in validate(dataclasses.replace(new, tasks=kept)))


def test_a_count_that_cannot_be_rederived_is_dropped():
    spec = make_spec()
    blind = TaskSpec(
        id="count-by-peeking",
        instruction="How many items are open?",
        verifier={
            "type": "rubric",
            "criteria": [
                {"text": "answer is 2", "check": {"type": "answer_equals", "value": 2}},
            ],
        },
        gold={
            "type": "tool_chain",
            "answer": "2",
            "calls": [
                {"name": "get_item", "arguments": {"item_id": "i1"}},
                {"name": "get_item", "arguments": {"item_id": "i2"}},
            ],
        },
    )
    spec.tasks = [blind]
    assert replay(spec, blind).result.ok
    result = complexify(spec, ComplexifyConfig(), seed=3)
    kept, outcomes = rederive_tasks(spec, _version(spec, {**result.records, "settings": {}}))
    assert kept == [] and outcomes[0].status == "dropped"
    assert "not in the gold chain's outputs" in outcomes[0].reason


def test_typed_answer_checks_are_rederived_too():
    spec = make_spec()
    task = spec.task("count-open")
    task.verifier["criteria"][0]["check"] = {"type": "answer", "expect": [{"value": 2}]}
    spec.tasks = [task]
    result = complexify(spec, ComplexifyConfig(near_duplicates=2, edge_cases=1), seed=3)
    n_open = sum(1 for r in result.records["items"] if r["status"] == "open")
    kept, outcomes = rederive_tasks(spec, _version(spec, {**result.records, "settings": {}}))
    assert [o.status for o in outcomes] == ["rederived"]
    assert kept[0].verifier["criteria"][0]["check"]["expect"] == [{"value": n_open}]


def test_a_program_whose_reads_change_is_dropped_not_carried():
    spec = make_spec()
    program = dataclasses.replace(spec.task("count-open"), id="count-open-program", kind="program")
    spec.tasks = [program]
    result = complexify(spec, ComplexifyConfig(near_duplicates=2, edge_cases=1), seed=3)
    kept, outcomes = rederive_tasks(spec, _version(spec, {**result.records, "settings": {}}))
    assert kept == []
    assert "reads return other data" in outcomes[0].reason


def test_a_find_that_became_ambiguous_is_dropped(team_env):
    find = next(t for t in team_env.tasks if t.difficulty["pattern"] == "find")
    assert find.gold["derive"]["agg"] == "only"
    args = find.gold["calls"][0]["arguments"]
    field = next(k for k in args if k != "limit")
    base = team_env.database.snapshot()
    coll = "members" if find.gold["calls"][0]["name"] == "list_members" else "teams"
    twin = next(r for r in base[coll] if str(r.get(field)) == str(args[field]))
    twin = {**twin, "id": "m999" if coll == "members" else "t99", "email": "twin@example.org"}
    records = {k: list(v) for k, v in base.items()}
    records[coll].append(twin)
    spec = dataclasses.replace(team_env, tasks=[find])
    kept, outcomes = rederive_tasks(spec, _version(team_env, records))
    assert kept == [] and "derive recipe" in outcomes[0].reason


def test_evolve_env_makes_a_verified_harder_version(team_env):
    guidelines = Guidelines(
        env_id=team_env.id,
        patterns=["walk", "update", "count"],
        walk_length=3,
        writes=1,
        distractors=2,
        program_share=0.25,
    )
    config = EvolutionConfig(train_tasks_per_weak_env=6, complexify=RICH)
    synth = FallbackSynthesizer()
    evolved = evolve_env(team_env, guidelines, config, synth, round_index=4, seed=9)
    new = evolved.spec
    assert new is not None and new.version == team_env.version + 1 and new.id == team_env.id
    report = evolved.report
    assert report["violations"] == [] and report["tasks_new"] >= 4
    assert report["tasks_kept"] + report["tasks_rederived"] + report["tasks_dropped"] == 10
    fresh = [t for t in new.tasks if t.provenance.get("origin") == "evolution"]
    assert all(t.split == "train" and t.id.startswith("teams-x-r4-") for t in fresh)
    assert any(
        t.difficulty["pattern"] == "update" and t.difficulty["chain_length"] == 2 for t in fresh
    )
    assert all(r.ok for r in validate(new))
    history = new.provenance["evolution"]
    assert history[-1]["round"] == 4 and history[-1]["from_version"] == team_env.version
    assert new.database.count("members") > team_env.database.count("members")


def test_traced_values_are_reread_by_item_id_and_inside_text():
    from agentworld_gym.evolution.values import find_value_paths, read_anchored

    old = [{"results": [{"id": "a", "n": 1}, {"id": "b", "n": 7, "note": "costs $1,500 a year"}]}]
    new = [{"results": [{"id": "z", "n": 7}, {"id": "b", "n": 8, "note": "costs $1,500 a year"}]}]
    (rank, kind, ref), *_ = find_value_paths(old, 7)
    assert (kind, ref) == ("value", "$0.results.1.n")
    assert read_anchored(old, new, ref) == 8  # the same item (id b), not position 1's old value
    assert find_value_paths(old, 1500)[0][1:] == ("numtext", "$0.results.1.note")
    assert find_value_paths(old, 2)[0] == (0, "len", "$0.results")
    gone = [{"results": [{"id": "z", "n": 7}]}]
    from agentworld_gym.evolution.values import MISSING

    assert read_anchored(old, gone, ref) is MISSING


def _years_env(timespan_year_pk: bool):
    from agentworld_gym.spec import EnvSpec

    years = [{"id": f"y{i}", "year": 2010 + i} for i in range(6)]
    spans = [
        {"timespan": i, "year": (f"y{i % 6}" if timespan_year_pk else 2010 + i % 6)}
        for i in range(1, 9)
    ]
    return EnvSpec(
        id="years-x",
        name="Years",
        description="Years and time spans.",
        tools=[],
        collections={
            "years": {"primary_key": "id"},
            "spans": {"primary_key": "timespan", "references": {"year": "years"}},
        },
        records={"years": years, "spans": spans},
    )


@pytest.mark.parametrize("by_key", [True, False])
def test_a_declared_reference_is_followed_only_when_it_holds_keys(by_key):
    spec = _years_env(timespan_year_pk=by_key)
    cons = infer_constraints(spec)
    assert ("year" in cons.references["spans"]) is by_key
    result = complexify(spec, RICH, seed=3)
    assert result.violations == []
    new_years = [r["year"] for r in result.records["spans"][8:]]
    assert new_years and all(isinstance(y, str if by_key else int) for y in new_years)


def test_a_database_that_cannot_be_complexified_is_refused():
    from agentworld_gym.spec import EnvSpec

    rows = [{"id": [{"a": i}], "name": f"n{i}"} for i in range(3)]
    spec = EnvSpec(
        id="odd-keys",
        name="Odd",
        description="List-valued keys.",
        tools=[],
        collections={"things": {"primary_key": "id"}},
        records={"things": rows},
    )
    result = evolve_env(
        spec, Guidelines(spec.id), EvolutionConfig(), FallbackSynthesizer(), round_index=0, seed=1
    )
    assert result.spec is None and "not complexified" in result.report["refused"]
