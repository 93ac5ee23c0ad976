"""Scripted policies over rendered text: stand-in models for engines that generate from tokens.

Engines such as verl hand their rollout server a token sequence, not a chat. To run a
pipeline end to end without a model (CPU smoke runs, tests), a scripted server decodes the
prompt, reads the chat back (:func:`chatml_messages`), asks a policy such as
:class:`~agentworld_gym.integrations.rollout.GoldPolicy` for the next action and answers with
its Hermes text (:func:`action_text`), which the environment parses as the model's own.

>>> text = ("<|im_start|>system\\nS<|im_end|>\\n<|im_start|>user\\nQ<|im_end|>\\n"
...         "<|im_start|>tool\\n<tool_response>\\n{}\\n</tool_response><|im_end|>\\n"
...         "<|im_start|>assistant\\n")
>>> [(m["role"], m["content"]) for m in chatml_messages(text)]
[('system', 'S'), ('user', 'Q'), ('tool', '{}')]
>>> action_text({"role": "assistant", "content": "done"})
'done'
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentworld_gym.llm.chat_format import hermes_call_text

Message = dict[str, Any]

_TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(?:<\|im_end\|>|$)", re.DOTALL)
_RESPONSE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.DOTALL)


def chatml_messages(text: str) -> list[Message]:
    """The chat in a ChatML rendering: one message per turn, ``<tool_response>`` blocks as
    ``tool`` messages (whether the template puts them in a ``tool`` or a ``user`` turn).
    The trailing empty generation prompt is dropped."""
    messages: list[Message] = []
    for match in _TURN.finditer(text):
        role, content = match.group(1), match.group(2)
        responses = _RESPONSE.findall(content) if role in ("tool", "user") else []
        if responses:
            messages += [{"role": "tool", "content": r} for r in responses]
        elif role != "assistant" or content:
            messages.append({"role": role, "content": content})
    return messages


def action_text(message: Any) -> str:
    """An OpenAI assistant message (or text) as the text a Hermes model would generate."""
    if isinstance(message, str):
        return message
    calls = message.get("tool_calls") or []
    parts = [message["content"]] if message.get("content") else []
    parts += [hermes_call_text(call) for call in calls]
    return "\n".join(parts)


def openai_policy_server(
    policy: Any, host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint whose model is ``policy``
    (``policy(messages, tools) -> assistant message``, e.g. a ``GoldPolicy``).

    Start it with ``threading.Thread(target=server.serve_forever, daemon=True).start()``;
    its base URL is ``http://{host}:{server.server_address[1]}/v1``. Stop with
    ``server.shutdown()``.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            message = dict(policy(body["messages"], body.get("tools", [])))
            message.setdefault("role", "assistant")
            choice = {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
            usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            payload = json.dumps(
                {
                    "id": "scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [choice],
                    "usage": usage,
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)
