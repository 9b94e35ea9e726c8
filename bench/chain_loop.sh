#!/usr/bin/env bash
# The chain loop of docs/PERFORMANCE.md: N ten-step Inc chains loaded with
# `ductwork trigger --from`, then `ductwork start --drain` timed (forking,
# 2 workers, 2 advancers). Prints steps/s. For before/after pairs, run it
# interleaved with two binaries.
#   bench/chain_loop.sh BINARY [N] [POSTGRESQL_URL]
# With a URL the run uses that database after emptying its public schema
# (use a throw-away server: tests/support/pg_cluster.sh start DIR).
set -euo pipefail
bin=${1:?usage: chain_loop.sh BINARY [N] [POSTGRESQL_URL]}
n=${2:-3000}
url=${3:-}
plugins=${DUCTWORK_BENCH_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)/build/lib/plugins}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/defs"
if [[ -n $url ]]; then
  psql "$url" -qc 'DROP SCHEMA public CASCADE; CREATE SCHEMA public;' >/dev/null 2>&1
  database="{adapter: postgresql, url: \"$url\"}"
else
  database="{path: $d/db.sqlite3}"
fi
cat > "$d/ductwork.yml" <<YML
database: $database
plugins: {directory: $plugins}
definitions: {directory: $d/defs}
pipelines: "*"
job_worker: {count: 2, polling_timeout: 1}
pipeline_advancer: {count: 2, polling_timeout: 1}
logger: {level: error}
YML
{ echo "pipeline: BenchChain"; echo "steps:"; echo "  - start: Inc"; for _ in $(seq 9); do echo "  - chain: Inc"; done; } \
  > "$d/defs/bench.yml"
seq 1 "$n" | sed 's/.*/[&]/' > "$d/args.jsonl"
"$bin" trigger BenchChain --from "$d/args.jsonl" -c "$d/ductwork.yml" > /dev/null
start=$(date +%s.%N)
"$bin" start --drain -c "$d/ductwork.yml" > /dev/null
end=$(date +%s.%N)
python3 -c "print('%.0f steps/s  (%.2f s)' % ($n * 10 / ($end - $start), $end - $start))"
