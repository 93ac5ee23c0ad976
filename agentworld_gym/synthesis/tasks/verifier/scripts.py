"""Verification scripts of program tasks: small, deterministic, stdlib-only, from templates.

Each script is ``P = <parameters>`` + a shared prelude + one template's ``verify``. It
recomputes the ground truth from ``initial_state`` on its own (it never trusts the
agent's reading of tool outputs), then grades ``final_state`` and ``answer``: a write task
earns 0.7 for the fraction of target records done right and 0.3 for reporting the count (for
the count itself where the request lists every record, ``told``: the user knows how many, so
the request does not ask), and 0 whenever a record outside the targets changed; a read task
earns credit per reported value, read from a plain answer: numbers standing alone (not the
digits inside an id), and none from an answer quoting more than 12 (a data dump, not an
answer).

States are ``{collection: [records]}``; a dotted field path walks into nested objects.
"""

from __future__ import annotations

from typing import Any

HELPERS = {
    "g": """def g(r, p):
 for k in p.split("."): r = r.get(k) if isinstance(r, dict) else None
 return r
""",
    "hit": """def hit(r, w): return all(str(g(r, f)) == str(v) for f, v in w)
""",
    "num": """def num(a):
 n = re.findall(r"(?<![\\w.])-?\\d+(?:\\.\\d+)?(?!\\w)", a.replace(",", ""))
 return [float(x) for x in n] if len(n) <= 12 else []
""",
    "has": """def has(a, v):
 a = " ".join(a.replace("*", "").split()).casefold()
 return " ".join(str(v).split()).casefold() in a
""",
    "say": """def say(a, v):
 if isinstance(v, (int, float)) and not isinstance(v, bool): return float(v) in num(a)
 return v is not None and has(a, v)
""",
    "fresh": """def fresh(I, F, c, k):
 old = {str(r.get(k)): r for r in I.get(c, [])}; new = []
 for r in F.get(c, []):
  o = old.pop(str(r.get(k)), None)
  if o is None: new.append(r)
  elif o != r: return None
 return None if old else new
""",
}
NEEDS = {
    "g": (),
    "hit": ("g",),
    "num": (),
    "has": (),
    "say": ("num", "has"),
    "fresh": (),
    "par": ("hit",),
    "T": ("hit",),
    "C": ("hit",),
}

BODIES = {
    "update": """def verify(initial_state, final_state, answer):
 k = P["k"]; t = {str(r.get(k)) for r in T(initial_state)}; ok = 0
 f = {str(r.get(k)): r for r in final_state.get(P["c"], [])}
 for r in initial_state.get(P["c"], []):
  x = f.get(str(r.get(k)))
  if str(r.get(k)) in t: ok += x is not None and g(x, P["g"]) == P["v"]
  elif x != r: return 0.0
 return round(0.7 * ok / max(len(t), 1) + 0.3 * (P.get("told") or len(t) in num(answer)), 6)
""",
    "delete": """def verify(initial_state, final_state, answer):
 k = P["k"]; t = {str(r.get(k)) for r in T(initial_state)}; ok = 0
 f = {str(r.get(k)) for r in final_state.get(P["c"], [])}
 for r in initial_state.get(P["c"], []):
  gone = str(r.get(k)) not in f
  if str(r.get(k)) in t: ok += gone
  elif gone: return 0.0
 return round(0.7 * ok / max(len(t), 1) + 0.3 * (P.get("told") or len(t) in num(answer)), 6)
""",
    "branch": """def verify(initial_state, final_state, answer):
 k = P["k"]; t = {str(r.get(k)) for r in T(initial_state)}; ok = na = 0
 f = {str(r.get(k)): r for r in final_state.get(P["c"], [])}
 for r in initial_state.get(P["c"], []):
  x = f.get(str(r.get(k)))
  if str(r.get(k)) in t:
   want = P["a"] if C(r) else P["b"]
   na += want == P["a"]; ok += x is not None and g(x, P["g"]) == want
  elif x != r: return 0.0
 return round(0.7 * ok / max(len(t), 1) + 0.3 * (na in num(answer)), 6)
""",
    "sweep": """def verify(initial_state, final_state, answer):
 k = P["k"]; t = {str(r.get(k)) for r in T(initial_state)}; ok = nd = 0
 f = {str(r.get(k)): r for r in final_state.get(P["c"], [])}
 for r in initial_state.get(P["c"], []):
  x = f.get(str(r.get(k)))
  if str(r.get(k)) not in t:
   if x != r: return 0.0
  elif C(r): nd += 1; ok += x is None
  else: ok += x is not None and g(x, P["g"]) == P["v"]
 return round(0.7 * ok / max(len(t), 1) + 0.3 * (nd in num(answer)), 6)
""",
    "reconcile": """def verify(initial_state, final_state, answer):
 I, F = initial_state, final_state; ok = nd = n = 0; scope = {}; made = {}
 for q in P["parts"]:
  c, k = q["c"], q["k"]; made[c] = made.get(c, 0) + len(q["add"])
  scope.setdefault(c, (k, set()))[1].update(str(r.get(k)) for r in I.get(c, []) if hit(r, q["w"]))
 for c, (k, t) in scope.items():
  f = {str(r.get(k)): r for r in F.get(c, [])}; old = {str(r.get(k)) for r in I.get(c, [])}
  if any(str(r.get(k)) not in t and f.get(str(r.get(k))) != r for r in I.get(c, [])): return 0.0
  if sum(1 for r in F.get(c, []) if str(r.get(k)) not in old) > made[c]: return 0.0
 for q in P["parts"]:
  c, k, nf = q["c"], q["k"], q["nf"]; want = set(q["names"])
  f = {str(r.get(k)): r for r in F.get(c, [])}; old = {str(r.get(k)) for r in I.get(c, [])}
  for r in I.get(c, []):
   if not hit(r, q["w"]): continue
   x = f.get(str(r.get(k))); n += 1
   if str(g(r, nf)) not in want: nd += 1; ok += x is None
   else: ok += x is not None and g(x, nf) == g(r, nf) and (not q["g"] or g(x, q["g"]) == q["v"])
  new = [r for r in F.get(c, []) if str(r.get(k)) not in old and hit(r, q["w"])]
  if len(new) > len(q["add"]): return 0.0
  ok += sum(sum(1 for r in new if str(g(r, nf)) == a and hit(r, q["all"])) == 1 for a in q["add"])
  n += len(q["add"])
 return round(0.7 * ok / n + 0.3 * (nd in num(answer)), 6)
""",
    "create": """def verify(initial_state, final_state, answer):
 q = par(initial_state); old = {str(r.get(P["k"])) for r in initial_state.get(P["c"], [])}; n = {}
 for r in final_state.get(P["c"], []):
  if str(r.get(P["k"])) not in old and g(r, P["g"]) == P["v"]:
   p = str(g(r, P["pf"]))
   if p not in q: return 0.0
   n[p] = n.get(p, 0) + 1
 ok = sum(1 for p in q if n.get(p) == 1)
 return round(0.7 * ok / max(len(q), 1) + 0.3 * (len(q) in num(answer)), 6)
""",
    "tend": """def verify(initial_state, final_state, answer):
 k = P["pk"]; t = par(initial_state); ok = 0
 f = {str(r.get(k)): r for r in final_state.get(P["pc"], [])}
 for r in initial_state.get(P["pc"], []):
  x = f.get(str(r.get(k)))
  if str(r.get(k)) in t: ok += x is not None and g(x, P["pg"]) == P["pv"]
  elif x != r: return 0.0
 new = fresh(initial_state, final_state, P["c"], P["k"]); n = {}
 if new is None: return 0.0
 for r in new:
  p = str(g(r, P["pf"]))
  if p not in t or g(r, P["g"]) != P["v"]: return 0.0
  n[p] = n.get(p, 0) + 1
 made = sum(1 for p in t if n.get(p) == 1)
 return round(0.35 * (ok + made) / max(len(t), 1) + 0.3 * (len(t) in num(answer)), 6)
""",
    "extreme": """def verify(initial_state, final_state, answer):
 k = P["k"]; rows = [r for r in T(initial_state) if isinstance(g(r, P["nf"]), (int, float))]
 b = sorted(rows, key=lambda r: g(r, P["nf"]), reverse=P["max"])[0]; ok = 0
 f = {str(r.get(k)): r for r in final_state.get(P["c"], [])}
 for r in initial_state.get(P["c"], []):
  x = f.get(str(r.get(k)))
  if r is b: ok = x is not None and g(x, P["g"]) == P["v"]
  elif x != r: return 0.0
 return round(0.7 * ok + 0.3 * has(answer, b.get(P["lf"])), 6)
""",
    "aggregate": """def verify(initial_state, final_state, answer):
 n = num(answer); t = T(initial_state)
 v = [g(r, P["nf"]) for r in t] if P["op"] != "count" else t
 if P["op"] != "count":
  v = [x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
 ops = {"sum": sum, "max": max, "min": min, "count": len, "avg": lambda v: sum(v) / len(v)}
 x = ops[P["op"]](v)
 return float(any(abs(y - x) <= P["tol"] for y in n))
""",
    "pick": """def verify(initial_state, final_state, answer):
 t = [r for r in T(initial_state) if isinstance(g(r, P["nf"]), (int, float))]
 b = sorted(t, key=lambda r: g(r, P["nf"]), reverse=P["max"])[0]
 others = any(has(answer, r.get(P["lf"])) for r in t if r is not b)
 return float(has(answer, b.get(P["lf"])) and not others)
""",
    "which": """def verify(initial_state, final_state, answer):
 t = T(initial_state); o = [r for r in initial_state.get(P["c"], [])
  if str(r.get(P["k"])) in P["ks"] and not hit(r, P["w"])]
 if any(has(answer, r.get(P["lf"])) for r in o): return 0.0
 return sum(has(answer, r.get(P["lf"])) for r in t) / max(len(t), 1)
""",
    "cond": """def verify(initial_state, final_state, answer):
 I = {str(r.get(P["k"])): r for r in initial_state.get(P["c"], [])}
 x = g(I.get(P["ka"]), P["f"]); s = x
 if P["if"] == "eq": yes = str(x) == str(P["v"])
 elif P["if"] == "gt": yes = isinstance(x, (int, float)) and x > P["v"]
 else: y = g(I.get(P["kb"]), P["f"]); yes = x > y; s = x if yes else y
 t, act = P["then"] if yes else P["else"]
 f = {str(r.get(P["tk"])): r for r in final_state.get(P["tc"], [])}; ok = 0
 for r in initial_state.get(P["tc"], []):
  x = f.get(str(r.get(P["tk"])))
  if str(r.get(P["tk"])) == t: ok = x is None if act is None else x is not None and hit(x, [act])
  elif x != r: return 0.0
 if P["c"] != P["tc"] and initial_state.get(P["c"]) != final_state.get(P["c"]): return 0.0
 return round(0.7 * ok + 0.3 * say(answer, s), 6)
""",
    "made": """def verify(initial_state, final_state, answer):
 new = fresh(initial_state, final_state, P["c"], P["k"]); link = P["all"]
 if new is None: return 0.0
 if P.get("pc"):
  ps = new if P["pc"] == P["c"] else fresh(initial_state, final_state, P["pc"], P["pk"])
  ps = [p for p in ps or [] if hit(p, P["pw"])]
  if len(ps) != 1: return 0.0
  link = link + [[P["pf"], ps[0].get(P["pk"])]]; new = [r for r in new if r is not ps[0]]
 if len(new) > len(P["want"]): return 0.0
 ok = sum(sum(1 for r in new if hit(r, w + link)) == 1 for w in P["want"])
 return round(0.7 * ok / len(P["want"]) + 0.3 * (P.get("told") or P["n"] in num(answer)), 6)
""",
    "groupmax": """def verify(initial_state, final_state, answer):
 c = {}; n = num(answer)
 for r in initial_state.get(P["c"], []):
  if hit(r, P["w"]): c[str(g(r, P["pf"]))] = c.get(str(g(r, P["pf"])), 0) + 1
 rows = [p for p in initial_state.get(P["pc"], []) if hit(p, P["pw"])]
 b = max(rows, key=lambda p: c.get(str(p.get(P["pk"])), 0))
 return round(0.45 * has(answer, b.get(P["lf"])) + 0.55 * (c.get(str(b.get(P["pk"])), 0) in n), 6)
""",
}


def _targets(params: dict[str, Any]) -> str:
    """``T(I)``: the records in scope, written for exactly the conditions ``params`` has."""
    cond = 'hit(r, P["w"])'
    head = ""
    if params.get("pc"):
        head = " q = par(I)\n"
        cond += ' and str(g(r, P["pf"])) in q'
    if params.get("pks"):
        cond += ' and str(g(r, P["pf"])) in P["pks"]'
    if params.get("ks"):
        cond += ' and str(r.get(P["k"])) in P["ks"]'
    return f'def T(I):\n{head} return [r for r in I.get(P["c"], []) if {cond}]\n'


def _parents(params: dict[str, Any]) -> str:
    """``par(I)``: keys of the parents in scope (matching ``pw``, among ``pks`` if given)."""
    cond = 'hit(p, P["pw"])' + (' and str(p.get(P["pk"])) in P["pks"]' if params.get("pks") else "")
    return f'def par(I):\n return {{str(p.get(P["pk"])) for p in I.get(P["pc"], []) if {cond}}}\n'


def _condition(params: dict[str, Any]) -> str:
    """``C(r)``: the branch condition (a number above a threshold, or fields matching)."""
    if "t" in params:
        return (
            'def C(r):\n v = g(r, P["nf"])\n'
            ' return isinstance(v, (int, float)) and not isinstance(v, bool) and v > P["t"]\n'
        )
    return 'def C(r): return hit(r, P["wc"])\n'


def script(kind: str, params: dict[str, Any]) -> str:
    """The verification source of one program task (``params`` become ``P``)."""
    body = BODIES[kind]
    helpers = dict(HELPERS, par=_parents(params), T=_targets(params), C=_condition(params))
    wanted: list[str] = []

    def need(name: str) -> None:
        deps = NEEDS[name] + (("par",) if name == "T" and params.get("pc") else ())
        for dep in deps:
            need(dep)
        if name not in wanted:
            wanted.append(name)

    for name in helpers:
        if f"{name}(" in body.replace("verify(", ""):
            need(name)
    head = "import re\n" if "num" in wanted else ""
    return f"P = {literal(params)}\n{head}" + "".join(helpers[n] for n in wanted) + body


def literal(value: Any) -> str:
    """``repr`` without the spaces (a Python literal of JSON-like data)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{literal(k)}:{literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(literal(v) for v in value) + "]"
    return repr(value)
