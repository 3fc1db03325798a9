"""An Ansible callback for the fleet tests: every task result as one JSON line.

Enabled beside the default stdout callback (``callbacks_enabled = fleet_record``), it
appends to the file named by ``FLEET_RECORD``, so a test asserts on the modules' return
values while the operator's view (the default callback) is asserted on as text.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_record"
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, record: dict[str, Any]) -> None:
        with open(os.environ["FLEET_RECORD"], "a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")

    def _record(self, status: str, result: Any) -> None:
        self._write(
            {
                "status": status,
                "host": result.host.get_name(),
                "task": result.task.get_name(),
                "result": dict(result.result),
            }
        )

    def v2_runner_on_ok(self, result: Any) -> None:
        self._record("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._record("failed", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._record("skipped", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        hosts = sorted(stats.processed.keys())
        self._write({"stats": {host: stats.summarize(host) for host in hosts}})
