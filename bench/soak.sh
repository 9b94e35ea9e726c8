#!/usr/bin/env bash
# The retention soak of docs/PERFORMANCE.md (issue 37): PIPELINES ten-step
# Inc chains pushed through one `ductwork start` (forking, 2 workers, 2
# advancers) in batches of 10,000 — the next batch is triggered once fewer
# than 10,000 are open — with or without a retention of SECONDS (completed
# pipelines pruned that long after they finished, a pass every 5 s). After
# each batch it prints a sample of the size curve, then the run's rate:
#   sample PIPELINES_TRIGGERED PIPELINES_KEPT DATABASE_BYTES LOG_BYTES SECONDS
#   total  PIPELINES STEPS_PER_S SECONDS
#   bench/soak.sh BINARY PIPELINES [RETENTION_SECONDS|none] [POSTGRESQL_URL]
# SQLite: the file and its -wal; PostgreSQL: pg_database_size and 0.
# With a URL the run empties that database's public schema first (use a
# throw-away server: tests/support/pg_cluster.sh start DIR).
set -euo pipefail
bin=${1:?usage: soak.sh BINARY PIPELINES [RETENTION_SECONDS|none] [POSTGRESQL_URL]}
total=${2:?usage: soak.sh BINARY PIPELINES [RETENTION_SECONDS|none] [POSTGRESQL_URL]}
retention=${3:-none}
url=${4:-}
batch=10000
plugins=${DUCTWORK_BENCH_PLUGINS:-$(cd "$(dirname "$0")/.." && pwd)/build/lib/plugins}
d=$(mktemp -d)
host=
cleanup() {
  if [[ -n $host ]]; then kill -TERM "$host" 2>/dev/null || true; wait "$host" 2>/dev/null || true; fi
  rm -rf "$d"
}
trap cleanup EXIT
mkdir -p "$d/defs"
if [[ -n $url ]]; then
  psql "$url" -qc 'DROP SCHEMA public CASCADE; CREATE SCHEMA public;' >/dev/null 2>&1
  database="{adapter: postgresql, url: \"$url\"}"
  query() { psql "$url" -Atqc "$1"; }
  bytes() { echo "$(query "SELECT pg_database_size(current_database())") 0"; }
else
  database="{path: $d/db.sqlite3}"
  query() { sqlite3 "$d/db.sqlite3" "$1"; }
  bytes() { echo "$(stat -c %s "$d/db.sqlite3") $(stat -c %s "$d/db.sqlite3-wal" 2>/dev/null || echo 0)"; }
fi
retention_yaml=
if [[ $retention != none ]]; then retention_yaml="retention: {completed: $retention, interval: 5}"; fi
cat > "$d/ductwork.yml" <<YML
database: $database
plugins: {directory: $plugins}
definitions: {directory: $d/defs}
pipelines: "*"
job_worker: {count: 2, polling_timeout: 1}
pipeline_advancer: {count: 2, polling_timeout: 1}
logger: {level: error}
$retention_yaml
YML
{ echo "pipeline: SoakChain"; echo "steps:"; echo "  - start: Inc"; for _ in $(seq 9); do echo "  - chain: Inc"; done; } \
  > "$d/defs/soak.yml"
seq 1 "$batch" | sed 's/.*/[&]/' > "$d/args.jsonl"
"$bin" migrate -c "$d/ductwork.yml" > /dev/null
open_count() { query "SELECT COUNT(*) FROM pipelines WHERE status NOT IN ('completed', 'halted', 'cancelled')"; }
"$bin" start -c "$d/ductwork.yml" > "$d/host.log" 2>&1 &
host=$!
start=$(date +%s.%N)
triggered=0
while (( triggered < total )); do
  "$bin" trigger SoakChain --from "$d/args.jsonl" -c "$d/ductwork.yml" > /dev/null
  triggered=$(( triggered + batch ))
  while (( $(open_count) >= batch )); do sleep 0.2; done
  now=$(date +%s.%N)
  echo "sample $triggered $(query 'SELECT COUNT(*) FROM pipelines') $(bytes) $(python3 -c "print('%.1f' % ($now - $start))")"
done
while (( $(open_count) > 0 )); do sleep 0.1; done
end=$(date +%s.%N)
echo "sample $triggered $(query 'SELECT COUNT(*) FROM pipelines') $(bytes) $(python3 -c "print('%.1f' % ($end - $start))")"
python3 -c "print('total %d %.0f %.1f' % ($triggered, $triggered * 10 / ($end - $start), $end - $start))"
