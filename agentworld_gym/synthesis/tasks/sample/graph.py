"""The tool-dependency graph of an environment, whose weighted walks become graph tasks.

Edge weights between tools A and B:

- **strong (3, directed A -> B)**: an output of A feeds a required input of B — A returns
  records of (or references to) a collection whose key B requires (``list_projects`` ->
  ``get_project``, ``create_page.id`` -> ``append_block.block_id``);
- **weak (2, both ways)**: A and B work on the same collection, or an output of A fits an
  *optional* input of B, or both take keys of the same collection;
- **independent (1)**: anything else.

Outputs are inferred from the tool model (a tool over ``orders`` returns orders, and their
reference fields such as ``customerId``) and refined by what executed calls actually return
(:meth:`ToolGraph.observe`). An LLM, when configured, may add strong edges the names hide.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import orjson

from agentworld_gym.synthesis.tasks.model import EnvModel, ToolModel

logger = logging.getLogger(__name__)

STRONG, WEAK, INDEPENDENT = 3, 2, 1
EDGE_NAMES = {STRONG: "strong", WEAK: "weak", INDEPENDENT: "independent"}


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    weight: int
    reason: str


class ToolGraph:
    """Weighted edges between the tools of one :class:`EnvModel`."""

    def __init__(self, model: EnvModel) -> None:
        self.model = model
        self.produces: dict[str, set[str]] = {
            n: _produces(t, model) for n, t in model.tools.items()
        }
        self.extra: set[tuple[str, str]] = set()
        """Strong edges added by an LLM or by observation."""
        self._cache: dict[tuple[str, str], Edge] = {}

    def observe(self, tool: str, collections: set[str]) -> None:
        """Record that an executed call of ``tool`` returned keys of ``collections``."""
        new = collections - self.produces[tool]
        if new:
            self.produces[tool] |= new
            self._cache.clear()

    def edge(self, src: str, dst: str) -> Edge:
        key = (src, dst)
        if key not in self._cache:
            self._cache[key] = self._edge(src, dst)
        return self._cache[key]

    def _edge(self, src: str, dst: str) -> Edge:
        a, b = self.model.tools[src], self.model.tools[dst]
        out = self.produces[src]
        strong = out & b.consumes(required_only=True)
        if strong or (src, dst) in self.extra:
            why = f"{src} returns {sorted(strong)[0]} keys that {dst} requires" if strong else "llm"
            return Edge(src, dst, STRONG, why)
        if a.collection and a.collection == b.collection:
            return Edge(src, dst, WEAK, f"both work on {a.collection}")
        optional = out & b.consumes(required_only=False)
        if optional:
            return Edge(
                src, dst, WEAK, f"{src} returns {sorted(optional)[0]} keys, optional for {dst}"
            )
        shared = a.consumes(False) & b.consumes(False)
        if shared:
            return Edge(src, dst, WEAK, f"both take {sorted(shared)[0]} keys")
        # the reverse strong direction is a weak link (same resource, seen from the other end)
        if self.produces[dst] & a.consumes(required_only=True):
            return Edge(src, dst, WEAK, f"{dst} feeds {src}")
        return Edge(src, dst, INDEPENDENT, "independent")

    def strong_predecessors(self, dst: str) -> list[str]:
        return [s for s in self.model.tools if s != dst and self.edge(s, dst).weight == STRONG]

    def starts(self) -> list[str]:
        """Tools that produce output and have no strong predecessor (walks begin there)."""
        return [
            n
            for n, t in self.model.tools.items()
            if self.produces[n] and not t.writes and not self.strong_predecessors(n)
        ]

    def edges(self) -> list[Edge]:
        """Every non-independent edge (for inspection and tests)."""
        names = list(self.model.tools)
        out = []
        for s in names:
            for d in names:
                if s != d:
                    e = self.edge(s, d)
                    if e.weight > INDEPENDENT:
                        out.append(e)
        return out

    def summary(self) -> dict[str, int]:
        names = list(self.model.tools)
        counts = {"strong": 0, "weak": 0, "independent": 0}
        for s in names:
            for d in names:
                if s != d:
                    counts[EDGE_NAMES[self.edge(s, d).weight]] += 1
        return counts

    def label_with_llm(self, backend: Any) -> int:
        """Ask an LLM for strong edges the heuristics missed; returns how many were added.

        The model sees each tool's name, description and parameters and answers with a JSON
        list of ``[producer, consumer]`` pairs; pairs naming unknown tools are ignored, so a
        confused answer adds nothing.
        """
        lines = []
        for t in self.model.spec.tools:
            params = ", ".join(t.parameters.get("properties", {}))
            lines.append(f"- {t.name}({params}): {t.description[:160]}")
        prompt = (
            "Tools of one API:\n" + "\n".join(lines) + "\n\nList every pair [A, B] where an "
            "output of A is needed as a required input of B (e.g. an id A returns). Reply "
            "with only a JSON array of pairs."
        )
        reply = backend.chat([{"role": "user", "content": prompt}], temperature=0.0)
        text = reply.get("content") or ""
        match = re.search(r"\[.*\]", text, re.DOTALL)
        added = 0
        try:
            pairs = orjson.loads(match.group(0)) if match else []
        except orjson.JSONDecodeError:
            pairs = []
        for pair in pairs if isinstance(pairs, list) else []:
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and pair[0] in self.model.tools
                and pair[1] in self.model.tools
                and pair[0] != pair[1]
            ):
                if (pair[0], pair[1]) not in self.extra:
                    self.extra.add((pair[0], pair[1]))
                    added += 1
        self._cache.clear()
        logger.info("LLM labelled %d extra strong edges", added)
        return added


def _produces(tool: ToolModel, model: EnvModel) -> set[str]:
    """Collections whose keys ``tool``'s output carries (before any observation)."""
    if tool.collection is None or tool.collection not in model.collections:
        return set()
    if tool.op in ("list", "search") or (tool.record is not None and tool.op != "delete"):
        coll = model.collections[tool.collection]
        hidden = tool.hidden
        return {tool.collection} | {
            c for f, c in coll.references.items() if f not in hidden and c in model.collections
        }
    return set()
