#!/usr/bin/env bash
# test/t/100_partition_owners.sh: one topic landed by two servers, each owning some of its
# partitions (create_source(..., partitions => ...), set_partitions).  Two databases of the test
# cluster stand for the two servers (each has its own catalog, landing and consumer), a third
# lands the whole topic alone.  Both shards give their sources the same consumer group.
# Checked: each shard lands, lags and certifies its own partitions only, and the two together
# land every record of the topic exactly once, with the gold a single server publishes (summed
# per line); a partition moved from one shard to the other at a date boundary (set_partitions on
# both) is landed once, the new owner starting where the old one stopped; two shards that claim
# one partition are caught by the group's offset (55000, the hint naming the ownership) and
# nothing is landed twice.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 17
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=owners100.events
group=kafka_lake.shards100.events
a=kl_own100_a
b=kl_own100_b
one=kl_own100_one

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 4 >/dev/null
fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 4 "$@" >/dev/null 2>&1; }
for d in $a $b $one; do
	q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $d" -c "CREATE DATABASE $d" >/dev/null
	q -d $d -c "CREATE EXTENSION kafka_lake CASCADE" \
		-c "CREATE SERVER own100 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" >/dev/null 2>&1
done
q -d $a -c "SELECT kafka_lake.create_source('own100_a', 'own100', '$topic', group_id => '$group', partitions => '{1,0}')" >/dev/null
q -d $b -c "SELECT kafka_lake.create_source('own100_b', 'own100', '$topic', group_id => '$group', partitions => '{2,3}')" >/dev/null
q -d $one -c "SELECT kafka_lake.create_source('own100_one', 'own100', '$topic')" >/dev/null

# every event_id a shard holds, as a sorted list, and the records each partition landed there
ids() { q -d "$1" -c "SELECT event_id FROM kafka_lake.${2}_events ORDER BY 1"; }
landed() { q -d "$1" -c "SELECT string_agg(partition || ':' || n || '@' || lo, ',' ORDER BY partition)
                          FROM (SELECT partition, count(*) n, min(\"offset\") lo FROM kafka_lake.${2}_records GROUP BY 1) r"; }
once() { sort "$@" | uniq -d | wc -l; }

fill --count 400 --start 1 --date 2026-08-04
is "$(q -d $a -c "SELECT string_agg(partition || ':' || status, ',' ORDER BY partition) FROM kafka_lake.land('own100_a')")" \
	"0:landed,1:landed" "shard A lands its partitions 0 and 1, and only those"
is "$(q -d $b -c "SELECT string_agg(partition || ':' || status, ',' ORDER BY partition) FROM kafka_lake.land('own100_b')")" \
	"2:landed,3:landed" "shard B lands 2 and 3"
q -d $one -c "SELECT * FROM kafka_lake.land('own100_one')" >/dev/null
is "$(q -d $a -c "SELECT s.partitions::text || ' ' || (SELECT string_agg(partition::text, ',' ORDER BY partition) FROM kafka_lake.lag('own100_a'))
                  || ' ' || (SELECT string_agg(partition || ':' || owned, ',' ORDER BY partition) FROM kafka_lake.source_status WHERE source = 'own100_a')
                   FROM kafka_lake.sources s WHERE source = 'own100_a'")" \
	"{0,1} 0,1 0:true,1:true" "shard A stores its partitions ascending; lag() and source_status answer for them"
ids $a own100_a > "$KL_TMP/own100.a1"; ids $b own100_b > "$KL_TMP/own100.b1"; ids $one own100_one > "$KL_TMP/own100.one1"
is "$(cat "$KL_TMP/own100.a1" "$KL_TMP/own100.b1" | sort | md5sum) $(once "$KL_TMP/own100.a1" "$KL_TMP/own100.b1")" \
	"$(md5sum < "$KL_TMP/own100.one1") 0" "the two shards hold every event the single server holds, each once"

gold() { q -d "$1" -c "SELECT concat_ws('/', plant_id, line_id, product_code) || ':' || units_produced || ':' || defect_count FROM kafka_lake.gold_current
                        WHERE source = '$2' AND business_date = '$3'"; }
sum_gold() { awk -F: '{u[$1] += $2; n[$1] += $3} END {for (l in u) print l ":" u[l] ":" n[l]}' | sort; }
is "$(q -d $a -c "SELECT status || ' ' || partitions FROM kafka_lake.close_date('own100_a', '2026-08-04')")
$(q -d $a -c "SELECT string_agg(partition || '<' || through_offset, ',' ORDER BY partition) FROM kafka_lake.date_closing_partitions")" \
	"closed 4
0<100,1<100,2<0,3<0" "shard A closes the date: its partitions certified through what landed, the others through nothing"
q -d $b -c "SELECT * FROM kafka_lake.close_date('own100_b', '2026-08-04')" >/dev/null
q -d $one -c "SELECT * FROM kafka_lake.close_date('own100_one', '2026-08-04')" >/dev/null
ok "[ \"\$(gold $one own100_one 2026-08-04 | wc -l)\" -gt 1 ]" "the single server publishes a gold of several rows for the date"
is "$( { gold $a own100_a 2026-08-04; gold $b own100_b 2026-08-04; } | sum_gold)" \
	"$(gold $one own100_one 2026-08-04 | sort)" "the shards' gold, units and defects summed per line and product, is the single server's"

# partition 1 moves from A to B at the date boundary
fill --count 400 --start 1001 --date 2026-08-05
q -d $a -c "SELECT * FROM kafka_lake.land('own100_a')" >/dev/null
q -d $a -c "SELECT kafka_lake.set_partitions('own100_a', '{0}')" >/dev/null
q -d $b -c "SELECT kafka_lake.set_partitions('own100_b', '{1,2,3}')" >/dev/null
fill --count 400 --start 2001 --date 2026-08-06
is "$(q -d $b -c "SELECT string_agg(partition || ':' || status, ',' ORDER BY partition) FROM kafka_lake.land('own100_b')" 2>"$KL_TMP/own100.notice")" \
	"1:adopted,1:landed,2:landed,3:landed" "shard B takes partition 1 over: it starts at the group's offset (adopted), then lands"
like "$(cat "$KL_TMP/own100.notice")" "group" "and says where it started"
is "$(q -d $a -c "SELECT string_agg(partition || ':' || status, ',' ORDER BY partition) FROM kafka_lake.land('own100_a')")" \
	"0:landed" "shard A lands partition 0 alone"
is "$(landed $b own100_b | tr ',' '\n' | grep '^1:')" "1:100@200" \
	"shard B holds partition 1 from offset 200, where A stopped: the 100 records of 2026-08-06"
is "$(q -d $a -c "SELECT string_agg(partition || ':' || owned, ',' ORDER BY partition) FROM kafka_lake.source_status WHERE source = 'own100_a'")" \
	"0:true,1:false" "source_status on A: partition 1 keeps its row, not owned"
q -d $one -c "SELECT * FROM kafka_lake.land('own100_one')" >/dev/null
ids $a own100_a > "$KL_TMP/own100.a2"; ids $b own100_b > "$KL_TMP/own100.b2"; ids $one own100_one > "$KL_TMP/own100.one2"
is "$(cat "$KL_TMP/own100.a2" "$KL_TMP/own100.b2" | sort | md5sum) $(once "$KL_TMP/own100.a2" "$KL_TMP/own100.b2")" \
	"$(md5sum < "$KL_TMP/own100.one2") 0" "after the move the shards still hold every event once"
is "$(q -d $a -c "SELECT status FROM kafka_lake.close_date('own100_a', '2026-08-05')")$(q -d $b -c "SELECT status FROM kafka_lake.close_date('own100_b', '2026-08-06')")" \
	"closedclosed" "each shard closes its dates after the move"

# both claim partition 1: the group's offset catches the second
q -d $a -c "SELECT kafka_lake.set_partitions('own100_a', '{0,1}')" >/dev/null
fill --count 400 --start 3001 --date 2026-08-07
q -d $b -c "SELECT * FROM kafka_lake.land('own100_b')" >/dev/null
err=$(q -d $a -v VERBOSITY=verbose -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.land('own100_a')" 2>&1 >/dev/null)
like "$err" "55000" "shard A, claiming partition 1 again, is refused (55000)"
like "$err" "owns partitions {0,1}: another server that lands this topic with the same group may own partition 1 too" \
	"the hint names the likely cause"
ids $a own100_a > "$KL_TMP/own100.a3"; ids $b own100_b > "$KL_TMP/own100.b3"
is "$(once "$KL_TMP/own100.a3" "$KL_TMP/own100.b3")" 0 "nothing was landed twice"

for d in $a $b $one; do q -d postgres -c "DROP DATABASE $d" >/dev/null; done
