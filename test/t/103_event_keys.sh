#!/usr/bin/env bash
# test/t/103_event_keys.sh: ordered event keys (1.13).  A new source keys its event_ids
# 'ordered' (sources.event_keys): its source_id, then the event_id packed when it is made of
# [-0-9A-Z_a-z], does not end in '-' and fits, else a hash.  Keys of time-ordered ids sort as
# the ids do; every key is distinct for distinct ids (ids that differ only by a trailing '-',
# by case, by one character, one past the packing's room, a UUID); two sources with the same
# event_ids accept both, each once; a source_id of two varint bytes packs one character less
# and hashes the longer ids; duplicates of the same event_id at later offsets are refused (I3)
# under each; recover() rebuilds the same keys; a source switched to 'hashed' before it holds
# anything keys by SHA-256 as 1.0 to 1.12 did, and one that has landed cannot change its
# scheme (55000).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 14
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_keys103
topic=keys103.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" "$@" >/dev/null 2>&1; }
# 400 events, then 100 of the same event_ids again (at later offsets), then 200 new ones
fill --partitions 2 --count 400 --start 1 --date 2026-06-28
fill --partitions 2 --count 100 --start 151 --date 2026-06-28
fill --partitions 2 --count 200 --start 401 --date 2026-06-28
q -d $db >/dev/null <<SQL
CREATE SERVER k103 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('k103a', 'k103', '$topic');
SELECT kafka_lake.create_source('k103b', 'k103', '$topic');
SELECT setval('kafka_lake.sources_source_id_seq', 300);
SELECT kafka_lake.create_source('k103c', 'k103', '$topic');
SELECT kafka_lake.create_source('k103h', 'k103', '$topic');
UPDATE kafka_lake.sources SET event_keys = 'hashed' WHERE source = 'k103h';
SQL

is "$(q -d $db -c "SELECT string_agg(source || ':' || event_keys, ' ' ORDER BY source) FROM kafka_lake.sources")" \
	"k103a:ordered k103b:ordered k103c:ordered k103h:hashed" "new sources key ordered (the one switched before landing: hashed)"

key() { echo "kafka_lake.event_key('$1', '$2')"; }
is "$(q -d $db -c "SELECT $(key k103a evt-20260628-000009) < $(key k103a evt-20260628-000010)
                    AND $(key k103a evt-20260628-000010) < $(key k103a evt-20260629-000001)
                    AND $(key k103a 1798375627366400001) < $(key k103a 1798375627366400002)")" \
	t "ordered keys of time-ordered ids sort as the ids do"
is "$(q -d $db -c "SELECT get_byte(uuid_send($(key k103a a)), 0) = s.source_id AND get_byte(uuid_send($(key k103c a)), 0) >> 6 = 2
                    FROM kafka_lake.sources s WHERE source = 'k103a'")" \
	t "the key begins with the source_id (one varint byte below 128, two from 128: 10 + 14 bits)"

# ids that differ by little; 20 characters fill the packing of a small source_id, 21 hash
ids="'a','a-','a--','a-b','ab','aB','A','_a','-a','0','00','z','zz','evt-20260628-000001','evt-20260628-0000010','evt-20260628-00000-1',
     'evt-2026062800000001','evt-202606280000001','x.y','x y','0b3c8f6e-2f0a-4c2e-9f51-6b8e7f1d2a40','é','abcdefghijklmnopqrst','abcdefghijklmnopqrstu'"
is "$(q -d $db -c "SELECT count(DISTINCT k) || ' ' || count(*) FROM (SELECT $(key k103a "' || i || '") AS k FROM unnest(ARRAY[$ids]) i
                    UNION ALL SELECT kafka_lake.event_key('k103c', i) FROM unnest(ARRAY[$ids]) i
                    UNION ALL SELECT kafka_lake.event_key('k103b', i) FROM unnest(ARRAY[$ids]) i) x")" \
	"72 72" "every key is distinct: distinct ids of one source, the same ids of other sources"
# generated ids: of 1 to 21 characters (either side of the packing's room), of the whole
# alphabet and of '-', '0' and 'a' alone (so that many differ only by trailing '-'s)
gen="SELECT DISTINCT (SELECT string_agg(substr(alpha, 1 + floor(random() * length(alpha))::int, 1), '' ORDER BY s)
                     FROM generate_series(1, 1 + (g % 21)) s) AS i
       FROM unnest(ARRAY['-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz', '-0a']) alpha, generate_series(1, 20000) g"
is "$(q -d $db -c "SELECT setseed(0.103)" -c "SELECT (count(DISTINCT kafka_lake.event_key('k103a', i)) = count(*))::text || ' ' ||
                    (count(DISTINCT kafka_lake.event_key('k103c', i)) = count(*))::text || ' ' || (count(*) > 30000)::text FROM ($gen) x" | tail -1)" \
	"true true true" "over 30,000 generated ids, each source gives as many keys as ids"
hashed() { q -d $db -c "SELECT string_agg((get_byte(uuid_send(kafka_lake.event_key('$1', i)), 0) >> 4 = 15)::int::text, '' ORDER BY n)
                        FROM unnest(ARRAY['abcdefghijklmnopqrst', 'abcdefghijklmnopqr', 'a-', 'x.y', 'a', 'abcdefghijklmnopqrstu']) WITH ORDINALITY u(i, n)"; }
is "$(hashed k103a) $(hashed k103c)" "001101 101101" \
	"20 characters pack after a one-byte source prefix, 18 after a two-byte one; 21, a trailing '-' or another character hash (key 1111...)"
is "$(q -d $db -c "SELECT $(key k103h evt-1) = encode(substring(sha256(int4send(source_id) || convert_to('evt-1', 'UTF8')) FROM 1 FOR 16), 'hex')::uuid
                    FROM kafka_lake.sources WHERE source = 'k103h'")" t "a hashed source's key is SHA-256's, as 1.0 to 1.12 made it"

q -d $db -c "SELECT sum(records) FROM kafka_lake.land('k103a')" -c "SELECT sum(records) FROM kafka_lake.land('k103b')" \
	-c "SELECT sum(records) FROM kafka_lake.land('k103c')" -c "SELECT sum(records) FROM kafka_lake.land('k103h')" >/dev/null
counts() { q -d $db -c "SELECT string_agg(s.source || ':' || (SELECT count(*) FROM kafka_lake.accepted_events a WHERE a.source_id = s.source_id)
                        || '/' || (SELECT count(*) FILTER (WHERE status = 'duplicate_event_id') FROM kafka_lake.coordinate_list c WHERE c.source = s.source),
                        ' ' ORDER BY s.source) FROM kafka_lake.sources s"; }
is "$(counts)" "k103a:600/100 k103b:600/100 k103c:600/100 k103h:600/100" \
	"each source accepts the 600 distinct event_ids once and refuses the 100 sent again (I3), under either scheme"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.k103a_records WHERE status = 'accepted'") $(q -d $db -c "SELECT count(DISTINCT event_id) FROM kafka_lake.k103a_records WHERE status = 'accepted'")" \
	"600 600" "the foreign table shows each event_id accepted once"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
                    JOIN kafka_lake.coordinate_list c ON c.source = s.source AND c.partition = a.partition AND c.\"offset\" = a.\"offset\"
                    JOIN kafka_lake.k103a_records r ON s.source = 'k103a' AND r.partition = a.partition AND r.\"offset\" = a.\"offset\"
                    WHERE a.event_key = kafka_lake.event_key('k103a', r.event_id)")" 600 \
	"event_key() gives the key the landing stored for each accepted record"

keys() { q -d $db -c "SELECT md5(string_agg(event_key::text || partition || ':' || \"offset\", ',' ORDER BY event_key)) FROM kafka_lake.accepted_events a
                      JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$1'"; }
before_a=$(keys k103a); before_c=$(keys k103c)
# the catalog loses the two sources' batches and event_ids: recover() adopts the batches again
q -d $db -c "DELETE FROM kafka_lake.batches WHERE source_id IN (SELECT source_id FROM kafka_lake.sources WHERE source IN ('k103a', 'k103c'))" \
	-c "DELETE FROM kafka_lake.accepted_events WHERE source_id IN (SELECT source_id FROM kafka_lake.sources WHERE source IN ('k103a', 'k103c'))" \
	-c "SELECT * FROM kafka_lake.recover('k103a')" -c "SELECT * FROM kafka_lake.recover('k103c')" >/dev/null
is "$(keys k103a) $(keys k103c)" "$before_a $before_c" "recover() rebuilds the same ordered keys from the landing"

fill --partitions 2 --count 50 --start 580 --date 2026-06-28
is "$(q -d $db -c "SELECT sum(accepted) || ' ' || sum(duplicates) FROM kafka_lake.land('k103c')")" "29 21" \
	"after recover(), ids landed before are still refused and new ones accepted"
is "$(q -d $db -c "\\set VERBOSITY verbose" -c "SELECT kafka_lake.create_source('k103z', 'k103', '$topic')" -c "UPDATE kafka_lake.sources SET event_keys = 'other' WHERE source = 'k103z'" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" \
	23514 "sources.event_keys is 'hashed' or 'ordered'"
is "$(q -d $db -c "\\set VERBOSITY verbose" -c "UPDATE kafka_lake.sources SET event_keys = 'hashed' WHERE source = 'k103a'" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): \(.*\)/\1 \2/p')
$(q -d $db -c "SELECT event_keys FROM kafka_lake.sources WHERE source = 'k103a'")" \
	"55000 source \"k103a\" keeps its event_keys ordered
ordered" "a source that has landed keeps its scheme: changing event_keys is refused (55000)"

q -d postgres -c "DROP DATABASE $db" >/dev/null
