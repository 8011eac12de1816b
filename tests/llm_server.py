"""A local OpenAI-compatible chat-completions server for the tests (127.0.0.1 only).

    python tests/llm_server.py LOG [JUDGE.json]    # prints the port, then serves until killed

Without JUDGE.json it answers POST /v1/chat/completions with "rewrite: " + the prompt on one
line, so a test can see exactly what the strategy sent. With it, it plays a relevance judge
that answers from recorded labels (e.g. the iKAT organisers' GPT-4 pool judgments):

    {"labels": {DOCID: [[NEEDLE, ..., ANSWER], ...]},   # the answer for a prompt holding
                                                      # "[passage DOCID]" and every needle
                                                      # (of the entries that match, the one
                                                      # with the most needles; an ANSWER
                                                      # that is an object is sent as the
                                                      # whole HTTP 200 body, and
                                                      # {"raw body": TEXT} sends TEXT as it is)
     "delay_s": 0.0,                                  # latency of every answer
     "faults": {"429": N, "500": N, "timeout": N},    # the first request of every Nth prompt
                                                      # (by its sha256) fails so
     "timeout_s": 1.0,                                # how long a "timeout" stalls
     "always_503": N,                                 # every Nth prompt always fails
     "failing": [NEEDLE, ...],                        # a prompt holding one always fails (503)
     "too_long": [NEEDLE, ...]}                       # a prompt holding one is refused at once
                                                      # with HTTP 400, as vLLM refuses one past
                                                      # the model's window

Each request's JSON is appended to LOG (one line each, written on arrival).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JUDGE: dict = {}
ATTEMPTS: dict[str, int] = {}
LOCK = threading.Lock()
PASSAGE = re.compile(r"\[passage (\S+)\]")
TOO_LONG = ("This model's maximum context length is 4096 tokens. However, you requested 9100 tokens "
            "(9000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.")


def faulty(prompt: str, every: int | None) -> bool:
    return bool(every) and int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % every == 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without this, Nagle's algorithm holds the
        # body until the client's delayed ACK (40 ms a request)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with LOCK, open(sys.argv[1], "a", encoding="utf-8") as log:
            log.write(json.dumps(body) + "\n")
        if self.path.rstrip("/") != "/v1/chat/completions" or body.get("model") == "missing-model":
            return self._send(404, {"error": {"message": f"no model {body.get('model')}", "type": "not_found"}})
        prompt = body["messages"][-1]["content"]
        if not JUDGE:
            return self._answer(body, "rewrite: " + " ".join(prompt.split()))
        if any(needle in prompt for needle in JUDGE.get("too_long", [])):
            return self._send(400, {"error": {"message": TOO_LONG, "type": "BadRequestError", "code": 400}})
        with LOCK:
            attempt = ATTEMPTS[prompt] = ATTEMPTS.get(prompt, 0) + 1
        time.sleep(JUDGE.get("delay_s", 0))
        faults = JUDGE.get("faults", {})
        if faulty(prompt, JUDGE.get("always_503")) or any(needle in prompt for needle in JUDGE.get("failing", [])):
            return self._send(503, {"error": {"message": "overloaded", "type": "server_error"}})
        if attempt == 1:
            if faulty(prompt, faults.get("429")):
                return self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}})
            if faulty(prompt, faults.get("500")):
                return self._send(500, {"error": {"message": "oops", "type": "server_error"}})
            if faulty(prompt, faults.get("timeout")):
                time.sleep(JUDGE.get("timeout_s", 1.0))
        label = self._label(prompt)
        if isinstance(label, dict):  # a recorded body, sent as is: a malformed completion
            return self._send(200, label)
        return self._answer(body, label)

    def _label(self, prompt: str) -> str:
        match = PASSAGE.search(prompt)
        candidates = JUDGE["labels"].get(match.group(1), []) if match else []
        found = [entry for entry in candidates if all(needle in prompt for needle in entry[:-1])]
        most = max(map(len, found), default=0)  # a later turn's entry holds an earlier turn's needles too
        best = [entry[-1] for entry in found if len(entry) == most]
        return best[0] if len(best) == 1 else f"no single recorded label ({len(best)} match)"

    def _answer(self, body: dict, answer: str) -> None:
        self._send(200, {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    def _send(self, status: int, document: dict) -> None:
        data = document["raw body"].encode() if set(document) == {"raw body"} else json.dumps(document).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as handle:
            JUDGE.update(json.load(handle))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()
