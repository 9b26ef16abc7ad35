#!/usr/bin/env bash
# Coordinator cost of the Slurm executor against many workers, without a big cluster: a
# stand-in `sbatch` starts every array task at once as a local process (no `%` limit, no
# queue), a stand-in `squeue` reports their states from exit-code files, and the real
# coordinator and real workers (`prefflow work`) run over one store. What it measures is the
# coordinator's own cost (CPU seconds, polls) as items and workers grow; the workers' wall time
# on this machine's cores is not a cluster's.
#
#   scripts/bench-cluster.sh [PREFFLOW_BIN] [ITEMS…]     (default items: 256 1024 4096; workers 8 64)
set -euo pipefail
bin="${1:-target/debug/prefflow}"; shift || true
items_list=("${@:-256 1024 4096}"); read -r -a items_list <<< "${items_list[*]}"
workers_list=(${WORKERS:-8 64})
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
root="$(mktemp -d)"; trap 'rm -rf "$root"' EXIT
fake="$root/fake"; mkdir -p "$fake/state"; : > "$fake/state/squeue.calls"

cat > "$fake/sbatch" <<'SB'
#!/usr/bin/env bash
# Stand-in sbatch: --array=SPEC (ranges, no %), script on stdin; every task starts now.
set -euo pipefail
state="$(dirname "$0")/state"
array=""; out=""; chdir="."
for a in "$@"; do case "$a" in
  --array=*) array="${a#--array=}";; --output=*) out="${a#--output=}";; --chdir=*) chdir="${a#--chdir=}";;
esac; done
array="${array%%\%*}"
id=$(( $(ls "$state" | grep -c '\.job$' || true) + 1000 ))
script="$state/$id.sh"; cat > "$script"
idx=()
IFS=',' read -r -a parts <<< "$array"
for p in "${parts[@]}"; do
  if [[ "$p" == *-* ]]; then for ((i=${p%-*}; i<=${p#*-}; i++)); do idx+=("$i"); done; else idx+=("$p"); fi
done
printf '%s\n' "${idx[@]}" > "$state/$id.job"
for i in "${idx[@]}"; do
  log="${out//%A/$id}"; log="${log//%a/$i}"
  # Detached twice: the task's shell is not a child of this script, so a task that ends before
  # this script does is not reaped here, and its CPU is not counted as the coordinator's.
  ( ( cd "$chdir"; SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$i setsid sh "$script" > "$log" 2>&1; echo $? > "$state/${id}_$i.rc" ) < /dev/null > /dev/null 2>&1 & )
done
echo "$id"
SB
cat > "$fake/squeue" <<'SQ'
#!/usr/bin/env bash
# Stand-in squeue: `-j ID` → "ID_i STATE" per task, from the exit-code files.
state="$(dirname "$0")/state"; job=""
echo >> "$state/squeue.calls"
while [ $# -gt 0 ]; do case "$1" in -j) job="$2"; shift;; esac; shift; done
[ -f "$state/$job.job" ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
while read -r i; do
  rc="$state/${job}_$i.rc"
  if [ -f "$rc" ]; then [ "$(cat "$rc")" = 0 ] && echo "${job}_$i COMPLETED" || echo "${job}_$i FAILED"
  else echo "${job}_$i RUNNING"; fi
done < "$state/$job.job"
SQ
chmod +x "$fake/sbatch" "$fake/squeue"
export PREFFLOW_SBATCH="$fake/sbatch" PREFFLOW_SQUEUE="$fake/squeue"

echo "| items | workers | coordinator wall s | coordinator CPU s (user+sys, with sbatch/squeue) | squeue calls | no-op re-run s |"
echo "|---|---|---|---|---|---|"
for items in "${items_list[@]}"; do
  for workers in "${workers_list[@]}"; do
    ws="$root/ws-$items-$workers"; mkdir -p "$ws/data"
    { echo "id,grp,value"; for ((i=0; i<items; i++)); do echo "r$i,g$((i%3)),$((i*7%11))"; done; } > "$ws/data/rows.csv"
    cat > "$ws/p.yaml" <<YAML
pipeline: sim
stages:
  rows: { kind: read_table, params: { path: data/rows.csv } }
  work: { kind: probe, inputs: [rows], per_item: id, params: { label: sim } }
  total: { kind: query, inputs: [work], params: { sql: "SELECT COUNT(*) AS n FROM work" } }
YAML
    printf 'kind: slurm\nmax_array_size: %s\npoll_ms: 500\n' "$workers" > "$ws/profile.yaml"
    calls_before=$(wc -l < "$fake/state/squeue.calls")
    cd "$ws"
    start=$(date +%s.%N)
    # CPU of the coordinator and of the sbatch/squeue it waited for; the workers are detached
    # (double fork and setsid: never its descendants' to reap), so their CPU is not counted.
    /usr/bin/env time -f '%U %S' -o "$ws/cpu" "$bin" run p.yaml --progress none --profile profile.yaml > "$ws/out" 2> "$ws/err" || { cat "$ws/err"; exit 1; }
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    cpu=$(awk '{print $1 + $2}' "$ws/cpu")
    polls=$(( $(wc -l < "$fake/state/squeue.calls") - calls_before ))
    start=$(date +%s.%N)
    "$bin" run p.yaml --progress none --profile profile.yaml > /dev/null 2>&1
    noop=$(echo "$(date +%s.%N) - $start" | bc)
    cd - > /dev/null
    printf '| %s | %s | %.2f | %.2f | %s | %.3f |\n' "$items" "$workers" "$wall" "$cpu" "$polls" "$noop"
  done
done
