#!/usr/bin/env bash
# Fuzz the `pld` command line: many generated argument lists and JSON specifications (extreme,
# negative, NaN/inf and malformed numbers, huge counts, grid steps down to 5e-324, tolerances 0
# and 1e-300, empty and malformed JSON, very long lists), each run with a timeout. Reports every
# panic (exit 101), abort (134), other signal and timeout; exit codes 0, 1 and 2 are fine.
#
# Usage: scripts/fuzz_cli.sh [RUNS]          (default 300; build first: cargo build --release)
# Environment: PLD (binary, default target/release/pld), SEED (default 1), TIMEOUT (seconds per
# run, default 20), OUT (work directory, default a fresh mktemp -d).
# Exit status: 0 when no run panicked, aborted or timed out, 1 otherwise.
set -u

RUNS=${1:-300}
PLD=${PLD:-target/release/pld}
SEED=${SEED:-1}
TIMEOUT=${TIMEOUT:-20}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
RANDOM=$SEED

if [[ ! -x $PLD ]]; then
    echo "no binary at $PLD: run cargo build --release first" >&2
    exit 2
fi

# Numbers as the command line gets them (clap parses f64: nan, inf, 1e999 = inf, ...).
NUMBERS=(nan NaN inf -inf +inf infinity 0 -0 5e-324 1e-310 2.2250738585072014e-308 1e-300
    1e-100 1e-20 1e-19 1e-12 1e-9 1e-5 0.001 0.01 0.1 0.5 0.9999999999999999 1
    1.0000000000000002 2 10 700 1000 1e6 1e12 1e20 1e308 1.7976931348623157e308 1e309 1e999 -1
    -1e-300 -5e-324 -1e308 "" abc 1,2 0x10 1e 18446744073709551615)
# Numbers of sensible size, so that runs also reach the computation.
ORDINARY=(0.3 0.5 0.8 1 1.1 2 4 10 30)
ORDINARY_RATES=(0.001 0.01 0.1 0.5 1)
ORDINARY_DELTAS=(1e-10 1e-5 1e-3 0.1)
ORDINARY_INTEGERS=(1 2 10 100 1000)
INTEGERS=(0 1 2 3 10 1000 60000 1000000000000 1000000000001 9007199254740993
    18446744073709551615 18446744073709551616 -1 1.5 nan 1e3 "")
# Numbers as JSON text: some are not JSON at all (NaN, Infinity, 1e999 overflows).
JSON_NUMBERS=(0 -0 5e-324 1e-310 1e-300 1e-20 1e-12 1e-5 0.01 0.5 1 2 10 700 1e6 1e12 1e308
    1.7976931348623157e308 1e999 -1 -1e-300 -1e308 NaN Infinity -Infinity null '"1"' true '[]'
    '{}' 18446744073709551615 18446744073709551616 1000000000000 1000000000001
    9007199254740993 1.5)
JSON_ORDINARY=(0.5 1 1 2 4 0.01 0.1 10)
GRID_STEPS=(5e-324 1e-310 1e-300 1e-20 1e-19 1e-18 1e-13 1e-12 1e-11 1e-9 1e-6 1e-4 0.01 0.1
    1 1.5 0 -0.01 nan inf)
TOLERANCES=(0 1e-300 1e-20 1e-12 1e-6 1e-3 0.5 1 10 inf nan -1)
FORMATS=(table json csv markdown)
COMMANDS=(epsilon delta compare curve calibrate)
NULLS=(noise count rate "")
PRESETS=(mnist-dp-sgd poisson-dp-sgd laplace-fixed-batch full-batch-gaussian nope "")

pick() { # pick NAME: one element of the array NAME
    local -n array=$1
    printf '%s' "${array[RANDOM % ${#array[@]}]}"
}
chance() { # chance N: true with probability 1/N
    (( RANDOM % $1 == 0 ))
}
# Mostly ordinary values, so that most runs get past validation and one or two nasty values
# reach the computation.
number() {
    if chance 4; then pick NUMBERS; else pick ORDINARY; fi
}
delta() {
    if chance 3; then pick NUMBERS; else pick ORDINARY_DELTAS; fi
}
rate() {
    if chance 3; then pick NUMBERS; else pick ORDINARY_RATES; fi
}
integer() {
    if chance 3; then pick INTEGERS; else pick ORDINARY_INTEGERS; fi
}
json_number() {
    if chance 4; then pick JSON_NUMBERS; else pick JSON_ORDINARY; fi
}
json_list() { # a JSON list of numbers: short, normalized-looking, or very long
    local n i items=()
    case $((RANDOM % 5)) in
        0) echo "[]" ; return ;;
        1) n=$((RANDOM % 4 + 1)); for ((i = 0; i < n; i++)); do items+=("$(pick JSON_NUMBERS)"); done ;;
        2) echo "[0.5, 0.5]"; return ;;
        3) echo "[0.25, 0.75]"; return ;;
        4) n=$(( (RANDOM % 3 == 0) ? 200000 : 2000 ))
           python3 -c "import sys; n=$n; print('[' + ','.join([repr(1.0/n)]*n) + ']')"
           return ;;
    esac
    local IFS=,
    echo "[${items[*]}]"
}

event() { # one JSON event; $1 = the field to write as null ("" for none)
    local null=$1 mechanism body sampling count
    local a b k
    a=$(json_number); b=$(json_number)
    if chance 3; then k=$(pick JSON_NUMBERS); else k=$(pick ORDINARY_INTEGERS); fi
    case $((RANDOM % 9)) in
        0|8) mechanism=gaussian; body="\"sigma\": $a, \"sensitivity\": $b" ;;
        1) mechanism=laplace; body="\"scale\": $a, \"sensitivity\": $b" ;;
        2) mechanism=discrete_laplace; body="\"scale\": $a, \"sensitivity\": $k" ;;
        3) mechanism=discrete_gaussian; body="\"sigma\": $a, \"sensitivity\": $k" ;;
        4) mechanism=randomized_response; body="\"epsilon\": $b, \"categories\": $k" ;;
        5) mechanism=eps_delta; body="\"epsilon\": $a, \"delta\": $(json_number)" ;;
        6) mechanism=mixture_of_gaussians
           body="\"sigma\": $a, \"sensitivities\": $(json_list), \"probabilities\": $(json_list)" ;;
        7) mechanism=pmf_pair; body="\"p\": $(json_list), \"q\": $(json_list)" ;;
    esac
    case $((RANDOM % 5)) in
        0|1) sampling="" ;;
        2|3) sampling=", \"sampling\": {\"poisson\": $(rate)}" ;;
        4) sampling=", \"sampling\": {\"fixed_batch\": {\"batch_size\": $(pick JSON_NUMBERS), \"dataset_size\": $(pick JSON_NUMBERS)}}" ;;
    esac
    if chance 3; then count=$(pick JSON_NUMBERS); else count=$((RANDOM % 1000 + 1)); fi
    case $null in
        noise) body=$(sed -E 's/"(sigma|scale)": [^,]*/"\1": null/' <<<"$body") ;;
        count) count=null ;;
        rate) sampling=', "sampling": {"poisson": null}' ;;
    esac
    printf '{"mechanism": "%s", %s%s, "count": %s}' "$mechanism" "$body" "$sampling" "$count"
}

spec() { # a JSON specification (sometimes malformed); $1 as for event
    case $((RANDOM % 14)) in
        0) printf '' ;;
        1) printf '{' ;;
        2) printf 'null' ;;
        3) printf '[]' ;;
        4) printf '{"events": []}' ;;
        5) printf '{"events": [%s' "$(event "$1")" ;;
        6) python3 -c "print('[' * 100000 + ']' * 100000)" ;;
        *) local relation=add_remove events
           chance 3 && relation=replace
           events=$(event "$1")
           chance 3 && events="$events, $(event "")"
           printf '{"neighbouring": "%s", "events": [%s]}' "$relation" "$events" ;;
    esac
}

source_args() { # how the composition is given; writes the spec file $1 if one is used
    local file=$1
    case $((RANDOM % 3)) in
        0) spec "" >"$file"; echo "--spec $file" ;;
        1) echo "--preset $(pick PRESETS)" ;;
        2) local args=()
           if chance 2; then args+=(--sigma "$(number)"); else args+=(--noise-multiplier "$(number)"); fi
           if chance 3; then args+=(--batch-size "$(integer)" --dataset-size "$(integer)")
           elif chance 4; then :; else args+=(--sampling-rate "$(rate)"); fi
           if chance 3; then args+=(--epochs "$(number)")
           elif chance 4; then :; else args+=(--steps "$(integer)"); fi
           chance 3 && args+=(--sensitivity "$(number)")
           echo "${args[*]}" ;;
    esac
}
list_of() { # a comma-separated list of $1 numbers
    local n=$1 i items=()
    for ((i = 0; i < n; i++)); do items+=("$(pick NUMBERS)"); done
    local IFS=,
    echo "${items[*]}"
}

accuracy_args() {
    local args=()
    chance 4 && args+=(--tolerance "$(pick TOLERANCES)")
    chance 3 && args+=(--grid-step "$(pick GRID_STEPS)")
    echo "${args[*]}"
}

# One run: the argument list as one string (words split on spaces; empty words are quoted
# as '' by writing them as ""); record anything but 0/1/2.
failures=0
record() { # record KIND RUN
    local kind=$1 run=$2
    failures=$((failures + 1))
    {
        echo "$kind: pld $(cat "$OUT/$run.args")"
        [[ -s $OUT/$run.json ]] && echo "    spec: $(head -c 600 "$OUT/$run.json")"
        echo "    stderr: $(grep -v '^note: \|^stack backtrace\|^ *[0-9]*: \|^ *at ' "$OUT/$run.err" | head -3 | cut -c1-300)"
    } | tee -a "$OUT/failures.txt"
}

for ((run = 0; run < RUNS; run++)); do
    json=$OUT/$run.json
    : >"$json"
    command=$(pick COMMANDS)
    case $command in
        epsilon) args="epsilon $(source_args "$json") --delta $(delta)" ;;
        delta) args="delta $(source_args "$json") --epsilon $(number)" ;;
        compare) args="compare $(source_args "$json")"; chance 2 && args+=" --delta $(delta)" ;;
        curve) args="curve $(source_args "$json")"
               case $((RANDOM % 4)) in
                   0) args+=" --deltas $(list_of $((RANDOM % 5 + 1)))" ;;
                   1) args+=" --epsilons $(list_of $((RANDOM % 5 + 1)))" ;;
                   2) args+=" --deltas $(python3 -c 'print(",".join(["1e-5"] * 3000))')" ;;
               esac ;;
        calibrate) spec "$(pick NULLS)" >"$json"
                   args="calibrate --spec $json --epsilon $(number) --delta $(delta)" ;;
    esac
    args+=" $(accuracy_args) --format $(pick FORMATS) --quiet"
    echo "$args" >"$OUT/$run.args"
    # shellcheck disable=SC2086  # the words of $args are the arguments
    timeout "$TIMEOUT" "$PLD" $args >"$OUT/$run.out" 2>"$OUT/$run.err" </dev/null
    code=$?
    case $code in
        0|1|2) ;;
        101) record "PANIC (exit 101)" "$run" ;;
        134) record "ABORT (exit 134)" "$run" ;;
        124) record "TIMEOUT (${TIMEOUT} s)" "$run" ;;
        *) record "EXIT $code" "$run" ;;
    esac
    if grep -q "panicked" "$OUT/$run.err"; then
        # A panic caught inside the binary (e.g. in a worker thread) still is a panic.
        record "CAUGHT PANIC (exit $code)" "$run"
    fi
    if [[ $code == 0 ]] && grep -qi '\bnan\b' "$OUT/$run.out"; then
        record "NaN IN OUTPUT" "$run"
    fi
done

echo "$RUNS runs (seed $SEED, timeout $TIMEOUT s), $failures failures; logs in $OUT"
[[ $failures == 0 ]]
