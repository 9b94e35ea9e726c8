#!/usr/bin/env bash
# Builds Ductwork and runs the demo: the WordReport pipeline of the example
# wordcount plugin over each sample text, on the embedded SQLite default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/packaging/build.sh"
build=${DUCTWORK_BUILD_DIR:-$root/build}
bin="$build/bin/ductwork"

work=$(mktemp -d /tmp/ductwork-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/ductwork.yml" <<YAML
database: {adapter: sqlite, path: demo.sqlite3}
plugins: {directory: $build/lib/plugins}
definitions: {directory: $root/examples/wordcount/pipelines}
pipelines: [WordReport]
job_worker: {count: 2, polling_timeout: 0.2}
pipeline_advancer: {count: 2, polling_timeout: 0.2}
YAML
cd "$work"

echo "== plugins"
"$bin" plugins
ids=()
for file in "$root"/examples/wordcount/data/*.txt; do
  ids+=("$("$bin" trigger WordReport "\"$file\"")")
done
echo "== triggered ${#ids[@]} pipelines; running the host until they finish"
"$bin" start --drain >"$work/host.log"
for id in "${ids[@]}"; do
  echo
  "$bin" status "$id" --json | jq -r '"== " + .pipeline + " " + .id + ": " + .status, (.runs[-1].steps[-1].output)'
done
