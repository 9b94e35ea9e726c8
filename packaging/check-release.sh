#!/usr/bin/env bash
# Builds the host and the testkit plugin as a user would (Release, -O3) with
# warnings as errors, then runs one pipeline through that binary. GCC 12's
# optimiser reports warnings (some of them false) that RelWithDebInfo never
# sees; a user's Release build must never be the first to meet them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CHECK_RELEASE_BUILD_DIR:-$root/build-release}
"$root/packaging/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDUCTWORK_WERROR=ON -DDUCTWORK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target ductwork ductwork_testkit

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pipelines"
printf 'pipeline: Smoke\nsteps:\n  - start: Inc\n  - chain: Double\n' >"$work/pipelines/smoke.yml"
cat >"$work/ductwork.yml" <<YAML
database: {path: "$work/var/ductwork.sqlite3"}
plugins: {directory: "$build/lib/plugins"}
definitions: {directory: "$work/pipelines"}
pipelines: "*"
job_worker: {polling_timeout: 0.05}
pipeline_advancer: {polling_timeout: 0.05}
YAML
bin="$build/bin/ductwork"
id=$("$bin" trigger Smoke 20 -c "$work/ductwork.yml")
timeout 60 "$bin" start --drain -c "$work/ductwork.yml" >/dev/null
output=$("$bin" status "$id" --json -c "$work/ductwork.yml" | jq -c '[.status, .runs[0].steps[-1].output]')
if [[ $output != '["completed",42]' ]]; then
  echo "check-release: the Release binary ran Smoke(20) to $output, expected [\"completed\",42]" >&2
  exit 1
fi
echo "check-release: Release build (GCC -O3, -Werror) ran a pipeline: $output"
