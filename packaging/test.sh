#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit, SDK, integration).
#   packaging/test.sh            default build in build/
#   packaging/test.sh --asan     AddressSanitizer + UBSan build in build-asan/
#   packaging/test.sh --tsan     ThreadSanitizer build in build-tsan/
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Warnings are errors in the project's own test run (never in a user's build).
# Tests on explicitly: packaging/demo.sh configures the same folder without them.
flags=(-DDUCTWORK_WERROR=ON -DDUCTWORK_BUILD_TESTS=ON)
build=${DUCTWORK_BUILD_DIR:-$root/build}
case "${1:-}" in
  --asan) build=${DUCTWORK_BUILD_DIR:-$root/build-asan}; flags+=(-DDUCTWORK_ASAN=ON) ;;
  --tsan) build=${DUCTWORK_BUILD_DIR:-$root/build-tsan}; flags+=(-DDUCTWORK_TSAN=ON) ;;
  # The plain run installs under /usr, the packages' layout, so the suite
  # can build and test them (tests/authoring/package_test.sh).
  "") flags+=(-DCMAKE_INSTALL_PREFIX=/usr) ;;
  *) echo "usage: packaging/test.sh [--asan|--tsan]" >&2; exit 2 ;;
esac
DUCTWORK_BUILD_DIR=$build "$root/packaging/build.sh" "${flags[@]}"
cd "$build"
# The suite runs without this script's own DUCTWORK_* settings: the
# binary warns on every DUCTWORK_ variable it does not know, and tests
# that expect a quiet stderr would see that warning.
env -u DUCTWORK_BUILD_DIR -u DUCTWORK_FUZZ_SECONDS ctest --output-on-failure -j2 --timeout 300
# A short fuzzing smoke of every target (docs/fuzzing.md), in the plain run.
if [[ -z ${1:-} ]]; then
  "$root/packaging/fuzz.sh" "${DUCTWORK_FUZZ_SECONDS:-15}"
fi
