-- test/pgtap/20_seed.sql: the seed scenario, steps 1 to 6, with its exact numbers.
-- Needs the broker.
SELECT plan(22);
SELECT kl_test.broker('create manufacturing.machine-events.v1 1');
SELECT kl_test.server('plant_kafka');
SELECT kafka_lake.create_source(source => 'machine_events', server => 'plant_kafka',
                                topic => 'manufacturing.machine-events.v1',
                                group_id => 'kafka-lake-machine-events',
                                contract => 'machine_event_v1');
SELECT kafka_lake.set_compression('machine_events', 'none');  -- plain JSONL: the test reads the files' bytes

-- step 1: three valid events; land: 3 accepted, committed offset 3
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          kl_test.event(format('evt-20260629-%s', lpad(n::text, 6, '0')),
                                        units => n * 10, defects => n - 1),
                          key => convert_to('machine-01', 'UTF8'))
FROM generate_series(1, 3) AS n;
SELECT results_eq($$SELECT status, records, accepted, duplicates, quarantined, reused,
                           first_offset, last_offset, committed_offset
                    FROM kafka_lake.land('machine_events')$$,
                  $$VALUES ('landed', 3, 3, 0, 0, 0, 0::bigint, 2::bigint, 3::bigint)$$,
                  'step 1: three events land as one batch, committed offset 3');

-- step 2: event 4; the landing fails after the batch is durable, before the commit
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          kl_test.event('evt-20260629-000004', units => 40, defects => 3),
                          key => convert_to('machine-01', 'UTF8'));
SET kafka_lake.fault_injection = 'after_landing_before_commit';
SELECT throws_ok($$SELECT * FROM kafka_lake.land('machine_events')$$, 'XX000',
                 'kafka_lake fault injection: after_landing_before_commit',
                 'step 2: the injected crash happens after the landing, before the commit');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('machine_events')
                                          || '/topic=manufacturing.machine-events.v1/partition=0')),
          2::bigint, 'step 2: the second batch is durable on disk');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('machine_events')), 3::bigint,
          'step 2: the group offset is still 3');

-- step 3: land again: the redelivered coordinate is reused, offset 4 committed
SELECT results_eq($$SELECT status, records, accepted, reused, committed_offset
                    FROM kafka_lake.land('machine_events')$$,
                  $$VALUES ('reused', 1, 0, 1, 4::bigint)$$,
                  'step 3: the redelivered record is reused, committed offset 4');
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'machine_events' AND b.landed_by = 'recover'),
          1::bigint, 'step 3: the durable batch was adopted from disk');

-- step 4: replay 0..3: four coordinates reused, the group offset untouched
SELECT results_eq($$SELECT status, records, reused, committed_offset
                    FROM kafka_lake.replay('machine_events', partition => 0, from_offset => 0, to_offset => 3)$$,
                  $$VALUES ('reused', 4, 4, 4::bigint)$$,
                  'step 4: replay of 0..3 finds four reused coordinates');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('machine_events')), 4::bigint,
          'step 4: replay left the group offset at 4');
SELECT is((SELECT count(*) FROM kafka_lake.replays r JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'machine_events' AND r.reused = 4 AND r.landed = 0),
          1::bigint, 'step 4: the replay is recorded');

-- step 5: an event that breaks the contract is quarantined, the offset advances
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          convert_to('{"event_id":"invalid-contract-event"}', 'UTF8'),
                          key => convert_to('machine-01', 'UTF8'));
SELECT results_eq($$SELECT status, records, accepted, quarantined, committed_offset
                    FROM kafka_lake.land('machine_events')$$,
                  $$VALUES ('landed', 1, 0, 1, 5::bigint)$$,
                  'step 5: the invalid event is quarantined, committed offset 5');

-- step 6: the totals
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'machine_events'),
          5::bigint, 'step 6: 5 coordinates');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'machine_events'
           AND status = 'accepted'), 4::bigint, 'step 6: 4 accepted');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'machine_events'
           AND status = 'quarantined'), 1::bigint, 'step 6: 1 quarantined');
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'machine_events'), 3::bigint, 'step 6: 3 batches');
SELECT results_eq($$SELECT status, count(*) FROM kafka_lake.machine_events_records GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('accepted', 4::bigint), ('quarantined', 1::bigint)$$,
                  'step 6: the foreign table agrees');
SELECT is((SELECT sum(units) FROM (SELECT (event->>'units_produced')::int AS units
                                   FROM kafka_lake.machine_events_records WHERE status = 'accepted') e),
          100::bigint, 'step 6: the accepted units add up to 100');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'machine_events'), 4::bigint, 'step 6: 4 accepted event_ids in the catalog');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('machine_events')$$, 'step 6: verify finds nothing wrong');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('machine_events')$$, 'step 6: recover has nothing to do');

-- the files are the reference implementation's: envelope and manifest keys
SELECT is((SELECT string_agg(k, ',' ORDER BY k)
           FROM pg_ls_dir(kl_test.landing('machine_events') || '/topic=manufacturing.machine-events.v1/partition=0') AS d,
                jsonb_object_keys(pg_read_file(kl_test.landing('machine_events')
                  || '/topic=manufacturing.machine-events.v1/partition=0/' || d || '/manifest.json')::jsonb) AS k
           WHERE d LIKE 'batch=00000000000000000000-%'),
          'accepted_count,batch_id,business_date_max,business_date_min,created_at,duplicate_event_count,entries,files,format_version,input_offset_end,input_offset_start,input_record_count,new_coordinate_count,partition,quarantine_count,topic',
          'manifest.json has the keys of the reference implementation, plus files and the business date range');
SELECT is((SELECT (split_part(pg_read_file(kl_test.landing('machine_events')
             || '/topic=manufacturing.machine-events.v1/partition=0/' || d || '/accepted.jsonl'), E'\n', 1))::jsonb
             #>> '{kafka}'
           FROM pg_ls_dir(kl_test.landing('machine_events') || '/topic=manufacturing.machine-events.v1/partition=0') AS d
           WHERE d LIKE 'batch=00000000000000000000-%')::jsonb - 'timestamp_ms',
          '{"key": "machine-01", "offset": 0, "partition": 0, "topic": "manufacturing.machine-events.v1"}'::jsonb,
          'accepted.jsonl carries the kafka envelope of the reference implementation');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('machine_events') || '/.staging')),
          0::bigint, 'no staging directory is left behind');

RESET kafka_lake.fault_injection;
SELECT * FROM finish();
