# Sourced by the example scripts: a free port, and waiting for a `hearth serve` they started.

# A TCP port nothing listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_server URL PID LOG [curl options…]: returns once URL answers 2xx (up to 30 s); exits the
# script, showing the server's log, if the server exits first or never answers.
wait_for_server() {
    local url="$1" pid="$2" log="$3"
    shift 3
    for _ in $(seq 300); do
        curl -sf "$@" "$url" >/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { echo "FAIL: hearth exited while starting:"; cat "$log"; exit 1; }
        sleep 0.1
    done
    echo "FAIL: hearth did not answer within 30 s:"
    cat "$log"
    exit 1
}
