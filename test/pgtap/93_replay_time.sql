-- test/pgtap/93_replay_time.sql: replay(source, from_time => ..., to_time => ...) lands exactly
-- the records whose timestamps lie in [from_time, to_time), in every partition (or the one
-- given), through the broker's offsets for those times (the test broker keeps no time index:
-- kafka_lake then searches by reading records); it never commits; it is recorded in
-- kafka_lake.replays; calls of replay() by offsets, positional and named, resolve as before.
-- Needs the broker.
SET client_min_messages = warning;
SELECT plan(17);

\o /dev/null
SELECT kl_test.broker('create rt93.t 2');
SELECT kl_test.server('rt93_kafka');
SELECT kafka_lake.create_source('rt93', 'rt93_kafka', 'rt93.t');
-- three groups of records, produced one after the other, with a moment between them
SELECT kafka_lake.produce('rt93_kafka', 'rt93.t', kl_test.event('evt-rt93-a' || n), partition => n % 2)
  FROM generate_series(1, 5) n;
SELECT pg_sleep(0.05);
\o
SELECT clock_timestamp() AS t1 \gset
\o /dev/null
SELECT pg_sleep(0.05);
SELECT kafka_lake.produce('rt93_kafka', 'rt93.t', kl_test.event('evt-rt93-b' || n), partition => n % 2)
  FROM generate_series(1, 7) n;
SELECT pg_sleep(0.05);
\o
SELECT clock_timestamp() AS t2 \gset
\o /dev/null
SELECT pg_sleep(0.05);
SELECT kafka_lake.produce('rt93_kafka', 'rt93.t', kl_test.event('evt-rt93-c' || n), partition => n % 2)
  FROM generate_series(1, 4) n;
\o

SELECT results_eq(format($$SELECT partition, status, records, accepted, committed_offset
                           FROM kafka_lake.replay('rt93', from_time => %L, to_time => %L) ORDER BY 1$$, :'t1', :'t2'),
                  $$VALUES (0, 'landed', 3, 3, NULL::bigint), (1, 'landed', 4, 4, NULL)$$,
                  'replay by time lands the records of the window in each partition');
SELECT set_eq($$SELECT event_id FROM kafka_lake.rt93_records$$,
              $$SELECT 'evt-rt93-b' || n FROM generate_series(1, 7) n$$,
              'exactly the records produced between the two times');
SELECT results_eq($$SELECT partition, min("offset"), max("offset") FROM kafka_lake.rt93_records GROUP BY 1 ORDER BY 1$$,
                  $$VALUES (0, 2::bigint, 4::bigint), (1, 3::bigint, 6::bigint)$$,
                  'at the offsets between the first and the last group');
SELECT results_eq($$SELECT partition, committed_offset FROM kafka_lake.lag('rt93') ORDER BY 1$$,
                  $$VALUES (0, NULL::bigint), (1, NULL::bigint)$$, 'and it committed nothing');
SELECT results_eq($$SELECT partition, from_offset, to_offset, records, landed, reused FROM kafka_lake.replays r
                    JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'rt93' ORDER BY 1$$,
                  $$VALUES (0, 2::bigint, 4::bigint, 3, 3, 0), (1, 3::bigint, 6::bigint, 4, 4, 0)$$,
                  'each partition is recorded in kafka_lake.replays with its offsets');
SELECT results_eq(format($$SELECT partition, status, reused FROM kafka_lake.replay('rt93', from_time => %L, to_time => %L) ORDER BY 1$$,
                         :'t1', :'t2'),
                  $$VALUES (0, 'reused', 3), (1, 'reused', 4)$$, 'replayed again, the window is reused');
SELECT results_eq(format($$SELECT partition, status, records, first_offset, last_offset
                           FROM kafka_lake.replay('rt93', from_time => %L, to_time => now() + interval '1 hour', partition => 1)$$,
                         :'t2'),
                  $$VALUES (1, 'landed', 2, 7::bigint, 8::bigint)$$,
                  'partition => 1 replays that partition alone, up to the end');
SELECT results_eq($$SELECT partition, status FROM kafka_lake.replay('rt93', from_time => '2000-01-01', to_time => '2000-01-02') ORDER BY 1$$,
                  $$VALUES (0, 'empty'), (1, 'empty')$$, 'a window without records is empty in each partition');
SELECT results_eq($$SELECT status, count(*)::int, sum(records)::int FROM kafka_lake.land('rt93') GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('landed', 3, 16)$$,
                  'land() then lands the rest around the replayed windows, reusing them');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'rt93'), 16::bigint, 'every record once');

-- the form by offsets is unchanged, called positionally or by name
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('rt93', 0, 0, 1)$$,
                  $$VALUES ('reused', 2)$$, 'replay(source, partition, from_offset, to_offset) by position');
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay(source => 'rt93', partition => 1, from_offset => 0, to_offset => 2)$$,
                  $$VALUES ('reused', 3)$$, 'replay() by offsets with named arguments');
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('rt93', partition => 0, from_offset => 0, to_offset => 0, timeout => '10 s')$$,
                  $$VALUES ('reused', 1)$$, 'replay() by offsets with some names and a timeout');

-- refusals
SELECT throws_ok(format($$SELECT * FROM kafka_lake.replay('rt93', from_time => %L, to_time => %L)$$, :'t2', :'t1'),
                 '22023', 'to_time must be later than from_time', 'a reversed window is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('rt93', from_time => NULL, to_time => now())$$,
                 '22004', 'from_time must not be null', 'a NULL time is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('rt93', from_time => now() - interval '1 day', to_time => now(), partition => 5)$$,
                 '22023', 'partition 5 does not exist: topic "rt93.t" has 2 partitions', 'a partition the topic lacks is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('rt93', from_time => '-infinity', to_time => now())$$,
                 '22023', NULL, 'an infinite time is refused');
SELECT * FROM finish();
