"""A local OpenAI-compatible HTTP server for the judging tests (real HTTP on 127.0.0.1).

Answers /v1/models and /v1/chat/completions, and (``FakeServer`` only) the Batch API: /v1/files
(upload, delete), /v1/batches (create, retrieve, list, cancel) and /v1/files/{id}/content, see
``FakeBatches``.
Outputs are deterministic from the request content: a rubric JSON, an A/B label with first-token
log-probabilities, or a two-stage verdict.  Faults are injected by request
number (``FAULTS`` env / constructor): 429 with Retry-After, 500, a stalled
reply (timeout), malformed JSON body, truncated output, prose instead of JSON.

``FakeServer`` (threads, for the tests) and ``serve_asyncio`` (one event loop,
for the throughput benchmark: a thread per connection would make the server,
not the client, the bottleneck) share the request handling.

Outages are switched at run time (``FakeJudge.outage``): '503' answers every
completion with 503, 'hang' holds every request past any client timeout; and
``FakeServer.stop()`` / ``start()`` close and reopen the port (connection
refused in between).  Faults 'echo_key_400' and 'echo_key_200' put the
request's bearer key into an error body or an unparseable 200 body, as a
careless proxy would.  With ``log_path`` each sent completion appends
``<unix time>\t<request digest>`` to that file (the kill test counts repeats).

Run as a script: ``python tests/fake_openai_server.py PORT [latency_ms] [faults_json] [jitter] [log_path]``
(the asyncio server; ``jitter`` 0.1 draws each latency from ±10% around latency_ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CRITERIA = ("adherence", "helpfulness", "factuality", "completeness", "clarity", "fluency")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class FakeJudge:
    def __init__(
        self,
        latency_ms: float = 0.0,
        faults: dict[int, str] | None = None,
        fault_every: dict | None = None,
        jitter: float = 0.0,
        seed: int = 0,
        log_path: str | None = None,
        noise: float = 0.0,
    ):
        self.latency = latency_ms / 1000
        self.outage: str | None = None  # None, '503' or 'hang'
        self.log_path = log_path
        self.served = 0  # completions answered with 200
        self.received = 0  # completion requests received, whatever the answer (an outage's 503s included)
        self.jitter = jitter  # each latency drawn uniformly from latency × [1 - jitter, 1 + jitter]
        self.rng = random.Random(seed)
        self.noise = noise  # rubric: the two answers' scores swapped with this probability (a judge that varies)
        self.faults = faults or {}  # request number -> fault kind
        self.fault_every = fault_every or {}  # kind -> every k-th request
        self.count = 0
        self.lock = threading.Lock()
        self.batches = FakeBatches(self)

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

    def delay(self, fault: str | None) -> float:
        """Seconds to wait before answering: the latency, plus a stall for an injected timeout."""
        latency = self.latency * self.rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else self.latency
        return latency + (3.0 if fault == "timeout" else 0.0)

    def log_sent(self, raw: bytes) -> None:
        """Record a completion as sent (after its bytes went out)."""
        with self.lock:
            self.served += 1
            if self.log_path:
                with open(self.log_path, "a") as fh:
                    fh.write(f"{time.time():.6f}\t{hashlib.sha256(raw).hexdigest()[:16]}\n")

    def reply(self, body: dict, fault: str | None, auth: str = "") -> tuple[int, bytes, dict]:
        """(status, payload, extra headers) of a chat completion request, faults included."""
        if self.outage == "503":
            return 503, b'{"error": {"message": "service unavailable"}}', {}
        key = auth.removeprefix("Bearer ").strip()
        if fault == "echo_key_400":
            return 400, json.dumps({"error": {"message": f"bad request for key {key}"}}).encode(), {}
        if fault == "echo_key_200":
            return 200, f"upstream said: invalid key {key}".encode(), {}
        if fault == "400":
            return 400, b'{"error": {"message": "context length exceeded"}}', {}
        if fault == "401":
            return 401, b'{"error": {"message": "invalid api key"}}', {}
        if fault == "429":
            return 429, b'{"error": {"message": "slow down", "type": "rate_limit"}}', {"Retry-After": "0.05"}
        if fault == "500":
            return 500, b'{"error": {"message": "boom"}}', {}
        if fault == "malformed":
            return 200, b'{"id": "x", "choices": [ {"message": ', {}
        return 200, json.dumps(self.completion(body, fault)).encode(), {}

    def completion(self, body: dict, fault: str | None) -> dict:
        msgs = body.get("messages", [])
        system = msgs[0]["content"] if msgs else ""
        user = msgs[-1]["content"] if msgs else ""
        h = _digest(user)
        logprobs = None
        if "JSON object" in system:  # rubric
            sa = {c: 1 + (h >> k) % 10 for k, c in enumerate(CRITERIA)}
            sb = {c: 1 + (h >> (k + 8)) % 10 for k, c in enumerate(CRITERIA)}
            if self.noise:
                with self.lock:
                    swap = self.rng.random() < self.noise
                if swap:
                    sa, sb = sb, sa
            text = json.dumps({"A": sa, "B": sb}) + "\nBoth answers were read carefully."
            if fault == "prose":
                text = "I think Answer A is somewhat better overall, but both are fine."
            elif fault == "huge":
                text = "x" * 100_000
            elif fault == "truncated":
                text = text[: len(text) // 3]
        elif "single letter" in system:  # A/B with logprobs
            pa = 0.05 + 0.9 * ((h % 1000) / 1000)
            import math

            text = "A" if pa >= 0.5 else "B"
            if body.get("logprobs"):
                logprobs = {
                    "content": [
                        {
                            "token": text,
                            "logprob": math.log(max(pa, 1 - pa)),
                            "bytes": None,
                            "top_logprobs": [
                                {"token": "A", "logprob": math.log(pa), "bytes": None},
                                {"token": "B", "logprob": math.log(1 - pa), "bytes": None},
                            ],
                        }
                    ]
                }
        elif "[[A]]" in system:
            text = "Answer A is more complete. [[" + "ABC"[h % 3] + "]]"
        elif "You answer questions" in system:  # answer generation: reasoning, then an answer naming the turn
            turn = sum(1 for m in msgs if m.get("role") == "user")
            text = f"<think>reasoning for turn {turn}</think>Answer {turn} to: {user[:60]}"
        else:
            text = "NO_ECHO" if h % 2 else "ECHO"
        return {
            "id": f"cmpl-{h}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": logprobs,
                    "finish_reason": "length" if fault == "truncated" else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(user) // 4,
                "completion_tokens": len(text) // 4,
                "total_tokens": len(user) // 4 + len(text) // 4,
            },
        }


_MODELS = json.dumps(
    {"object": "list", "data": [{"id": "fake-judge", "object": "model", "created": 0, "owned_by": "tests"}]}
).encode()
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class FakeBatches:
    """The Batch API (/v1/files, /v1/batches) in memory: a batch completes ``delay_s`` after its creation,
    each request answered as /v1/chat/completions would (injected faults included: a 4xx or 5xx request
    goes to the error file).  ``outcome`` 'expired' answers only the first half of a batch's requests,
    'failed' rejects the batch at validation.  ``created`` counts the batches created (the duplicate check)."""

    def __init__(self, judge: FakeJudge):
        self.judge = judge
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.delay_s = 0.3
        self.outcome = "completed"
        self.created = 0
        self.requests_answered = 0
        self.create_delay_s = 0.0  # a create that answers this late (the batch exists from the start)
        self.uploads = 0  # files uploaded by clients (output files are ours)
        self.deleted: list[str] = []  # file ids deleted by clients
        self._file_ids = 0
        self.lock = threading.Lock()

    def _new_file_id(self) -> str:
        """A file id never used before (ids are not reused after a delete, as at the real provider)."""
        self._file_ids += 1
        return f"file-{self._file_ids}"

    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict]:
        from email.parser import BytesParser
        from email.policy import HTTP

        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields = {}
        for part in msg.iter_parts():
            fields[part.get_param("name", header="content-disposition")] = part.get_payload(decode=True)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return 400, {"error": {"message": "expected purpose=batch and a file"}}
        with self.lock:
            file_id = self._new_file_id()
            self.files[file_id] = fields["file"]
            self.uploads += 1
        return 200, {
            "id": file_id,
            "object": "file",
            "bytes": len(fields["file"]),
            "created_at": int(time.time()),
            "filename": "batch.jsonl",
            "purpose": "batch",
            "status": "processed",
        }

    def create(self, body: dict) -> tuple[int, dict]:
        if body.get("input_file_id") not in self.files:
            return 400, {"error": {"message": "unknown input_file_id"}}
        lines = [ln for ln in self.files[body["input_file_id"]].splitlines() if ln.strip()]
        with self.lock:
            self.created += 1
            batch_id = f"batch_{self.created}"
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body.get("endpoint"),
                "errors": None,
                "input_file_id": body["input_file_id"],
                "completion_window": body.get("completion_window", "24h"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "metadata": body.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_t0": time.monotonic(),
            }
        if self.create_delay_s:  # made at once, answered late: a client that gives up has created it all the same
            time.sleep(self.create_delay_s)
        return 200, self.view(batch_id)

    def view(self, batch_id: str) -> dict:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def retrieve(self, batch_id: str) -> tuple[int, dict]:
        with self.lock:
            b = self.batches.get(batch_id)
            if b is None:
                return 404, {"error": {"message": "no such batch"}}
            if b["status"] in ("validating", "in_progress") and time.monotonic() - b["_t0"] >= self.delay_s:
                self._finish(b)
            elif b["status"] == "validating":
                b["status"] = "in_progress"
            return 200, self.view(batch_id)

    def _finish(self, b: dict) -> None:
        if self.outcome == "failed":
            b["status"] = "failed"
            b["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "bad model"}]}
            return
        lines = [json.loads(ln) for ln in self.files[b["input_file_id"]].splitlines() if ln.strip()]
        if self.outcome == "expired":
            lines = lines[: len(lines) // 2]
        out, err = [], []
        for k, line in enumerate(lines):
            fault = self.judge.next_fault()
            code, payload, _ = self.judge.reply(line["body"], fault)
            try:
                body = json.loads(payload)
            except ValueError:
                body = payload.decode(errors="replace")
            record = {
                "id": f"batch_req_{b['id']}_{k}",
                "custom_id": line["custom_id"],
                "response": {"status_code": code, "request_id": f"req_{k}", "body": body},
                "error": None,
            }
            (out if code == 200 else err).append(json.dumps(record))
            self.requests_answered += code == 200
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = self._new_file_id()
                self.files[file_id] = ("\n".join(rows) + "\n").encode()
                b[name] = file_id
        b["status"] = "expired" if self.outcome == "expired" else "completed"
        b["request_counts"] = {"total": b["request_counts"]["total"], "completed": len(out), "failed": len(err)}

    def listing(self, query: str) -> tuple[int, dict]:
        import urllib.parse

        params = urllib.parse.parse_qs(query)
        limit = int(params.get("limit", ["20"])[0])
        after = params.get("after", [None])[0]
        ids = sorted(self.batches, key=lambda i: int(i.split("_")[1]), reverse=True)  # newest first
        if after in ids:
            ids = ids[ids.index(after) + 1 :]
        page = ids[:limit]
        data = [self.view(i) for i in page]
        return 200, {
            "object": "list",
            "data": data,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
            "has_more": len(ids) > limit,
        }

    def cancel(self, batch_id: str) -> tuple[int, dict]:
        with self.lock:
            b = self.batches.get(batch_id)
            if b is None:
                return 404, {"error": {"message": "no such batch"}}
            if b["status"] not in ("completed", "failed", "expired"):
                b["status"] = "cancelled"
            return 200, self.view(batch_id)

    def get(self, path: str) -> tuple[int, bytes] | None:
        """A GET of the Batch API, or None when the path is not one."""
        path, _, query = path.partition("?")
        parts = path.rstrip("/").split("/")
        if parts[-1] == "batches":
            code, body = self.listing(query)
        elif len(parts) >= 2 and parts[-2] == "batches":
            code, body = self.retrieve(parts[-1])
        elif parts[-1] == "content" and len(parts) >= 3 and parts[-3] == "files":
            data = self.files.get(parts[-2])
            return (200, data) if data is not None else (404, b'{"error": {"message": "no such file"}}')
        else:
            return None
        return code, json.dumps(body).encode()

    def delete(self, path: str) -> tuple[int, bytes] | None:
        """A DELETE of /v1/files/{id}, or None when the path is not one."""
        parts = path.split("?")[0].rstrip("/").split("/")
        if len(parts) < 2 or parts[-2] != "files":
            return None
        with self.lock:
            gone = self.files.pop(parts[-1], None)
            if gone is not None:
                self.deleted.append(parts[-1])
        if gone is None:
            return 404, b'{"error": {"message": "no such file"}}'
        return 200, json.dumps({"id": parts[-1], "object": "file", "deleted": True}).encode()

    def post(self, path: str, content_type: str, raw: bytes) -> tuple[int, bytes] | None:
        """A POST of the Batch API, or None when the path is not one."""
        parts = path.split("?")[0].rstrip("/").split("/")
        if parts[-1] == "files":
            code, body = self.upload(content_type, raw)
        elif parts[-1] == "batches":
            code, body = self.create(json.loads(raw))
        elif parts[-1] == "cancel" and len(parts) >= 3 and parts[-3] == "batches":
            code, body = self.cancel(parts[-2])
        else:
            return None
        return code, json.dumps(body).encode()


def make_handler(judge: FakeJudge, connections: set | None = None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            if connections is not None:
                connections.add(self.connection)

        def finish(self):
            if connections is not None:
                connections.discard(self.connection)
            super().finish()

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
            batch = judge.batches.get(self.path)
            if batch is not None:
                self._send(*batch)
            elif self.path.rstrip("/").endswith("/models"):
                self._send(200, _MODELS)
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_DELETE(self):
            self._send(*(judge.batches.delete(self.path) or (404, b'{"error": {"message": "not found"}}')))

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length) or b"{}"
            batch = judge.batches.post(self.path, self.headers.get("Content-Type", ""), raw)
            if batch is not None:
                self._send(*batch)
                return
            body = json.loads(raw)
            with judge.lock:
                judge.received += 1
            if judge.outage == "hang":
                time.sleep(3600)
            fault = judge.next_fault()
            time.sleep(judge.delay(fault))
            code, payload, headers = judge.reply(body, fault, self.headers.get("Authorization", ""))
            self._send(code, payload, headers)
            if code == 200:
                judge.log_sent(raw)

    return Handler


class FakeServer:
    def __init__(self, judge: FakeJudge | None = None, port: int = 0):
        self.judge = judge or FakeJudge()
        self.port = port
        self.httpd: ThreadingHTTPServer | None = None
        self.connections: set = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        """Listen (again) on the same port."""
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), make_handler(self.judge, self.connections))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Close the port: clients get 'connection refused' until ``start``."""
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        for conn in list(self.connections):  # kept-alive connections too: the endpoint is gone
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


async def _handle_connection(judge: FakeJudge, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    """HTTP/1.1 with keep-alive, enough of it for the openai client and the benchmark's raw client."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line[:15].lower() == "content-length:":
                    length = int(line[15:])
            raw = await reader.readexactly(length) if length else b""
            auth = next(
                (ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.lower().startswith("authorization:")), ""
            )
            extra: dict = {}
            if method == "GET":
                code, payload = (200, _MODELS) if path.rstrip("/").endswith("/models") else (404, b"{}")
            else:
                fault = judge.next_fault()
                await asyncio.sleep(judge.delay(fault))
                code, payload, extra = judge.reply(json.loads(raw or b"{}"), fault, auth)
            # A client killed while this request waited has closed its end: that reply is never received,
            # so it does not count as sent (the kill test tells finished responses from ones in flight).
            delivered = not (reader.at_eof() or writer.is_closing())
            headers = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
            writer.write(
                f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n{headers}\r\n".encode()
                + payload
            )
            await writer.drain()
            if method != "GET" and code == 200 and delivered:
                judge.log_sent(raw)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve_asyncio(judge: FakeJudge, port: int, ready=None) -> None:
    """Serve forever on 127.0.0.1:port from one event loop; ``ready(url)`` once listening."""
    server = await asyncio.start_server(lambda r, w: _handle_connection(judge, r, w), "127.0.0.1", port, backlog=1024)
    if ready is not None:
        ready(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    port = int(sys.argv[1])
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    every = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    jitter = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    log = sys.argv[5] if len(sys.argv) > 5 else None
    asyncio.run(
        serve_asyncio(
            FakeJudge(latency, fault_every=every, jitter=jitter, log_path=log), port, lambda url: print(url, flush=True)
        )
    )
