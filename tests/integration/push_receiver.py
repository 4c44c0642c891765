#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A stand-in for Grafana Pyroscope's ingest endpoint, for the push tests.

POST PREFIX/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof&sampleRate=HZ
     &spyName=flamed&units=samples&aggregationType=sum
with a gzipped pprof body. Every parameter is checked (400 with the reason
when one is wrong, 401 when the Authorization header is not the expected
one); each accepted body is stored as DIR/NNNNNN.pprof and described by one
JSON line in DIR/params.jsonl (its parameters, size, sha256, and whether
the same from/until came before). DIR/events.jsonl has one line per request
with what was answered.

Misbehaviour, from the control file (--control FILE, re-read when it
changes; one line) or POST PREFIX/control?mode=... while listening:
    ok              answer 200
    refuse          stop listening (connections are refused)
    hang            accept, read the request, never answer
    500             answer 500
    429 SECONDS     answer 429 with Retry-After: SECONDS (503 SECONDS: the same with 503)
    close           read half the body, then reset the connection
    down SECONDS    stop listening for SECONDS, then "ok"
The mode in force is written to DIR/mode.

Python 3 standard library only.
"""
import argparse
import hashlib
import json
import os
import re
import select
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PARAMS = ("name", "from", "until", "format", "sampleRate", "spyName", "units", "aggregationType")
NAME_RE = re.compile(r"^[A-Za-z0-9._/-]+(\{[A-Za-z_][A-Za-z0-9_]*=[^,}]+(,[A-Za-z_][A-Za-z0-9_]*=[^,}]+)*\})?$")


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.mode = "ok"
        self.arg = 0
        self.down_until = 0.0
        self.stored = 0
        self.seen = set()
        self.stopping = threading.Event()

    def set_mode(self, line):
        words = line.split()
        mode = words[0] if words else "ok"
        arg = int(words[1]) if len(words) > 1 else 0
        if mode not in ("ok", "refuse", "hang", "500", "429", "503", "close", "down"):
            raise ValueError("unknown mode %r" % line)
        with self.lock:
            self.mode, self.arg = mode, arg
            if mode == "down":
                self.down_until = time.monotonic() + arg
        self.write_mode()

    def current(self):
        with self.lock:
            if self.mode == "down" and time.monotonic() >= self.down_until:
                self.mode, self.arg = "ok", 0
                changed = True
            else:
                changed = False
            mode, arg = self.mode, self.arg
        if changed:
            self.write_mode()
        return mode, arg

    def write_mode(self):
        with self.lock:
            text = self.mode if not self.arg else "%s %d" % (self.mode, self.arg)
        tmp = os.path.join(self.args.dir, ".mode.tmp")
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, os.path.join(self.args.dir, "mode"))

    def event(self, **kw):
        kw["t"] = round(time.time(), 3)
        with self.lock:
            with open(os.path.join(self.args.dir, "events.jsonl"), "a") as f:
                f.write(json.dumps(kw, sort_keys=True) + "\n")


def make_handler(st):
    args = st.args

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "push_receiver"

        def log_message(self, fmt, *a):
            if not args.quiet:
                sys.stderr.write("push_receiver: " + (fmt % a) + "\n")

        def answer(self, code, text="", headers=()):
            body = (text + "\n").encode() if text else b""
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def read_body(self, limit=None):
            n = int(self.headers.get("Content-Length") or 0)
            if limit is not None:
                n = min(n, limit)
            data = b""
            while len(data) < n:
                chunk = self.rfile.read(n - len(data))
                if not chunk:
                    break
                data += chunk
            return data

        def do_GET(self):
            self.answer(404, "POST %s/ingest" % args.prefix)

        def do_POST(self):
            url = urlsplit(self.path)
            if url.path == args.prefix + "/control":
                q = parse_qs(url.query)
                self.read_body()
                try:
                    st.set_mode(q.get("mode", ["ok"])[0])
                except ValueError as e:
                    return self.answer(400, str(e))
                return self.answer(200, "mode %s" % st.current()[0])
            if url.path != args.prefix + "/ingest":
                self.read_body()
                return self.answer(404, "no such path %s" % url.path)
            mode, arg = st.current()
            if mode in ("refuse", "down"):
                # A connection kept alive from before: a server that is gone
                # does not answer on it either.
                st.event(mode=mode, answered=None)
                self.reset()
                return
            if mode == "hang":
                self.read_body()
                st.event(mode=mode, answered=None)
                self.hang()
                return
            if mode == "close":
                n = int(self.headers.get("Content-Length") or 0)
                self.read_body(n // 2)
                st.event(mode=mode, answered=None)
                self.reset()
                return
            body = self.read_body()
            if mode in ("500", "429", "503"):
                code = int(mode)
                headers = [("Retry-After", str(arg))] if code != 500 and arg else []
                st.event(mode=mode, answered=code)
                return self.answer(code, "told to fail", headers)
            self.ingest(url.query, body)

        def ingest(self, query, body):
            q = parse_qs(query, keep_blank_values=True)
            why = self.check(q, body)
            if why:
                code = 401 if why.startswith("auth") else 400
                st.event(mode="ok", answered=code, why=why)
                with open(os.path.join(args.dir, "rejected.jsonl"), "a") as f:
                    f.write(json.dumps({"why": why, "query": query}) + "\n")
                return self.answer(code, why)
            p = {k: q[k][0] for k in PARAMS}
            key = (p["from"], p["until"])
            with st.lock:
                st.stored += 1
                n = st.stored
                dup = key in st.seen
                st.seen.add(key)
                path = os.path.join(args.dir, "%06d.pprof" % n)
                with open(path + ".tmp", "wb") as f:
                    f.write(body)
                os.replace(path + ".tmp", path)
                rec = dict(p, n=n, file=os.path.basename(path), bytes=len(body),
                           sha256=hashlib.sha256(body).hexdigest(), duplicate=dup,
                           t=round(time.time(), 3))
                with open(os.path.join(args.dir, "params.jsonl"), "a") as f:
                    f.write(json.dumps(rec, sort_keys=True) + "\n")
            st.event(mode="ok", answered=200, n=n, duplicate=dup)
            self.answer(200)

        def check(self, q, body):
            if args.auth is not None and self.headers.get("Authorization") != args.auth:
                return "auth: Authorization is %r" % ("missing" if self.headers.get("Authorization") is None else "wrong")
            for k in PARAMS:
                if k not in q:
                    return "%s: missing" % k
                if len(q[k]) != 1:
                    return "%s: given %d times" % (k, len(q[k]))
            extra = sorted(set(q) - set(PARAMS))
            if extra:
                return "unknown parameters: %s" % ", ".join(extra)
            v = {k: q[k][0] for k in PARAMS}
            if args.name is not None and v["name"] != args.name:
                return "name: %r, expected %r" % (v["name"], args.name)
            if not NAME_RE.match(v["name"]):
                return "name: %r is not APP{key=value,...}" % v["name"]
            for k in ("from", "until"):
                if not re.fullmatch(r"0|[1-9][0-9]{0,18}", v[k]):
                    return "%s: %r is not Unix seconds" % (k, v[k])
            if int(v["from"]) > int(v["until"]):
                return "from %s is after until %s" % (v["from"], v["until"])
            if v["format"] != "pprof":
                return "format: %r, expected pprof" % v["format"]
            if not re.fullmatch(r"[1-9][0-9]{0,9}", v["sampleRate"]):
                return "sampleRate: %r is not a positive number" % v["sampleRate"]
            if args.rate is not None and int(v["sampleRate"]) != args.rate:
                return "sampleRate: %s, expected %d" % (v["sampleRate"], args.rate)
            if v["spyName"] != "flamed":
                return "spyName: %r, expected flamed" % v["spyName"]
            if v["units"] != "samples":
                return "units: %r, expected samples" % v["units"]
            if v["aggregationType"] != "sum":
                return "aggregationType: %r, expected sum" % v["aggregationType"]
            ctype = self.headers.get("Content-Type")
            if ctype != "application/octet-stream":
                return "Content-Type: %r, expected application/octet-stream" % ctype
            if len(body) != int(self.headers.get("Content-Length") or -1):
                return "body: %d bytes of %s" % (len(body), self.headers.get("Content-Length"))
            if body[:2] != b"\x1f\x8b":
                return "body: not gzip"
            return None

        def hang(self):
            # Until the client gives up or the receiver stops.
            self.close_connection = True
            sock = self.connection
            while not st.stopping.is_set():
                r, _, _ = select.select([sock], [], [], 0.2)
                if r:
                    try:
                        if not sock.recv(4096):
                            return
                    except OSError:
                        return

        def reset(self):
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass

    return Handler


class Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (see --port-file)")
    ap.add_argument("--port-file", help="written with the port once listening")
    ap.add_argument("--dir", required=True, help="where bodies and parameters are stored")
    ap.add_argument("--prefix", default="", help="the path before /ingest, e.g. /pyroscope")
    ap.add_argument("--name", help="the exact name parameter expected")
    ap.add_argument("--rate", type=int, help="the sampleRate expected")
    ap.add_argument("--auth", help="the exact Authorization header expected (e.g. 'Bearer TOKEN')")
    ap.add_argument("--control", help="a file holding the mode (see above)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    args.prefix = args.prefix.rstrip("/")
    os.makedirs(args.dir, exist_ok=True)

    st = State(args)
    st.write_mode()
    handler = make_handler(st)
    port = args.port
    srv = None
    thread = None
    control_mtime = None

    def start():
        nonlocal srv, thread, port
        srv = Server((args.host, port), handler)
        port = srv.server_address[1]
        thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()

    def stop():
        nonlocal srv, thread
        srv.shutdown()
        srv.server_close()
        thread.join()
        srv = thread = None

    start()
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.replace(args.port_file + ".tmp", args.port_file)
    import signal
    signal.signal(signal.SIGTERM, lambda *a: st.stopping.set())
    signal.signal(signal.SIGINT, lambda *a: st.stopping.set())
    while not st.stopping.is_set():
        if args.control:
            try:
                m = os.stat(args.control).st_mtime_ns
                if m != control_mtime:
                    control_mtime = m
                    with open(args.control) as f:
                        st.set_mode(f.read().strip() or "ok")
            except FileNotFoundError:
                pass
            except ValueError as e:
                sys.stderr.write("push_receiver: %s\n" % e)
        mode, _ = st.current()
        listening = mode not in ("refuse", "down")
        if listening and srv is None:
            for _ in range(50):
                try:
                    start()
                    break
                except OSError:
                    time.sleep(0.1)
        elif not listening and srv is not None:
            stop()
        st.stopping.wait(0.1)
    if srv is not None:
        stop()


if __name__ == "__main__":
    main()
