#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan+UBSan) into build-fuzz/ and
# runs each for SECONDS (default 30) on its corpus, fuzz/corpus/<name>/ plus
# what earlier runs found (build-fuzz/corpus/<name>/). A finding stops it
# with the crashing input in build-fuzz/findings/; keep that input in
# fuzz/regressions/<name>/ once fixed: every run replays those first.
#   packaging/fuzz.sh [SECONDS] [NAME ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
shift || true
build=${DUCTWORK_FUZZ_BUILD_DIR:-$root/build-fuzz}
"$root/packaging/install-deps.sh"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDUCTWORK_FUZZ=ON \
  -DDUCTWORK_BUILD_TESTS=OFF -DDUCTWORK_WERROR=ON >/dev/null
names=("$@")
if ((${#names[@]} == 0)); then names=(definition definition_json config sdk_json trigger_args cron); fi
cmake --build "$build" -j2 --target "${names[@]/#/fuzz_}"
mkdir -p "$build/findings"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for name in "${names[@]}"; do
  work="$build/corpus/$name"
  mkdir -p "$work"
  regressions=()
  if [[ -d $root/fuzz/regressions/$name ]] && compgen -G "$root/fuzz/regressions/$name/*" >/dev/null; then
    regressions=("$root"/fuzz/regressions/"$name"/*)
    "$build/fuzz/fuzz_$name" "${regressions[@]}" >"$build/findings/$name.replay.log" 2>&1 ||
      { echo "fuzz: fuzz_$name fails a kept regression input (see $build/findings/$name.replay.log)" >&2; exit 1; }
  fi
  log="$build/findings/$name.log"
  if ! "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$build/findings/$name-" -print_final_stats=1 "$work" "$root/fuzz/corpus/$name" >"$log" 2>&1; then
    echo "fuzz: fuzz_$name found a problem; input and log in $build/findings/ ($log)" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz: fuzz_$name ran ${seconds}s, $runs executions, no finding"
done
