"""A local OpenAI-compatible HTTP server for the judging tests (real HTTP on 127.0.0.1).

Answers /v1/models and /v1/chat/completions.  Outputs are deterministic from
the request content: a rubric JSON, an A/B label with first-token
log-probabilities, or a two-stage verdict.  Faults are injected by request
number (``FAULTS`` env / constructor): 429 with Retry-After, 500, a stalled
reply (timeout), malformed JSON body, truncated output, prose instead of JSON.

Run as a script: ``python tests/fake_openai_server.py PORT [latency_ms] [faults]``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CRITERIA = ("adherence", "helpfulness", "factuality", "completeness", "clarity", "fluency")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class FakeJudge:
    def __init__(self, latency_ms: float = 0.0, faults: dict[int, str] | None = None, fault_every: dict | None = None):
        self.latency = latency_ms / 1000
        self.faults = faults or {}  # request number -> fault kind
        self.fault_every = fault_every or {}  # kind -> every k-th request
        self.count = 0
        self.lock = threading.Lock()

    def next_fault(self) -> str | None:
        with self.lock:
            self.count += 1
            n = self.count
        if n in self.faults:
            return self.faults[n]
        for kind, k in self.fault_every.items():
            if k and n % k == 0:
                return kind
        return None

    def completion(self, body: dict, fault: str | None) -> dict:
        msgs = body.get("messages", [])
        system = msgs[0]["content"] if msgs else ""
        user = msgs[-1]["content"] if msgs else ""
        h = _digest(user)
        logprobs = None
        if "JSON object" in system:  # rubric
            sa = {c: 1 + (h >> k) % 10 for k, c in enumerate(CRITERIA)}
            sb = {c: 1 + (h >> (k + 8)) % 10 for k, c in enumerate(CRITERIA)}
            text = json.dumps({"A": sa, "B": sb}) + "\nBoth answers were read carefully."
            if fault == "prose":
                text = "I think Answer A is somewhat better overall, but both are fine."
            elif fault == "truncated":
                text = text[: len(text) // 3]
        elif "single letter" in system:  # A/B with logprobs
            pa = 0.05 + 0.9 * ((h % 1000) / 1000)
            import math

            text = "A" if pa >= 0.5 else "B"
            if body.get("logprobs"):
                logprobs = {"content": [{"token": text, "logprob": math.log(max(pa, 1 - pa)), "bytes": None,
                                         "top_logprobs": [{"token": "A", "logprob": math.log(pa), "bytes": None},
                                                          {"token": "B", "logprob": math.log(1 - pa), "bytes": None}]}]}
        elif "[[A]]" in system:
            text = "Answer A is more complete. [[" + "ABC"[h % 3] + "]]"
        else:
            text = "NO_ECHO" if h % 2 else "ECHO"
        return {"id": f"cmpl-{h}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": logprobs,
                             "finish_reason": "length" if fault == "truncated" else "stop"}],
                "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4,
                          "total_tokens": len(user) // 4 + len(text) // 4}}


def make_handler(judge: FakeJudge):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, payload: bytes, headers: dict | None = None):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-judge", "object": "model",
                                                                        "created": 0, "owned_by": "tests"}]}).encode())
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            fault = judge.next_fault()
            if judge.latency:
                time.sleep(judge.latency)
            if fault == "429":
                self._send(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}', {"Retry-After": "0.05"})
                return
            if fault == "500":
                self._send(500, b'{"error": {"message": "boom"}}')
                return
            if fault == "timeout":
                time.sleep(3.0)
            if fault == "malformed":
                self._send(200, b'{"id": "x", "choices": [ {"message": ')
                return
            self._send(200, json.dumps(judge.completion(body, fault)).encode())

    return Handler


class FakeServer:
    def __init__(self, judge: FakeJudge | None = None, port: int = 0):
        self.judge = judge or FakeJudge()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), make_handler(self.judge))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    port = int(sys.argv[1])
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    every = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    with FakeServer(FakeJudge(latency, fault_every=every), port) as s:
        print(s.url, flush=True)
        threading.Event().wait()
