#!/usr/bin/env bash
# The packages as a user meets them: cpack builds ductwork and
# ductwork-sdk-dev from this build folder, lintian finds no error, both are
# extracted into a scratch root, examples/wordcount and a `ductwork
# new-plugin` folder are built out of tree against the packaged SDK (CMake
# package and pkg-config), their step tests pass, and their pipelines run on
# the packaged binary. The systemd unit is checked with systemd-analyze.
#   package_test.sh BUILD_DIR SOURCE_DIR ARTEFACT_DIR
set -euo pipefail
build=$1
src=$2
artefacts=$3
fail() { echo "package_test: $*" >&2; exit 1; }

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[[ $prefix == /usr ]] || fail "the build folder installs under '$prefix'; packages need -DCMAKE_INSTALL_PREFIX=/usr"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$artefacts" && mkdir -p "$artefacts"

# ---- build the packages and lint them
(cd "$build" && cpack -G DEB -B "$work/debs" >"$artefacts/cpack.log" 2>&1) || { cat "$artefacts/cpack.log" >&2; fail "cpack failed"; }
debs=("$work"/debs/*.deb)
((${#debs[@]} == 2)) || fail "expected 2 packages, got: ${debs[*]}"
host_deb=$(ls "$work"/debs/ductwork_*.deb)
sdk_deb=$(ls "$work"/debs/ductwork-sdk-dev_*.deb)
if ! lintian --fail-on error --tag-display-limit 0 "${debs[@]}" >"$artefacts/lintian.txt" 2>&1; then
  cat "$artefacts/lintian.txt" >&2
  fail "lintian reports errors"
fi
grep -q '^E:' "$artefacts/lintian.txt" && fail "lintian printed an error line"

# ---- control data: computed dependencies, the conffile, the architecture
dpkg-deb -f "$host_deb" Depends | grep -q 'libc6' || fail "ductwork: Depends lacks libc6 (SHLIBDEPS): $(dpkg-deb -f "$host_deb" Depends)"
dpkg-deb -f "$host_deb" Depends | grep -q 'libpoco' || fail "ductwork: Depends lacks the Poco libraries"
dpkg-deb --ctrl-tarfile "$host_deb" | tar -xO ./conffiles | grep -qx /etc/ductwork/ductwork.yml || fail "ductwork.yml is not a conffile"
[[ $(dpkg-deb -f "$sdk_deb" Architecture) == all ]] || fail "ductwork-sdk-dev should be Architecture: all"

# ---- the installed layout
root=$work/root
dpkg-deb -x "$host_deb" "$root"
dpkg-deb -x "$sdk_deb" "$root"
for f in usr/bin/ductwork etc/ductwork/ductwork.yml lib/systemd/system/ductwork.service \
         usr/share/man/man1/ductwork.1.gz usr/share/doc/ductwork/copyright usr/share/doc/ductwork/changelog.Debian.gz \
         usr/share/doc/ductwork/http-api.md usr/share/doc/ductwork/dashboard.md \
         usr/share/doc/ductwork/images/dashboard-overview.png \
         usr/lib/ductwork/testkit/libductwork_testkit.so usr/include/ductwork/step.hpp usr/include/ductwork/testing.hpp \
         usr/share/pkgconfig/ductwork-sdk.pc usr/share/doc/ductwork-sdk-dev/copyright \
         usr/share/ductwork/plugin-template/CMakeLists.txt \
         usr/lib/python3/dist-packages/ductwork_steps/__init__.py usr/lib/python3/dist-packages/ductwork_steps/testing.py \
         usr/share/ductwork/python-template/plugins/@NAME@_steps.py; do
  [[ -e $root/$f ]] || fail "missing /$f"
done
[[ -d $root/usr/lib/ductwork/plugins ]] || fail "missing /usr/lib/ductwork/plugins"
config_version=$(find "$root/usr" -name DuctworkSDKConfigVersion.cmake | head -1)
[[ -n $config_version ]] || fail "the SDK's CMake version file is missing"
ductwork=$root/usr/bin/ductwork
"$ductwork" help | grep -q new-plugin || fail "the packaged binary does not know new-plugin"

# ---- the unit
sed "s|/usr/bin/ductwork|$ductwork|g" "$root/lib/systemd/system/ductwork.service" >"$work/ductwork.service"
grep -q '^Type=notify' "$work/ductwork.service" || fail "the unit is not Type=notify"
# verify exits 0 on a warning about the unit (an unknown key, a bad value:
# systemd ignores the line and goes on), so its output is read whatever the
# exit code, and every line fails the test except the known-harmless ones:
# - about another unit file of the build machine (verify loads the units the
#   unit names, e.g. postgresql.service, and may warn about those);
# - the build machine has no "ductwork" user or group (postinst creates it).
# Anything else about the unit, or a non-zero exit, is a defect of it.
verify_rc=0
systemd-analyze verify --man=no "$work/ductwork.service" >"$artefacts/systemd-verify.txt" 2>&1 || verify_rc=$?
harmless='^$|^(/usr)?/lib/systemd/system/[^:]+:[0-9]+: |^/etc/systemd/system/[^:]+:[0-9]+: |^ductwork\.service: .*(user|group).*ductwork.*(not found|No such|does not exist)'
if unexpected=$(grep -Ev "$harmless" "$artefacts/systemd-verify.txt"); [[ -n $unexpected ]]; then
  printf '%s\n' "$unexpected" >&2
  fail "systemd-analyze verify reports on the unit (exit $verify_rc)"
fi
if ((verify_rc != 0)) && ! grep -Eq 'ductwork\.service: .*(user|group).*ductwork' "$artefacts/systemd-verify.txt"; then
  cat "$artefacts/systemd-verify.txt" >&2
  fail "systemd-analyze verify rejects the unit (exit $verify_rc)"
fi

# The hardening systemd rewards: exposure at most 2.0 ("OK"; 10 is "UNSAFE").
systemd-analyze security --offline=true --no-pager "$work/ductwork.service" >"$artefacts/systemd-security.txt" 2>&1 || true
exposure=$(sed -n 's/.*Overall exposure level for ductwork.service: \([0-9.]*\).*/\1/p' "$artefacts/systemd-security.txt")
[[ -n $exposure ]] || { cat "$artefacts/systemd-security.txt" >&2; fail "systemd-analyze security gave no exposure level"; }
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "systemd-analyze security: exposure $exposure > 2.0"

# ---- examples/wordcount, out of tree against the packaged SDK
cmake -S "$src/examples/wordcount" -B "$work/wordcount" -DCMAKE_PREFIX_PATH="$root/usr" \
  -DCMAKE_BUILD_TYPE=Release >"$artefacts/wordcount-configure.log" 2>&1 || { cat "$artefacts/wordcount-configure.log" >&2; fail "configuring wordcount failed"; }
grep -q "$root" "$work/wordcount/CMakeCache.txt" || fail "wordcount did not find the packaged SDK"
cmake --build "$work/wordcount" -j2 >"$artefacts/wordcount-build.log" 2>&1 || { cat "$artefacts/wordcount-build.log" >&2; fail "building wordcount failed"; }
ctest --test-dir "$work/wordcount" --output-on-failure >"$artefacts/wordcount-ctest.log" 2>&1 || { cat "$artefacts/wordcount-ctest.log" >&2; fail "wordcount's step tests failed"; }

run_pipeline() {  # DIR PLUGINS DEFINITIONS PIPELINE ARG -> prints the last step's output
  local dir=$1
  cat >"$dir/run.yml" <<YAML
database: {path: "$dir/var/ductwork.sqlite3"}
plugins: {directory: "$2"}
definitions: {directory: "$3"}
pipelines: "*"
job_worker: {polling_timeout: 0.05}
pipeline_advancer: {polling_timeout: 0.05}
YAML
  mkdir -p "$dir/var"
  local id
  id=$("$ductwork" trigger "$4" "$5" -c "$dir/run.yml")
  timeout 120 "$ductwork" start --drain -c "$dir/run.yml" >"$dir/start.log" 2>&1 || { cat "$dir/start.log" >&2; fail "start --drain failed for $4"; }
  "$ductwork" status "$id" --json -c "$dir/run.yml" | jq -c '[.status, .runs[0].steps[-1].output]'
}
mkdir -p "$work/run-wordcount"
out=$(run_pipeline "$work/run-wordcount" "$work/wordcount" "$src/examples/wordcount/pipelines" WordReport \
      "\"$src/examples/wordcount/data/canal.txt\"")
[[ $out == '["completed","Top '* ]] || fail "WordReport on the packaged binary ended as $out"
echo "wordcount: $out" >"$artefacts/runs.txt"

# ---- pkg-config: a plugin compiled by hand with the packaged flags
cat >"$work/hand.cpp" <<'CPP'
#include <ductwork/step.hpp>
class Hand : public ductwork::Step {
 public:
  ductwork::Json execute(ductwork::StepContext&) override { return "by hand"; }
};
DUCTWORK_STEP(Hand);
DUCTWORK_PLUGIN("hand", "1.0.0");
CPP
# No sysroot given: the .pc names its headers relative to where it lies
# (a hard-coded prefix would point at /usr, not into the unpacked tree).
flags=$(PKG_CONFIG_PATH="$root/usr/share/pkgconfig" pkg-config --cflags --libs ductwork-sdk)
[[ $flags == *"$root/usr/share/pkgconfig/../../include"* ]] || fail "pkg-config flags ($flags) do not point into the unpacked tree"
# shellcheck disable=SC2086
g++ -std=c++17 -fPIC -shared -fvisibility=hidden $flags "$work/hand.cpp" -o "$work/libhand.so" || fail "compiling with pkg-config flags ($flags) failed"
nm -D --defined-only "$work/libhand.so" | grep -q ductwork_plugin_init || fail "the pkg-config-built plugin exports no entry point"

# ---- ductwork new-plugin: the folder builds, its test passes, its pipeline runs
"$ductwork" new-plugin shop_mail "$work/shop_mail" >"$artefacts/new-plugin.txt"
cmake -S "$work/shop_mail" -B "$work/shop_mail/build" -DCMAKE_PREFIX_PATH="$root/usr" >"$artefacts/new-plugin-configure.log" 2>&1 || { cat "$artefacts/new-plugin-configure.log" >&2; fail "configuring the new plugin failed"; }
cmake --build "$work/shop_mail/build" -j2 >"$artefacts/new-plugin-build.log" 2>&1 || { cat "$artefacts/new-plugin-build.log" >&2; fail "building the new plugin failed"; }
ctest --test-dir "$work/shop_mail/build" --output-on-failure >"$artefacts/new-plugin-ctest.log" 2>&1 || { cat "$artefacts/new-plugin-ctest.log" >&2; fail "the new plugin's test failed"; }
out=$(cd "$work/shop_mail" && "$ductwork" migrate -c ductwork.yml >/dev/null &&
      id=$("$ductwork" trigger ShopMail '"Ada"' -c ductwork.yml) &&
      timeout 120 "$ductwork" start --drain -c ductwork.yml >start.log 2>&1 &&
      "$ductwork" status "$id" --json -c ductwork.yml | jq -c '[.status, .runs[0].steps[-1].output]')
[[ $out == '["completed","HELLO, ADA!"]' ]] || fail "the new plugin's pipeline ended as $out"
echo "new-plugin: $out" >>"$artefacts/runs.txt"

# ---- ductwork new-plugin --python: the packaged ductwork_steps module runs
# its unittest and its pipeline (PYTHONPATH stands for /usr's default path
# the module is installed on).
python_path=$root/usr/lib/python3/dist-packages
"$ductwork" new-plugin --python shop_py "$work/shop_py" >"$artefacts/new-plugin-python.txt"
(cd "$work/shop_py" && PYTHONPATH=$python_path PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s test) \
  >"$artefacts/new-plugin-python-unittest.log" 2>&1 || { cat "$artefacts/new-plugin-python-unittest.log" >&2; fail "the Python steps' unittest failed"; }
out=$(cd "$work/shop_py" && export PYTHONPATH=$python_path PYTHONDONTWRITEBYTECODE=1 &&
      "$ductwork" migrate -c ductwork.yml >/dev/null &&
      id=$("$ductwork" trigger ShopPy '"Ada"' -c ductwork.yml) &&
      timeout 120 "$ductwork" start --drain -c ductwork.yml >start.log 2>&1 &&
      "$ductwork" status "$id" --json -c ductwork.yml | jq -c '[.status, .runs[0].steps[-1].output]')
[[ $out == '["completed","HELLO, ADA!"]' ]] || fail "the Python steps' pipeline ended as $out"
echo "new-plugin --python: $out" >>"$artefacts/runs.txt"
echo "package_test: 2 packages lintian-clean; wordcount, a new plugin built against the packaged SDK and new Python steps ran"
