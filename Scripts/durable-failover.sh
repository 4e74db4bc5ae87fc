#!/usr/bin/env bash
# What the promotion of an asynchronous replica does to a durable log, and how a running consumer
# lives through it (HeraldPostgres's README, "Durable mode", "Failover"), on one machine: a primary
# and a streaming replica on loopback, and processes of `herald-postgres-durable-peer`.
#
#     Scripts/durable-failover.sh [-- extra swift build arguments]
#
# A durable reader (consumer `failover-reader`, linked to the primary's address) reads 100 posts,
# which the replica replays, with the position the reader stored after them. The replica is cut off
# (as by a slow or broken network) and 20 more posts are committed on the primary; the reader reads
# them too. Then the primary stops at once (`pg_ctl stop -m immediate`), the replica is promoted and
# restarted on the primary's port (what a virtual IP or a DNS switch does), and the reader's link,
# which reconnects to the same address by itself, reaches the new primary. SQL shows that the 20
# committed posts are gone there. Once the reader has reported `.positionAhead`, posts are written
# on the new primary, enough for some to take transaction ids at or below the position the reader
# held (a reader that kept that position would skip them). Exits 0 when the reader reported
# `.positionAhead` once, resumed at its position stored on the new primary, and then received every
# post of the new primary in the log's order, none skipped, and none of the 20 lost posts again.
#
# The build uses the flags of Scripts/postgres-test.sh, as Scripts/durable-chaos.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_args=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --) shift; build_args=("$@"); break ;;
        *) echo "durable-failover: unknown argument $1" >&2; exit 2 ;;
    esac
done

source "$root/Scripts/pg-cluster.sh"
pg_cluster_setup failover
pids=()
cleanup() {
    local status=$? data pid
    for pid in "${pids[@]}"; do
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    for data in "$workdir/primary" "$workdir/replica"; do
        [[ -f "$data/postmaster.pid" ]] && "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    done
    if [[ $status -ne 0 ]]; then
        echo "durable-failover: failed; the servers' logs and the reader's files are in $workdir" >&2
    else
        rm -rf "$workdir"
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

build_durable_peer

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
primary_port=$(free_port)
replica_port=$(free_port)
pg_ctl() { local data=$1; shift; "${run_as[@]}" "$pg_bin/pg_ctl" -D "$workdir/$data" -l "$workdir/$data.log" -w -t 60 "$@" >/dev/null; }
psql() { local port=$1; shift; "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres -v ON_ERROR_STOP=1 -Atq "$@"; }
# Waits up to two minutes until the command succeeds.
wait_for() {
    local what=$1 deadline=$((SECONDS + 120))
    shift
    until "$@"; do
        if [[ $SECONDS -gt $deadline ]]; then echo "durable-failover: timed out waiting for $what" >&2; exit 1; fi
        sleep 0.1
    done
}

"${run_as[@]}" "$pg_bin/initdb" -D "$workdir/primary" -U "$pg_user" --auth=trust --encoding=UTF8 --no-locale >/dev/null
printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nwal_level = replica\nmax_wal_senders = 4\n" \
    "$primary_port" "$workdir" | "${run_as[@]}" tee -a "$workdir/primary/postgresql.conf" >/dev/null
echo "host replication all 127.0.0.1/32 trust" | "${run_as[@]}" tee -a "$workdir/primary/pg_hba.conf" >/dev/null
pg_ctl primary start
"${run_as[@]}" "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U "$pg_user" -D "$workdir/replica" -R >/dev/null
printf "port = %s\n" "$replica_port" | "${run_as[@]}" tee -a "$workdir/replica/postgresql.conf" >/dev/null
pg_ctl replica start
echo "durable-failover: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'), primary on 127.0.0.1:$primary_port, replica on 127.0.0.1:$replica_port"

# Every link names the primary's address, which the new primary takes over.
export HERALD_PG_HOST=127.0.0.1 HERALD_PG_PORT=$primary_port HERALD_PG_USER=$pg_user HERALD_PG_DATABASE=postgres
table=herald_log
channel=herald_log_wake
"$peer" --role migration --table "$table" | PGOPTIONS="-c client_min_messages=warning" psql "$primary_port"
psql "$primary_port" -c "CREATE TABLE chaos_truth (poster text NOT NULL, sequence int NOT NULL, PRIMARY KEY (poster, sequence))"

reader=$workdir/reader.txt
"$peer" --role reader --name failover-reader --table "$table" --channel "$channel" --output "$reader" \
    >>"$workdir/reader.log" 2>&1 &
pids+=($!)
# Posts `ChaosNote(poster: NAME, sequence: …)` up to COUNT, one committed transaction each (the
# poster goes on after the highest sequence the server holds for NAME).
post() {
    local name=$1 count=$2
    timeout 300 "$peer" --role poster --name "$name" --table "$table" --channel "$channel" --count "$count" \
        --rollback-percent 0 --long-per-mille 0 >>"$workdir/poster-$name.log" 2>&1
}
received() { awk -v name="$1" '$1 != "error" && $3 == name' "$reader" | wc -l; }
has_received() { [[ $(received "$1") -ge $2 ]]; }
last_delivery() { awk '$1 != "error" && $1 != "start" {line = $1 " " $2} END {print line}' "$reader"; }
stored_position() { psql "$1" -c "SELECT tx::text || ' ' || position FROM herald_log_consumers WHERE name = 'failover-reader'"; }
has_stored_last() { [[ $(stored_position "$primary_port") == "$(last_delivery)" ]]; }

# 100 posts, read, the reader's position stored, all replayed by the replica.
post old 100
wait_for "the reader's 100 rows" has_received old 100
wait_for "the reader's stored position" has_stored_last
target=$(psql "$primary_port" -c "SELECT pg_current_wal_lsn()")
replayed() { [[ $(psql "$replica_port" -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn") == t ]]; }
wait_for "the replica's replay" replayed
# The replica stops receiving WAL, as behind a slow or broken network.
psql "$replica_port" -c "ALTER SYSTEM SET primary_conninfo = ''"
psql "$replica_port" -c "SELECT pg_reload_conf()" >/dev/null
receiver_gone() { [[ $(psql "$replica_port" -c "SELECT count(*) FROM pg_stat_wal_receiver") == 0 ]]; }
wait_for "the replica's cut-off" receiver_gone
# 20 more, committed on the primary only; the reader reads them.
post old 120
wait_for "the reader's 120 rows" has_received old 120
held=$(last_delivery)

# The failover: the primary stops at once; the replica is promoted, then takes the primary's port.
pg_ctl primary -m immediate stop
pg_ctl replica promote
promoted() { [[ $(psql "$replica_port" -c "SELECT pg_is_in_recovery()") == f ]]; }
wait_for "the promotion" promoted
rows=$(psql "$replica_port" -c "SELECT count(*) FROM $table")
stored=$(stored_position "$replica_port")
next=$(psql "$replica_port" -c "SELECT pg_snapshot_xmax(pg_current_snapshot())")
echo "durable-failover: the primary committed 120 posts; the promoted replica has $rows of them"
echo "durable-failover: the reader holds the position (tx position) $held; its position stored on the" \
    "promoted replica is $stored, and the promoted replica's next transaction id is $next"
printf "port = %s\n" "$primary_port" | "${run_as[@]}" tee -a "$workdir/replica/postgresql.conf" >/dev/null
pg_ctl replica restart
reported() { grep -q '^error PostgresLinkError.positionAhead' "$reader"; }
wait_for "the reader's reconnection" reported
# Posts on the new primary, enough to take the transaction ids up to the reader's position and more.
held_tx=${held% *}
count=$((held_tx - next + 21))
post new "$count"
wait_for "the reader's rows of the new primary" has_received new "$count"

psql "$primary_port" -c "SELECT tx::text || ' ' || position || ' ' || (payload::json->'batch'->0->'payload'->>'poster') || ' ' || (payload::json->'batch'->0->'payload'->>'sequence') FROM $table ORDER BY tx, position" >"$workdir/log.txt"
python3 - "$reader" "$workdir/log.txt" "$held" "$stored" "$count" <<'EOF'
import re, sys
reader, log_file, held, stored, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
held = tuple(map(int, held.split()))
stored = tuple(map(int, stored.split()))
ok = True
def check(condition, message):
    global ok
    if not condition:
        ok = False
        print("durable-failover: FAIL:", message)
log = [line.split() for line in open(log_file) if line.strip()]
log = [((int(tx), int(position)), poster, int(sequence)) for tx, position, poster, sequence in log]
check([(p, s) for _, p, s in log] == [("old", s) for s in range(1, 101)] + [("new", s) for s in range(1, count + 1)],
      "the new primary's log is not posts old 1-100, then new 1-%d" % count)
errors, before, after = [], [], []
for line in open(reader):
    fields = line.split()
    if not fields or fields == ["start"]:
        continue
    if fields[0] == "error":
        errors.append(line.strip())
        continue
    (after if errors else before).append(((int(fields[0]), int(fields[1])), fields[2], int(fields[3])))
print("durable-failover: the reader reported:", *errors, sep="\n    ")
check(len(errors) == 1 and ".positionAhead" in errors[0], "not one .positionAhead and nothing else")
found = re.search(r"next transaction id (\d+), found position (\d+):(\d+),.*resuming at (\d+):(\d+)", errors[0] if errors else "")
check(found is not None, "the .positionAhead report has no positions")
if found:
    next_tx, reported, resumed = int(found[1]), (int(found[2]), int(found[3])), (int(found[4]), int(found[5]))
    check(reported == held, f"it reported the position {reported}, the reader held {held}")
    check(next_tx <= held[0], f"the new primary's next transaction id {next_tx} is above the held {held}")
    check(resumed == stored, f"it resumed at {resumed}, its position stored on the new primary is {stored}")
# Before the failover: posts old 1-120, once each, in the log's order.
check([(p, s) for _, p, s in before] == [("old", s) for s in range(1, 121)], "before the failover: not old 1-120 once each")
check(all(a[0] < b[0] for a, b in zip(before, before[1:])), "before the failover: out of the log's order")
lost = [key for key, p, s in before if p == "old" and s > 100]
check(held == before[-1][0] if before else False, "the held position is not the last delivery")
# After it: every row of the new primary's log after the stored position, in order, nothing else.
expected = [row for row in log if row[0] > stored]
check(after == expected, f"after the failover: {len(after)} deliveries, the new primary has {len(expected)} rows after {stored}")
check(not any(p == "old" for _, p, _ in after), "a post of the old primary delivered again")
at_or_below = [key for key, p, _ in log if p == "new" and key <= held]
check(len(at_or_below) > 0, f"no row of the new primary at or below {held}")
print(f"durable-failover: before the failover the reader received {len(before)} posts (old 1-120, once each, in order),"
      f" among them the {len(lost)} the promotion lost; none of them again afterwards")
print(f"durable-failover: the new primary has {sum(p == 'old' for _, p, _ in log)} old posts and {count} new ones;"
      f" {len(at_or_below)} new ones at or below the held position {held[0]}:{held[1]}"
      f" (from {min(at_or_below)[0] if at_or_below else '-'}:{min(at_or_below)[1] if at_or_below else '-'}),"
      f" which a reader keeping that position would skip")
print(f"durable-failover: after the failover the reader received {len(after)} of the {count} new posts, in the log's order,"
      f" none skipped, none of the old again")
sys.exit(0 if ok else 1)
EOF
echo "durable-failover: as the README states (asynchronous replica promoted: the last committed rows lost," \
    "transaction ids handed out again; the reader reports .positionAhead and skips nothing written on the new primary)"
