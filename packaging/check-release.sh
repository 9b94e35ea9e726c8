#!/usr/bin/env bash
# Builds the host and the plugins as users do — Release, RelWithDebInfo and
# Debug, with GCC 12 and Clang 14 — with warnings as errors, then runs one
# pipeline through each binary. An optimiser's warnings (GCC 12 -O3 reports
# some false ones) must never first meet a user's build. The test script
# covers GCC RelWithDebInfo with the whole suite; this covers the rest.
#   packaging/check-release.sh              every other compiler x build type
#   packaging/check-release.sh gcc Release  one of them
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${CHECK_RELEASE_BUILD_DIR:-$root/build-check}
"$root/packaging/install-deps.sh"

combinations=("gcc Release" "gcc Debug" "clang Release" "clang RelWithDebInfo" "clang Debug")
if (($# == 2)); then combinations=("$1 $2"); fi

smoke() {  # BUILD_DIR: Smoke(20) = Inc then Double -> 42
  local build=$1 work
  work=$(mktemp -d)
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
  local bin="$build/bin/ductwork" id output
  id=$("$bin" trigger Smoke 20 -c "$work/ductwork.yml")
  timeout 60 "$bin" start --drain -c "$work/ductwork.yml" >/dev/null
  output=$("$bin" status "$id" --json -c "$work/ductwork.yml" | jq -c '[.status, .runs[0].steps[-1].output]')
  rm -rf "$work"
  [[ $output == '["completed",42]' ]] || { echo "check-release: $build ran Smoke(20) to $output, expected [\"completed\",42]" >&2; return 1; }
  echo "$output"
}

for combination in "${combinations[@]}"; do
  read -r compiler type <<<"$combination"
  case $compiler in
    gcc) cc=gcc; cxx=g++ ;;
    clang) cc=clang-14; cxx=clang++-14 ;;
    *) echo "check-release: unknown compiler $compiler (gcc|clang)" >&2; exit 2 ;;
  esac
  build=$base/$compiler-$type
  start=$(date +%s)
  CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$type" -DDUCTWORK_WERROR=ON \
    -DDUCTWORK_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j2 --target ductwork ductwork_testkit ductwork_wordcount >"$build/build.log" 2>&1 ||
    { tail -50 "$build/build.log" >&2; echo "check-release: $compiler $type failed to build" >&2; exit 1; }
  output=$(smoke "$build")
  echo "check-release: $compiler $type (-Werror) built in $(($(date +%s) - start)) s and ran a pipeline: $output"
done
