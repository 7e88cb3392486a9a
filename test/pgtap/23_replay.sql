-- test/pgtap/23_replay.sql: replay reads an exact range, fills gaps, never commits (I6).
-- Needs the broker.
SELECT plan(14);
SELECT kl_test.broker('create replay.t 2');
SELECT kl_test.server('r_srv');
SELECT kafka_lake.create_source('r_src', 'r_srv', 'replay.t');
SELECT kafka_lake.produce('r_srv', 'replay.t', kl_test.event(format('evt-r-%s', n)), partition => 0)
FROM generate_series(0, 9) AS n;

SELECT results_eq($$SELECT status, records, committed_offset FROM kafka_lake.land('r_src', max_records => 3)$$,
                  $$VALUES ('landed', 3, 3::bigint)$$, 'land with max_records 3 stops after three records');

-- replay ahead of the committed offset: the range is not yet durable, so replay lands it
SELECT results_eq($$SELECT status, records, accepted, reused, first_offset, last_offset, committed_offset
                    FROM kafka_lake.replay('r_src', 0, 5, 8)$$,
                  $$VALUES ('landed', 4, 4, 0, 5::bigint, 8::bigint, 3::bigint)$$,
                  'replay of 5..8 lands the four records, and reports the group offset 3');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('r_src') WHERE partition = 0), 3::bigint,
          'replay did not commit');

-- replay over a mix: 2..6 holds durable (2, 5, 6) and new (3, 4) coordinates
SELECT results_eq($$SELECT status, records, accepted, reused FROM kafka_lake.replay('r_src', 0, 2, 6)$$,
                  $$VALUES ('landed', 5, 2, 3)$$,
                  'replay of 2..6 lands the gap 3..4 and reuses 2, 5 and 6');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('r_src') WHERE partition = 0), 3::bigint,
          'still no commit');

-- land now finds 3..8 durable and lands only 9
SELECT results_eq($$SELECT status, records, accepted, reused, first_offset, last_offset, committed_offset
                    FROM kafka_lake.land('r_src')$$,
                  $$VALUES ('landed', 7, 1, 6, 9::bigint, 9::bigint, 10::bigint),
                           ('empty', 0, 0, 0, NULL::bigint, NULL::bigint, 0::bigint)$$,
                  'land reuses what replay landed and lands only the rest; the empty partition gets offset 0');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'r_src'), 10::bigint,
          'every coordinate landed exactly once');
SELECT is((SELECT count(DISTINCT batch_id) FROM kafka_lake.coordinate_list WHERE source = 'r_src'), 4::bigint,
          'in four batches whose ranges never overlap');

-- the range must make sense
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('r_src', 0, 5, 2)$$, '22023', NULL, 'a reversed range is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('r_src', 0, -1, 2)$$, '22023', NULL, 'a negative offset is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('r_src', 0, 5, 10)$$, '22023', NULL,
                 'a range beyond the high watermark is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('r_src', 7, 0, 1)$$, '22023', NULL,
                 'a partition the topic does not have is refused');
SELECT is((SELECT count(*) FROM kafka_lake.replays r JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'r_src'), 2::bigint, 'each successful replay is recorded');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('r_src')$$, 'verify finds nothing wrong');
SELECT * FROM finish();
