# test/lib/tap.sh -- a minimal TAP producer for the shell tests in test/t/.
# plan N; ok "command" "name"; is "got" "expected" "name"; like "got" "fixed text" "name";
# diag "text"
_tap_n=0
_tap_failed=0
plan() { echo "1..$1"; }
diag() { printf '# %s\n' "$@" | sed '2,$s/^/# /'; }
_tap_result() {
	_tap_n=$((_tap_n + 1))
	if [ "$1" = 0 ]; then echo "ok $_tap_n - $2"; else echo "not ok $_tap_n - $2"; _tap_failed=$((_tap_failed + 1)); fi
}
ok() { if eval "$1"; then _tap_result 0 "$2"; else _tap_result 1 "$2"; fi; }
is() {
	if [ "$1" = "$2" ]; then _tap_result 0 "$3"; else _tap_result 1 "$3"; diag "got: '$1'" "expected: '$2'"; fi
}
like() {
	case "$1" in
	*"$2"*) _tap_result 0 "$3" ;;
	*) _tap_result 1 "$3"; diag "got: '$1'" "expected to contain: '$2'" ;;
	esac
}
trap 'exit $(( _tap_failed > 0 ))' EXIT
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
