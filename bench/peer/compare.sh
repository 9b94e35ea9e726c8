#!/usr/bin/env bash
# Issue 42's floors measured side by side with BullMQ in one run, rounds
# interleaved (BullMQ, PostgreSQL, SQLite, BullMQ, ...), medians printed:
#   bench/peer/compare.sh BINARY POSTGRESQL_URL [ROUNDS] [WHAT]
# WHAT is a comma list of chains (3,000 x 10 steps), fanout (100,000-wide
# expand -> collapse) and light (light-load step latency); default all three.
# Needs a Redis server on REDIS_URL (default redis://127.0.0.1:6379) and
# `npm install` run once in bench/peer. Use a throw-away PostgreSQL server
# with fsync on (PG_CLUSTER_FSYNC=on tests/support/pg_cluster.sh start DIR):
# chain_loop.sh empties its public schema.
set -euo pipefail
bin=${1:?usage: compare.sh BINARY POSTGRESQL_URL [ROUNDS] [WHAT]}
url=${2:?usage: compare.sh BINARY POSTGRESQL_URL [ROUNDS] [WHAT]}
rounds=${3:-3}
what=${4:-chains,fanout,light}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$(dirname "$bin")/.." && pwd)
# BINARY is a build's bin/ductwork: its benchmark programs sit beside it.
for program in ductwork_bench ductwork_fanout_bench; do
  [[ -x $build/bin/$program ]] || { echo "compare.sh: no $build/bin/$program (BINARY must be a build's bin/ductwork)" >&2; exit 2; }
done
redis-cli -u "${REDIS_URL:-redis://127.0.0.1:6379}" ping > /dev/null 2>&1 ||
  { echo "compare.sh: no Redis server at ${REDIS_URL:-redis://127.0.0.1:6379} (redis-server --save '' --appendonly no --daemonize yes)" >&2; exit 2; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A samples
add() { samples[$1]+="$2"$'\n'; echo "  $1: $2" >&2; }
for r in $(seq "$rounds"); do
  echo "round $r" >&2
  if [[ $what == *chains* ]]; then
    add bullmq_chains "$(node "$here/bullmq_bench.js" chains 3000 | sed -E 's/.*= ([0-9]+) steps.*/\1/')"
    add pg_chains "$("$here/../chain_loop.sh" "$bin" 3000 "$url" | awk '{ print $1 }')"
    add sqlite_chains "$("$here/../chain_loop.sh" "$bin" 3000 | awk '{ print $1 }')"
  fi
  if [[ $what == *fanout* ]]; then
    add bullmq_fanout_s "$(node "$here/bullmq_bench.js" fanout 100000 | sed -E 's/.* in ([0-9.]+) s.*/\1/')"
    add pg_fanout_s "$("$build/bin/ductwork_fanout_bench" --items 100000 --repeat 1 --modes fork \
        --database-url "$url" --binary "$bin" | awk '/median/ { for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9.]+$/) { print $i; exit } }')"
    add sqlite_fanout_s "$("$build/bin/ductwork_fanout_bench" --items 100000 --repeat 1 --modes fork --binary "$bin" |
        awk '/median/ { for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9.]+$/) { print $i; exit } }')"
  fi
  if [[ $what == *light* ]]; then
    add pg_light_p50_us "$("$build/bin/ductwork_bench" --chains 100 --repeat 1 --light-chains 200 --database-url "$url" \
        --binary "$bin" | awk -F'p50 ' '/light load, one forking host/ { split($2, a, " "); print a[1] }')"
    add sqlite_light_p50_us "$("$build/bin/ductwork_bench" --chains 100 --repeat 1 --light-chains 200 --binary "$bin" |
        awk -F'p50 ' '/light load, one forking host/ { split($2, a, " "); print a[1] }')"
  fi
done
echo "medians of $rounds rounds:"
for k in $(printf '%s\n' "${!samples[@]}" | sort); do
  printf '  %-20s %s   (%s)\n' "$k" "$(printf '%s' "${samples[$k]}" | median)" "$(printf '%s' "${samples[$k]}" | tr '\n' ' ')"
done
