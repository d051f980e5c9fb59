#!/usr/bin/env python3
"""A small HTTP/1.1 server over a directory, with fault injection, for the remote-store tests and benchmarks.

GET (with Range: bytes=a-b, bytes=a-, bytes=-n -> 206 / 416), HEAD, PUT (temp file + rename, directories made),
DELETE; 404 for a missing file. Keep-alive throughout (every answer has a Content-Length). A GET no fault
rule matches is sent from the file by the kernel (sendfile), never read into Python.

Control endpoints (JSON):
  POST   /__faults__  {"rules": [rule, ...], "append": false}   replace (or extend) the fault rules
  DELETE /__faults__                                          clear them
  GET    /__stats__   {"GET": n, "HEAD": n, ..., "connections": n, "faults": n}; DELETE /__stats__ resets them
A rule: {"path_re": regex searched in the request path (default: any), "method": "GET" (default: any),
         "kind": ..., "times": n (default: forever), "code": ..., "delay_s": ..., "body": str, "headers": {}}
Kinds: status (answer `code` with `body`/`headers`), slow (sleep delay_s, then answer normally), stall (headers
and half the body, then sleep delay_s and close), reset (headers and half the body, then a TCP reset), short
(the full Content-Length declared, half the body sent, then close), ignore_range (200 with the whole file when a
range was asked), bad_range (206 with the bytes and Content-Range of a range shifted by one), wrong_total (206
whose Content-Range total is 1000 more than the file's), plain (no fault: for "chunked" alone), weak_etag (a weak
ETag, W/"...", which If-Match never matches), no_etag (no ETag header). A GET or HEAD whose If-Match does not name
the file's (strong) ETag is answered 412. "chunked": true
on a rule sends its GET body chunked, without Content-Length. Body kinds apply to GET only; the first rule that
matches with times left applies.

Run: python3 http_server.py --root DIR [--port 0] [--host 127.0.0.1] [--ignore-stdin]
It prints "PORT <n>" as its first line and serves until killed, or until its stdin closes (so a test that dies
takes its server along) unless --ignore-stdin. Import: serve(root, port=0, host="127.0.0.1") -> (server, thread).
"""
import argparse
import http.server
import json
import os
import re
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
import urllib.parse

CONTROL = ("/__faults__", "/__stats__")
SMALL = 64 << 10  # bodies up to this size are read in and sent with the headers; larger ones with sendfile


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "zgpu-test-http/1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall between
    wbufsize = SMALL  # an answer of up to SMALL bytes, headers included, leaves in one send (at the request's end)

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.stats["connections"] += 1

    def finish(self):
        try:
            super().finish()
        except OSError:  # a socket this handler reset or the client dropped
            pass

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    # ---- helpers ----
    def _answer(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _file(self):
        """The file a request path names, or None when it would leave the root."""
        rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        full = os.path.realpath(os.path.join(self.server.root, rel))
        if full != self.server.root and not full.startswith(self.server.root + os.sep):
            return None
        return full

    def _fault(self):
        """Counts the request and returns the rule that applies to it, if any (its `times` used up by one)."""
        with self.server.lock:
            self.server.stats[self.command] = self.server.stats.get(self.command, 0) + 1
            for rule in self.server.rules:
                if rule.get("method") and rule["method"] != self.command:
                    continue
                if not re.search(rule.get("path_re", ""), self.path):
                    continue
                left = rule.get("times")
                if left is not None:
                    if left <= 0:
                        continue
                    rule["times"] = left - 1
                self.server.stats["faults"] += 1
                return rule
        return None

    def _control(self):
        path = urllib.parse.urlsplit(self.path).path
        srv = self.server
        with srv.lock:
            if path == "/__faults__" and self.command == "POST":
                spec = json.loads(self._body() or b"{}")
                rules = [dict(r) for r in spec.get("rules", [])]
                srv.rules = (srv.rules + rules) if spec.get("append") else rules
            elif path == "/__faults__" and self.command == "DELETE":
                srv.rules = []
            elif path == "/__stats__" and self.command == "GET":
                out = json.dumps(srv.stats).encode()
                return self._answer(200, out, {"Content-Type": "application/json"})
            elif path == "/__stats__" and self.command == "DELETE":
                srv.stats = new_stats()
            else:
                return self._answer(405, b"bad control request\n")
        self._answer(200, b"{}", {"Content-Type": "application/json"})

    def _abort(self, body, mode, delay):
        """Sends half of body after the headers, then breaks the connection as `mode` says."""
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        if mode == "stall":
            time.sleep(delay)
        elif mode == "reset":  # SO_LINGER 0: close() sends RST instead of FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    # ---- methods ----
    def _get(self, head):
        if self.path.startswith(CONTROL):
            return self._control()
        rule = self._fault()
        kind = rule.get("kind") if rule else None
        if kind == "status":
            body = rule.get("body", "fault %d\n" % rule.get("code", 500)).encode()
            return self._answer(int(rule.get("code", 500)), body, rule.get("headers"), head)
        if kind == "slow":
            time.sleep(float(rule.get("delay_s", 1)))
        path = self._file()
        try:
            fd = os.open(path, os.O_RDONLY) if path is not None else -1
        except OSError:  # missing, or a directory
            fd = -1
        if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
            if fd >= 0:
                os.close(fd)
            return self._answer(404, b"not found\n", head=head)
        try:  # size, ETag and bytes all of the file opened (a PUT may replace the path meanwhile)
            self._send_file(fd, rule, head)
        finally:
            os.close(fd)

    def _send_file(self, fd, rule, head):
        kind = rule.get("kind") if rule else None
        st = os.fstat(fd)
        total = st.st_size
        etag = '"%x-%x"' % (st.st_size, st.st_mtime_ns)
        if kind == "weak_etag":
            etag = "W/" + etag
        hdrs = {"Accept-Ranges": "bytes"}
        if kind != "no_etag":
            hdrs["ETag"] = etag
        want = self.headers.get("If-Match")  # RFC 9110 13.1.1: strong comparison, so a weak ETag never matches
        if want is not None and want.strip() != "*" and (
                etag.startswith("W/") or etag not in [w.strip() for w in want.split(",")]):
            return self._answer(412, b"precondition failed\n", hdrs, head)
        rng = self.headers.get("Range")
        m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", rng) if rng else None
        if m is None or m.group(1) == m.group(2) == "" or kind == "ignore_range":
            code, start, end = 200, 0, total - 1
        else:
            a, b = m.group(1), m.group(2)
            if a == "":
                n = int(b)
                start, end = max(0, total - n), total - 1
                ok = n > 0 and total > 0
            else:
                start, end = int(a), min(int(b), total - 1) if b else total - 1
                ok = start < total and (b == "" or int(b) >= start)
            if not ok:
                hdrs["Content-Range"] = "bytes */%d" % total
                return self._answer(416, b"", hdrs, head)
            code = 206
            if kind == "bad_range":
                shift = 1 if end + 1 < total else -1
                if start + shift >= 0:
                    start, end = start + shift, end + shift
            hdrs["Content-Range"] = "bytes %d-%d/%d" % (start, end, total + (1000 if kind == "wrong_total" else 0))
        n, body = end + 1 - start, None
        # a fault may cut or reshape the body, and TLS must encrypt it: then it is read in
        if not head and (rule is not None or n <= SMALL or self.server.tls):
            body = os.pread(fd, n, start)
        self.send_response(code)
        for k, v in hdrs.items():
            self.send_header(k, v)
        chunked = bool(rule and rule.get("chunked")) and not head
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(n))
        self.end_headers()
        if head:
            return
        if body is None:  # a plain large answer: the kernel copies the bytes from the file to the socket
            return self._sendfile(fd, start, n)
        if chunked:  # no length known up front: the client learns the size only at the end
            for i in range(0, len(body), 4096):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(body[i : i + 4096]), body[i : i + 4096]))
            return self.wfile.write(b"0\r\n\r\n")
        if kind in ("stall", "reset", "short"):
            return self._abort(body, kind, float(rule.get("delay_s", 60)))
        self.wfile.write(body)

    def _sendfile(self, fd, start, n):
        self.wfile.flush()  # the headers first
        sock = self.connection.fileno()
        while n > 0:
            sent = os.sendfile(sock, fd, start, n)
            if sent == 0:  # the file shrank under us: the client sees a short body
                self.close_connection = True
                return
            start, n = start + sent, n - sent

    def do_GET(self):
        self._get(False)

    def do_HEAD(self):
        self._get(True)

    def do_POST(self):
        if self.path.startswith(CONTROL):
            return self._control()
        self._body()
        rule = self._fault()
        if rule and rule.get("kind") == "status":
            return self._answer(int(rule.get("code", 500)), rule.get("body", "").encode(), rule.get("headers"))
        self._answer(405, b"POST is not supported here\n")

    def do_PUT(self):
        data = self._body()  # read before answering even with a fault, so keep-alive stays in step
        rule = self._fault()
        if rule and rule.get("kind") == "status":
            return self._answer(int(rule.get("code", 500)), rule.get("body", "").encode(), rule.get("headers"))
        if rule and rule.get("kind") == "slow":
            time.sleep(float(rule.get("delay_s", 1)))
        path = self._file()
        if path is None or path == self.server.root:
            return self._answer(403, b"outside the root\n")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".put-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        st = os.stat(path)
        self._answer(200, b"", {"ETag": '"%x-%x"' % (st.st_size, st.st_mtime_ns)})

    def do_DELETE(self):
        if self.path.startswith(CONTROL):
            return self._control()
        rule = self._fault()
        if rule and rule.get("kind") == "status":
            return self._answer(int(rule.get("code", 500)), rule.get("body", "").encode(), rule.get("headers"))
        path = self._file()
        if path is None or not os.path.isfile(path):
            return self._answer(404, b"not found\n")
        os.unlink(path)
        self._answer(204)


def new_stats():
    return {"GET": 0, "HEAD": 0, "PUT": 0, "POST": 0, "DELETE": 0, "connections": 0, "faults": 0}


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many clients connecting at once must not be refused

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)


def serve(root, port=0, host="127.0.0.1", verbose=False, tls=None):
    """Starts a server over `root` in a daemon thread: (server, thread). server.server_address[1] is its port;
    server.shutdown() stops it. tls=(certfile, keyfile) serves HTTPS."""
    srv = Server((host, port), Handler)
    srv.tls = tls
    if tls:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.root = os.path.realpath(root)
    srv.lock = threading.Lock()
    srv.rules = []
    srv.stats = new_stats()
    srv.verbose = verbose
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return srv, t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--ignore-stdin", action="store_true", help="do not stop when stdin closes")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    srv, t = serve(args.root, args.port, args.host, args.verbose)
    sys.stdout.write("PORT %d\n" % srv.server_address[1])
    sys.stdout.flush()
    try:
        if args.ignore_stdin:
            t.join()
        else:
            while sys.stdin.buffer.read(65536):
                pass
    except KeyboardInterrupt:
        pass
    srv.shutdown()


if __name__ == "__main__":
    main()
