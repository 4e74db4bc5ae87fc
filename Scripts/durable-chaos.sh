#!/usr/bin/env bash
# The chaos run of HeraldPostgres's durable mode, with several OS processes on a throwaway
# PostgreSQL cluster on loopback.
#
#     Scripts/durable-chaos.sh [--posters 4] [--count 25000] [--readers 3] [-- extra swift build arguments]
#
# Posters (herald-postgres-durable-peer --role poster) post inside transactions that also write the
# ground truth (`chaos_truth`); some are rolled back, a few stay open for 100–300 ms and commit out
# of order. Readers (--role reader) read the log as named consumers and append every delivery to a
# file. Meanwhile the script, in turn: kills readers and posters with SIGKILL (a poster in the
# middle of a transaction) and starts them again, terminates random backends with
# `pg_terminate_backend` (a poster's, also during COMMIT), and restarts the server with
# `pg_ctl restart -m immediate`. Then it waits until every reader has caught up and checks:
#
# - the log holds exactly the committed posts (the ground truth), once each, nothing rolled back;
# - every reader received every committed post, in the log's order, and nothing else; a post
#   received twice only right after the reader's process was killed (at least once across a
#   crash, exactly once otherwise).
#
# The build uses the flags of Scripts/postgres-test.sh (`-Xswiftc -warnings-as-errors` and the
# symbol graphs), so that it shares that build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
posters=4
count=25000
readers=3
build_args=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --posters) posters=$2; shift 2 ;;
        --count) count=$2; shift 2 ;;
        --readers) readers=$2; shift 2 ;;
        --) shift; build_args=("$@"); break ;;
        *) echo "durable-chaos: unknown argument $1" >&2; exit 2 ;;
    esac
done

source "$root/Scripts/pg-cluster.sh"
pg_cluster_setup chaos
data=$workdir/data
sockets=$workdir/sockets
pids=()

cleanup() {
    local status=$? pid
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    if [[ -f "$data/postmaster.pid" ]]; then
        "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    if [[ $status -ne 0 ]]; then
        echo "durable-chaos: failed; the logs and the readers' files are in $workdir" >&2
    else
        rm -rf "$workdir"
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"${run_as[@]}" mkdir -p "$sockets"
"${run_as[@]}" "$pg_bin/initdb" -D "$data" -U "$pg_user" --auth=trust --encoding=UTF8 --no-locale >/dev/null
printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 200\n" \
    "$port" "$sockets" | "${run_as[@]}" tee -a "$data/postgresql.conf" >/dev/null
pg_ctl() { "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$workdir/server.log" -w -t 60 "$@" >/dev/null; }
pg_ctl start
psql() { "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres -v ON_ERROR_STOP=1 -Atq "$@"; }

export HERALD_PG_HOST=127.0.0.1 HERALD_PG_PORT=$port HERALD_PG_USER=$pg_user HERALD_PG_DATABASE=postgres
table=herald_chaos
channel=herald_chaos_wake

build_durable_peer

# The log, by the migration the application would run, and the ground truth.
python3 - "$table" >"$workdir/migration.sql" <<'EOF'
import sys
table = sys.argv[1]
print(f'''CREATE TABLE IF NOT EXISTS "public"."{table}" (
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
    origin uuid NOT NULL, incarnation text NOT NULL, sequence bigint NOT NULL, type text NOT NULL,
    payload text NOT NULL, transactional boolean NOT NULL DEFAULT false,
    issued timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX IF NOT EXISTS "{table}_order" ON "public"."{table}" (tx, position);
CREATE TABLE IF NOT EXISTS "public"."{table}_consumers" (name text PRIMARY KEY, tx xid8 NOT NULL,
    position bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS "public"."{table}_deletions" (first_tx xid8 NOT NULL, first_position bigint NOT NULL,
    last_tx xid8 NOT NULL, last_position bigint NOT NULL, count bigint NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS "{table}_deletions_last" ON "public"."{table}_deletions" (last_tx, last_position);
CREATE TABLE chaos_truth (poster text NOT NULL, sequence int NOT NULL, PRIMARY KEY (poster, sequence));''')
EOF
psql -f "$workdir/migration.sql"

declare -A poster_pid reader_pid
start_poster() {
    "$peer" --role poster --name "p$1" --table "$table" --channel "$channel" --count "$count" \
        >>"$workdir/poster-$1.log" 2>&1 &
    poster_pid[$1]=$!
    pids+=($!)
}
start_reader() {
    "$peer" --role reader --name "r$1" --table "$table" --channel "$channel" --output "$workdir/reader-$1.txt" \
        >>"$workdir/reader-$1.log" 2>&1 &
    reader_pid[$1]=$!
    pids+=($!)
}
for i in $(seq 1 "$readers"); do start_reader "$i"; done
for i in $(seq 1 "$posters"); do start_poster "$i"; done

posters_done() {
    local i
    for i in $(seq 1 "$posters"); do grep -q '^done' "$workdir/poster-$i.log" 2>/dev/null || return 1; done
}

kills_readers=0 kills_posters=0 terminations=0 restarts=0
round=0
echo "durable-chaos: $posters posters x $count posts, $readers readers, PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
while ! posters_done; do
    sleep 2
    round=$((round + 1))
    case $((round % 4)) in
        0)
            i=$((RANDOM % readers + 1))
            kill -9 "${reader_pid[$i]}" 2>/dev/null || true
            wait "${reader_pid[$i]}" 2>/dev/null || true
            start_reader "$i"
            kills_readers=$((kills_readers + 1))
            ;;
        1)
            i=$((RANDOM % posters + 1))
            if ! grep -q '^done' "$workdir/poster-$i.log" 2>/dev/null; then
                kill -9 "${poster_pid[$i]}" 2>/dev/null || true
                wait "${poster_pid[$i]}" 2>/dev/null || true
                start_poster "$i"
                kills_posters=$((kills_posters + 1))
            fi
            ;;
        2)
            n=$(psql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND random() < 0.3" || echo 0)
            terminations=$((terminations + n))
            ;;
        3)
            if [[ $((round % 12)) -eq 3 ]]; then
                pg_ctl -m immediate restart
                restarts=$((restarts + 1))
            fi
            ;;
    esac
done
echo "durable-chaos: posters done; $kills_readers readers and $kills_posters posters killed, $terminations backends terminated, $restarts server restarts"

# Every reader catches up with the log.
committed=$(psql -c "SELECT count(*) FROM chaos_truth")
deadline=$((SECONDS + 600))
for i in $(seq 1 "$readers"); do
    while true; do
        got=$(grep -v -e '^start' -e '^error' "$workdir/reader-$i.txt" | awk '{print $3" "$4}' | sort -u | wc -l)
        [[ $got -ge $committed ]] && break
        if [[ $SECONDS -gt $deadline ]]; then echo "durable-chaos: reader $i has $got of $committed" >&2; exit 1; fi
        sleep 1
    done
done
for i in $(seq 1 "$readers"); do kill -9 "${reader_pid[$i]}" 2>/dev/null || true; done

psql -c "SELECT poster || ' ' || sequence FROM chaos_truth" >"$workdir/truth.txt"
psql -c "SELECT tx || ' ' || position || ' ' || (payload::json->'batch'->0->'payload'->>'poster') || ' ' || (payload::json->'batch'->0->'payload'->>'sequence') FROM \"public\".\"$table\" ORDER BY tx, position" >"$workdir/log.txt"
python3 - "$workdir" "$readers" <<'EOF'
import sys
workdir, readers = sys.argv[1], int(sys.argv[2])
truth = set(open(f"{workdir}/truth.txt").read().split("\n")) - {""}
log = [line.split() for line in open(f"{workdir}/log.txt") if line.strip()]
log_posts = [f"{p} {s}" for _, _, p, s in log]
ok = True
def check(condition, message):
    global ok
    if not condition:
        ok = False
        print("durable-chaos: FAIL:", message)
check(len(log_posts) == len(set(log_posts)), f"the log holds a post twice ({len(log_posts) - len(set(log_posts))})")
check(set(log_posts) == truth, f"the log and the ground truth differ: {len(set(log_posts) - truth)} rolled back in the log, {len(truth - set(log_posts))} committed missing")
order = [(int(tx), int(pos)) for tx, pos, _, _ in log]
index = {key: i for i, key in enumerate(order)}
total_duplicates = 0
for r in range(1, readers + 1):
    lines = [line.split() for line in open(f"{workdir}/reader-{r}.txt") if line.strip()]
    seen, delivered, duplicates, starts, high = set(), [], 0, 0, (-1, -1)
    segment_start_high = None
    for fields in lines:
        if fields[0] == "error":  # also in reader-N.log, counted below
            continue
        if fields == ["start"]:
            starts += 1
            segment_start_high = high
            continue
        key = (int(fields[0]), int(fields[1]))
        if key not in index:
            check(False, f"reader {r} received a row not in the log: {fields}")
            continue
        check(log[index[key]][2:] == fields[2:], f"reader {r}: row {key} carries {fields[2:]}, the log {log[index[key]][2:]}")
        if key in seen:
            duplicates += 1
            # Only rows up to what the killed process had reached, again, in the first reads of the next.
            check(segment_start_high is not None and key <= segment_start_high, f"reader {r}: {key} twice, not after a restart")
            continue
        check(key > high, f"reader {r}: {key} after {high}, out of the log's order")
        seen.add(key)
        delivered.append(key)
        high = max(high, key)
    check(delivered == order, f"reader {r}: {len(delivered)} distinct rows, the log {len(order)}")
    total_duplicates += duplicates
    print(f"durable-chaos: reader {r}: {len(delivered)} rows in the log's order, {duplicates} again after {starts - 1} kills")
print(f"durable-chaos: {len(truth)} committed posts (ground truth), {len(log_posts)} rows in the log; {total_duplicates} deliveries again after a kill")
sys.exit(0 if ok else 1)
EOF
cat "$workdir"/poster-*.log | grep '^done' | awk '{c+=$3; r+=$5; f+=$7} END {print "durable-chaos: the posters'"'"' last runs: " c " commits, " r " rollbacks, " f " failures (outcome unknown: resumed from the ground truth)"}'
grep -h '^error' "$workdir"/*.log | sort | uniq -c | head -20 || true
echo "durable-chaos: passed"
