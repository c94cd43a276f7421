"""The live dashboard: the report's page (`dlsched.report.page`) served while a run goes on,
updated by server-sent events, with Prometheus metrics beside it (``live run --dashboard``).

A Starlette app served by uvicorn in a background thread (the ``dashboard`` extra), bound to
127.0.0.1 unless told otherwise. Routes: ``/`` the page (the run so far, then its own updates),
``/events`` an event stream sending the run's page data each time its event log grew (checked
every `POLL_S`), ``/data`` the same data once, ``/metrics`` Prometheus text
(`dlsched.report.metrics`: events by kind, jobs running and waiting, GPUs held).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from dlsched.report.data import RunInput, run_data, snapshot
from dlsched.report.page import render

POLL_S = 0.2
"""Seconds between looks at the event log (an allocation change shows within about this)."""
HEARTBEAT_S = 10.0
"""Seconds between comments on an idle event stream (keeps proxies from closing it)."""


class Dashboard:
    """Serves one run's page as it goes.

    Args:
        source: the run as it stands now (its `RunInput`, whose log the run appends to).
        host, port: where to listen (port 0: any free port; `port` says which after `start`).
    """

    def __init__(self, source: Callable[[], RunInput], host: str = "127.0.0.1", port: int = 0):
        self.source = source
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._metrics: Any = None  # its Prometheus registry, made at the first scrape

    def data(self) -> tuple[int, dict[str, Any]]:
        """(events so far, the page's data of the run so far)."""
        run = self.source()
        log = snapshot(run.log)
        now = dataclasses.replace(run, log=log, trace_ids=dict(run.trace_ids))
        return len(log), run_data(now)

    def page(self) -> str:
        run = self.source()
        frozen = dataclasses.replace(run, log=snapshot(run.log))
        title = f"live · {run.scheduler} · seed {run.seed}"
        notes = ["Live: the page follows the run as it goes."]
        return render(title, [frozen], notes=notes, live=True)

    def metrics(self) -> str:
        """Prometheus text of the run so far (`dlsched.report.metrics`)."""
        from dlsched.report.metrics import exposition, registry

        if self._metrics is None:
            self._metrics = registry(self.source)
        return exposition(self._metrics)

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import (
            HTMLResponse,
            JSONResponse,
            PlainTextResponse,
            Response,
            StreamingResponse,
        )
        from starlette.routing import Route

        async def page(request: Request) -> Response:
            return HTMLResponse(self.page())

        async def data(request: Request) -> Response:
            return JSONResponse(self.data()[1])

        async def metrics(request: Request) -> Response:
            from dlsched.report.metrics import CONTENT_TYPE

            return PlainTextResponse(self.metrics(), media_type=CONTENT_TYPE)

        async def stream() -> AsyncIterator[str]:
            seen, quiet = -1, time.monotonic()
            while True:
                count, payload = self.data() if len(self.source().log) != seen else (seen, None)
                if payload is not None:
                    seen, quiet = count, time.monotonic()
                    yield f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"
                elif time.monotonic() - quiet > HEARTBEAT_S:
                    quiet = time.monotonic()
                    yield ": still here\n\n"
                await asyncio.sleep(POLL_S)

        async def events(request: Request) -> Response:
            return StreamingResponse(stream(), media_type="text/event-stream")

        routes = [Route("/", page), Route("/data", data), Route("/events", events),
                  Route("/metrics", metrics)]  # fmt: skip
        return Starlette(routes=routes)

    def start(self) -> Dashboard:
        """Serve in a background thread; return once listening (``self.port`` is set)."""
        import socket

        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ValueError(f"--dashboard: cannot listen on {self.host}:{self.port}: "
                             f"{exc.strerror or exc}") from None  # fmt: skip
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="dashboard", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving (open event streams end)."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"


def parse_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` → (host, port); host 127.0.0.1 unless given. ValueError naming it."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise ValueError(f"--dashboard: {text!r} is not [HOST:]PORT (a port 0-65535)")
    return host or "127.0.0.1", number
