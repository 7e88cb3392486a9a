#!/usr/bin/env bash
# test/t/31_memory.sh: memory is bounded by the batch, not by the topic.  A 1,000,000-record topic
# (about 330 MB of values) lands in ten calls of one backend with small batches; the backend's
# private memory stays flat from call to call and far below the topic's size.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 4
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }

q -c "SELECT kl_test.broker('create mem.t 100')" >/dev/null
q -c "SELECT kl_test.server('m_srv')" -c "SELECT kafka_lake.create_source('m_src', 'm_srv', 'mem.t')" >/dev/null
q -c "SELECT kl_test.fill('mem.t', 1000000, 100)" >/dev/null

# one session: ten calls, the private memory (RssAnon, kB) after each
rss=$(q -c "SET kafka_lake.batch_max_bytes = '8MB'" -c "SET kafka_lake.batch_max_records = 20000" \
	-c "CREATE TEMP TABLE rss (n int, landed bigint, kb bigint)" \
	-c "DO \$\$ BEGIN FOR i IN 1 .. 10 LOOP
	      INSERT INTO rss SELECT i, (SELECT sum(records) FROM kafka_lake.land('m_src', max_records => 100000)),
	        substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s+(\d+) kB')::bigint;
	      COMMIT;
	    END LOOP; END \$\$" \
	-c "SELECT string_agg(kb::text, ' ' ORDER BY n) || ' ' || sum(landed) FROM rss")
set -- $rss
diag "RssAnon after each call (kB): ${*:1:10}"
is "${11}" 1000000 "ten calls land the 1,000,000 records"
ok "[ $(( $5 + 16384 )) -ge ${10} ]" "memory after the 10th call (${10} kB) is within 16 MB of the 5th (${5} kB)"
max=$(printf '%s\n' "${@:1:10}" | sort -n | tail -1)
ok "[ $max -lt 131072 ]" "the backend never holds more than 128 MB ($max kB) for a 330 MB topic"
is "$(q -c "SELECT sum(lag) FROM kafka_lake.lag('m_src')")" 0 "nothing is left to land"
q -c "SELECT kafka_lake.drop_source('m_src', drop_landing => true)" >/dev/null
