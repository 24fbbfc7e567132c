# Shared by rill_cli_checks.sh and rill_cli_tls_checks.sh (sourced with the script's arguments:
# `. cli_checks_lib.sh "$@"`): their options, the scratch directory and server handling of
# tests/peers/pair_common.sh, running rill_cli ($cli) with its output kept, and recording checks.
#
#   run call "$target" "$ts/UnaryCall" '{}'
#   [ $rc -eq 0 ] && has "$out" "payload"
#   check call_unary        # PASS when the condition just before it held, else FAIL (failed=1)

# shellcheck source=tests/peers/pair_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peers/pair_common.sh"

# The options of both scripts (each checks the ones it needs beyond --cli).
cli="" target="" flavor="" server="" certs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --flavor) flavor=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --certs) certs=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -x "$cli" ] || { echo "FAIL: rill_cli not found at '$cli'"; exit 1; }

failed=0
out=""
err=""
rc=0
# run ARGS...: runs rill_cli, keeping stdout ($out), stderr ($err) and the exit code ($rc).
run() {
  "$cli" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}
# check NAME: reports the outcome of the command (or && list) that ran just before it.
check() {
  local status=$?
  if [ "$status" -eq 0 ]; then
    echo "PASS $1"
  else
    echo "FAIL $1 (exit $rc)"
    echo "  stdout: $out"
    echo "  stderr: $err"
    failed=1
  fi
}
has() { [[ "$1" == *"$2"* ]]; }
compact() { tr -d ' \n' <<<"$1"; }
