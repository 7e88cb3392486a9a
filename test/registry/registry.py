#!/usr/bin/env python3
# test/registry/registry.py -- a Confluent Schema Registry test peer.
#
# The REST subset that Confluent's clients and kafka_lake use, in memory, on
# 127.0.0.1 (python3 standard library only):
#   POST /subjects/{subject}/versions   register {"schema", "schemaType"?}: {"id"}
#   POST /subjects/{subject}            look a schema up under a subject
#   GET  /schemas/ids/{id}              {"schema", "schemaType"?, "guid"}
#   GET  /schemas/guids/{guid}          {"schema", "schemaType"?, "guid"}
#   GET  /schemas/ids/{id}/versions     [{"subject", "version"}]
#   GET  /subjects                      ["subject", ...]
#   GET  /subjects/{subject}/versions   [1, 2, ...]
#   GET  /subjects/{subject}/versions/{version|latest}
#                                       {"subject", "version", "id", "guid", "schema", "schemaType"?}
# A schema's GUID (what Confluent's newer clients put in records in place of
# the id) names its content: a UUID made of its type and canonical text.
#   GET  /config, /config/{subject}     {"compatibilityLevel": "BACKWARD"}
# with the real registry's statuses and error bodies ({"error_code": 40401
# subject, 40402 version, 40403 schema not found, 42201 invalid schema,
# 42202 invalid version, 401 unauthorized, 50001 backend error}).  Every path
# is served at the root and under each --prefix, so a URL with a path prefix
# (http://127.0.0.1:port/some/prefix) works.
#
# A second listener, the control port, is never faulted:
#   POST /_ctl {"mode": "ok"|"down"|"slow"|"404"|"500"|"401"|"garbage"|"huge",
#               "delay_ms": n, "auth": "user:password"|null, "reset": true}
#     down     the API port stops listening (connections are refused); "ok" listens again
#     slow     every answer waits delay_ms first
#     404/500/401  every API request gets that error
#     garbage  200 with a body that is not JSON; huge: 200 with 2 MiB of JSON
#     auth     require HTTP basic auth with these credentials (401 otherwise); null: none
#     reset    forget every schema and subject
#   GET  /_ctl                          the state, the last requests (method, path, auth seen)
#                                       and how many since the last "clear_requests": true
#
#   registry.py serve --dir DIR [--prefix /some/prefix ...] [--auth user:password]
#       writes DIR/url (the API's base URL, no prefix), DIR/ctl (the control URL)
#       and DIR/pid once both listen; runs until "shutdown" or a signal.
#   registry.py ctl --dir DIR '{"mode": "down"}' | shutdown | state
#   registry.py post --dir DIR PATH BODY_BASE64 [--auth user:password]
#       POST a JSON body to the API (as a client would: register a schema) and
#       print the answer's status and body ("200 {\"id\": 1}")
#   registry.py get --dir DIR PATH
#       GET a path of the API (no auth) and print the answer's status and body
import argparse
import base64
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    """The registry's state: schemas by id, subjects' versions, fault mode."""

    def __init__(self, prefixes, auth):
        self.lock = threading.Lock()
        self.prefixes = [p.rstrip("/") for p in prefixes if p.strip("/")]
        self.auth = auth
        self.mode = "ok"
        self.delay_ms = 0
        self.requests = []
        self.request_count = 0
        self.reset()

    def reset(self):
        self.schemas = []            # index id-1: (schemaType, canonical text)
        self.subjects = {}           # subject -> [schema id of version 1, 2, ...]

    @staticmethod
    def canonical(schema_type, text):
        """The form a schema is compared and returned in (the real registry
        parses Avro and JSON schemas and keeps them without blanks)."""
        if schema_type in ("AVRO", "JSON"):
            return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
        return text

    @staticmethod
    def guid(key):
        """The GUID of a (schemaType, canonical text): the same content, the same GUID."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, "kafka-lake-registry-peer:%s:%s" % key))

    def register(self, subject, schema_type, text):
        canon = self.canonical(schema_type, text)
        key = (schema_type, canon)
        with self.lock:
            if key in self.schemas:
                sid = self.schemas.index(key) + 1
            else:
                self.schemas.append(key)
                sid = len(self.schemas)
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return sid


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kafka-lake-registry-peer/1"

    def log_message(self, fmt, *args):
        pass

    @property
    def reg(self):
        return self.server.registry

    def answer(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, message):
        self.answer(status, {"error_code": code, "message": message})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def route(self, method):
        reg = self.reg
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        for p in reg.prefixes:
            if path == p or path.startswith(p + "/"):
                path = path[len(p):] or "/"
                break
        auth_header = self.headers.get("Authorization")
        with reg.lock:
            reg.request_count += 1
            reg.requests.append({"method": method, "path": url.path,
                                 "auth": bool(auth_header),
                                 "user_agent": self.headers.get("User-Agent", "")})
            del reg.requests[:-50]
            mode, delay = reg.mode, reg.delay_ms
            auth = reg.auth
        if mode == "slow" and delay:
            time.sleep(delay / 1000.0)
        if mode == "500":
            return self.error(500, 50001, "Error in the backend data store")
        if mode == "401":
            return self.error(401, 401, "Unauthorized")
        if mode == "404":
            return self.error(404, 40403, "Schema not found")
        if mode == "garbage":
            return self.answer(200, b"<html>this is not JSON")
        if mode == "huge":
            return self.answer(200, json.dumps({"schema": "x" * (2 << 20)}).encode())
        if auth is not None:
            want = "Basic " + base64.b64encode(auth.encode()).decode()
            if auth_header != want:
                return self.answer(401, {"error_code": 401, "message": "Unauthorized"},
                                   [("WWW-Authenticate", 'Basic realm="SchemaRegistry"')])
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
        return self.dispatch(method, parts)

    def dispatch(self, method, parts):
        reg = self.reg
        if method == "GET" and parts == ["subjects"]:
            with reg.lock:
                return self.answer(200, sorted(reg.subjects))
        if method == "GET" and parts and parts[0] == "config" and len(parts) <= 2:
            return self.answer(200, {"compatibilityLevel": "BACKWARD"})
        if len(parts) >= 3 and parts[:2] == ["schemas", "ids"]:
            try:
                sid = int(parts[2])
            except ValueError:
                return self.error(404, 40403, "Schema %s not found" % parts[2])
            with reg.lock:
                found = reg.schemas[sid - 1] if 1 <= sid <= len(reg.schemas) else None
                where = [{"subject": s, "version": v.index(sid) + 1}
                         for s, v in sorted(reg.subjects.items()) if sid in v]
            if method != "GET" or found is None:
                return self.error(404, 40403, "Schema %d not found" % sid)
            if len(parts) == 4 and parts[3] == "versions":
                return self.answer(200, where)
            if len(parts) != 3:
                return self.error(404, 404, "HTTP 404 Not Found")
            body = {"schema": found[1], "guid": Registry.guid(found)}
            if found[0] != "AVRO":
                body["schemaType"] = found[0]
            return self.answer(200, body)
        if len(parts) == 3 and parts[:2] == ["schemas", "guids"] and method == "GET":
            with reg.lock:
                found = [k for k in reg.schemas if Registry.guid(k) == parts[2].lower()]
            if not found:
                return self.error(404, 40403, "Schema %s not found" % parts[2])
            body = {"schema": found[0][1], "guid": parts[2].lower()}
            if found[0][0] != "AVRO":
                body["schemaType"] = found[0][0]
            return self.answer(200, body)
        if len(parts) >= 2 and parts[0] == "subjects":
            subject = parts[1]
            if method == "POST" and len(parts) in (2, 3) and (len(parts) == 2 or parts[2] == "versions"):
                req = self.body()
                if not isinstance(req, dict) or not isinstance(req.get("schema"), str):
                    return self.error(422, 42201, "Either the input schema or one of its references is invalid")
                stype = req.get("schemaType") or "AVRO"
                if stype not in ("AVRO", "JSON", "PROTOBUF"):
                    return self.error(422, 42201, "Invalid schema type %s" % stype)
                try:
                    canon = Registry.canonical(stype, req["schema"])
                except ValueError:
                    return self.error(422, 42201, "Invalid schema")
                if len(parts) == 3:
                    sid = reg.register(subject, stype, req["schema"])
                    return self.answer(200, {"id": sid, "guid": Registry.guid((stype, canon))})
                with reg.lock:
                    versions = reg.subjects.get(subject)
                    key = (stype, canon)
                    sid = reg.schemas.index(key) + 1 if key in reg.schemas else None
                if versions is None:
                    return self.error(404, 40401, "Subject '%s' not found." % subject)
                if sid is None or sid not in versions:
                    return self.error(404, 40403, "Schema not found")
                return self.version_body(subject, versions, versions.index(sid) + 1)
            if method == "GET" and len(parts) in (3, 4) and parts[2] == "versions":
                with reg.lock:
                    versions = list(reg.subjects.get(subject) or [])
                if not versions:
                    return self.error(404, 40401, "Subject '%s' not found." % subject)
                if len(parts) == 3:
                    return self.answer(200, list(range(1, len(versions) + 1)))
                v = parts[3]
                if v in ("latest", "-1"):
                    n = len(versions)
                else:
                    try:
                        n = int(v)
                    except ValueError:
                        n = 0
                    if n <= 0:
                        return self.error(422, 42202,
                                          "The specified version '%s' is not a valid version id. "
                                          "Allowed values are between [1, 2^31-1] and the string \"latest\"" % v)
                    if n > len(versions):
                        return self.error(404, 40402, "Version %d not found." % n)
                return self.version_body(subject, versions, n)
        return self.error(404, 404, "HTTP 404 Not Found")

    def version_body(self, subject, versions, n):
        sid = versions[n - 1]
        with self.reg.lock:
            stype, text = self.reg.schemas[sid - 1]
        body = {"subject": subject, "version": n, "id": sid, "guid": Registry.guid((stype, text)),
                "schema": text}
        if stype != "AVRO":
            body["schemaType"] = stype
        return self.answer(200, body)

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")


class CtlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def state(self):
        peer = self.server.peer
        reg = peer.registry
        with reg.lock:
            return {"mode": reg.mode, "delay_ms": reg.delay_ms, "auth": reg.auth is not None,
                    "listening": peer.api is not None, "url": peer.url,
                    "schemas": len(reg.schemas), "subjects": sorted(reg.subjects),
                    "requests": list(reg.requests), "request_count": reg.request_count}

    def do_GET(self):
        self.answer(self.state())

    def do_POST(self):
        peer = self.server.peer
        n = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            req = {}
        if self.path.rstrip("/") == "/_ctl/shutdown" or req.get("shutdown"):
            self.answer({"shutdown": True})
            threading.Thread(target=peer.stop, daemon=True).start()
            return
        reg = peer.registry
        with reg.lock:
            if "auth" in req:
                reg.auth = req["auth"]
            if "delay_ms" in req:
                reg.delay_ms = int(req["delay_ms"])
            if req.get("reset"):
                reg.reset()
                reg.requests = []
            if req.get("clear_requests"):
                reg.requests = []
                reg.request_count = 0
        mode = req.get("mode")
        if mode is not None:
            if mode == "down":
                peer.listen(False)
            else:
                peer.listen(True)
            with reg.lock:
                reg.mode = mode
        self.answer(self.state())


class Peer:
    def __init__(self, prefixes, auth):
        self.registry = Registry(prefixes, auth)
        self.port = None
        self.api = None
        self.api_lock = threading.Lock()
        self.done = threading.Event()
        self.ctl = ThreadingHTTPServer(("127.0.0.1", 0), CtlHandler)
        self.ctl.daemon_threads = True
        self.ctl.peer = self
        self.listen(True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def listen(self, up):
        with self.api_lock:
            if up and self.api is None:
                for _ in range(50):
                    try:
                        api = ThreadingHTTPServer(("127.0.0.1", self.port or 0), ApiHandler)
                        break
                    except OSError:
                        time.sleep(0.1)
                else:
                    raise
                api.daemon_threads = True
                api.registry = self.registry
                self.port = api.server_address[1]
                self.api = api
                threading.Thread(target=api.serve_forever, daemon=True).start()
            elif not up and self.api is not None:
                api, self.api = self.api, None
                api.shutdown()
                api.server_close()

    def stop(self):
        self.listen(False)
        self.done.set()


def serve(args):
    os.makedirs(args.dir, exist_ok=True)
    peer = Peer(args.prefix or [], args.auth)
    threading.Thread(target=peer.ctl.serve_forever, daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: peer.done.set())
    for name, text in (("ctl", "http://127.0.0.1:%d/_ctl" % peer.ctl.server_address[1]),
                       ("pid", str(os.getpid())), ("url", peer.url)):
        tmp = os.path.join(args.dir, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.rename(tmp, os.path.join(args.dir, name))
    peer.done.wait()
    peer.listen(False)
    peer.ctl.shutdown()
    for name in ("url", "ctl", "pid"):
        try:
            os.unlink(os.path.join(args.dir, name))
        except OSError:
            pass


def ctl(args):
    with open(os.path.join(args.dir, "ctl")) as f:
        url = f.read().strip()
    if args.command == "state":
        req = urllib.request.Request(url)
    elif args.command == "shutdown":
        req = urllib.request.Request(url + "/shutdown", data=b"{}", method="POST")
    else:
        json.loads(args.command)
        req = urllib.request.Request(url, data=args.command.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        sys.stdout.write(r.read().decode() + "\n")


def post(args):
    with open(os.path.join(args.dir, "url")) as f:
        url = f.read().strip()
    headers = {"Content-Type": CONTENT_TYPE}
    if args.auth:
        headers["Authorization"] = "Basic " + base64.b64encode(args.auth.encode()).decode()
    req = urllib.request.Request(url + args.path, data=base64.b64decode(args.body), method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            sys.stdout.write("%d %s\n" % (r.status, r.read().decode()))
    except urllib.error.HTTPError as e:
        sys.stdout.write("%d %s\n" % (e.code, e.read().decode()))


def get(args):
    with open(os.path.join(args.dir, "url")) as f:
        url = f.read().strip()
    req = urllib.request.Request(url + args.path, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            sys.stdout.write("%d %s\n" % (r.status, r.read().decode()))
    except urllib.error.HTTPError as e:
        sys.stdout.write("%d %s\n" % (e.code, e.read().decode()))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--dir", required=True)
    s.add_argument("--prefix", action="append")
    s.add_argument("--auth")
    c = sub.add_parser("ctl")
    c.add_argument("--dir", required=True)
    c.add_argument("command")
    p = sub.add_parser("post")
    p.add_argument("--dir", required=True)
    p.add_argument("--auth")
    p.add_argument("path")
    p.add_argument("body")
    g = sub.add_parser("get")
    g.add_argument("--dir", required=True)
    g.add_argument("path")
    args = ap.parse_args()
    {"serve": serve, "ctl": ctl, "post": post, "get": get}[args.cmd](args)


if __name__ == "__main__":
    main()
