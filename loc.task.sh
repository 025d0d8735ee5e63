#!/usr/bin/env bash
# One task of a campaign: run the collector as a user would by hand, deliver every run folder
# it left to the destination, and keep a ledger record of this attempt there.
#
#   task.sh TASKS_FILE
#
# TASKS_FILE holds one line per task: KEY, a tab, then the task's words quoted for bash
# (task index, label, environment, target, interpreter, plan, then the collector's extra
# options). KEY is the scheduler's index: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX.
#
# Set by the scheduler wrapper (the sbatch script, or the Job's environment):
#   MIGRATION_RECORD_CAMPAIGN      campaign name
#   MIGRATION_RECORD_CAMPAIGN_ID   this campaign's id (name and submission time)
#   MIGRATION_RECORD_SCHEDULER     slurm or kubernetes
#   MIGRATION_RECORD_SUBMISSION    1 for the first submission, +1 for each resume
#   MIGRATION_RECORD_RESTART       retries of this index so far (Kubernetes); Slurm's own
#                                  SLURM_RESTART_COUNT counts requeues
#   DESTINATION                    a folder every node mounts, or s3://bucket/prefix
#   UPLOAD                         folder, reportgen or aws
#   REPORTGEN_PYTHON               the interpreter that runs `-m reportgen publish` (UPLOAD=reportgen)
#   COLLECTOR_ROOT                 the checkout that holds collector/
#   SCRATCH                        node-local folder for the run before it is delivered
#   PLANNED_FILE                   the campaign's planned tasks (delivered beside the records)
#
# A stop signal (Slurm's --signal ahead of the time limit, Kubernetes' SIGTERM at a pod's
# stop) is passed to the collector, which ends the run with an aborted run_end; the run and
# this attempt's record and log are then delivered before the grace period ends.
set -u

tasks_file=${1:?usage: task.sh TASKS_FILE}
key=${SLURM_ARRAY_TASK_ID:-${JOB_COMPLETION_INDEX:-}}
if [ -z "$key" ]; then
    echo "task.sh: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set" >&2
    exit 2
fi

# A later submit with the same --out replaces the tasks file while this campaign's tasks may
# still be queued or requeued: a task runs only from its own campaign's file (its first line).
owner=$(awk -F '\t' '$1 == "#campaign" { print $2; exit }' "$tasks_file")
if [ -n "${MIGRATION_RECORD_CAMPAIGN_ID:-}" ] && [ -n "$owner" ] && [ "$owner" != "$MIGRATION_RECORD_CAMPAIGN_ID" ]; then
    echo "task $key: $tasks_file now holds the tasks of campaign $owner, not of $MIGRATION_RECORD_CAMPAIGN_ID (a later submit with the same --out replaced it); nothing is run: resubmit this campaign's tasks from their own files" >&2
    exit 2
fi
line=$(awk -F '\t' -v key="$key" '$1 == key { sub(/^[^\t]*\t/, ""); print; exit }' "$tasks_file")
if [ -z "$line" ]; then
    echo "task $key: no such task in $tasks_file" >&2
    exit 2
fi
# The words were written by shlex.quote: each is one literal word, nothing in them runs.
words=()
eval "words=($line)"
index=${words[0]}
label=${words[1]}
environment=${words[2]}
target=${words[3]}
python=${words[4]}
plan=${words[5]}
extra=("${words[@]:6}")

submission=${MIGRATION_RECORD_SUBMISSION:-1}
restart=${SLURM_RESTART_COUNT:-${MIGRATION_RECORD_RESTART:-0}}
case "$restart" in '' | *[!0-9]*) restart=0 ;; esac
case "$submission" in '' | *[!0-9]*) submission=1 ;; esac
attempt="s${submission}-r${restart}"
node=$(hostname 2>/dev/null || echo unknown)
if [ -n "${SLURM_ARRAY_JOB_ID:-}" ]; then
    job_id="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
else
    job_id=${JOB_NAME:-${HOSTNAME:-unknown}}
fi

# A folder destination is the shared folder every node mounts: where this node lacks it (not
# mounted), a run and record written there would stay on this node's own disk while the task read
# as delivered, and the campaign's ledger never heard of it. Nothing is run; the scheduler sees
# the task fail (its output names why).
if [ "${UPLOAD:-}" = folder ] && [ ! -d "$DESTINATION" ]; then
    echo "task $index: the destination $DESTINATION is not a folder on this node (not mounted here?); nothing is run" >&2
    exit 2
fi

export MIGRATION_RECORD_ENVIRONMENT="$environment"
export MIGRATION_RECORD_TASK_INDEX="$index"
export MIGRATION_RECORD_ATTEMPT="$attempt"
export MIGRATION_RECORD_JOB_ID="$job_id"

scratch="${SCRATCH:-${TMPDIR:-/tmp}}/${MIGRATION_RECORD_CAMPAIGN_ID:-campaign}-$index-$attempt"
ledger="$scratch/ledger"
ledger_url="$DESTINATION/_campaigns/${MIGRATION_RECORD_CAMPAIGN_ID:-campaign}"
# Without its scratch folder the task cannot run: it fails at once, and its record and log are
# still written (into a folder destination's ledger in place, else from a temporary folder), so
# the ledger shows it failed with its exit code and log, never missing.
setup_error=""
in_place=""
temporary=""
if ! mkdir -p "$scratch/runs" "$ledger"; then
    setup_error="cannot create the scratch folder $scratch"
    if [ "$UPLOAD" = folder ]; then
        in_place=1
        ledger="$ledger_url/tasks"
        mkdir -p "$ledger"
    # TMPDIR may be the very folder that failed: /tmp, then /dev/shm, before giving up.
    elif temporary=$(mktemp -d 2>/dev/null || mktemp -d -p /tmp 2>/dev/null || mktemp -d -p /dev/shm); then
        ledger="$temporary/ledger"
        mkdir -p "$ledger"
    fi
fi
record="task-$index.$attempt.json"
log="$ledger/task-$index.$attempt.log"

say() {
    echo "task $index ($attempt): $*" | tee -a "$log" >&2
}

# A stop signal is trapped from here on, before the ledger is written: one that arrives while
# the task sets up (a job cancelled or preempted as it starts) is recorded as a stop, and
# passed to the collector once it runs.
stop_signal=""
# shellcheck disable=SC2317  # called from the traps below
on_stop() {
    stop_signal=$1
    say "stopped by the scheduler ($1): asking the collector to end the run"
    [ -n "${pid:-}" ] && kill "-$1" "$pid" 2>/dev/null
}
trap 'on_stop TERM' TERM
trap 'on_stop INT' INT

# A value written into the ledger's JSON: the characters run ids, host names and job ids use.
json_word() {
    case "$1" in
        '' | *[!A-Za-z0-9._:-]*) printf '"unreadable"' ;;
        *) printf '"%s"' "$1" ;;
    esac
}

# Copy (a folder) or upload (s3://) one folder's files under a destination path.
deliver() {
    local from=$1 to=$2
    case "$UPLOAD" in
        folder) mkdir -p "$to" && cp -R "$from"/. "$to"/ ;;
        aws) aws s3 cp --recursive --only-show-errors "$from" "$to/" ;;
        *) "$REPORTGEN_PYTHON" -m reportgen publish "$from" "$to" ;;
    esac
}

# The ledger's files (records, logs, the planned tasks) to the destination. To a folder, each is
# copied under a hidden name and renamed into place: a reader (status, a site build, another
# task) sees a file whole or not at all, never one cut short by a full disk or half rewritten by
# the next task's copy (`cp` into an existing file truncates it first). A record still being
# written (*.tmp) stays behind.
deliver_ledger() {
    local from=$1 to=$2 file name part
    [ "$UPLOAD" = folder ] || { deliver "$from" "$to"; return; }
    mkdir -p "$to" || return 1
    for file in "$from"/*; do
        [ -f "$file" ] || continue
        name=$(basename "$file")
        case "$name" in *.tmp) continue ;; esac
        part="$to/.$name.part-$$"
        if ! { cp "$file" "$part" && mv -f "$part" "$to/$name"; }; then
            rm -f "$part"
            return 1
        fi
    done
}

record_json() {
    local state=$1 code=$2 ended=$3 runs=$4
    printf '{"task": %s, "attempt": "%s", "submission": %s, "restart": %s, ' "$index" "$attempt" "$submission" "$restart"
    printf '"state": "%s", "exit_code": %s, ' "$state" "$code"
    printf '"node": %s, "job_id": %s, ' "$(json_word "$node")" "$(json_word "$job_id")"
    printf '"started": "%s", "ended": %s, ' "$started" "$ended"
    printf '"runs": [%s], "log": "%s"}\n' "$runs" "$(basename "$log")"
}

# Where the scratch folder takes no record (a full node-local disk: mkdir still works there),
# the ledger moves once, as when the scratch folder cannot be made: into a folder destination's
# ledger in place, else a temporary folder; the log so far goes with it. The task is then failed
# with its exit code and its log, never missing from the ledger.
relocated=""
relocate_ledger() {
    [ -z "$relocated" ] || return 1
    relocated=1
    local old_log=$log
    if [ "$UPLOAD" = folder ]; then
        in_place=1
        ledger="$ledger_url/tasks"
    elif temporary=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d -p /tmp 2>/dev/null); then
        ledger="$temporary/ledger"
    else
        return 1
    fi
    mkdir -p "$ledger" || return 1
    log="$ledger/$(basename "$old_log")"
    [ ! -f "$old_log" ] || cat "$old_log" >>"$log" 2>/dev/null
    say "the scratch folder took no record (full?): the ledger is written in $ledger"
}

write_record() {
    if ! { record_json "$@" >"$ledger/$record.tmp" && mv "$ledger/$record.tmp" "$ledger/$record"; } 2>/dev/null; then
        rm -f "$ledger/$record.tmp" 2>/dev/null
        relocate_ledger && record_json "$@" >"$ledger/$record.tmp" && mv "$ledger/$record.tmp" "$ledger/$record"
    fi
}

publish_ledger() {
    [ -z "$in_place" ] || return 0
    deliver_ledger "$ledger" "$ledger_url/tasks" || say "could not deliver the ledger record to $ledger_url/tasks"
}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
plan_dir="${temporary:-$scratch}/plan"
if [ -r "${PLANNED_FILE:-}" ]; then
    if [ -n "$in_place" ]; then
        [ -f "$ledger_url/planned.json" ] || cp "$PLANNED_FILE" "$ledger_url/planned.json" || say "could not write the planned tasks to $ledger_url"
    elif [ "$UPLOAD" = folder ] && [ -f "$ledger_url/planned.json" ]; then
        :  # the first task put it there: rewriting it under a reader (status, a site) gains nothing
    elif ! { mkdir -p "$plan_dir" && cp "$PLANNED_FILE" "$plan_dir/planned.json" && deliver_ledger "$plan_dir" "$ledger_url"; }; then
        say "could not deliver the planned tasks to $ledger_url"
    fi
    rm -rf "$plan_dir"
fi
if [ -n "$setup_error" ]; then
    say "$setup_error; nothing is run"
    write_record failed 2 "\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" ""
    publish_ledger
    [ -z "$temporary" ] || rm -rf "$temporary"
    exit 2
fi
say "$label on $node (job $job_id); log: $ledger_url/tasks/$(basename "$log")"
write_record running null null ""
publish_ledger
if [ -n "$stop_signal" ]; then
    say "stopped before the collector started; nothing is run"
    code=$((128 + $([ "$stop_signal" = INT ] && echo 2 || echo 15)))
    write_record stopped "$code" "\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" ""
    publish_ledger
    exit "$code"
fi

cd "$COLLECTOR_ROOT" || { say "cannot enter $COLLECTOR_ROOT"; write_record failed 2 "\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" ""; publish_ledger; exit 2; }
PYTHONPATH="$COLLECTOR_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$python" -m collector \
    --workload "$plan" --target "$target" --out "$scratch/runs" ${extra[@]+"${extra[@]}"} >>"$log" 2>&1 &
pid=$!
# A trapped signal interrupts `wait`; wait again until the collector has really ended.
while :; do
    wait "$pid"
    rc=$?
    kill -0 "$pid" 2>/dev/null || break
done
say "collector exited $rc"
tail -n 20 "$log" >&2

# Whatever the collector left (a complete run, or the partial log of a failed one) is
# delivered; reportgen reports a log without run_end as incomplete.
# Into a folder destination a run goes under a hidden name first, then is renamed: a copy cut
# short (a full disk, another file system) is removed, never left for a site to read as a run.
runs=""
moved=0
found=0
for run in "$scratch"/runs/*/; do
    [ -f "$run/events.jsonl" ] || continue
    run="${run%/}"
    name=$(basename "$run")
    found=$((found + 1))
    ok=0
    if [ "$UPLOAD" = folder ]; then
        partial="$DESTINATION/.$name.partial-$$"
        if [ -d "$DESTINATION" ] && mv "$run" "$partial"; then
            # One rename within the folder; where it fails (a folder of that name there), the
            # run goes back to the scratch folder, left in place.
            if mv -T "$partial" "$DESTINATION/$name"; then ok=1; else mv "$partial" "$run"; fi
        else
            rm -rf "$partial"
        fi
    elif deliver "$run" "$DESTINATION/$name" && rm -rf "$run"; then
        ok=1
    fi
    if [ "$ok" = 1 ]; then
        moved=$((moved + 1))
        runs="${runs:+$runs, }$(json_word "$name")"
        say "delivered $name to $DESTINATION"
    else
        say "could not deliver $run to $DESTINATION (left in place)"
        rc=1
    fi
done
if [ "$found" -eq 0 ]; then
    say "no run directory was written"
    [ "$rc" -ne 0 ] || rc=1
fi

if [ "$rc" -eq 0 ]; then
    state="done"
elif [ -n "$stop_signal" ]; then
    state=stopped
else
    state=failed
fi
write_record "$state" "$rc" "\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" "$runs"
publish_ledger
[ -z "$temporary" ] || rm -rf "$temporary"
rmdir "$scratch/runs" 2>/dev/null
[ "$rc" -ne 0 ] || rm -rf "$scratch"
exit "$rc"
