"""What an LLM-written program may contain, read from its syntax tree before it ever runs.

The sandbox is the boundary (its own process, no network, resource limits, an unprivileged
user); this check is the first layer and the one that gives the clearest reasons. A program
must define ``program(call)``, must use real control flow (a loop, a comprehension or a
branch), and may import only a few pure standard modules. It may not name the builtins that
reach outside the data it is given (``open``, ``eval``, ``__import__``, ``getattr``, ...) nor
touch dunder or frame attributes (the usual ways out of restricted builtins). The driver that
runs it in the sandbox gives it only :data:`SAFE_BUILTINS` and an import of
:data:`ALLOWED_MODULES`, so a construct this check misses still finds nothing to call.

>>> check("def program(call):\\n    return [r for r in call('listTasks')['items']]").ok
True
>>> check("import socket\\ndef program(call):\\n    return 1").reason[:40]
"unsafe program: imports 'socket' (allowe"
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

MAX_SOURCE_CHARS = 8000
ENTRY = "program"
ALLOWED_MODULES = (
    "collections",
    "datetime",
    "functools",
    "itertools",
    "json",
    "math",
    "operator",
    "re",
    "statistics",
    "string",
)
SAFE_BUILTINS = (
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "StopIteration",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
    "True",
    "False",
    "None",
)
"""The builtins a program sees (the driver in the sandbox passes only these)."""
FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "eval",
        "exec",
        "compile",
        "input",
        "breakpoint",
        "help",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "memoryview",
        "type",
        "object",
        "super",
        "classmethod",
        "staticmethod",
        "property",
        "exit",
        "quit",
    }
)
_FRAME_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_BRANCHES = (ast.If, ast.IfExp, ast.Match)
_AGGREGATES = frozenset({"sum", "len", "max", "min", "sorted", "Counter", "mean", "median"})


@dataclass
class Checked:
    """The verdict on one program's source."""

    ok: bool
    reason: str = ""
    detail: str = ""
    control_flow: list[str] = field(default_factory=list)
    """Constructs found: ``loop``, ``filter``, ``branch``, ``aggregate`` (the task's metadata)."""


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _violation(tree: ast.AST) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            if isinstance(node, ast.ImportFrom) and node.level:
                return "uses a relative import"
            for name in names:
                if (name or "").split(".")[0] not in ALLOWED_MODULES:
                    return f"imports {name!r} (allowed: {', '.join(ALLOWED_MODULES)})"
        elif isinstance(node, ast.Name) and (node.id in FORBIDDEN_NAMES or _dunder(node.id)):
            return f"uses {node.id!r}"
        elif isinstance(node, ast.Attribute) and (
            node.attr.startswith("__") or node.attr.startswith(_FRAME_PREFIXES)
        ):
            return f"reads the attribute {node.attr!r}"
        elif isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.Global | ast.Nonlocal):
            return f"uses {type(node).__name__.lower()}"
    return None


def control_flow(tree: ast.AST) -> list[str]:
    """The control-flow constructs in ``tree``, in a fixed order."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS):
            found.add("loop")
        elif isinstance(node, _COMPREHENSIONS):
            found.add("loop")
            if any(gen.ifs for gen in node.generators):
                found.add("filter")
        elif isinstance(node, _BRANCHES):
            found.add("branch")
        elif isinstance(node, ast.AugAssign) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in _AGGREGATES
        ):
            found.add("aggregate")
    return [c for c in ("loop", "filter", "branch", "aggregate") if c in found]


def check(source: str) -> Checked:
    """Whether ``source`` may be run as a task program (see the module docstring)."""
    if len(source) > MAX_SOURCE_CHARS:
        return Checked(False, f"program is longer than {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return Checked(False, "program does not parse", f"{exc.msg} (line {exc.lineno})")
    entry = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ENTRY]
    if not entry:
        return Checked(False, f"no top-level def {ENTRY}(call)")
    args = entry[0].args
    if len(args.posonlyargs) + len(args.args) < 1:
        return Checked(False, f"{ENTRY}() takes no argument (it must take call)")
    why = _violation(tree)
    if why is not None:
        return Checked(False, f"unsafe program: {why}")
    flow = control_flow(tree)
    if not {"loop", "branch"} & set(flow):
        return Checked(False, "no control flow (no loop, comprehension or branch)")
    return Checked(True, control_flow=flow)
