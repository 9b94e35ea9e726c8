#!/usr/bin/env bash
# Builds Ductwork and runs the demo on the embedded SQLite default, with the
# example wordcount plugin: WordReport (a chain) over each sample text, and
# CorpusReport, which fans out one branch per file of the sample directory
# (expand), counts them in parallel, and fans back in (collapse) to report
# the whole corpus.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DUCTWORK_BUILD_DIR:-$root/build}
# Only what the demo runs: the host and the example plugin, with only the
# packages they need. The flags are the test command's (packaging/test.sh),
# so that a test run afterwards reuses every object built here.
"$root/packaging/install-deps.sh" --host
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} -DDUCTWORK_WERROR=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DDUCTWORK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target ductwork ductwork_wordcount
bin="$build/bin/ductwork"

work=$(mktemp -d /tmp/ductwork-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/ductwork.yml" <<YAML
database: {adapter: sqlite, path: demo.sqlite3}
plugins: {directory: $build/lib/plugins}
definitions: {directory: $root/examples/wordcount/pipelines}
pipelines: [WordReport, CorpusReport]
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
corpus=$("$bin" trigger CorpusReport "\"$root/examples/wordcount/data\"")
echo "== triggered ${#ids[@]} WordReport pipelines and one CorpusReport; running the host until they finish"
"$bin" start --drain >"$work/host.log"
for id in "${ids[@]}"; do
  echo
  "$bin" status "$id" --json | jq -r '"== " + .pipeline + " " + .id + ": " + .status, (.runs[-1].steps[-1].output)'
done
echo
"$bin" status "$corpus" --json | jq -r '
  "== CorpusReport " + .id + ": " + .status,
  "   fan-out: \([.runs[-1].steps[] | select(.klass == "CountWords")] | length) CountWords branches (expand), " +
  "fan-in: \([.runs[-1].steps[] | select(.to_transition == "collapse")] | length) MergeCounts (collapse)",
  (.runs[-1].steps[-1].output)'
