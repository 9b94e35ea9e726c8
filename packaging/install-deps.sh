#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build, test and run Ductwork.
#   packaging/install-deps.sh          everything: build, test suite, packages, CI
#   packaging/install-deps.sh --host   only what building the host and the
#                                      example plugins and running the demo need
# Skips apt entirely when everything is already installed.
set -euo pipefail

# The host (Poco with its SQLite and PostgreSQL connectors, Boost.DLL,
# yaml-cpp, zlib for the prune archive, Howard Hinnant's date library and
# the system's tzdata for cron schedules' time zones), the plugins, and the
# demo's jq.
packages=(
  build-essential cmake g++
  libpoco-dev libboost-dev libyaml-cpp-dev zlib1g-dev libhowardhinnant-date-dev tzdata
  libsqlite3-dev sqlite3 libpq-dev
  jq
)
case "${1:-}" in
  --host) ;;
  "")
    packages+=(
      # the integration tests read what the binary prints with a JSON parser of their own
      nlohmann-json3-dev
      libgtest-dev libgmock-dev
      clang-14 libclang-rt-14-dev
      postgresql-15
      lintian dpkg-dev systemd pkgconf
      # the tests check /metrics with `promtool check metrics`, drive the HTTP API with curl and
      # load the dashboard in a headless browser
      prometheus curl chromium
      # process steps: the Python SDK's tests and the Python steps the integration tests run
      python3
    )
    ;;
  *) echo "usage: packaging/install-deps.sh [--host]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
