"""``agentworld llm serve``: one of our models behind an OpenAI-compatible HTTP server."""

from __future__ import annotations

import argparse
import logging

from agentworld_gym.commands import subcommands
from agentworld_gym.llm.chat_format import ToolFormat


def register(sub: argparse._SubParsersAction) -> None:
    p = subcommands(sub, "llm", "serve and use LLMs").add_parser(
        "serve",
        help="serve a local model over the OpenAI API (/v1/chat/completions, ...)",
        description=(
            "Serve the embedded SmolLM2 (default), a Hugging Face model or, with --backend "
            "vllm, a vLLM engine over HTTP: GET /v1/models, POST /v1/chat/completions "
            "(streaming too), POST /v1/completions, GET /health. Any OpenAI client can use it, "
            "e.g. agentworld synth env --llm-base-url http://127.0.0.1:8000/v1 "
            "--llm-model smollm2-135m-instruct. Concurrent requests are batched. Needs the "
            "'serve' extra (starlette, uvicorn) and the model's own ('train')."
        ),
    )
    p.add_argument(
        "--model", default="embedded", help="embedded (default), a hub id or a local folder"
    )
    p.add_argument("--backend", choices=["transformers", "vllm"], default="transformers")
    p.add_argument(
        "--served-model-name",
        default=None,
        help="the model name clients send (default: smollm2-135m-instruct or --model)",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    p.add_argument(
        "--dtype",
        choices=["auto", "float32", "bfloat16", "float16"],
        default="auto",
        help="weights' dtype (auto: bfloat16 where the device has native bf16, else float32)",
    )
    p.add_argument(
        "--max-model-len", type=int, default=None, help="context window (default: the model's)"
    )
    p.add_argument("--max-batch", type=int, default=8, help="most sequences generated together")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: the cores other processes leave free)",
    )
    p.add_argument("--tool-format", choices=[f.value for f in ToolFormat], default="auto")
    p.add_argument(
        "--no-constrain-calls",
        dest="constrain_calls",
        action="store_false",
        help="sample tool calls freely (default: a chat request's calls are held to its tools: "
        "a real tool name, its parameters, enum members and JSON types; transformers backend)",
    )
    p.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    p.add_argument(
        "--log-level", choices=["critical", "error", "warning", "info", "debug"], default="info"
    )
    p.set_defaults(func=cmd_llm_serve)


def cmd_llm_serve(args: argparse.Namespace) -> int:
    from agentworld_gym.llm.server import ServeConfig, serve

    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    config = ServeConfig(
        model=args.model,
        backend=args.backend,
        served_model_name=args.served_model_name,
        host=args.host,
        port=args.port,
        dtype=args.dtype,
        max_model_len=args.max_model_len,
        max_batch=args.max_batch,
        threads=args.threads,
        tool_format=args.tool_format,
        constrain_calls=args.constrain_calls,
        api_key=args.api_key,
        log_level=args.log_level,
    )
    serve(config)
    return 0
