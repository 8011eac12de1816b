"""A local OpenAI-compatible chat-completions server for the tests (127.0.0.1 only).

    python tests/llm_server.py LOG      # prints the port, then serves until killed

It answers POST /v1/chat/completions with "rewrite: " + the prompt on one line, so a test can
see exactly what the strategy sent, and appends each request's JSON to LOG.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(sys.argv[1], "a", encoding="utf-8") as log:
            log.write(json.dumps(body) + "\n")
        if self.path.rstrip("/") != "/v1/chat/completions" or body.get("model") == "missing-model":
            return self._send(404, {"error": {"message": f"no model {body.get('model')}", "type": "not_found"}})
        prompt = body["messages"][-1]["content"]
        answer = "rewrite: " + " ".join(prompt.split())
        self._send(200, {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    def _send(self, status: int, document: dict) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
