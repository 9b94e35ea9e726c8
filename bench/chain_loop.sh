#!/usr/bin/env bash
# The chain loop of docs/PERFORMANCE.md: N ten-step Inc chains loaded with
# `ductwork trigger --from`, then `ductwork start --drain` timed (forking,
# 2 workers, 2 advancers). Prints steps/s. For before/after pairs, run it
# interleaved with two binaries.
#   bench/chain_loop.sh BINARY [N] [POSTGRESQL_URL]
# With DUCTWORK_BENCH_KEYS=K the chains are of Echo carrying {"k": i % K}
# (the same load with keys to limit), and DUCTWORK_BENCH_LIMIT=L adds the
# pipeline-wide `concurrency: {limit: L, key: /0/k}` (issue 38).
# With DUCTWORK_BENCH_PYTHON=1 the chains are of PyInc, a Python process
# step (SPEC §19) served by tests/fixtures/process_steps/py_steps.py through
# sdk/python: the same load through a step process.
# With a URL the run uses that database after emptying its public schema
# (use a throw-away server: tests/support/pg_cluster.sh start DIR).
set -euo pipefail
bin=${1:?usage: chain_loop.sh BINARY [N] [POSTGRESQL_URL]}
n=${2:-3000}
url=${3:-}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
plugins=${DUCTWORK_BENCH_PLUGINS:-$source_dir/build/lib/plugins}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
if [[ -n ${DUCTWORK_BENCH_PYTHON:-} ]]; then
  mkdir -p "$d/plugins"
  cp "$plugins/libductwork_testkit.so" "$d/plugins/"
  cat > "$d/plugins/py.steps.yml" <<YML
command: [python3, "$source_dir/tests/fixtures/process_steps/py_steps.py"]
environment: {PYTHONPATH: "$source_dir/sdk/python"}
steps: [PyInc]
YML
  plugins=$d/plugins
fi
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
keys=${DUCTWORK_BENCH_KEYS:-}
limit=${DUCTWORK_BENCH_LIMIT:-}
step=Inc
[[ -n $keys ]] && step=Echo
[[ -n ${DUCTWORK_BENCH_PYTHON:-} ]] && step=PyInc
{
  echo "pipeline: BenchChain"
  [[ -n $limit ]] && echo "concurrency: {limit: $limit, key: /0/k}"
  echo "steps:"; echo "  - start: $step"; for _ in $(seq 9); do echo "  - chain: $step"; done
} > "$d/defs/bench.yml"
if [[ -n $keys ]]; then
  seq 1 "$n" | awk -v k="$keys" '{ printf "[{\"k\": %d}]\n", $1 % k }' > "$d/args.jsonl"
else
  seq 1 "$n" | sed 's/.*/[&]/' > "$d/args.jsonl"
fi
"$bin" trigger BenchChain --from "$d/args.jsonl" -c "$d/ductwork.yml" > /dev/null
start=$(date +%s.%N)
${DW_TIME:-} "$bin" start --drain -c "$d/ductwork.yml" > /dev/null
end=$(date +%s.%N)
python3 -c "print('%.0f steps/s  (%.2f s)' % ($n * 10 / ($end - $start), $end - $start))"
