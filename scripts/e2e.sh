#!/usr/bin/env bash
# End-to-end tests of the designer: installs what they need on a fresh
# machine (Debian's Chromium, the npm devDependencies), builds the studio,
# starts it on a free loopback port with a temporary database, runs the
# Playwright tests (node --test), and stops the server.
#
#   scripts/e2e.sh                the tests; screenshots go to a temporary directory
#   scripts/e2e.sh --screenshots  the same, writing the README pictures into
#                                 docs/screenshots (make screenshots)
#   scripts/e2e.sh e2e/x.test.mjs only the named test files (the inner loop)
set -euo pipefail
cd "$(dirname "$0")/.."

shots=""
files=()
for arg in "$@"; do
  case "$arg" in
    --screenshots) shots="$PWD/docs/screenshots" ;;
    e2e/*.mjs) files+=("$arg") ;;
    *) echo "e2e: unknown option $arg (known: --screenshots, e2e/NAME.test.mjs)"; exit 2 ;;
  esac
done
[ ${#files[@]} -gt 0 ] || files=(e2e/)

if [ ! -x /usr/bin/chromium ]; then
  echo "e2e: installing chromium (Debian package)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

${GO:-go} build -o "$tmp/studio" ./cmd/studio
# --model-allow-private: the example greeting-assistant's model is a local
# server (usage.test.mjs uses it when one answers there).
"$tmp/studio" serve --addr 127.0.0.1:0 --db "$tmp/e2e.db" --agents examples/agents --model-allow-private >"$tmp/server.log" 2>&1 &
pid=$!

url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'url=http://[0-9.:]*' "$tmp/server.log" | head -1 | cut -d= -f2 || true)
  [ -n "$url" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "e2e: the studio did not start:"; cat "$tmp/server.log"; exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then echo "e2e: the studio did not report its address:"; cat "$tmp/server.log"; exit 1; fi
echo "e2e: studio at $url"

status=0
STUDIO_URL="$url" STUDIO_SHOTS="$shots" STUDIO_BIN="$tmp/studio" node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=tap "${files[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "e2e: server log (last 40 lines):"; tail -40 "$tmp/server.log"
fi
exit "$status"
