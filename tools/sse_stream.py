"""A streamed request to cabin serve (or any OpenAI-compatible server) as a benchmark client
sees it: POSTs body to path with "stream": true and yields (seconds since the request, event)
for each server-sent event's JSON, as it arrives. Used by tools/serve_bench.sh and
tools/serve_cache_bench.sh."""
import http.client
import json
import time


def events(port, path, body, host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.monotonic()
    c.request("POST", path, json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    r = c.getresponse()
    buf = b""
    try:
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                ev, buf = buf.split(b"\n\n", 1)
                if ev.startswith(b"data: {"):
                    yield time.monotonic() - t0, json.loads(ev[6:])
    finally:
        c.close()
