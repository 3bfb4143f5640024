"""A real Arize Phoenix server on 127.0.0.1 for end-to-end tests: started, polled until ready, stopped.

Phoenix runs from its own virtual environment (its dependencies would move the test environment's
pins); ``make test-e2e`` installs it and passes the executable in ``SHAPECHECK_PHOENIX``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .server import ServerProcess, free_port

PHOENIX_ENV = "SHAPECHECK_PHOENIX"
_DEFAULT_EXECUTABLE = Path(__file__).resolve().parents[2] / ".venv-e2e" / "bin" / "phoenix"
_READY_TIMEOUT_SECONDS = 120.0


def phoenix_executable() -> Path:
    """The ``phoenix`` executable: ``$SHAPECHECK_PHOENIX``, else the one ``make test-e2e`` installs."""
    executable = Path(os.environ.get(PHOENIX_ENV) or _DEFAULT_EXECUTABLE)
    if not executable.exists():
        raise RuntimeError(
            f"Phoenix is not installed at {executable}; run `make test-e2e` (or set {PHOENIX_ENV})"
        )
    return executable


class PhoenixServer(ServerProcess):
    """One ``phoenix serve`` process with its own working directory and free ports."""

    def __init__(self, working_dir: Path) -> None:
        super().__init__("Phoenix", working_dir / "phoenix.log")
        self.working_dir = working_dir
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.startup_seconds = 0.0

    @property
    def base_url(self) -> str:
        """The HTTP base URL: UI, REST API and OTLP/HTTP (``/v1/traces``)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        """OTLP/gRPC ``host:port`` (Phoenix binds it on every interface, whatever PHOENIX_HOST says)."""
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> PhoenixServer:
        """Start Phoenix and wait until ``/healthz`` answers 200."""
        environment = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.http_port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": str(self.working_dir),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
        started = time.monotonic()
        self.launch(
            [str(phoenix_executable()), "serve"],
            f"{self.base_url}/healthz",
            timeout=_READY_TIMEOUT_SECONDS,
            poll_seconds=0.25,
            environment=environment,
        )
        self.startup_seconds = time.monotonic() - started
        return self

    def spans(
        self, project: str, limit: int = 1000, attributes: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Spans of a project through the REST API (``GET /v1/projects/{project}/spans``).

        ``attributes`` become the API's server-side ``attribute=key:value`` filters (ANDed).
        """
        pairs = [("limit", str(limit))] + [("attribute", f"{k}:{v}") for k, v in (attributes or {}).items()]
        query = urllib.parse.urlencode(pairs)
        url = f"{self.base_url}/v1/projects/{urllib.parse.quote(project)}/spans?{query}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                payload = json.load(response)
        except urllib.error.HTTPError as error:
            if error.code == 404:  # the project appears with its first span
                return []
            raise
        data: list[dict[str, Any]] = payload["data"]
        return data

    def span_names_matching(self, project: str, condition: str) -> list[str]:
        """Names of the project's spans matching a Phoenix filter condition (the UI filter bar's language)."""
        query = (
            "query ($condition: String!) { projects { edges { node { name "
            "spans(first: 1000, filterCondition: $condition) { edges { node { name } } } } } } }"
        )
        body = json.dumps({"query": query, "variables": {"condition": condition}}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = json.load(response)
        assert not payload.get("errors"), payload["errors"]
        projects = [edge["node"] for edge in payload["data"]["projects"]["edges"]]
        (node,) = [node for node in projects if node["name"] == project]
        return [edge["node"]["name"] for edge in node["spans"]["edges"]]

    def wait_for_spans(self, project: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll the REST API until the project holds at least ``count`` spans (or the timeout passes)."""
        deadline = time.monotonic() + timeout
        spans = self.spans(project)
        while len(spans) < count and time.monotonic() < deadline:
            time.sleep(0.1)
            spans = self.spans(project)
        return spans
