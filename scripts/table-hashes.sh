#!/usr/bin/env bash
# table-hashes.sh STORE_DIR: one line per table of every stage result in a local store —
# `pipeline stage variant table rows sha256-of-its-Parquet-blob`, sorted — so two stores
# filled by two builds of the same pipelines can be compared byte for byte (`diff`), whatever
# their recipe keys (which hold the code fingerprint and so differ between builds).
set -euo pipefail
store=${1:?usage: table-hashes.sh STORE_DIR}
find "$store/recipes" -name '*.json' -print0 |
  while IFS= read -r -d '' manifest; do
    jq -r '. as $m | .tables | to_entries[] |
      [$m.pipeline, $m.stage, ($m.variant // "" | if . == "" then "-" else . end), .key, (.value.rows|tostring), .value.blob] | @tsv' "$manifest"
  done |
  while IFS=$'\t' read -r pipeline stage variant table rows blob; do
    file="$store/blobs/${blob:0:2}/$blob.parquet"
    if [ -f "$file" ]; then sum=$(sha256sum "$file" | cut -d' ' -f1); else sum="inline:$blob"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$pipeline" "$stage" "$variant" "$table" "$rows" "$sum"
  done | sort
