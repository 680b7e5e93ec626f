#!/usr/bin/env bash
# Compiles the DSH backend (src/*.ts) to ES modules and declarations in dist/, type-checked
# against DSH's own published packages: the TypeScript compiler and DSH's three packages this
# backend imports are installed once, pinned, into $SESSDB_PACK_TOOLS (default
# ${TMPDIR:-/tmp}/sessdb-pack-tools), and linked here for the compile. Any diagnostic fails it.
#
#   bindings/dsh/build.sh            (`npm run build` in bindings/dsh runs it)
#
# Needs node and npm (the npm registry, the first time).
set -euo pipefail
dsh=$(cd "$(dirname "$0")" && pwd)
tools=${SESSDB_PACK_TOOLS:-${TMPDIR:-/tmp}/sessdb-pack-tools}
# DSH's versions: the ones its app 0.1.0-rc.8 installs (cordis is DSH's own framework).
pins="typescript@5.9.3 @types/node@22.19.1 @deepseek-ai/cordis@4.0.4 @deepseek-ai/dsh-session@0.1.0-rc.8 @deepseek-ai/dsh-session-persistence@0.1.0-rc.8"
stamp="$tools/.pins-$(printf '%s' "$pins" | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  mkdir -p "$tools"
  [ -f "$tools/package.json" ] || echo '{ "private": true }' > "$tools/package.json"
  # --legacy-peer-deps: DSH's packages name peer ranges of their own that npm cannot meet together.
  # shellcheck disable=SC2086
  npm install --prefix "$tools" --no-audit --no-fund --silent --legacy-peer-deps $pins >/dev/null
  touch "$stamp"
fi
# The compile resolves DSH's packages from node_modules beside the sources: a link there for
# its length (a node_modules of the package's own is left alone).
linked=""
if [ ! -e "$dsh/node_modules" ]; then
  ln -s "$tools/node_modules" "$dsh/node_modules"
  linked=1
fi
trap '[ -n "$linked" ] && rm -f "$dsh/node_modules"' EXIT
rm -rf "$dsh/dist"
(cd "$dsh" && "$tools/node_modules/.bin/tsc" -p tsconfig.build.json --noEmitOnError)
[ -f "$dsh/dist/index.js" ] && [ -f "$dsh/dist/index.d.ts" ]
