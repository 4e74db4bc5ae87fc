#!/usr/bin/env bash
# What the promotion of an asynchronous replica does to a durable log (HeraldPostgres's README,
# "Durable mode", "Failover"), on one machine: a primary and a streaming replica on loopback.
#
#     Scripts/durable-failover.sh
#
# Writes 100 rows to the log on the primary and waits until the replica has replayed them; cuts
# the replica off (as a slow or broken network would), writes 20 more rows, committed, which a
# consumer reads; stops the primary at once (`pg_ctl stop -m immediate`) and promotes the replica.
# Then it shows that the 20 committed rows are gone, and that a row written on the new primary takes
# a transaction id at or below the position that consumer holds, so that, reconnecting to the new
# primary with it, the consumer would skip that row. Exits 0 when both hold, as the README states.
set -euo pipefail
cd "$(dirname "$0")/.."

source Scripts/pg-cluster.sh
pg_cluster_setup failover
cleanup() {
    local status=$? data
    for data in "$workdir/primary" "$workdir/replica"; do
        [[ -f "$data/postmaster.pid" ]] && "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
    done
    rm -rf "$workdir"
    exit "$status"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
primary_port=$(free_port)
replica_port=$(free_port)
"${run_as[@]}" "$pg_bin/initdb" -D "$workdir/primary" -U "$pg_user" --auth=trust --no-locale >/dev/null
printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nwal_level = replica\nmax_wal_senders = 4\n" \
    "$primary_port" "$workdir" | "${run_as[@]}" tee -a "$workdir/primary/postgresql.conf" >/dev/null
echo "host replication all 127.0.0.1/32 trust" | "${run_as[@]}" tee -a "$workdir/primary/pg_hba.conf" >/dev/null
"${run_as[@]}" "$pg_bin/pg_ctl" -D "$workdir/primary" -l "$workdir/primary.log" -w start >/dev/null
"${run_as[@]}" "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U "$pg_user" -D "$workdir/replica" -R >/dev/null
printf "port = %s\n" "$replica_port" | "${run_as[@]}" tee -a "$workdir/replica/postgresql.conf" >/dev/null
"${run_as[@]}" "$pg_bin/pg_ctl" -D "$workdir/replica" -l "$workdir/replica.log" -w start >/dev/null
psql() { local port=$1; shift; "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres -v ON_ERROR_STOP=1 -Atq "$@"; }

psql "$primary_port" <<'SQL'
CREATE TABLE herald_log (position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx xid8 NOT NULL DEFAULT pg_current_xact_id(), payload text NOT NULL);
CREATE TABLE herald_log_consumers (name text PRIMARY KEY, tx xid8 NOT NULL, position bigint NOT NULL);
SQL
# 100 rows, one transaction each, replayed by the replica.
for i in $(seq 1 100); do echo "INSERT INTO herald_log (payload) VALUES ('row $i');"; done | psql "$primary_port" >/dev/null
target=$(psql "$primary_port" -c "SELECT pg_current_wal_lsn()")
until [[ $(psql "$replica_port" -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn") == t ]]; do sleep 0.1; done
# The replica stops receiving WAL, as behind a slow or broken network.
psql "$replica_port" -c "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
psql "$replica_port" -c "SELECT pg_reload_conf()" >/dev/null
until [[ $(psql "$replica_port" -c "SELECT count(*) FROM pg_stat_wal_receiver") == 0 ]]; do sleep 0.1; done
# 20 more, committed on the primary only; a consumer reads them all and stores its position.
for i in $(seq 101 120); do echo "INSERT INTO herald_log (payload) VALUES ('row $i');"; done | psql "$primary_port" >/dev/null
psql "$primary_port" -c "INSERT INTO herald_log_consumers SELECT 'c', tx, position FROM herald_log ORDER BY tx DESC, position DESC LIMIT 1"
stored=$(psql "$primary_port" -c "SELECT tx::text || ' ' || position FROM herald_log_consumers")
"${run_as[@]}" "$pg_bin/pg_ctl" -D "$workdir/primary" -m immediate -w stop >/dev/null
"${run_as[@]}" "$pg_bin/pg_ctl" -D "$workdir/replica" -w promote >/dev/null
until [[ $(psql "$replica_port" -c "SELECT pg_is_in_recovery()") == f ]]; do sleep 0.1; done

rows=$(psql "$replica_port" -c "SELECT count(*) FROM herald_log")
consumers=$(psql "$replica_port" -c "SELECT count(*) FROM herald_log_consumers")
psql "$replica_port" -c "INSERT INTO herald_log (payload) VALUES ('after the failover')"
new=$(psql "$replica_port" -c "SELECT tx::text || ' ' || position FROM herald_log WHERE payload = 'after the failover'")
echo "durable-failover: the primary committed 120 rows; the promoted replica has $rows (and $consumers consumer rows)"
echo "durable-failover: a consumer that read them all on the old primary holds the position (tx position) $stored;" \
    "the new primary's next row is at $new"
skipped=$(python3 -c "s=tuple(map(int,'$stored'.split())); n=tuple(map(int,'$new'.split())); print('yes' if n <= s else 'no')")
echo "durable-failover: that consumer, reconnecting to the new primary with the position it holds, would skip the new row: $skipped"
[[ $rows -eq 100 && $skipped == yes ]]
echo "durable-failover: as the README states (asynchronous replica promoted: the last committed rows lost, positions reused)"
