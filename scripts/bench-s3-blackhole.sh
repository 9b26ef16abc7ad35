#!/usr/bin/env bash
# How long a run takes to fail once its S3 endpoint goes silent (accepts connections, answers
# nothing): a TCP proxy in front of the S3 server that starts swallowing all traffic SILENT_AFTER
# seconds into `prefflow --store s3://… run` (a per-item probe stage over ITEMS rows), with the
# store's default deadlines unless STORE_OPTIONS (e.g. `timeout=30s&request_timeout=15s`) is
# set. Prints the seconds from silence to exit, the exit code and the run's last error lines.
# Needs python3 and an S3 server in the environment (AWS_ENDPOINT_URL, credentials, S3_BUCKET):
#   e=$(bash ../shared/tools/s3-local.sh -b prefflow-test) || exit 1; set -a; eval "$e"; set +a
#
#   scripts/bench-s3-blackhole.sh [PREFFLOW_BIN] [ITEMS] [SILENT_AFTER]
#   (default: target/debug/prefflow 20000 5)
set -euo pipefail
bin="${1:-target/debug/prefflow}"
items="${2:-20000}"
after="${3:-5}"
: "${AWS_ENDPOINT_URL:?start an S3 server first (see the header of this script)}"
bucket="${S3_BUCKET:-prefflow-test}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
root="$(mktemp -d)"
proxy_pid=""
cleanup() { [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
export PREFFLOW_CACHE_DIR="$root/cache"

# The proxy: forwards to the S3 server until the file `silent` exists, then swallows everything.
cat > "$root/proxy.py" <<'PY'
import os, socket, sys, threading
upstream = sys.argv[1].split("//")[1].rstrip("/").split(":")
flag, port_file = sys.argv[2], sys.argv[3]
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if not os.path.exists(flag):
                dst.sendall(data)
    except OSError:
        pass
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(512)
with open(port_file, "w") as f:
    f.write(str(listener.getsockname()[1]))
while True:
    client, _ = listener.accept()
    try:
        server = socket.create_connection((upstream[0], int(upstream[1])))
    except OSError:
        client.close()
        continue
    for a, b in ((client, server), (server, client)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
PY
python3 "$root/proxy.py" "$AWS_ENDPOINT_URL" "$root/silent" "$root/port" &
proxy_pid=$!
for _ in $(seq 50); do [ -s "$root/port" ] && break; sleep 0.1; done
proxy="http://127.0.0.1:$(cat "$root/port")"

cd "$root"
{ echo "id,value"; for ((i = 0; i < items; i++)); do echo "r$i,$i"; done; } > rows.csv
cat > p.yaml <<'YAML'
pipeline: blackhole
stages:
  rows:
    kind: read_table
    params: { path: rows.csv }
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 8
    params: { delay_ms: 5 }
YAML
url="s3://$bucket/blackhole-$(date +%s%N)${STORE_OPTIONS:+?$STORE_OPTIONS}"
AWS_ENDPOINT_URL="$proxy" "$bin" --store "$url" run p.yaml --progress none > out.txt 2> err.txt &
run=$!
sleep "$after"
if ! kill -0 "$run" 2>/dev/null; then
  echo "the run ended before the endpoint went silent; give more ITEMS" >&2
  exit 1
fi
touch "$root/silent"
t0=$(date +%s.%N)
set +e; wait "$run"; code=$?; set -e
t1=$(date +%s.%N)
printf 'store %s\nsilent %s s into the run; the run exited %d after %.1f s of silence\n' \
  "$url" "$after" "$code" "$(echo "$t1 - $t0" | bc -l)"
echo "stderr lines: $(wc -l < err.txt); its last 4:"
tail -n 4 err.txt
