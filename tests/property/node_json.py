"""Node's ``JSON.parse`` (the parser Claude Code is built on) as a test oracle.

One node process serves a whole test session: each request is one line of JSON
(the file's bytes, base64) on its stdin, each answer one line on its stdout. Node
reads a settings file as Claude Code does (UTF-8, a leading BOM dropped) and
answers ``{"ok": true, "foreign": ...}`` with the document re-serialized by
``JSON.stringify`` minus the keys sandbox-setup owns (``sandbox``,
``permissions``, ``requiredMinimumVersion``, ``allowManagedHooksOnly``), or
``{"ok": false, "error": ...}``.
(Claude Code 2.1.197's own
reading was checked by hand with ``claude doctor``: a BOM, ``1e400``, a
5000-digit integer and a lone ``"\\ud800"`` load; ``NaN`` is "Invalid or
malformed JSON"; of duplicate keys the last one counts.)
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from typing import Any

SCRIPT = r"""
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let text = Buffer.from(JSON.parse(line), "base64").toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let answer;
  try {
    const value = JSON.parse(text);
    let foreign = null;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const rest = Object.assign({}, value);
      delete rest.sandbox;
      delete rest.permissions;
      delete rest.requiredMinimumVersion;
      delete rest.allowManagedHooksOnly;
      foreign = JSON.stringify(rest);
    }
    answer = { ok: true, object: foreign !== null, foreign };
  } catch (e) {
    answer = { ok: false, error: String(e.message) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
"""


class NodeJson:
    """A running ``node`` that answers :meth:`parse` requests (see the module doc)."""

    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise FileNotFoundError("node")
        self._proc = subprocess.Popen(
            [node, "-e", SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def parse(self, data: bytes) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(base64.b64encode(data).decode()) + "\n")
        self._proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self._proc.stdout.readline())
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)
