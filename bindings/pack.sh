#!/usr/bin/env bash
# Builds the npm packages of sessdb and writes their tarballs (`npm pack`) into OUT:
#   @sessdb/node                      the JS package (loader, ESM + CJS entries, index.d.ts)
#   @sessdb/node-<platform>           the prebuilt addon of this machine (release build)
#   @sessdb/dsh-session-persistence   the DSH backend compiled to JavaScript + declarations
#
#   bindings/pack.sh OUT
#
# Needs cargo, node and npm. The TypeScript compiler (pinned) is installed once into
# $SESSDB_PACK_TOOLS (default ${TMPDIR:-/tmp}/sessdb-pack-tools).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${1:?usage: bindings/pack.sh OUT}"
out=$(cd "$1" && pwd)
root=$(cd "$here/.." && pwd)

# 1. The addon, for this platform only (the others are built by a release pipeline on their
#    own machines: the targets are listed in node/package.json's napi.targets).
(cd "$root" && cargo build --locked --release -q -p sessdb-node)
key=$(node -e '
  const { platform, arch } = process
  const glibc = platform === "linux" && process.report.getReport().header.glibcVersionRuntime
  console.log(platform === "linux" ? `linux-${arch}-${glibc ? "gnu" : "musl"}` : platform === "win32" ? `win32-${arch}-msvc` : `${platform}-${arch}`)')
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

# 2. The DSH backend: TypeScript to ESM JavaScript and declarations. DSH's packages are not on
#    the npm registry, so the compile does not see their types: the diagnostics that follow
#    from that alone (their modules not found; `override` and `this.ctx` of the class that
#    extends DSH's) are expected, any other fails the pack. The emitted declarations import
#    DSH's packages by name: a DSH user's compiler checks them against the real ones.
tools=${SESSDB_PACK_TOOLS:-${TMPDIR:-/tmp}/sessdb-pack-tools}
if [ ! -x "$tools/node_modules/.bin/tsc" ]; then
  npm install --prefix "$tools" --no-audit --no-fund --silent typescript@5.9.3 @types/node@22.19.1 >/dev/null
fi
dsh="$here/dsh"
rm -rf "$dsh/dist"
diagnostics=$(cd "$dsh" && "$tools/node_modules/.bin/tsc" -p tsconfig.build.json --typeRoots "$tools/node_modules/@types" || true)
unexpected=$(printf '%s\n' "$diagnostics" | grep 'error TS' \
  | grep -vE "TS2307: Cannot find module '@deepseek-ai/|TS4112: This member cannot have an 'override' modifier|TS2339: Property 'ctx' does not exist" || true)
if [ -n "$unexpected" ]; then
  printf 'pack.sh: the DSH backend does not compile:\n%s\n' "$unexpected" >&2
  exit 1
fi
[ -f "$dsh/dist/index.js" ] && [ -f "$dsh/dist/index.d.ts" ]

# 3. The tarballs.
for pkg in "$platform_dir" "$here/node" "$dsh"; do
  (cd "$pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
done
ls "$out"/*.tgz
