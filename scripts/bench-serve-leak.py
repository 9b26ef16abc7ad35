#!/usr/bin/env python3
"""serve-env under a leaking client: one client opens episodes as fast as it can and never
closes them, while CAREFUL other clients each loop create → observe → close. Prints, per kind
of client, the POST /episodes answered 200 and 429 and the careful clients' share of
successful creates, and what /health says at the end (episodes per client, evictions).

  scripts/bench-serve-leak.py [PREFFLOW_BIN] [SECONDS] [CAREFUL] [-- serve-env flags…]
  (default: target/debug/prefflow 60 4; serve-env's own defaults: --max-episodes 64,
   per client half of it, --evict-idle-secs 30)

Clients are told apart by their X-Client-Id header; with --same-address they send none and
all count as one client (their address), as every client on one host does.
"""
import json, os, subprocess, sys, threading, time, urllib.error, urllib.request

args = sys.argv[1:]
extra = []
if "--" in args:
    extra = args[args.index("--") + 1:]
    args = args[: args.index("--")]
same = "--same-address" in args
args = [a for a in args if a != "--same-address"]
binary = args[0] if len(args) > 0 else "target/debug/prefflow"
seconds = float(args[1]) if len(args) > 1 else 60.0
careful = int(args[2]) if len(args) > 2 else 4
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

server = subprocess.Popen(
    [binary, "serve-env", "--port", "0", "--apps", f"{root}/datasets/apps",
     "--persona", f"{root}/datasets/personas/maya.yaml", *extra],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = server.stdout.readline().strip().removeprefix("listening on ")


def call(method, path, who, body=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if who and not same:
        req.add_header("X-Client-Id", who)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}


stop = time.monotonic() + seconds
counts = {}
lock = threading.Lock()


def count(kind, status):
    with lock:
        counts.setdefault(kind, {}).setdefault(status, 0)
        counts[kind][status] += 1


def leaker():
    while time.monotonic() < stop:
        status, _ = call("POST", "/episodes", "leaker", {})
        count("leaker", status)


def careful_client(n):
    who = f"careful-{n}"
    while time.monotonic() < stop:
        status, body = call("POST", "/episodes", who, {})
        count("careful", status)
        if status == 200:
            eid = body["episode_id"]
            call("GET", f"/episodes/{eid}/observe", who)
            call("DELETE", f"/episodes/{eid}", who)
        elif status == 429:
            time.sleep(0.05)


threads = [threading.Thread(target=leaker)] + [
    threading.Thread(target=careful_client, args=(i,)) for i in range(careful)]
for t in threads:
    t.start()
for t in threads:
    t.join()
_, health = call("GET", "/health", None)
server.terminate()
server.wait()
print(f"{seconds:.0f} s, 1 leaking + {careful} careful clients"
      f"{' (one address, no X-Client-Id)' if same else ''}, serve-env {' '.join(extra) or 'defaults'}")
for kind in ("leaker", "careful"):
    c = counts.get(kind, {})
    total = sum(c.values())
    ok = c.get(200, 0)
    print(f"  {kind}: POST /episodes {total}: 200 × {ok}, 429 × {c.get(429, 0)}, other {total - ok - c.get(429, 0)}"
          f" ({100.0 * ok / max(total, 1):.1f}% answered)")
print(f"  /health: episodes per client {health.get('clients')}, counts {health.get('counts')}")
