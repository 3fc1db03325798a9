"""The HTTP server: records every request, answers Messages requests from the script."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fake_api.records import (
    RecordedRequest,
    ToolResult,
    assistant_turns,
    content_text,
    is_main_conversation,
)
from tests.fake_api.script import Step, TextStep, build_content
from tests.fake_api.wire import DEFAULT_MODEL, auxiliary_text, message_json, sse_events


@dataclass(frozen=True)
class Pace:
    """How fast a streamed answer comes, as a model's would: ``first_token`` seconds after
    ``message_start``, then ``delta_chars`` characters per delta every ``interval`` seconds."""

    first_token: float = 0.5
    delta_chars: int = 16
    interval: float = 0.04


class FakeMessagesAPI:
    """The fake server: a context manager that serves ``script`` on 127.0.0.1.

    ``port=0`` (the default) takes an ephemeral port; :attr:`base_url` is what
    Claude's ``ANTHROPIC_BASE_URL`` must be. After the script's last step, main
    requests get :attr:`final_text` as a plain text answer. With ``pace``, streamed
    answers take time as a model's do (the tests leave it out: no waiting).
    """

    def __init__(
        self,
        script: Sequence[Step],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        final_text: str = "The scripted turn is over.",
        pace: Pace | None = None,
    ) -> None:
        self.script: tuple[Step, ...] = tuple(script)
        self.final_text = final_text
        self.pace = pace
        self._address = (host, port)
        self._tag = uuid.uuid4().hex[:8]  # tool_use ids of this server only
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._port: int | None = None  # kept after stop(), for the records' messages
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> FakeMessagesAPI:
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(self._address, handler)
        self._port = int(self._server.server_address[1])
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() waits for one poll
            name="fake-messages-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens on (the ephemeral one when started with ``port=0``)."""
        if self._port is None:
            raise RuntimeError("the fake Messages API was never started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._address[0]}:{self.port}"

    # -- what was received -----------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_main]

    @property
    def auxiliary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_messages and not r.is_main]

    def tool_use_id(self, step: int) -> str:
        """The id of the tool_use the server sends for ``step`` (stable per server)."""
        return f"toolu_fake_{self._tag}_{step:02d}"

    def tool_results(self) -> list[ToolResult]:
        """Every tool_result of a scripted tool_use, first answer per step."""
        found: dict[int, ToolResult] = {}
        ids = {self.tool_use_id(i): i for i in range(len(self.script))}
        for request in self.main_requests:
            for message in request.body.get("messages", []):
                if not isinstance(message, dict) or not isinstance(message.get("content"), list):
                    continue
                for block in message["content"]:
                    if not isinstance(block, dict) or block.get("type") != "tool_result":
                        continue
                    step = ids.get(block.get("tool_use_id", ""))
                    if step is not None and step not in found:
                        found[step] = ToolResult(
                            step=step,
                            tool_use_id=block["tool_use_id"],
                            text=content_text(block.get("content")),
                            is_error=bool(block.get("is_error", False)),
                            content=block.get("content"),
                        )
        return [found[k] for k in sorted(found)]

    def tool_result(self, step: int) -> ToolResult:
        """The tool_result of ``step``, or an AssertionError that says what arrived."""
        for result in self.tool_results():
            if result.step == step:
                return result
        raise AssertionError(
            f"no tool_result for step {step} reached the fake Messages API\n{self.describe()}"
        )

    def steps_served(self) -> set[int]:
        return {r.step for r in self.main_requests if r.step is not None}

    def assert_reached(self) -> None:
        """Fail unless at least one main conversation request arrived."""
        if not self.main_requests:
            raise AssertionError(
                f"Claude never sent a main conversation request to {self.base_url}\n"
                + self.describe()
            )

    def assert_conversation_done(self) -> None:
        """Fail unless every step was served and every tool_use got its tool_result."""
        self.assert_reached()
        missing = set(range(len(self.script))) - self.steps_served()
        if missing:
            raise AssertionError(f"script steps never served: {sorted(missing)}\n{self.describe()}")
        tool_steps = {i for i, s in enumerate(self.script) if not isinstance(s, TextStep)}
        answered = {r.step for r in self.tool_results()}
        if tool_steps - answered:
            raise AssertionError(
                f"tool_use without a tool_result: steps {sorted(tool_steps - answered)}\n"
                + self.describe()
            )

    def describe(self) -> str:
        """Every recorded request, one line each (for failure messages)."""
        lines = [r.summary() for r in self.requests]
        return "requests received:\n  " + ("\n  ".join(lines) if lines else "(none)")

    # -- answering ---------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _reply_for(self, body: Any) -> tuple[list[dict[str, Any]], str, int | None]:
        """Content, stop reason and script step for a Messages request body."""
        if not is_main_conversation(body):
            return [{"type": "text", "text": auxiliary_text(body)}], "end_turn", None
        step = assistant_turns(body)
        if step >= len(self.script):
            return [{"type": "text", "text": self.final_text}], "end_turn", step
        content, stop = build_content(self.script[step], self.tool_use_id(step))
        return content, stop, step


class _Handler(BaseHTTPRequestHandler):
    """One request: record it, then answer Messages, count_tokens, models or anything else."""

    api: FakeMessagesAPI
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streaming, as the real API

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the record is the log; stderr noise would only clutter pytest output

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        split = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = split.path
        step: int | None = None
        if self.command == "POST" and path == "/v1/messages":
            content, stop, step = self.api._reply_for(body)
            model = body.get("model", DEFAULT_MODEL) if isinstance(body, dict) else DEFAULT_MODEL
            self.api._record(
                RecordedRequest(self.command, path, parse_qs(split.query), headers, body, raw, step)
            )
            if isinstance(body, dict) and body.get("stream"):
                self._send_stream(content, stop, model)
            else:
                self._send_json(message_json(content, stop, model))
            return
        self.api._record(
            RecordedRequest(self.command, path, parse_qs(split.query), headers, body, raw)
        )
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            self._send_json({"input_tokens": 10})
        elif path == "/v1/models":
            self._send_json(
                {
                    "data": [
                        {
                            "type": "model",
                            "id": DEFAULT_MODEL,
                            "display_name": "Fake Sonnet",
                            "created_at": "2025-09-29T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": DEFAULT_MODEL,
                    "last_id": DEFAULT_MODEL,
                }
            )
        else:
            # Start-up probes (/api/...) get an empty object: harmless, and recorded.
            self._send_json({})

    def _common_headers(self, content_type: str) -> None:
        self.send_header("content-type", content_type)
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:20])
        self.send_header("anthropic-organization-id", "00000000-0000-0000-0000-000000000000")

    def _send_json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self._common_headers("application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_stream(self, content: list[dict[str, Any]], stop: str, model: str) -> None:
        self.send_response(HTTPStatus.OK)
        self._common_headers("text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        pace = self.api.pace
        first = True
        for event, data in sse_events(content, stop, model, pace.delta_chars if pace else None):
            if pace and event == "content_block_delta":
                time.sleep(pace.first_token if first else pace.interval)
                first = False
            chunk = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
