#!/usr/bin/env bash
# test/t/36_secret_log.sh: with kafka_lake in shared_preload_libraries (as in the test
# cluster), no secret of a kafka_lake option reaches the server log, whatever PostgreSQL
# logs: statements (log_statement = 'all', log_min_duration_statement = 0), the STATEMENT
# line of a statement that fails (in kafka_lake's validator, or in PostgreSQL before it:
# a duplicate mapping, a syntax error), secrets written in any SQL string syntax, and SQL
# held in a string.  The statements are still logged, with each secret value replaced by
# ********.  Needs no broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 14
export PGOPTIONS="-c log_statement=all -c log_min_duration_statement=0 -c log_min_error_statement=error"
q() { psql -X -A -t -q -d kl_test "$@" 2>&1; }
log_from=$(($(stat -c %s "$KL_SERVER_LOG") + 1))
logged() { tail -c +"$log_from" "$KL_SERVER_LOG"; }

ok "[[ \"\$(q -c 'SHOW shared_preload_libraries')\" == *kafka_lake* ]]" "kafka_lake is preloaded"

q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE SERVER log36 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');
CREATE USER MAPPING FOR CURRENT_USER SERVER log36
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'kl36-create');
ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET "sasl.password" 'kl36-alter');
ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (ADD "ssl.key.password" E'kl36-e\'scaped',
  ADD "ssl.keystore.password" $$kl36-dollar$$);
ALTER USER MAPPING FOR CURRENT_USER SERVER log36
  OPTIONS (ADD "schema.registry.basic.auth.user.info" 'kl36-reguser:kl36-regpass');
ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET "sasl.password" /* a comment */
  $tag$kl36-tagged'$tag$, SET "ssl.key.password" 'kl36-doubled''quote');
SQL
# logged by log_min_duration_statement alone (with log_statement the duration line omits it)
PGOPTIONS="-c log_min_duration_statement=0" q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET \"sasl.password\" 'kl36-duration')" >/dev/null
# refused by kafka_lake's validator
q -c "CREATE SERVER log36_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', \"sasl.password\" 'kl36-server')" >/dev/null
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (ADD \"sasl.password.typo\" 'kl36-unknown')" >/dev/null
q -c "CREATE SERVER log36_reg FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', \"schema.registry.basic.auth.user.info\" 'kl36-reg-on-server:pw')" >/dev/null
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET \"schema.registry.basic.auth.user.info\" 'kl36-no-colon')" >/dev/null
q -c "CREATE SERVER log36_url FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', \"schema.registry.url\" 'http://kl36-urluser:kl36-urlpass@127.0.0.1:9/')" >/dev/null
# refused by PostgreSQL before kafka_lake sees it
q -c "CREATE USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (\"sasl.password\" 'kl36-duplicate')" >/dev/null
q -c "CREATE USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (\"sasl.password\" 'kl36-syntax'" >/dev/null
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET sasl.password 'kl36-bare')" >/dev/null
q -c "ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET \"SASL.Password\" 'kl36-case')" >/dev/null
# SQL held in a string, run by a function (the top-level statement holds the secret)
q -c "DO \$do\$ BEGIN EXECUTE 'ALTER USER MAPPING FOR CURRENT_USER SERVER log36 OPTIONS (SET \"sasl.password\" ''kl36-in-string'')'; END \$do\$" >/dev/null
q -c "SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'kl36-nosuch' AND 1/0 = 1" >/dev/null
q -c "SELECT password_hash FROM log36_no_such_table" >/dev/null

has() { logged | grep -qF -- "$1"; }
mask='********'
ok "has 'statement: CREATE USER MAPPING FOR CURRENT_USER SERVER log36'" "log_statement wrote the statements to the log"
ok "logged | grep -q 'duration: .* statement: ALTER USER MAPPING'" "log_min_duration_statement too"
ok "has 'STATEMENT:  CREATE USER MAPPING'" "the STATEMENT line of a failed statement too"
is "$(logged | grep -c 'kl36-')" "$(logged | grep -c 'kl36-nosuch')" "no secret value is in the log"
ok "has \"\\\"sasl.password\\\" '$mask'\"" "a secret value is logged as ********"
ok "has \"E'$mask'\"" "in an E'' string too"
ok "has \"\\\"schema.registry.basic.auth.user.info\\\" '$mask'\"" "the Schema Registry's user info is logged as ******** too"
ok "has '\$tag\$$mask\$tag\$'" "in a dollar-quoted string too"
ok "has \"OPTIONS (SET sasl.password $mask)\" || has \"OPTIONS (SET sasl.password '$mask')\"" \
	"after a name PostgreSQL cannot parse too"
ok "has \"''$mask''\"" "in SQL held in a string too"
ok "has \"relname = 'kl36-nosuch'\"" "other string constants are left as they are"
ok "has 'STATEMENT:  SELECT password_hash FROM log36_no_such_table'" "and so are other statements"

q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DROP USER MAPPING FOR CURRENT_USER SERVER log36;
DROP SERVER log36;
SQL
ok "[ -z \"\$(q -c \"SELECT 1 FROM pg_user_mappings WHERE srvname = 'log36'\")\" ]" "cleaned up"
