# test/lib/env.sh -- shared by test/run, tools/demo and bench/run.
#
# Sets up everything kafka_lake needs on a Debian 12 machine, as root:
# the Debian packages, the extension (built and installed), a throwaway
# PostgreSQL 15 cluster owned by the postgres user in a temporary directory
# on a free port (pg_cron and kafka_lake preloaded: kafka_lake keeps secrets
# out of the server log only when it is loaded at server start), and the test
# broker (librdkafka's mock cluster on 127.0.0.1, test/broker/kafka_lake_broker), and for
# test/run and bench/run the Schema Registry test peer (test/registry/registry.py).  kl_cleanup stops
# them all and removes the directory; callers install it as an EXIT/INT/TERM
# trap before starting anything.
#
# After kl_start_cluster and kl_start_broker these are exported:
#   PGHOST PGPORT PGUSER PGDATABASE   the cluster (socket directory, port)
#   KL_SERVER_LOG                     the cluster's log file
#   KL_BOOTSTRAP                      the broker's bootstrap address
#   KL_BROKER KL_BROKER_DIR           the broker program and its --dir,
#                                     for "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" ...
# and after kl_start_registry:
#   KL_REGISTRY_URL                   the registry peer's base URL (http://127.0.0.1:port)
#   KL_REGISTRY_CTL                   its control endpoint (POST {"mode": ...}, GET: state)
#   KL_REGISTRY KL_REGISTRY_DIR       the peer program and its --dir,
#                                     for python3 "$KL_REGISTRY" ctl --dir "$KL_REGISTRY_DIR" '{"mode": "down"}'

KL_ROOT=${KL_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KL_PG_BIN=${KL_PG_BIN:-/usr/lib/postgresql/15/bin}
export PG_CONFIG=$KL_PG_BIN/pg_config
KL_PACKAGES=(build-essential postgresql-15 postgresql-server-dev-15 librdkafka-dev libssl-dev
	libicu-dev postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl postgresql-15-cron kcat
	python3 libcurl4-openssl-dev libzstd-dev zstd jq)

kl_log() { printf '== %s\n' "$*" >&2; }

# kl_as_postgres command...: run a command as the postgres user, from a
# directory it can enter (the clone may live where postgres cannot go).
kl_as_postgres() {
	(cd "${KL_TMP:-/}" && runuser -u postgres -- "$@")
}

# kl_install_packages: install the Debian packages that are missing.
kl_install_packages() {
	local missing=()
	for p in "${KL_PACKAGES[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" != 0 ]; then
			kl_log "missing packages: ${missing[*]} (run as root to install them)"
			return 1
		fi
		kl_log "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

# kl_build_install: build the extension and the test broker, install the extension.
kl_build_install() {
	kl_log "building and installing kafka_lake"
	make -C "$KL_ROOT" -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null
	make -C "$KL_ROOT" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
	KL_BROKER=$KL_ROOT/test/broker/kafka_lake_broker
	export KL_BROKER
}

# kl_avro_fixtures: test 29b decodes test/fixtures/avro/cases.jsonl (and test
# 29e lands test/fixtures/avro/orders.jsonl, which test/avro/encode.js writes), which
# test/avro/generate.js writes with avsc (npm), an independent Avro
# implementation.  When node and npm are there, install avsc if it is
# missing (into test/avro/node_modules, never committed) and check that the
# committed fixtures are what avsc makes; without node the committed
# fixtures are used as they are.  Returns 1 when they differ.
kl_avro_fixtures() {
	local dir=$KL_ROOT/test/avro
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		kl_log "node/npm not found: test 29b uses the committed Avro fixtures"
		return 0
	fi
	if [ ! -d "$dir/node_modules/avsc" ]; then
		kl_log "installing avsc (npm) in test/avro"
		(cd "$dir" && npm install --no-audit --no-fund --silent >/dev/null) ||
			{ kl_log "npm install failed: test 29b uses the committed Avro fixtures"; return 0; }
	fi
	node "$dir/generate.js" --check >&2 && node "$dir/encode.js" --check >&2
}

# kl_free_port: a TCP port nobody listens on, from 55000 up.
kl_free_port() {
	local p
	for p in $(seq "${1:-55000}" 59999); do
		if ! (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

# kl_start_cluster: initdb and start a throwaway cluster as postgres.
kl_start_cluster() {
	KL_TMP=$(mktemp -d /tmp/kafka_lake.XXXXXX)
	chmod 755 "$KL_TMP"
	chown postgres: "$KL_TMP"
	mkdir -p "$KL_TMP/pg"
	chown postgres: "$KL_TMP/pg"
	PGPORT=$(kl_free_port 55432)
	kl_log "starting PostgreSQL 15 in $KL_TMP/pg on port $PGPORT"
	kl_as_postgres "$KL_PG_BIN/initdb" -D "$KL_TMP/pg/data" -A trust -U postgres \
		--no-sync >/dev/null
	cat >>"$KL_TMP/pg/data/postgresql.conf" <<-EOF
		port = $PGPORT
		listen_addresses = ''
		unix_socket_directories = '$KL_TMP/pg'
		shared_preload_libraries = 'pg_cron,kafka_lake'
		cron.database_name = '${KL_CRON_DB:-kl_test}'
		cron.use_background_workers = on
		max_worker_processes = 16
		max_prepared_transactions = 4
		log_line_prefix = '%m [%p] '
		lc_messages = 'C'
	EOF
	KL_SERVER_LOG=$KL_TMP/pg/server.log
	kl_as_postgres "$KL_PG_BIN/pg_ctl" -D "$KL_TMP/pg/data" -l "$KL_SERVER_LOG" -w -t 60 start >/dev/null
	export PGHOST=$KL_TMP/pg PGPORT PGUSER=postgres KL_SERVER_LOG KL_TMP
	export PATH=$KL_PG_BIN:$PATH
}

# kl_start_broker [topic:partitions ...]: start the test broker.
kl_start_broker() {
	KL_BROKER_DIR=$KL_TMP/broker
	mkdir -p "$KL_BROKER_DIR" "$KL_TMP/bin"
	chown postgres: "$KL_BROKER_DIR"
	# a copy the postgres user can run, wherever the clone lives
	install -m 755 "$KL_BROKER" "$KL_TMP/bin/kafka_lake_broker"
	KL_BROKER=$KL_TMP/bin/kafka_lake_broker
	local args=()
	for t in "$@"; do args+=(--topic "$t"); done
	kl_log "starting the test broker (librdkafka mock cluster) in $KL_BROKER_DIR"
	# as postgres, so that tests can drive it from SQL (COPY ... FROM PROGRAM)
	kl_as_postgres "$KL_BROKER" serve --dir "$KL_BROKER_DIR" "${args[@]}" \
		>"$KL_BROKER_DIR/out.log" 2>&1 &
	KL_BROKER_PID=$!
	for _ in $(seq 100); do
		[ -s "$KL_BROKER_DIR/bootstrap" ] && break
		sleep 0.1
	done
	[ -s "$KL_BROKER_DIR/bootstrap" ] || { cat "$KL_BROKER_DIR/out.log" >&2; return 1; }
	KL_BOOTSTRAP=$(cat "$KL_BROKER_DIR/bootstrap")
	export KL_BROKER KL_BROKER_DIR KL_BOOTSTRAP KL_BROKER_PID
}

# kl_start_registry [--prefix /p ...]: start the Schema Registry test peer
# (test/registry/registry.py) on a free port of 127.0.0.1, as postgres.
kl_start_registry() {
	KL_REGISTRY_DIR=$KL_TMP/registry
	mkdir -p "$KL_REGISTRY_DIR" "$KL_TMP/bin"
	chown postgres: "$KL_REGISTRY_DIR"
	install -m 755 "$KL_ROOT/test/registry/registry.py" "$KL_TMP/bin/kafka_lake_registry.py"
	KL_REGISTRY=$KL_TMP/bin/kafka_lake_registry.py
	kl_log "starting the Schema Registry test peer in $KL_REGISTRY_DIR"
	kl_as_postgres python3 "$KL_REGISTRY" serve --dir "$KL_REGISTRY_DIR" "$@" \
		>"$KL_REGISTRY_DIR/out.log" 2>&1 &
	KL_REGISTRY_PID=$!
	for _ in $(seq 100); do
		[ -s "$KL_REGISTRY_DIR/url" ] && break
		sleep 0.1
	done
	[ -s "$KL_REGISTRY_DIR/url" ] || { cat "$KL_REGISTRY_DIR/out.log" >&2; return 1; }
	KL_REGISTRY_URL=$(cat "$KL_REGISTRY_DIR/url")
	KL_REGISTRY_CTL=$(cat "$KL_REGISTRY_DIR/ctl")
	export KL_REGISTRY KL_REGISTRY_DIR KL_REGISTRY_URL KL_REGISTRY_CTL KL_REGISTRY_PID
}

# kl_node_deps DIR PACKAGE...: the npm packages of test/DIR, installed into its
# node_modules with its package-lock.json when one of them is missing (node and
# npm from Debian if absent); non-zero when that fails.
kl_node_deps() {
	local dir=$KL_ROOT/test/$1 missing=
	shift
	for p in "$@"; do [ -d "$dir/node_modules/$p" ] || missing=1; done
	[ -z "$missing" ] && return 0
	if ! command -v npm >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || return 1
		kl_log "installing nodejs npm"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null || return 1
	fi
	kl_log "npm install in test/${dir##*/test/}"
	(cd "$dir" && npm install --no-audit --no-fund --silent >/dev/null 2>&1)
}

# kl_registry_node_deps: an independent Schema Registry client (Confluent's),
# for test/t/29d_registry_client.sh.
kl_registry_node_deps() { kl_node_deps registry @confluentinc/schemaregistry; }

# kl_parquet_node_deps: two independent Parquet readers, DuckDB and hyparquet,
# for checking exported files (test/parquet).
kl_parquet_node_deps() { kl_node_deps parquet @duckdb/node-api hyparquet hyparquet-compressors; }

# kl_cleanup: stop everything, on every exit path.
kl_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "${KL_TMP:-}" ] && [ -d "$KL_TMP/pg/data" ]; then
		kl_as_postgres "$KL_PG_BIN/pg_ctl" -D "$KL_TMP/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	# private brokers started by tests (kl_test.private_broker)
	for d in "${KL_BROKER_DIR:-/nonexistent}".*; do
		[ -S "$d/control.sock" ] && "$KL_BROKER" ctl --dir "$d" shutdown >/dev/null 2>&1
	done
	if [ -n "${KL_BROKER_PID:-}" ]; then
		"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" shutdown >/dev/null 2>&1 || kill "$KL_BROKER_PID" 2>/dev/null || true
		wait "$KL_BROKER_PID" 2>/dev/null || true
	fi
	if [ -n "${KL_REGISTRY_PID:-}" ]; then
		python3 "$KL_REGISTRY" ctl --dir "$KL_REGISTRY_DIR" shutdown >/dev/null 2>&1 ||
			kill "$KL_REGISTRY_PID" 2>/dev/null || true
		wait "$KL_REGISTRY_PID" 2>/dev/null || true
	fi
	if [ -n "${KL_TMP:-}" ] && [ -z "${KL_KEEP:-}" ]; then
		rm -rf "$KL_TMP"
	fi
	return $rc
}

# kl_psql: psql on the throwaway cluster, stopping at the first error.
kl_psql() {
	psql -X -q -v ON_ERROR_STOP=1 "$@"
}
