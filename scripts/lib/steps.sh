#!/usr/bin/env bash
# Timed, bounded steps for the test scripts. `step NAME LIMIT_SECONDS COMMAND...` runs COMMAND
# under its own timeout (a hang fails fast, naming the step), and records its wall time; the
# script that first sources this file prints the table of every step (its sub-scripts' too) when
# it exits, passed or not. Shell functions run as steps once exported (`export -f`). Each row
# also says how busy the machine's cores were during the step (all processes, steps running
# beside it included): where a cold run leaves cores idle, and where it is CPU-bound.

# Prints "BUSY TOTAL" jiffies of all cores since boot (/proc/stat's first line).
tessera_cpu_jiffies() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat
}

if [ -z "${TESSERA_STEP_LOG:-}" ]; then
    TESSERA_STEP_LOG="$(mktemp -t tessera-steps.XXXXXX)"
    export TESSERA_STEP_LOG
    tessera_steps_started=$SECONDS
    tessera_steps_cpu_start="$(tessera_cpu_jiffies)"
    trap 'tessera_print_steps' EXIT
fi

step() {
    local name="$1" limit="$2"
    shift 2
    local start=$SECONDS rc=0 cpu_start
    cpu_start="$(tessera_cpu_jiffies)"
    echo "==> step: $name (limit ${limit} s)"
    # timeout signals the step's whole process group: cargo, node and browsers under it included.
    timeout --kill-after=20 "$limit" "$@" || rc=$?
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$limit" "$rc" \
        "$(tessera_busy_percent "$cpu_start")" >> "$TESSERA_STEP_LOG"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "error: step '$name' did not finish within its ${limit} s limit" >&2
    elif [ "$rc" -ne 0 ]; then
        echo "error: step '$name' failed (exit $rc)" >&2
    fi
    return "$rc"
}

# tessera_busy_percent "BUSY TOTAL": the cores' busy share since that reading, in percent.
tessera_busy_percent() {
    local now
    now="$(tessera_cpu_jiffies)"
    awk -v a="$1" -v b="$now" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        t = y[2] - x[2]
        printf "%d", (t > 0) ? 100 * (y[1] - x[1]) / t : 0
    }'
}

# Prints the table; returns the script's exit status (given, or the last command's).
tessera_print_steps() {
    local rc=${1:-$?}
    [ -s "$TESSERA_STEP_LOG" ] || return "$rc"
    echo
    echo "steps (wall time on $(nproc) cores; limit; result; cores busy during the step):"
    awk -F'\t' '{
        r = ($4 == 0) ? "ok" : (($4 == 124 || $4 == 137) ? "TIMED OUT" : "FAILED (" $4 ")")
        printf "  %-44s %6d s  %5.1f min   limit %5d s   %-10s busy %3d%%\n", $1, $2, $2 / 60, $3, r, $5
    }' "$TESSERA_STEP_LOG"
    local total=$((SECONDS - tessera_steps_started))
    printf '  %-44s %6d s  %5.1f min   cores busy %d%% of the run\n' "total" "$total" \
        "$(awk "BEGIN { print $total / 60 }")" "$(tessera_busy_percent "$tessera_steps_cpu_start")"
    rm -f "$TESSERA_STEP_LOG"
    return "$rc"
}
