#!/bin/sh
# The SDK installs cleanly on its own and an out-of-tree plugin builds
# against the installed copy (issue 14):
#   1. configure sdk/ as a top-level project and install it to a prefix,
#      with no warning from either step;
#   2. the installed package carries a version file whose version is the
#      ABI version abi.h defines;
#   3. tests/sdk/consumer (find_package(DuctworkSDK CONFIG REQUIRED) and one
#      plugin) configures and builds against that prefix, and the plugin
#      exports the two entry points;
#   4. with a ductwork binary given, the host loads that plugin and sees its
#      step and pipeline.
#
# usage: sdk_install_test.sh SDK_SOURCE_DIR CONSUMER_SOURCE_DIR CMAKE_COMMAND
#                            CXX_COMPILER GENERATOR [DUCTWORK_BINARY]
set -u

if [ $# -lt 5 ]; then
  echo "usage: $0 SDK_SOURCE_DIR CONSUMER_SOURCE_DIR CMAKE_COMMAND CXX_COMPILER GENERATOR [DUCTWORK_BINARY]" >&2
  exit 2
fi
sdk=$1
consumer=$2
cmake=$3
cxx=$4
generator=$5
ductwork=${6:-}

work=$(mktemp -d "${TMPDIR:-/tmp}/ductwork-sdk-install.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs "$@" with its stdout and stderr kept in $work/<name>.out/.err; fails
# the test, showing both, when it exits non-zero.
run() {
  name=$1
  shift
  if ! "$@" >"$work/$name.out" 2>"$work/$name.err"; then
    cat "$work/$name.out" "$work/$name.err" >&2
    fail "$name: '$*' exited non-zero"
  fi
}

# Fails when the step's stderr mentions a warning.
no_warning() {
  if grep -i "warning" "$work/$1.err" >/dev/null; then
    cat "$work/$1.err" >&2
    fail "$1 printed a warning"
  fi
}

run sdk-configure "$cmake" -S "$sdk" -B "$work/sdk-build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx"
no_warning sdk-configure
run sdk-install "$cmake" --install "$work/sdk-build" --prefix "$work/prefix"
no_warning sdk-install

version_file=$(find "$work/prefix" -name DuctworkSDKConfigVersion.cmake | head -n 1)
[ -n "$version_file" ] || fail "no DuctworkSDKConfigVersion.cmake under $work/prefix"
[ -f "$(dirname "$version_file")/DuctworkSDKConfig.cmake" ] || fail "no DuctworkSDKConfig.cmake beside $version_file"
[ -f "$work/prefix/include/ductwork/step.hpp" ] || fail "headers not installed under $work/prefix/include"
abi=$(sed -n 's/^#define DUCTWORK_ABI_VERSION \([0-9][0-9]*\)u*$/\1/p' "$sdk/include/ductwork/abi.h")
[ -n "$abi" ] || fail "no DUCTWORK_ABI_VERSION in $sdk/include/ductwork/abi.h"
grep "^set(PACKAGE_VERSION \"$abi\.0\.0\")" "$version_file" >/dev/null ||
  fail "$version_file does not give version $abi.0.0 (ABI $abi): $(grep '^set(PACKAGE_VERSION ' "$version_file")"

run consumer-configure "$cmake" -S "$consumer" -B "$work/consumer-build" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix"
no_warning consumer-configure
grep -F "$work/prefix" "$work/consumer-build/CMakeCache.txt" | grep "^DuctworkSDK_DIR" >/dev/null ||
  fail "the consumer did not find the SDK installed in $work/prefix: $(grep '^DuctworkSDK_DIR' "$work/consumer-build/CMakeCache.txt")"
run consumer-build "$cmake" --build "$work/consumer-build"

plugin="$work/consumer-build/libconsumer_steps.so"
[ -f "$plugin" ] || fail "the consumer build made no $plugin"
if command -v nm >/dev/null 2>&1; then
  for symbol in ductwork_plugin_abi_version ductwork_plugin_init ductwork_plugin_init_error; do
    nm -D --defined-only "$plugin" | grep " T $symbol\$" >/dev/null || fail "$plugin does not export $symbol"
  done
fi

if [ -n "$ductwork" ]; then
  cat >"$work/ductwork.yml" <<YAML
database:
  path: "$work/ductwork.sqlite3"
plugins:
  directory: "$work/consumer-build"
definitions:
  directory: "$work/pipelines"
pipelines: "*"
YAML
  run plugins "$ductwork" plugins --json -c "$work/ductwork.yml"
  grep '"name":"consumer"' "$work/plugins.out" >/dev/null || fail "ductwork plugins does not list it: $(cat "$work/plugins.out")"
  grep '"steps":\["Greet"\]' "$work/plugins.out" >/dev/null || fail "its step Greet is missing: $(cat "$work/plugins.out")"
  grep '"pipelines":1' "$work/plugins.out" >/dev/null || fail "its pipeline is missing: $(cat "$work/plugins.out")"
  echo "ok: the host loads the plugin built against the installed SDK"
fi
echo "ok: SDK $abi.0.0 (ABI $abi) installed without warnings; a plugin project builds against it"
