"""The compiled state model of one environment: collections, tool arguments, tool plans.

Plain dataclasses shared by the compiler, the seeders, the task builder and the validator.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.spec import ToolSpec
from agentworld_gym.synthesis.envs.infer import Shape


@dataclass
class CollectionModel:
    """One collection of the state: its record schema, key and links to other collections."""

    name: str
    noun: str
    schema: dict[str, Any]
    pk: str = "id"
    key_gen: str = "uuid"
    scopes: dict[str, str | None] = field(default_factory=dict)
    """Record field -> collection whose key it holds (``None``: a scope without one)."""
    references: dict[str, str] = field(default_factory=dict)
    closed: bool = False
    """The API's record schema forbids extra fields (``additionalProperties: false``)."""
    declared: set[str] = field(default_factory=set)
    """Fields the API declares; others were added to hold scopes and lookups."""

    def hidden(self) -> list[str]:
        """Fields to leave out of answers: added fields the API's closed schema forbids."""
        if not self.closed:
            return []
        return sorted(f for f in self.schema["properties"] if f not in self.declared)

    def meta(self) -> dict[str, Any]:
        """The ``collections`` entry of ``env.json``."""
        links = {f: c for f, c in self.scopes.items() if c} | self.references
        out: dict[str, Any] = {"primary_key": self.pk}
        if links:
            out["references"] = dict(sorted(links.items()))
        return out


@dataclass
class Arg:
    """One tool argument: where it goes in the request and which record field it names."""

    name: str
    location: str
    schema: dict[str, Any]
    field: str | None = None
    role: str = "ignored"
    """key | scope | filter | match | search | page | body | ignored"""
    required: bool = False
    paging: str | None = None
    """For ``page`` arguments: size | offset | page | cursor."""


@dataclass
class ToolPlan:
    shape: Shape
    spec: ToolSpec
    args: dict[str, Arg]


@dataclass
class EnvModel:
    """What compiling one group of operations produced (and what it had to leave out)."""

    collections: dict[str, CollectionModel]
    tools: list[ToolPlan]
    error: dict[str, Any]
    dropped: Counter[str] = field(default_factory=Counter)
