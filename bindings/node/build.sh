#!/usr/bin/env bash
# Builds the addon from this checkout and puts it beside index.js as
# `sessdb.<platform>.node`, the one place index.js looks before the prebuilt package.
#
#   bindings/node/build.sh [--release]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
profile=debug
args=()
if [ "${1:-}" = "--release" ]; then profile=release; args=(--release); fi
cd "$here/../.."
cargo build --locked -q -p sessdb-node "${args[@]}"
case "$(uname -s)" in
  Darwin) lib=libsessdb_node.dylib ;;
  *) lib=libsessdb_node.so ;;
esac
# The platform key as index.js computes it (platform.js: it loads no addon).
key=$(node "$here/platform.js")
cp "target/$profile/$lib" "$here/sessdb.$key.node"
echo "bindings/node/sessdb.$key.node (from target/$profile/$lib)"
