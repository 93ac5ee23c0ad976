"""Material for the design stage: the local documents and API specifications the user gave.

Nothing is fetched: the synthesizer reads only the paths it is given (files, or folders of
files). An OpenAPI/Swagger file (JSON or YAML) is condensed to its operations and schemas, the
part that shapes a database and tools; any other text file is excerpted. The excerpts share a
character budget so the prompt stays within a small model's context.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError

TEXT_SUFFIXES = {".md", ".txt", ".rst", ".json", ".yaml", ".yml", ".html", ".htm", ".csv", ""}
_TAG = re.compile(r"<[^>]+>")
_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Material:
    name: str
    kind: str
    """``"api-spec"`` or ``"document"``."""
    excerpt: str


def _load_structured(path: Path, text: str) -> Any:
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # PyYAML is optional: the raw text is used instead
            return None
        return yaml.safe_load(text)
    return None


def summarise_openapi(spec: dict[str, Any], limit: int = 6000) -> str:
    """Title, operations (``METHOD /path: summary (params)``) and schema fields of a spec."""
    info = spec.get("info") if isinstance(spec.get("info"), dict) else {}
    lines = [f"{info.get('title', 'API')}: {str(info.get('description', ''))[:400]}"]
    paths = spec.get("paths") if isinstance(spec.get("paths"), dict) else {}
    for route, item in paths.items():
        if not isinstance(item, dict):
            continue
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params = [p.get("name") for p in op.get("parameters", []) if isinstance(p, dict)]
            summary = op.get("summary") or op.get("operationId") or ""
            lines.append(f"{method.upper()} {route}: {summary} ({', '.join(map(str, params))})")
    schemas = (spec.get("components") or {}).get("schemas") or spec.get("definitions") or {}
    for name, schema in schemas.items() if isinstance(schemas, dict) else ():
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        fields = [f"{k}:{v.get('type', '?')}" for k, v in props.items() if isinstance(v, dict)]
        lines.append(f"schema {name}: {', '.join(fields[:20])}")
    text = "\n".join(lines)
    return text[:limit]


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
    return [path]


def gather(paths: list[str | Path], budget: int = 12_000) -> list[Material]:
    """Read every given source; ``budget`` characters are shared among them.

    Raises:
        ConfigError: a path does not exist or cannot be read as text (named in the message).
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise ConfigError(f"source {path} does not exist")
        files += _files(path)
    if not files:
        return []
    share = max(500, budget // len(files))
    materials = []
    for path in files[:40]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"source {path} cannot be read: {exc}") from exc
        try:
            data = _load_structured(path, text)
        except Exception:  # noqa: BLE001 - malformed JSON/YAML is still useful as text
            data = None
        if isinstance(data, dict) and ("openapi" in data or "swagger" in data) and "paths" in data:
            materials.append(Material(path.name, "api-spec", summarise_openapi(data, share)))
            continue
        if path.suffix in (".html", ".htm"):
            text = html.unescape(_TAG.sub(" ", text))
        excerpt = re.sub(r"[ \t]+", " ", text).strip()[:share]
        materials.append(Material(path.name, "document", excerpt))
    return materials
