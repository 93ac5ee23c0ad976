"""The verification script of an LLM-written program, derived from what the program did.

The model writes the program; the checker is never its to write. A weak model's checker is
the weakest link of a task — one that only looks at the answer's length passes every
acceptance rule and rewards nonsense — whereas the executed program already says what the
truth is: the answer it returned and the state it left. So the script is built here from the
execution, in the same format as the template programs' scripts (``P = <parameters>`` and a
``verify(initial_state, final_state, answer)`` body, stdlib only, run in the sandbox):

- **state**: every record the program created, updated or deleted must end up so in
  ``final_state`` (fields that differ between the gold run and the replay under another task
  id and clock — generated ids, timestamps — are not compared), and any other change scores
  0, as in the template scripts;
- **answer**: the values the program returned (numbers, short strings; dict keys are labels)
  must each appear in the agent's answer; a dump (more numbers than a report would quote, or
  far longer than the reference) or one that also names the other candidates of a string value
  (the other values of the same field) earns nothing for the answer.

Reward: ``0.7 * targets_done / targets + 0.3 * values_reported / values`` (the report counting
only once every target is done: a count of work not done earns nothing) for a program that
writes, the answer share alone for one that only reads, the state share alone for a write
program that returns nothing to report. The expected changes are fixed by the environment's
initial state: like graph tasks' rubrics, these tasks belong to the database they were made
on, and are made again when the evolution loop rewrites it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.synthesis.tasks.verifier.scripts import literal

MAX_VALUES = 12
MAX_DECOYS = 40
_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_MISSING = object()

BODY = """import re
def num(a):
 return [float(x) for x in re.findall(r"-?\\d+(?:\\.\\d+)?", a.replace(",", ""))]
def norm(s):
 return " ".join(str(s).replace("*", "").split()).casefold()
def strip(r, vol):
 return {k: v for k, v in r.items() if k not in vol} if isinstance(r, dict) else r
def rows(S, c, k):
 return {str(r.get(k)): r for r in S.get(c) or [] if isinstance(r, dict)}
def state(I, F):
 ok = tot = 0
 for c, D in P["c"].items():
  k = D["k"]; vol = set(D.get("vol", [])); upd = D.get("upd", {}); gone = D.get("del", [])
  i = rows(I, c, k); f = rows(F, c, k)
  for key, r in i.items():
   x = f.get(key)
   if key in gone:
    tot += 1; ok += x is None
   elif key in upd:
    tot += 1; want = {**r, **upd[key]}
    for n in D.get("rm", {}).get(key, []): want.pop(n, None)
    ok += x is not None and strip(x, vol) == strip(want, vol)
   elif x is None or strip(x, vol) != strip(r, vol):
    return None
  new = [r for key, r in f.items() if key not in i]
  for want in D.get("new", []):
   tot += 1; m = [j for j, r in enumerate(new) if strip(r, vol) == want]
   if m:
    ok += 1; new.pop(m[0])
  if new:
   return None
 for n in set(I) | set(F):
  if n in P["c"] or n in P["dv"]:
   continue
  if n in P["d"]:
   tot += 1; ok += F.get(n) == P["d"][n]
  elif F.get(n) != I.get(n):
   return None
 return ok, tot
def said(a):
 a = str(a or ""); n = num(a); t = norm(a)
 if len(n) > P["maxn"] or len(a) > P["maxlen"] or any(norm(d) in t for d in P["decoys"]):
  return 0.0
 hits = sum(any(abs(y - x) <= e for y in n) for x, e in P["nums"])
 hits += sum(norm(s) in t for s in P["strs"])
 return hits / max(len(P["nums"]) + len(P["strs"]), 1)
def verify(initial_state, final_state, answer):
 s = state(initial_state, final_state)
 if s is None:
  return 0.0
 ok, tot = s
 if not tot:
  return said(answer)
 if not P["nums"] and not P["strs"]:
  return ok / tot
 return 0.7 * ok / tot + 0.3 * said(answer) * (ok == tot)
"""


@dataclass
class Derived:
    """The verifier of one program task and what its metadata needs."""

    source: str
    reference: str
    """The reference answer: the program's answer as text."""
    targets: int
    """Records (and documents) the program changed."""
    answer_type: str


def fmt(value: float | int) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(int(value))


def render(answer: Any) -> str:
    """The program's answer as the reference text an agent's answer is compared to.

    >>> render({"reassigned": 2, "owner": "ada", "avg_points": 6.3333})
    'reassigned: 2; owner: ada; avg points: 6.33'
    """
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    if isinstance(answer, int | float):
        return fmt(answer)
    if isinstance(answer, str):
        return answer.strip()
    if isinstance(answer, dict):
        return "; ".join(f"{str(k).replace('_', ' ')}: {render(v)}" for k, v in answer.items())
    if isinstance(answer, list):
        return ", ".join(render(v) for v in answer) if answer else "none"
    return "none"


def values(answer: Any) -> tuple[list[float], list[str]]:
    """The numbers and short strings an answer must state (booleans and ``None`` are not
    checkable in free text; a long string contributes the numbers in it)."""
    nums: list[float] = []
    strs: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, int | float):
            nums.append(float(v))
        elif isinstance(v, str):
            s = " ".join(v.split())
            if len(s) > 80 or len(s.split()) > 6:
                nums.extend(float(x) for x in _NUM.findall(s.replace(",", "")))
            elif s:
                strs.append(s)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(answer)
    return nums, list(dict.fromkeys(strs))


def _norm(s: Any) -> str:
    return " ".join(str(s).replace("*", "").split()).casefold()


def _rows(state: dict[str, Any], coll: str, pk: str) -> dict[str, dict[str, Any]]:
    return {str(r.get(pk)): r for r in state.get(coll) or [] if isinstance(r, dict)}


def _changed(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    return {f for f in set(a) | set(b) if a.get(f, _MISSING) != b.get(f, _MISSING)}


def _collection(pk: str, i: dict, g: dict, p: dict) -> tuple[dict[str, Any], int]:
    """The verify parameters of one collection (initial, gold and probe rows by key)."""
    changed = {k: _changed(i[k], g[k]) for k in i.keys() & g.keys()}
    changed = {k: fields for k, fields in sorted(changed.items()) if fields}
    vol: set[str] = set()
    for key, fields in changed.items():
        vol |= _changed(g[key], p.get(key, {})) & fields
    new_g = [r for k, r in g.items() if k not in i]
    new_p = [r for k, r in p.items() if k not in i]
    for a, b in zip(new_g, new_p, strict=False):
        vol |= _changed(a, b)
    if len(new_g) != len(new_p):  # cannot pair them: compare no field that may be volatile
        vol |= {f for r in new_g for f in r}
    entry: dict[str, Any] = {"k": pk}
    upd: dict[str, dict[str, Any]] = {}
    rm: dict[str, list[str]] = {}
    for key, fields in changed.items():
        stable = sorted(fields - vol)
        if stable:
            upd[key] = {f: g[key][f] for f in stable if f in g[key]}
            if any(f not in g[key] for f in stable):
                rm[key] = [f for f in stable if f not in g[key]]
    deleted = sorted(k for k in i if k not in g)
    for name, value in (("vol", sorted(vol)), ("upd", upd), ("rm", rm), ("del", deleted)):
        if value:
            entry[name] = value
    if new_g:
        entry["new"] = [{f: v for f, v in r.items() if f not in vol} for r in new_g]
    return entry, len(upd) + len(deleted) + len(new_g)


def state_diff(
    base: Database, gold: Database, probe: Database
) -> tuple[dict[str, Any], dict[str, Any], list[str], int]:
    """``(collections, documents, volatile documents, targets)`` of the verify parameters."""
    start, end, shifted = base.snapshot(), gold.snapshot(), probe.snapshot()
    colls: dict[str, Any] = {}
    targets = 0
    for name in base.collections:
        pk = base.primary_key(name)
        rows = (_rows(state, name, pk) for state in (start, end, shifted))
        colls[name], n = _collection(pk, *rows)
        targets += n
    docs: dict[str, Any] = {}
    volatile_docs: list[str] = []
    for name in sorted((set(start) | set(end)) - set(base.collections)):
        if start.get(name) != end.get(name):
            if end.get(name) == shifted.get(name):
                docs[name] = end.get(name)
            else:
                volatile_docs.append(name)
    return colls, docs, volatile_docs, targets + len(docs)


def decoys(strs: list[str], state: dict[str, Any], keep: list[str]) -> list[str]:
    """For each expected string, the other values of the field it came from (an answer that
    names them all is a dump, not a choice); none that ``keep`` texts contain."""
    out: list[str] = []
    kept = [_norm(k) for k in keep]
    wanted = [_norm(s) for s in strs]
    for s in wanted:
        for records in state.values():
            if not isinstance(records, list):
                continue
            found = next(
                (
                    f
                    for r in records
                    if isinstance(r, dict)
                    for f, v in r.items()
                    if isinstance(v, str) and _norm(v) == s
                ),
                None,
            )
            if found is None:
                continue
            for r in records:
                v = r.get(found) if isinstance(r, dict) else None
                if not isinstance(v, str) or len(v.strip()) < 3:
                    continue
                d = _norm(v)
                clash = any(d in w or w in d for w in wanted) or any(d in k for k in kept)
                if not clash and v not in out:
                    out.append(v)
            break
    return out[:MAX_DECOYS]


def _stated(x: float, text: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(fmt(x))}(?![\d.])", text) is not None


def derive(
    answer: Any, request: str, base: Database, gold: Database, probe: Database
) -> Derived | str:
    """The verifier of a program that returned ``answer`` and left ``gold`` (``probe``: the
    same calls under another task id and clock), or why none can be made."""
    nums, strs = values(answer)
    given_strs = [s for s in strs if _norm(s) in _norm(request)]
    given_nums = [x for x in nums if _stated(x, request)]
    if (given_strs or given_nums) and len(given_strs) + len(given_nums) == len(nums) + len(strs):
        return "request gives away the answer"
    if any(len(fmt(x).lstrip("-")) >= 2 for x in given_nums):
        return "request gives away the answer"
    strs = [s for s in strs if s not in given_strs]  # values the user gives are not found
    if len(nums) + len(strs) > MAX_VALUES:
        return f"answer has too many values ({len(nums) + len(strs)} > {MAX_VALUES})"
    colls, docs, vol_docs, targets = state_diff(base, gold, probe)
    if not targets and not nums and not strs:
        return "nothing to check (no change and no value in the answer)"
    reference = render(answer)
    if not reference or reference == "none":
        reference = "Done."
    n_ref = len(_NUM.findall(reference.replace(",", "")))
    params = {
        "c": colls,
        "d": docs,
        "dv": vol_docs,
        "nums": [[x, 1e-6 if float(x).is_integer() else 0.01] for x in nums],
        "strs": strs,
        "decoys": decoys(strs, base.snapshot(), [request, reference]),
        "maxn": max(12, 2 * n_ref + 4),
        "maxlen": max(1500, 4 * len(reference)),
    }
    kinds = {"number" if nums else "", "text" if strs else ""} - {""}
    answer_type = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "none")
    return Derived(f"P = {literal(params)}\n" + BODY, reference, targets, answer_type)
