"""What a tool does, in words: its semantic op, its own verb, its resource noun.

A request, a rubric or an admissible-action menu that names what a tool does must use the
tool's own meaning: "cancel the order" for ``CancelOrder``, never "update the order". The
runtime op of a compiled tool (``implementation.op``) says only how it touches the database
(a cancel is an ``update`` there), so :func:`classify` reads the words the API itself uses.

Rules, in order (deterministic, no model):

1. **Words.** The operation id is split into lower-case tokens (``CancelOrder2`` ->
   ``cancel order``; ``sql_instances_truncateLog`` -> ``sql instances truncate log``). The
   summary is the description's first sentence. A path comes from the call (``method``,
   ``path``) or from a description that is only ``"POST /orders/{id}/cancel"``.
2. **Verb.** The first verb found in: the path's action segment (``/cancel``, ``:export``),
   then the operation id's tokens (a specific verb before a generic one: ``PUT_ApplyPayment``
   is ``apply``), then the summary's first word. A generic verb (put, post, patch, set,
   write, save, upsert, make, do) only confirms the runtime op. When the id's verb is a plain
   update/create and the summary opens with an action verb, the summary wins.
3. **Op.** An action verb (cancel, start, validate, send, ...) makes ``action`` for a tool
   that writes; for a read-only tool only a computing verb (validate, simulate, convert,
   calculate, ...) does, other reads keep ``read``/``list``/``search`` from the runtime op.
   A create/update/delete verb gives that op; no verb gives the runtime op (or the HTTP
   method's, for tools without one).
4. **Verb word.** Reads say ``get``/``list``/``search``; writes keep their own plain word
   (``add``, ``remove``, ``rename``, ``cancel``) and fall back to ``create``/``update``/
   ``delete``.
5. **Noun.** The operation id's object phrase (the words after the verb up to a
   preposition, or the id's group before a trailing verb), when it is 1-3 clean words; else
   the path's last static segment that is not the action; else the collection name. The last
   word is singularised with a real rule set (``statuses`` -> ``status``, ``policies`` ->
   ``policy``, ``addresses`` -> ``address``), never by cutting an ``s`` off blindly.
6. **Destructive.** The verb removes or ends something irreversibly (delete, cancel, revoke,
   terminate, void, purge, ...), or the runtime op or HTTP method deletes a record.

:func:`meaning` reads a tool's stored ``semantics`` (when the spec carries one) and else
classifies it once (cached).
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass
from typing import Any

OPS = ("read", "list", "search", "create", "update", "delete", "action")


@dataclass(frozen=True)
class Meaning:
    """A tool's meaning: ``op`` (one of :data:`OPS`), the ``verb`` a request should use, the
    resource ``noun`` as people say it, and whether the tool destroys or ends something."""

    op: str
    verb: str
    noun: str
    destructive: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- lexicon -------------------------------------------------------------------------------

_READ = {"get", "retrieve", "fetch", "read", "show", "view", "describe", "lookup", "download"}
_READ |= {"inspect", "obtain", "load", "count", "return", "see", "display", "export"}
_LIST = {"list", "browse", "enumerate"}
_SEARCH = {"search", "find", "query", "filter", "autocomplete", "suggest", "lookup"}
_CREATE = {"create", "add", "insert", "register", "upload", "import", "book", "issue", "new"}
_CREATE |= {"append"}
_CREATE |= {"provision", "allocate", "generate", "build", "post", "put", "make", "open"}
_UPDATE = {"update", "edit", "modify", "change", "patch", "set", "replace", "rename", "save"}
_UPDATE |= {"upsert", "configure", "move", "reorder", "mark", "toggle", "adjust", "write"}
_DELETE = {"delete", "remove", "destroy", "erase", "purge", "drop", "clear", "deregister"}
_DELETE |= {"unregister", "uninstall", "discard", "del"}
_ACTION = {
    "cancel", "start", "stop", "restart", "reboot", "validate", "verify", "send", "approve",
    "reject", "execute", "run", "convert", "simulate", "test", "trigger", "publish",
    "unpublish", "archive", "unarchive", "restore", "activate", "deactivate", "enable",
    "disable", "suspend", "resume", "pause", "unpause", "reset", "refund", "capture", "void",
    "revoke", "terminate", "invite", "accept", "decline", "confirm", "close", "reopen", "lock",
    "unlock", "submit", "complete", "resolve", "sync", "refresh", "calculate", "compute",
    "estimate", "preview", "render", "process", "apply", "merge", "clone", "copy",
    "duplicate", "transfer", "assign", "unassign", "attach", "detach", "associate",
    "disassociate", "link", "unlink", "subscribe", "unsubscribe", "follow", "unfollow",
    "like", "unlike", "notify", "ping", "login", "logout", "authorize", "authenticate",
    "rotate", "regenerate", "renew", "deploy", "rollback", "scan", "analyze", "analyse",
    "translate", "parse", "predict", "classify", "detect", "transcribe", "extract",
    "evaluate", "reserve", "release", "block", "unblock", "ban", "unban", "mute", "unmute",
    "share", "unshare", "pin", "unpin", "star", "unstar", "vote", "flag", "upgrade",
    "downgrade", "install", "migrate", "promote", "demote", "escalate", "acknowledge",
    "dismiss", "retry", "replay", "redeliver", "resend", "abort", "kill", "expire",
    "invalidate", "deprovision", "join", "leave", "charge", "pay", "checkout", "ship",
    "fulfill", "grant", "enroll", "unenroll", "claim", "redeem", "withdraw", "deposit",
    "settle", "exchange", "swap", "sign", "encrypt", "decrypt", "truncate", "launch",
    "invoke", "schedule", "unschedule", "check", "reindex", "recover", "backup", "snapshot",
    "tag", "untag", "purchase", "order", "reply", "forward", "upvote", "downvote", "mint",
    "burn", "stake", "unstake", "dispatch", "broadcast", "reconcile",
    "finalize", "finalise", "commit", "rebuild", "reprocess", "shutdown",
    "recognize", "protect", "unprotect", "fork", "wait", "watch", "unwatch", "replicate",
    "repair", "rebalance", "reconnect", "disconnect", "connect", "scale", "export", "import",
    "undeploy",
}  # fmt: skip
_COMPUTE = {
    "validate", "verify", "simulate", "convert", "calculate", "compute", "estimate",
    "preview", "render", "test", "translate", "parse", "predict", "classify", "detect",
    "transcribe", "extract", "evaluate", "analyze", "analyse", "check",
}  # fmt: skip
_DESTRUCTIVE = {
    "delete", "remove", "destroy", "erase", "purge", "drop", "clear", "deregister",
    "unregister", "uninstall", "discard", "del", "cancel", "revoke", "terminate", "void",
    "abort", "kill", "expire", "invalidate", "deprovision", "truncate", "reset", "ban",
    "burn", "shutdown", "wipe",
}  # fmt: skip
# Words that name an HTTP method more than an intent: they confirm the runtime op only.
_GENERIC = {"get", "post", "put", "patch", "set", "write", "save", "upsert", "make", "do", "new"}
_GENERIC |= {"open", "order", "check", "return", "tag", "run"}
# What a ``check`` asks about: ``CheckNameAvailability`` creates no "name availability".
_INQUIRIES = {
    "availability", "existence", "eligibility", "access", "permission", "permissions",
    "compliance", "health", "status", "usage", "quota", "limit", "limits", "capacity",
}  # fmt: skip
_ED_NOUNS = {"feed", "seed", "bed", "speed", "need", "embed", "red", "shed", "weed", "breed"}
# Verbs that also name resources (a ``test``, a ``backup``): a one-word object may be one.
_NOUNS_TOO = {"test", "backup", "snapshot", "order", "transfer", "tag", "run", "release"}
_NOUNS_TOO |= {"check", "merge", "copy", "charge", "claim", "deposit", "vote", "flag"}
_NOUNS_TOO |= {"block", "link"}
# Plain words a request may use for a write, kept as the tool's verb.
_SPEAKABLE = {
    "create": {"create", "add", "register", "upload", "import", "book", "issue", "generate"},
    "update": {"update", "edit", "rename", "change", "replace", "move", "configure", "mark"},
    "delete": {"delete", "remove", "deregister", "unregister", "uninstall", "clear"},
}
_VERB_OF = {"read": "get", "list": "list", "search": "search"}
_VERB_OF |= {"create": "create", "update": "update", "delete": "delete"}
_RUNTIME = {"get": "read", "list": "list", "search": "search", "create": "create"}
_RUNTIME |= {"update": "update", "delete": "delete"}
_METHOD = {"get": "read", "post": "create", "put": "update", "patch": "update"}
_METHOD |= {"delete": "delete"}
_PREPOSITIONS = {"by", "for", "in", "to", "from", "of", "with", "on", "at", "into", "as"}
_PREPOSITIONS |= {"using", "via"}
_STOP = {"api", "public", "private", "id", "ids", "all", "the", "a", "an", "my", "me"}
_STOP |= {"details", "detail", "info", "information", "current", "single", "one", "me"}
_STOP |= {"unread", "latest", "recent", "active", "pending", "mine", "self", "browse"}
_STOP |= {"code", "uuid", "slug", "sid", "arn", "guid", "identifier", "by"}
_STOP |= {"specific", "given", "existing", "v", "x", "amz", "target", "json", "async"}
_STOP |= {"and", "or", "new", "using", "via", "request", "endpoint", "operation", "search"}
_STOP |= {"bulk", "multiple", "many", "list", "controller"}


def _verb_class(word: str) -> str | None:
    """The op a verb word stands for (``None`` for a word that is not a verb here)."""
    if word in _ACTION:
        return "action"
    for op, words in (("list", _LIST), ("search", _SEARCH), ("read", _READ)):
        if word in words:
            return op
    for op, words in (("create", _CREATE), ("update", _UPDATE), ("delete", _DELETE)):
        if word in words:
            return op
    return None


# -- words ---------------------------------------------------------------------------------

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HTTP_LINE = re.compile(r"^(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(/\S*)", re.I)


def tokens(text: str) -> list[str]:
    """Lower-case word tokens of an identifier (``getCallQoS_v2`` -> ``get call qo s v 2``)."""
    return [t.lower() for t in _CAMEL.findall(text)]


def _summary(description: str) -> str:
    first = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)[0]
    return first.rstrip(".")


_INVARIANT = {
    "analytics", "news", "sms", "dns", "aws", "os", "ios", "kudos", "chaos", "series",
    "species", "access", "diagnostics", "statistics", "economics", "physics", "logistics",
    "ethics", "status", "data", "metadata", "media", "settings", "gas", "bias",
    "canvas", "alias", "atlas", "lens", "bonus", "campus", "corpus", "virus", "census",
    "focus", "radius", "genus", "apparatus", "consensus", "thesis", "basis", "analysis",
    "axis", "crisis", "diagnosis", "hypothesis", "synopsis", "emphasis", "mms",
    "plus", "minus", "bus", "us", "gps", "https", "cors", "jenkins", "kubernetes", "ssl",
    "tls", "always", "express", "yes", "is", "was", "this", "has", "its", "less", "stats",
    "details", "credentials", "permissions", "properties",
}  # fmt: skip
_IRREGULAR = {
    "people": "person", "children": "child", "men": "man", "women": "woman",
    "criteria": "criterion", "indices": "index", "matrices": "matrix", "vertices": "vertex",
    "analyses": "analysis", "diagnoses": "diagnosis", "theses": "thesis", "crises": "crisis",
    "axes": "axis", "leaves": "leaf", "halves": "half", "shelves": "shelf", "wolves": "wolf",
    "knives": "knife", "lives": "life", "wives": "wife", "mice": "mouse", "geese": "goose",
    "feet": "foot", "teeth": "tooth", "heroes": "hero", "potatoes": "potato",
    "tomatoes": "tomato", "echoes": "echo", "vetoes": "veto", "quizzes": "quiz",
    "aliases": "alias", "biases": "bias", "canvases": "canvas", "atlases": "atlas",
    "statuses": "status", "buses": "bus", "viruses": "virus", "campuses": "campus",
    "bonuses": "bonus", "corpora": "corpus", "genera": "genus", "credentials": "credential",
    "permissions": "permission", "properties": "property", "details": "detail",
    "settings": "setting", "ids": "id", "ips": "ip", "gases": "gas", "lenses": "lens",
    "focuses": "focus", "censuses": "census", "radii": "radius", "cacti": "cactus",
    "schemata": "schema", "phenomena": "phenomenon", "apis": "api", "apises": "api",
}  # fmt: skip
_IE = {"movies", "cookies", "zombies", "calories", "rookies", "selfies", "pies", "ties"}
_IE |= {"lies", "dies", "species", "series", "hippies", "genies", "goalies", "brownies"}


def singular(word: str) -> str:
    """The singular of an English noun (``policies`` -> ``policy``, ``statuses`` ->
    ``status``, ``addresses`` -> ``address``, ``databases`` -> ``database``)."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w in _INVARIANT or len(w) <= 3 or not w.endswith("s"):
        return w
    if w.endswith(("ss", "us", "is")) and not w.endswith("uses"):
        return w
    if w in _IE:
        return w[:-1]
    if w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes", "zzes", "uses")):
        return w[:-2]
    return w[:-1]


# -- classify ------------------------------------------------------------------------------


def _path_action(path: str) -> tuple[str | None, list[str]]:
    """The action word a path ends in (``/orders/{id}/cancel``, ``/v1/{name}:export``) and
    the path's static segments before it, each as tokens."""
    path = path.split("?")[0].split("#")[0]
    custom = None
    if ":" in path.rsplit("/", 1)[-1]:
        path, custom = path.rsplit(":", 1)
    raw = [s for s in path.split("/") if s]
    segments = [s for s in raw if not s.startswith("{")]
    segments = [s for s in segments if not re.fullmatch(r"v\d+(\w+)?|api|rest|\d[\d.-]*", s)]
    groups = [tokens(s) for s in segments]
    if not custom and (not raw or raw[-1].startswith("{")):
        return None, groups  # ``/backupRuns/{id}``: the path ends in a record, not an action
    for group in [tokens(custom)] if custom else groups[-1:]:
        if group and _verb_class(group[0]) == "action":
            return group[0], groups if custom else groups[:-1]
    return None, groups


_METHOD_WORDS = {"get", "post", "put", "patch", "delete"}


def _groups(operation_id: str) -> tuple[list[list[str]], str | None, bool]:
    """The operation id's separator-delimited groups as tokens, without a leading lone HTTP
    method (``PUT_ApplyPayment``), and that method word."""
    truncated = re.search(r"_[0-9a-f]{8}$", operation_id)
    if truncated:  # ``safe_name`` cut a long id and hashed it: its last group is partial
        operation_id = operation_id[: truncated.start()].rsplit("_", 1)[0]
    groups = [tokens(g) for g in re.split(r"[_./\s]+", operation_id)]
    groups = [g for g in groups if g]
    method = None
    if len(groups) > 1 and len(groups[0]) == 1 and groups[0][0] in _METHOD_WORDS:
        method = groups.pop(0)[0]
    return groups, method, truncated is not None


def _order(groups: list[list[str]]) -> list[int]:
    """Where to look for the verb: a path-like id (``sql_instances_truncateLog``, 3+ groups)
    puts it last or first; a short one reads left to right."""
    n = len(groups)
    if n == 2 and len(groups[1]) == 1:  # ``sign_delete``, ``JobStepExecutions_Get``
        return [1, 0]
    if n >= 3 and not any(g == ["a"] or g == ["an"] or g == ["the"] for g in groups):
        return [n - 1, 0, *range(1, n - 1)]
    return list(range(n))


def _pick_verb(groups: list[list[str]]) -> tuple[str | None, int, int]:
    """The verb opening a group (a specific one before a generic one), with the group's and
    the token's index; a trailing action verb beats a generic one, and a verb anywhere in
    the id is the last resort."""
    generic = None
    for gi in _order(groups):
        word = groups[gi][0]
        if _verb_class(word) is None:
            continue
        if word not in _GENERIC:
            if generic and word in _NOUNS_TOO:
                continue  # ``patch-block-children``: the object after a method word
            if (
                gi == 0
                and len(groups) >= 3
                and len(groups[0]) == 1
                and groups[-1] in (["get"], ["list"], ["insert"], ["patch"], ["update"])
            ):
                continue  # ``compute_instanceGroupManagers_patch``: the service's name
            return word, gi, 0
        generic = generic or (word, gi, 0)
    last = groups[-1][-1] if groups else ""
    if generic and _verb_class(last) == "action" and last not in _NOUNS_TOO | _GENERIC:
        # ``postDatabasesMySQLInstanceCredentialsReset``: a trailing action verb
        return last, len(groups) - 1, len(groups[-1]) - 1
    if generic:
        return generic
    found = [
        (word in _GENERIC, gi, ti, word)
        for gi, group in enumerate(groups)
        for ti, word in enumerate(group)
        if _verb_class(word) is not None
        and not (word in _NOUNS_TOO and any(w in _GENERIC for w in group[:ti]))
    ]
    if found:
        _, gi, ti, word = min(found)
        return word, gi, ti
    return None, -1, -1


def _noun_phrase(words: list[str]) -> str:
    """1-3 clean words naming a resource (the last 3 of a longer run), the last one singular;
    ``""`` when none fit."""
    if "id" in words[:-1]:  # ``postEcommerceStoresIdOrders``: the part after the id
        words = words[len(words) - words[::-1].index("id") :]
    while len(words) > 1 and words[-1].endswith("ed") and words[-1] not in _ED_NOUNS:
        words = words[:-1]  # a trailing adjective (``notifications_unread``, ``shipped``)
    kept = [w for w in words if w not in _STOP and not w.isdigit() and len(w) > 1]
    kept = [w for w in kept if not re.fullmatch(r"v\d\w*", w)]
    while len(kept) > 1 and _verb_class(kept[-1]) and kept[-1] not in _NOUNS_TOO:
        kept = kept[:-1]  # ``PspReferenceCancel``: the verb again at the end
    kept = kept[-3:]
    if not kept or any(not w.isalpha() for w in kept):
        return ""
    if len(kept) == 1 and _verb_class(kept[0]) is not None and kept[0] not in _NOUNS_TOO:
        return ""
    return " ".join([*kept[:-1], singular(kept[-1])])


def _noun_from_id(groups: list[list[str]], gi: int, ti: int) -> str:
    """The object the id names: the words after its verb inside the verb's group
    (``DescribeRouteCalculator``), else the last group after it up to a preposition
    (``Remove_a_member_from_the_organization``), else the group before it
    (``entries_create``), else (no verb) the id's last group."""
    if gi < 0:
        return _noun_phrase(groups[-1]) if groups else ""
    rest = groups[gi][ti + 1 :]
    if not rest and ti > 0:  # ``ExpenseMerchantLookup``: the words before a trailing verb
        return _noun_phrase(groups[gi][:ti])
    cut = next((i for i, w in enumerate(rest) if w in _PREPOSITIONS), len(rest))
    phrase = _noun_phrase(rest[:cut])
    if phrase or cut < len(rest):
        return phrase
    after: list[list[str]] = []
    for group in groups[gi + 1 :]:
        if group[0] in _PREPOSITIONS:
            break
        after.append(group)
    for group in [*reversed(after), *reversed(groups[:gi])]:
        phrase = _noun_phrase(group)
        if phrase and not (len(group) == 1 and group[0].endswith("ed")):
            return phrase
    return ""


@functools.lru_cache(maxsize=65536)
def classify(
    method: str = "",
    path: str = "",
    operation_id: str = "",
    summary: str = "",
    description: str = "",
    runtime_op: str = "",
    collection: str = "",
) -> Meaning:
    """The :class:`Meaning` of one operation (rules in the module docstring).

    >>> classify("PUT", "/orders/{orderId}/cancel", "CancelOrder2", "Cancel order")
    Meaning(op='action', verb='cancel', noun='order', destructive=True)
    >>> classify("GET", "/v1/email/configuration-sets", "ListConfigurationSets").noun
    'configuration set'
    """
    if not path:
        line = _HTTP_LINE.match(description.strip()) or _HTTP_LINE.match(summary.strip())
        if line:
            method, path = method or line.group(1), line.group(2)
    summary = summary or _summary(description)
    if _HTTP_LINE.match(summary):
        summary = ""
    base = _RUNTIME.get(runtime_op) or _METHOD.get(method.lower(), "")
    path_verb, path_groups = _path_action(path) if path else (None, [])
    groups, method_word, truncated = _groups(operation_id)
    id_verb, gi, ti = _pick_verb(groups)
    id_verb = id_verb or method_word
    flat = [w for g in groups for w in g]
    if "or" in flat and {_verb_class(w) for w in flat} >= {"create", "update"}:
        id_verb = method_word  # ``CreateOrUpdate``, ``Add_or_update``: an upsert, runtime op
    summary_words = tokens(summary)[:1]
    summary_verb = summary_words[0] if summary_words and _verb_class(summary_words[0]) else None
    verb = path_verb or id_verb
    if verb in _GENERIC and summary_verb and _verb_class(summary_verb) in ("create", "update"):
        verb = summary_verb  # ``patch-block-children`` / "Append block children"
    if verb is None or (
        _verb_class(verb) in ("update", "create")
        and summary_verb
        and _verb_class(summary_verb) == "action"
        and summary_verb not in _GENERIC
    ):
        verb = summary_verb or verb
    op = _op(verb, base)
    if "check" in flat[:-1] and flat[-1] in _INQUIRIES:
        verb, op = "check", "action"  # ``CheckNameAvailability``: a question, not a record
    noun = "" if truncated else _noun_from_id(groups, gi, ti)
    if not noun and path_groups:
        noun = _noun_phrase(path_groups[-1])
    if not noun and truncated:
        noun = _noun_from_id(groups, gi, ti)
    if not noun and collection:
        words = re.split(r"[_\s-]+", collection)
        while len(words) > 1 and (_verb_class(words[0]) or words[0] in _PREPOSITIONS):
            words = words[1:]
        noun = _noun_phrase(words)
    if not noun:
        noun = singular(collection.replace("_", " ")) if collection else "record"
    if op == "action":
        word = verb or "run"
    elif op in _SPEAKABLE and verb in _SPEAKABLE[op]:
        word = verb
    else:
        word = _VERB_OF[op]
    destructive = (verb in _DESTRUCTIVE and op not in ("read", "list", "search")) or (
        op == "delete" or base == "delete"
    )
    return Meaning(op, word, noun, destructive)


def _op(verb: str | None, base: str) -> str:
    """The op of a tool whose own verb is ``verb`` and whose runtime op is ``base``."""
    reads = ("read", "list", "search")
    cls = _verb_class(verb) if verb else None
    if base in reads:
        return "action" if verb in _COMPUTE else base
    if cls == "action" and verb not in _GENERIC:
        return "action"
    if cls in ("create", "update", "delete") and verb not in _GENERIC:
        return cls
    if base:
        return base
    return cls if cls in ("create", "update", "delete", *reads) else "action"


def meaning(tool: Any) -> Meaning:
    """The :class:`Meaning` of a tool (a :class:`~agentworld_gym.spec.ToolSpec` or its JSON
    dict): its stored ``semantics`` when the spec has one, else :func:`classify` of its name,
    description and runtime op."""
    if isinstance(tool, dict):
        stored, name = tool.get("semantics"), tool.get("name", "")
        description, impl = tool.get("description", ""), tool.get("implementation") or {}
    else:
        stored, name = getattr(tool, "semantics", None), tool.name
        description, impl = tool.description, tool.implementation or {}
    if isinstance(stored, dict) and stored.get("op") in OPS:
        return Meaning(
            stored["op"],
            str(stored.get("verb", "")),
            str(stored.get("noun", "")),
            bool(stored.get("destructive", False)),
        )
    method, path = "", ""
    if impl.get("type") != "op":
        # Hand-built tools (``API-get-user``, ``API-patch-page``) name their method.
        for word in tokens(name):
            if word in _METHOD:
                method = word
                break
    return classify(
        method,
        path,
        name,
        "",
        description,
        str(impl.get("op") or ""),
        str(impl.get("collection") or ""),
    )
