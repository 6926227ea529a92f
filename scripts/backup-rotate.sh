#!/usr/bin/env bash
# Continuous backups of a running Hearth server: takes `hearth backup` into BACKUPS/hearth-<UTC time>
# and keeps the newest --keep of them (default 48). Run it from cron or a systemd timer, e.g. every
# 30 minutes:   */30 * * * *  /opt/hearth/scripts/backup-rotate.sh --data /var/lib/hearth /var/backups/hearth
# (docs/backup.md). The binary is $HEARTH_BIN, else `hearth` on the PATH. Exits non-zero when the
# backup fails, leaving the older backups untouched.
set -euo pipefail

data="./hearth-data"
keep=48
backups=""
while (( $# > 0 )); do
    case "$1" in
        --data) data="$2"; shift 2 ;;
        --keep) keep="$2"; shift 2 ;;
        -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
        *) backups="$1"; shift ;;
    esac
done
[[ -n "$backups" ]] || { echo "usage: $0 [--data DIR] [--keep N] BACKUPS_DIR" >&2; exit 2; }
[[ "$keep" =~ ^[1-9][0-9]*$ ]] || { echo "--keep must be a positive number" >&2; exit 2; }
hearth="${HEARTH_BIN:-hearth}"

mkdir -p "$backups"
chmod 700 "$backups"
name="hearth-$(date -u +%Y%m%dT%H%M%SZ)"
target="$backups/$name"
suffix=2
while [[ -e "$target" ]]; do target="$backups/$name-$suffix"; suffix=$((suffix + 1)); done
"$hearth" backup --data "$data" "$target"

# Oldest first by name (the names sort by time); remove all but the newest $keep complete backups.
mapfile -t all < <(find "$backups" -mindepth 1 -maxdepth 1 -type d -name 'hearth-*' ! -name '*.partial' | sort)
excess=$(( ${#all[@]} - keep ))
for (( i = 0; i < excess; i++ )); do
    rm -rf -- "${all[$i]}"
    echo "Removed the old backup ${all[$i]}" >&2
done
