#!/usr/bin/env bash
# A throw-away PostgreSQL 15 cluster for the test suite (issue 10).
#   tests/support/pg_cluster.sh start DIR   -> prints a postgresql:// URL
#   tests/support/pg_cluster.sh stop DIR
#   tests/support/pg_cluster.sh down DIR    (stop the server, keep its data)
#   tests/support/pg_cluster.sh up DIR      (start it again on the same port)
#   tests/support/pg_cluster.sh template DIR DUCTWORK_BINARY
#                                           (database dw_template, migrated)
# DIR is created (mode 0700) and owned by the server's user. initdb refuses
# to run as root, and CI runs as root: as root the server runs as the
# `postgres` system user (Debian's postgresql package creates it). It
# listens on 127.0.0.1 on a free port and on a Unix socket inside DIR only;
# trust authentication, loopback only. `stop` shuts it down fast and
# removes DIR. The URL is also written to DIR/url (the test suite reads it).
set -euo pipefail
command=${1:?usage: pg_cluster.sh start|stop DIR}
dir=${2:?usage: pg_cluster.sh start|stop DIR}
bindir=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || dirname "$(command -v initdb)")

as_server() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# fsync is off for the test suite (nothing it writes must survive a power
# cut); benchmarks run with PostgreSQL's default, PG_CLUSTER_FSYNC=on.
server_start() {
  as_server "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $1 -k $dir -c fsync=${PG_CLUSTER_FSYNC:-off} -c max_connections=400" \
    start >/dev/null
}

case $command in
  start)
    # A cluster left by an interrupted run is stopped and replaced.
    if [[ -d $dir/data ]]; then as_server "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 0700 "$dir"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir"
    as_server "$bindir/initdb" -D "$dir/data" -U ductwork --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    # A free port: a random one nothing answers on (another process may take
    # it before the server binds: then try another).
    for attempt in 1 2 3 4 5; do
      port=$((20000 + RANDOM % 40000))
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
      if server_start "$port"; then
        break
      fi
      [[ $attempt -eq 5 ]] && { cat "$dir/server.log" >&2; exit 1; }
    done
    as_server "$bindir/createdb" -h 127.0.0.1 -p "$port" -U ductwork ductwork
    echo "$port" >"$dir/port"
    url="postgresql://ductwork@127.0.0.1:$port/ductwork"
    echo "$url" >"$dir/url"
    echo "$url"
    ;;
  template)
    # The database the suites' test databases are copied from
    # (tests/support/test_database.h, kPgTemplate): migrated by the build's
    # own binary, so a copy starts at the current schema.
    binary=${3:?usage: pg_cluster.sh template DIR DUCTWORK_BINARY}
    url=$(cat "$dir/url")
    as_server "$bindir/dropdb" --if-exists -h 127.0.0.1 -p "$(cat "$dir/port")" -U ductwork dw_template
    as_server "$bindir/createdb" -h 127.0.0.1 -p "$(cat "$dir/port")" -U ductwork dw_template
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    printf 'pipelines: "*"\ndatabase: {adapter: postgresql, url: "%s"}\n' "${url%/*}/dw_template" >"$work/ductwork.yml"
    "$binary" migrate -c "$work/ductwork.yml" >"$dir/template.log" 2>&1 || { cat "$dir/template.log" >&2; exit 1; }
    ;;
  down)
    as_server "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  up)
    server_start "$(cat "$dir/port")" || { cat "$dir/server.log" >&2; exit 1; }
    ;;
  stop)
    if [[ -d $dir/data ]]; then as_server "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_cluster.sh start|stop|down|up DIR, or template DIR DUCTWORK_BINARY" >&2
    exit 2
    ;;
esac
