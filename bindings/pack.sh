#!/usr/bin/env bash
# Builds the npm packages of sessdb and writes their tarballs (`npm pack`) into OUT:
#   @sessdb/node                      the JS package (loader, ESM + CJS entries, index.d.ts)
#   @sessdb/node-<platform>           the prebuilt addon of this machine (release build)
#   @sessdb/dsh-session-persistence   the DSH backend compiled to JavaScript + declarations
#
#   bindings/pack.sh OUT
#
# Needs cargo, node and npm. The TypeScript compiler and DSH's packages (pinned) are installed
# once into $SESSDB_PACK_TOOLS (default ${TMPDIR:-/tmp}/sessdb-pack-tools) by dsh/build.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:?usage: bindings/pack.sh OUT}"
out=$(cd "$1" && pwd)
root=$(cd "$here/.." && pwd)

# 1. The addon, for this platform only (the others are built by a release pipeline on their
#    own machines: the targets are listed in node/package.json's napi.targets).
(cd "$root" && cargo build --locked --release -q -p sessdb-node)
key=$(node "$here/node/platform.js")   # as index.js computes it
platform_dir="$here/node/npm/$key"
if [ ! -f "$platform_dir/package.json" ]; then
  echo "pack.sh: no platform package for $key (bindings/node/npm/$key/package.json)" >&2
  exit 1
fi
case "$key" in darwin-*) lib=libsessdb_node.dylib ;; *) lib=libsessdb_node.so ;; esac
cp "$root/target/release/$lib" "$platform_dir/sessdb.$key.node"
# The release profile keeps line tables for profiling; a user's addon needs none of them
# (14.4 MB -> 1.8 MB on linux-x64-gnu).
case "$key" in
  darwin-*) strip -x "$platform_dir/sessdb.$key.node" ;;
  *) strip --strip-unneeded "$platform_dir/sessdb.$key.node" ;;
esac

# 2. The DSH backend: TypeScript to ESM JavaScript and declarations, type-checked against
#    DSH's own published packages (`dsh/build.sh`).
dsh="$here/dsh"
"$dsh/build.sh"

# 3. The tarballs.
for pkg in "$platform_dir" "$here/node" "$dsh"; do
  (cd "$pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
done
ls "$out"/*.tgz
