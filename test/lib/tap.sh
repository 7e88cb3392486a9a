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

# same_extension_objects DB FRESH_DB NAME: one TAP result, whether two databases hold the
# same kafka_lake extension objects (an updated one and one created at its version)
same_extension_objects() {
	local members="SELECT pg_describe_object(classid, objid, 0) FROM pg_depend
		WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
		  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'kafka_lake') ORDER BY 1"
	local out="$KL_TMP/members.$1.diff"
	diff <(psql -X -A -t -q -d "$1" -c "$members") <(psql -X -A -t -q -d "$2" -c "$members") >"$out"
	ok "[ ! -s '$out' ]" "$3"
	[ -s "$out" ] && diag "$(cat "$out")"
	return 0
}
