#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests, benchmarks and trying Hearth on PostgreSQL: a new cluster in
# a directory of your choice, on a loopback port, trust authentication, no system service involved.
#
#   scripts/postgres/throwaway.sh start DIR [PORT]   # prints the connection URL on stdout
#   scripts/postgres/throwaway.sh stop DIR
#   scripts/postgres/throwaway.sh restart-immediate DIR   # a crash-like restart (fault tests)
#
# HEARTH_PG_FSYNC=off (when the cluster is created) turns fsync off: for the unit tests' server, whose
# concurrent CREATE DATABASEs and commits otherwise queue behind the disk; never for durability tests
# or benchmarks.
#
# Needs Debian's `postgresql` package (apt-get install postgresql). Run as root, it runs the server as
# the `postgres` user the package creates (PostgreSQL refuses to run as root).
set -euo pipefail

command="${1:-}"
dir="${2:-}"
if [[ -z "$command" || -z "$dir" ]]; then
    echo "usage: $0 start|stop|restart-immediate DIR [PORT]" >&2
    exit 2
fi

bindir=""
for candidate in /usr/lib/postgresql/*/bin; do
    [[ -x "$candidate/initdb" ]] && bindir="$candidate"
done
if [[ -z "$bindir" ]]; then
    echo "error: PostgreSQL's server programs are not installed; run: apt-get install -y postgresql" >&2
    exit 1
fi

as_server_user() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

data="$dir/pgdata"
case "$command" in
start)
    port="${3:-0}"
    if [[ "$port" == 0 ]]; then
        port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    fi
    mkdir -p "$dir"
    [[ "$(id -u)" == 0 ]] && chown postgres "$dir"
    if [[ ! -d "$data" ]]; then
        as_server_user "$bindir/initdb" -D "$data" -U hearth --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
            cat "$dir/initdb.log" >&2
            exit 1
        }
        cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
shared_buffers = 256MB
fsync = ${HEARTH_PG_FSYNC:-on}
synchronous_commit = on
wal_level = replica
log_min_messages = warning
CONF
    else
        sed -i "s/^port = .*/port = $port/" "$data/postgresql.conf"
    fi
    as_server_user "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
        cat "$dir/server.log" >&2
        exit 1
    }
    as_server_user "$bindir/psql" -h 127.0.0.1 -p "$port" -U hearth -d postgres -qAtc \
        "SELECT 1 FROM pg_database WHERE datname = 'hearth'" | grep -q 1 ||
        as_server_user "$bindir/createdb" -h 127.0.0.1 -p "$port" -U hearth hearth
    echo "$port" >"$dir/port"
    echo "postgres://hearth@127.0.0.1:$port/hearth"
    ;;
stop)
    [[ -d "$data" ]] && as_server_user "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
restart-immediate)
    as_server_user "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    as_server_user "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null
    ;;
*)
    echo "usage: $0 start|stop|restart-immediate DIR [PORT]" >&2
    exit 2
    ;;
esac
