"""A real Prometheus server on 127.0.0.1 for end-to-end tests: configured, started, queried, stopped.

The server is Debian's ``prometheus`` package (``make test-e2e`` installs it and passes the executable in
``SHAPECHECK_PROMETHEUS``). It runs with a configuration and a data directory of its own under the
test's temporary directory, and scrapes one target every second.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .server import ServerProcess, free_port

PROMETHEUS_ENV = "SHAPECHECK_PROMETHEUS"
SCRAPE_INTERVAL_SECONDS = 1
_READY_TIMEOUT_SECONDS = 60.0


def prometheus_executable() -> Path:
    """The ``prometheus`` executable: ``$SHAPECHECK_PROMETHEUS``, else the one on the ``PATH``."""
    configured = os.environ.get(PROMETHEUS_ENV) or shutil.which("prometheus")
    if not configured or not Path(configured).exists():
        raise RuntimeError(
            f"Prometheus is not installed ({configured or 'not on the PATH'}); run `make test-e2e` "
            f"(it installs Debian's prometheus package) or set {PROMETHEUS_ENV}"
        )
    return Path(configured)


class PrometheusServer(ServerProcess):
    """One ``prometheus`` process scraping ``target`` (``host:port``) as job ``shapecheck``."""

    JOB = "shapecheck"

    def __init__(self, working_dir: Path, target: str) -> None:
        super().__init__("Prometheus", working_dir / "prometheus.log")
        self.working_dir = working_dir
        self.target = target
        self.port = free_port()

    @property
    def base_url(self) -> str:
        """The HTTP base URL (UI and ``/api/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        """Write the configuration, start the server and wait until ``/-/ready`` answers 200."""
        config = self.working_dir / "prometheus.yml"
        config.write_text(
            json.dumps(  # JSON is YAML: no YAML writer needed
                {
                    "global": {
                        "scrape_interval": f"{SCRAPE_INTERVAL_SECONDS}s",
                        "scrape_timeout": f"{SCRAPE_INTERVAL_SECONDS}s",
                        "evaluation_interval": f"{SCRAPE_INTERVAL_SECONDS}s",
                    },
                    "scrape_configs": [
                        {"job_name": self.JOB, "static_configs": [{"targets": [self.target]}]}
                    ],
                }
            ),
            encoding="utf-8",
        )
        command = [
            str(prometheus_executable()),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.working_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        self.launch(command, f"{self.base_url}/-/ready", timeout=_READY_TIMEOUT_SECONDS, poll_seconds=0.2)
        return self

    def _get(self, path: str, params: list[tuple[str, str]]) -> Any:
        url = f"{self.base_url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                payload = json.load(response)
        except urllib.error.HTTPError as error:  # a bad query answers 400 with the parser's message
            payload = json.load(error)
        if payload.get("status") != "success":
            raise AssertionError(f"{path} {params}: {payload.get('errorType')}: {payload.get('error')}")
        return payload["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query at the current time (``/api/v1/query``): the vector's series."""
        data = self._get("/api/v1/query", [("query", expr)])
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def label_values(self, label: str, match: str) -> list[str]:
        """The values of ``label`` on the series ``match`` selects (``/api/v1/label/<name>/values``)."""
        values: list[str] = self._get(
            f"/api/v1/label/{urllib.parse.quote(label)}/values", [("match[]", match)]
        )
        return values

    def wait_for_scrape_after(self, moment: float, timeout: float = 30.0) -> None:
        """Wait until a scrape of the target that started after ``moment`` (Unix time) has succeeded."""
        deadline = time.monotonic() + timeout
        up = f'up{{job="{self.JOB}"}}'
        while time.monotonic() < deadline:
            # timestamp() of a plain selector is the sample's (of an expression, the evaluation time)
            scraped = self.query(f"timestamp({up})")
            if scraped and float(scraped[0]["value"][1]) > moment:
                (health,) = self.query(up)
                if health["value"][1] == "1":
                    return
            time.sleep(SCRAPE_INTERVAL_SECONDS / 4)
        raise AssertionError(f"no successful scrape of {self.target} after {moment}:\n{self.log_tail()}")
