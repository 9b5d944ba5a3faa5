#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on loopback for the Go tests of the
# PostgreSQL backend, and prints the URL they should use (make unit passes it
# as STUDIO_TEST_PG). Messages go to stderr; stdout is the URL only.
#
#   1. STUDIO_TEST_PG set: that server; nothing is started or installed.
#   2. A server answering on 127.0.0.1:$STUDIO_PG_PORT (default 5432).
#   3. Else the local cluster on that port is started (pg_ctlcluster).
#   4. Else, when no PostgreSQL is installed at all, Debian's package is
#      installed (as root) and its cluster started, like scripts/e2e.sh
#      installs Chromium.
#
# Then the URL: postgres@…/test when that works (a developer's trust set-up),
# else a role and database of our own (studio_test, with a password),
# created once through the local socket as the postgres user. Nothing else
# is created, and no existing database, role or configuration is changed.
#
# When no server can be had it says why and prints nothing: the Go tests then
# skip with that message, except under CI=true, where this script and the
# tests fail (CI must never pass by skipping them).
set -uo pipefail

host=127.0.0.1
port="${STUDIO_PG_PORT:-5432}"
say() { echo "postgres.sh: $*" >&2; }
give_up() {
  say "$*"
  if [ "${CI:-}" = "true" ]; then
    say "CI=true: failing rather than skipping the PostgreSQL tests"
    exit 1
  fi
  say "the PostgreSQL tests will be skipped"
  exit 0
}

if [ -n "${STUDIO_TEST_PG:-}" ]; then
  echo "$STUDIO_TEST_PG"
  exit 0
fi

# pg_isready when the client tools are here; else whether the port accepts
# a connection (a server in a container, no tools on this machine).
ready() {
  if command -v pg_isready >/dev/null; then
    pg_isready -q -h "$host" -p "$port"
  else
    (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
  fi
}

wait_ready() {
  for _ in $(seq 1 60); do
    ready && return 0
    sleep 0.5
  done
  return 1
}

if ! ready; then
  if ! command -v pg_ctlcluster >/dev/null; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      give_up "PostgreSQL is not installed, and installing it needs root and apt-get"
    fi
    say "installing PostgreSQL (Debian package)"
    apt-get update -qq >&2 || give_up "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || give_up "apt-get install postgresql failed"
  fi
  # The cluster on our port, if there is one: "version name port status ...".
  cluster=$(pg_lsclusters -h 2>/dev/null | awk -v p="$port" '$3 == p { print $1, $2; exit }')
  if [ -z "$cluster" ] && [ -z "$(pg_lsclusters -h 2>/dev/null)" ] && [ "$(id -u)" = 0 ]; then
    # Installed without any cluster (the package's own was removed, or
    # create_main_cluster is off): make one on our port.
    ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
    say "creating PostgreSQL cluster $ver/main on port $port"
    pg_createcluster --port "$port" "$ver" main >&2 || give_up "pg_createcluster failed"
    cluster="$ver main"
  fi
  [ -n "$cluster" ] || give_up "no PostgreSQL cluster listens on port $port (pg_lsclusters), and the ones there are were left alone"
  say "starting PostgreSQL cluster $cluster"
  # shellcheck disable=SC2086
  pg_ctlcluster --skip-systemctl-redirect $cluster start >&2 || true
  wait_ready || give_up "PostgreSQL cluster $cluster did not become ready on $host:$port"
fi

dsn="postgres://postgres@$host:$port/test?sslmode=disable"
if ! command -v psql >/dev/null; then
  say "no psql to check the login with: the tests use $dsn"
  echo "$dsn"
  exit 0
fi
try() { psql "$1" -qtAc 'SELECT 1' >/dev/null 2>&1; }

if try "$dsn"; then
  echo "$dsn"
  exit 0
fi

# As the postgres superuser over the local socket (peer authentication):
# the test role and database, made once.
own="postgres://studio_test:studio_test@$host:$port/studio_test?sslmode=disable"
if try "$own"; then
  echo "$own"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! id postgres >/dev/null 2>&1; then
  give_up "cannot connect as postgres@$host:$port/test, and creating a test role needs root"
fi
as_pg() { runuser -u postgres -- psql -h /var/run/postgresql -p "$port" -d postgres -qtAX -v ON_ERROR_STOP=1 "$@"; }
if [ "$(as_pg -c "SELECT 1 FROM pg_roles WHERE rolname = 'studio_test'" 2>/dev/null)" != 1 ]; then
  say "creating role studio_test"
  as_pg -c "CREATE ROLE studio_test LOGIN PASSWORD 'studio_test'" >&2 || give_up "could not create role studio_test"
fi
if [ "$(as_pg -c "SELECT 1 FROM pg_database WHERE datname = 'studio_test'" 2>/dev/null)" != 1 ]; then
  say "creating database studio_test"
  as_pg -c "CREATE DATABASE studio_test OWNER studio_test" >&2 || give_up "could not create database studio_test"
fi
try "$own" || give_up "cannot connect as studio_test@$host:$port/studio_test (pg_hba.conf must allow password logins on loopback)"
echo "$own"
