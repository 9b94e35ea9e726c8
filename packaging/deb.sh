#!/usr/bin/env bash
# Builds the Debian packages (ductwork, ductwork-sdk-dev) from a Release
# build installed under /usr, and checks them with lintian.
#   packaging/deb.sh [OUTPUT_DIR]      (default: build-deb/packages)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DEB_BUILD_DIR:-$root/build-deb}
out=${1:-$build/packages}
"$root/packaging/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DDUCTWORK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
debs=("$out"/*.deb)
# Errors fail the build; warnings are shown.
lintian --fail-on error --tag-display-limit 0 "${debs[@]}"
printf '%s\n' "${debs[@]}"
