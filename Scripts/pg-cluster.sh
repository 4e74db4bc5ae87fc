# Sourced by the scripts that run a throwaway PostgreSQL cluster on loopback (postgres-test.sh,
# durable-chaos.sh, durable-failover.sh): `pg_cluster_setup NAME [--install]` sets
#
# - `pg_bin`: the folder of Debian's server binaries (installs the `postgresql` package first when
#   they are missing and `--install` is given; fails otherwise);
# - `run_as` and `pg_user`: the server refuses to run as root, so when we are root it runs as
#   `postgres` (created if missing) through `runuser`;
# - `workdir`: a new folder `herald-NAME.XXXXXX` under `$TMPDIR`, owned by the server's user.

find_pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" && -x "$dir/postgres" && -x "$dir/pg_basebackup" ]]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null && command -v postgres >/dev/null; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    return 1
}

pg_cluster_setup() {
    local name=$1 install=${2:-}
    if ! pg_bin=$(find_pg_bin); then
        if [[ $install != --install ]]; then
            echo "$name: PostgreSQL's server binaries are missing (Scripts/postgres-test.sh installs them)" >&2
            exit 1
        fi
        echo "$name: PostgreSQL's server binaries are missing; installing Debian's postgresql"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y postgresql
        pg_bin=$(find_pg_bin) || { echo "$name: initdb/pg_ctl still missing after install" >&2; exit 1; }
    fi
    run_as=()
    pg_user=$(id -un)
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
        pg_user=postgres
        run_as=(runuser -u postgres --)
    fi
    workdir=$(mktemp -d "${TMPDIR:-/tmp}/herald-$name.XXXXXX")
    chmod 755 "$workdir"
    [[ ${#run_as[@]} -eq 0 ]] || chown postgres: "$workdir"
}

# `build_durable_peer`: builds herald-postgres-durable-peer (of the package under `$root`) with the
# flags of postgres-test.sh (warnings as errors, the symbol graphs), so that it shares that build,
# and the extra `swift build` arguments in the array `build_args`, if any; sets `peer` to it.
build_durable_peer() {
    local graphs=$root/Bridges/HeraldPostgres/.build/symbol-graphs
    mkdir -p "$graphs"
    swift build --package-path "$root/Bridges/HeraldPostgres" --product herald-postgres-durable-peer \
        -Xswiftc -warnings-as-errors \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
        -Xswiftc -emit-extension-block-symbols -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public \
        ${build_args[@]+"${build_args[@]}"}
    peer=$(swift build --package-path "$root/Bridges/HeraldPostgres" --show-bin-path)/herald-postgres-durable-peer
}
