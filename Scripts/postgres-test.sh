#!/usr/bin/env bash
# Runs the HeraldPostgres bridge's tests against a throwaway PostgreSQL cluster on loopback.
#
# Installs Debian's `postgresql` if its server binaries are missing, creates a cluster in a temporary
# folder owned by the `postgres` user, starts it on 127.0.0.1 at a free port (unix socket in the same
# folder), and a second one for the test that restarts its server midway, runs `swift test --package-path Bridges/HeraldPostgres` with HERALD_PG_* set, and always
# stops the server and removes the folder, whatever the outcome.
#
# Extra arguments go to `swift test`, e.g. `Scripts/postgres-test.sh -Xswiftc -warnings-as-errors`.
#
# `Scripts/postgres-test.sh --bench [arguments]` instead starts the main cluster only and runs
# `swift run -c release herald-postgres-bench [arguments]` against it (release build of the bridge).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=test
if [[ ${1:-} == --bench ]]; then
    mode=bench
    shift
fi

source "$root/Scripts/pg-cluster.sh"
pg_cluster_setup pg --install

# The clusters' data folders: the main one, and one that the restart test stops and starts
# midway (a cluster of its own, so that the other tests, which run in parallel, keep their server).
clusters=()

cleanup() {
    local status=$? data
    for data in "${clusters[@]}"; do
        if [[ -f "$data/postmaster.pid" ]]; then
            "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
    done
    rm -rf "$workdir"
    exit "$status"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_cluster NAME PORT: initdb into $workdir/NAME, with its settings in postgresql.conf, so that a
# plain `pg_ctl -D $workdir/NAME -l $workdir/NAME.log -w start` starts it again the same way.
start_cluster() {
    local name=$1 port=$2 data="$workdir/$1" sockets="$workdir/$1-sockets"
    "${run_as[@]}" mkdir -p "$sockets"
    "${run_as[@]}" "$pg_bin/initdb" -D "$data" -U "$pg_user" --auth=trust --encoding=UTF8 --no-locale >/dev/null
    clusters+=("$data")
    # The suites run in parallel, each test with several links of two connections each: more than
    # the default 100 connections (the whole run peaked at 306 backends with 140 tests).
    printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 500\n" \
        "$port" "$sockets" | "${run_as[@]}" tee -a "$data/postgresql.conf" >/dev/null
    "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$workdir/$name.log" -w -t 60 start >/dev/null \
        || { cat "$workdir/$name.log" >&2; exit 1; }
}

port=$(free_port)
start_cluster data "$port"

export HERALD_PG_HOST=127.0.0.1
export HERALD_PG_PORT=$port
export HERALD_PG_USER=$pg_user
export HERALD_PG_DATABASE=postgres
export HERALD_PG_SOCKET_DIR=$workdir/data-sockets

if [[ $mode == bench ]]; then
    echo "postgres-test: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (user $pg_user)"
    swift run -c release --package-path "$root/Bridges/HeraldPostgres" herald-postgres-bench "$@"
    exit
fi

restart_port=$(free_port)
start_cluster restartable "$restart_port"
echo "postgres-test: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port," \
    "and a cluster to restart on 127.0.0.1:$restart_port (user $pg_user)"
# The restart test's cluster: pg_ctl, its data folder and log, the user to run pg_ctl as (empty:
# this user), and its port.
export HERALD_PG_CTL=$pg_bin/pg_ctl
export HERALD_PG_DATA=$workdir/restartable
export HERALD_PG_LOG=$workdir/restartable.log
export HERALD_PG_RUN_AS=${run_as:+postgres}
export HERALD_PG_RESTART_PORT=$restart_port
# The build also writes the symbol graphs of the bridge's DocC catalog (built below), so that the
# documentation needs no second build of the bridge and postgres-nio.
graphs=$root/Bridges/HeraldPostgres/.build/symbol-graphs
mkdir -p "$graphs"
swift test --package-path "$root/Bridges/HeraldPostgres" "$@" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
    -Xswiftc -emit-extension-block-symbols -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public

# The benchmark's smoke runs (plain mode, then durable mode), on the debug build that `swift test`
# just made (no second build of postgres-nio): they must run, receivers in other processes included;
# no timing is asserted. The
# figures come from the release build: `Scripts/postgres-test.sh --bench`.
echo "postgres-test: herald-postgres-bench --quick (debug build, a smoke run)"
swift run --package-path "$root/Bridges/HeraldPostgres" --skip-build herald-postgres-bench --quick
echo "postgres-test: herald-postgres-bench --durable --quick (debug build, a smoke run)"
swift run --package-path "$root/Bridges/HeraldPostgres" --skip-build herald-postgres-bench --durable --quick

echo "postgres-test: the bridge's DocC catalog (docc convert --warnings-as-errors)"
bash "$root/Scripts/build-docs.sh" --module HeraldPostgres Bridges/HeraldPostgres/Sources "$graphs"

# The manifest that the bridge's README shows for a service must load.
swift package --package-path "$root/Bridges/HeraldPostgres/Examples/ServicePackage" dump-package >/dev/null
echo "postgres-test: Examples/ServicePackage/Package.swift loads"

# The bridge's public API against the baseline in API/baseline (Scripts/check-api.py). Last, because
# a baseline not yet in the cache is built in this scratch folder, with the test build's arguments
# (so that postgres-nio and swift-crypto are not compiled again): only Herald and the bridge are.
python3 "$root/Scripts/check-api.py" bridge "$root/Bridges/HeraldPostgres/.build" "$@" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
    -Xswiftc -emit-extension-block-symbols -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
