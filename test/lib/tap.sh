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
_extra_clusters=()
_stop_extra_clusters() {
	for d in "${_extra_clusters[@]}"; do
		(cd / && runuser -u postgres -- "$_pg_bin/pg_ctl" -D "$d/data" -m immediate -w stop) >/dev/null 2>&1 || true
		rm -rf "$d"
	done
}
trap '_stop_extra_clusters; exit $(( _tap_failed > 0 ))' EXIT
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

# extra_cluster NAME: a throwaway cluster of the test's own beside the harness's, as a second
# server (initdb as postgres, kafka_lake preloaded, a socket in $KL_TMP/pg.NAME, the harness's
# port number; not in a subshell, which would forget it).  Stopped and removed when the test ends.
_pg_bin=$(dirname "$(command -v pg_ctl)")
extra_cluster() {
	local dir=$KL_TMP/pg.$1
	rm -rf "$dir" && mkdir -p "$dir" && chown postgres: "$dir"
	(cd / && runuser -u postgres -- "$_pg_bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync) >/dev/null
	cat >>"$dir/data/postgresql.conf" <<-EOF
		port = $PGPORT
		listen_addresses = ''
		unix_socket_directories = '$dir'
		shared_preload_libraries = 'kafka_lake'
		lc_messages = 'C'
	EOF
	(cd / && runuser -u postgres -- "$_pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start) >/dev/null
	_extra_clusters+=("$dir")
}
# extra_cluster_stop NAME / extra_cluster_start NAME: a server down (stopped as by a crash), and up again
extra_cluster_stop() { (cd / && runuser -u postgres -- "$_pg_bin/pg_ctl" -D "$KL_TMP/pg.$1/data" -m immediate -w stop) >/dev/null; }
extra_cluster_start() { (cd / && runuser -u postgres -- "$_pg_bin/pg_ctl" -D "$KL_TMP/pg.$1/data" -l "$KL_TMP/pg.$1/server.log" -w -t 60 start) >/dev/null; }

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
