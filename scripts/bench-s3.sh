#!/usr/bin/env bash
# The store on an object store against the local store: the engine benchmark's chain
# (read_table + 9 probe stages mapping over every row as one item) cold, then re-run with nothing
# to do, and one per-item stage over more rows for the item-commit rate. Needs an S3 server in the
# environment (AWS_ENDPOINT_URL, credentials, S3_BUCKET), e.g.
#   e=$(bash ../shared/tools/s3-local.sh -b prefflow-test) || exit 1; set -a; eval "$e"; set +a
#
#   scripts/bench-s3.sh [PREFFLOW_BIN] [ITEMS]     (default: target/debug/prefflow 1000)
set -euo pipefail
bin="${1:-target/debug/prefflow}"
items="${2:-1000}"
: "${AWS_ENDPOINT_URL:?start an S3 server first (see the header of this script)}"
bucket="${S3_BUCKET:-prefflow-test}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
root="$(mktemp -d)"; trap 'rm -rf "$root"' EXIT
export PREFFLOW_CACHE_DIR="$root/cache"

chain() { # FILE STAGES: read_table, then STAGES-1 probe stages over every row
  { printf 'pipeline: chain\nstages:\n  s0:\n    kind: read_table\n    params: { path: rows.csv }\n'
    for ((i = 1; i < $2; i++)); do
      printf '  s%d:\n    kind: probe\n    inputs: [s%d]\n    per_item: id\n    concurrency: 8\n' "$i" "$((i - 1))"
    done; } > "$1"
}
rows() { # FILE N
  { echo "id,grp,value"; for ((i = 0; i < $2; i++)); do echo "r$i,g$((i % 3)),$((i * 7 % 11))"; done; } > "$1"
}
timed() { # STORE FILE: wall seconds of one run
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" --store "$1" -q run "$2" --progress none > /dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

cd "$root"
rows rows.csv "$items"; chain chain.yaml 10
rows rows-commit.csv "$((10 * items))"; chain commit.yaml 2; sed -i 's/rows.csv/rows-commit.csv/; s/pipeline: chain/pipeline: commit/' commit.yaml
stamp=$(date +%s%N)
for store in "$root/local-store" "s3://$bucket/bench-$stamp"; do
  cold=$(timed "$store" chain.yaml)
  noop=""; for _ in 1 2 3; do noop="$noop $(printf '%.3f' "$(timed "$store" chain.yaml)")"; done
  commit=$(timed "$store" commit.yaml)
  printf '%s\n  cold run, 10 stages x %d items (%d item commits): %.2f s (%.0f items/s)\n' \
    "$store" "$items" "$((9 * items))" "$cold" "$(echo "9 * $items / $cold" | bc -l)"
  printf '  no-op re-run, 3 runs (s):%s\n' "$noop"
  printf '  one stage, %d items, whole run: %.2f s (%.0f item commits/s)\n' \
    "$((10 * items))" "$commit" "$(echo "10 * $items / $commit" | bc -l)"
done
