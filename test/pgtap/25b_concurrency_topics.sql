-- test/pgtap/25b_concurrency_topics.sql: two sessions land a source of two topics (2 partitions
-- each) at the same time, whose event_ids overlap across the topics: each partition of each
-- topic is owned one caller at a time (partition 0 of one topic never blocks partition 0 of the
-- other), every coordinate lands once (I2) and every event_id is accepted once across both
-- topics (I3), whichever session reached it first.  Needs the broker and dblink.
SELECT plan(8);
SELECT kl_test.broker('create conc25b.a 2');
SELECT kl_test.broker('create conc25b.b 2');
SELECT kl_test.server('c25b_srv');
SELECT kafka_lake.create_source('c25b', 'c25b_srv', 'conc25b.a,conc25b.b');
SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
SELECT dblink_connect('other25b', :'conninfo');
SELECT dblink_exec('other25b', 'SET kafka_lake.batch_max_records = 1000');
SET kafka_lake.batch_max_records = 1000;

CREATE TABLE pg_temp.results (session text, topic text, partition int, status text, records int,
                              accepted int, duplicates int);
-- event_ids 1..30000 on conc25b.a, 15001..45000 on conc25b.b
SELECT kl_test.fill('conc25b.a', 30000, 2, 1);
SELECT kl_test.fill('conc25b.b', 30000, 2, 15001);
SELECT dblink_send_query('other25b', $q$SELECT topic, partition, status, records, accepted, duplicates
                                          FROM kafka_lake.land('c25b', max_records => 1000000)$q$);
INSERT INTO pg_temp.results
  SELECT 'this', topic, partition, status, records, accepted, duplicates
    FROM kafka_lake.land('c25b', max_records => 1000000);
INSERT INTO pg_temp.results
  SELECT 'other', * FROM dblink_get_result('other25b')
      AS t(topic text, partition int, status text, records int, accepted int, duplicates int);
\o /dev/null
SELECT * FROM dblink_get_result('other25b') AS t(topic text, partition int, status text, records int,
                                                accepted int, duplicates int);
\o
SELECT is((SELECT sum(records) FROM pg_temp.results WHERE status = 'landed'), 60000::bigint,
          'the two sessions landed 60,000 records between them');
SELECT is((SELECT count(*) FROM (SELECT DISTINCT topic, partition, "offset" FROM kafka_lake.coordinate_list
                                 WHERE source = 'c25b') d), 60000::bigint,
          '60,000 coordinates, each once');
SELECT is((SELECT count(*) || ' ' || count(DISTINCT event_id) FROM kafka_lake.c25b_records WHERE status = 'accepted'),
          '45000 45000', 'each of the 45,000 event_ids is accepted once, across both topics');
SELECT is((SELECT count(*) FROM kafka_lake.c25b_records WHERE status = 'duplicate_event_id'), 15000::bigint,
          'the other 15,000 copies are duplicates');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'c25b'), 45000::bigint, 'accepted_events holds each event_id once');
SELECT ok((SELECT count(DISTINCT session) FROM pg_temp.results WHERE status = 'landed') = 2,
          'both sessions landed partitions');
SELECT results_eq($$SELECT topic, partition, committed_offset FROM kafka_lake.lag('c25b') ORDER BY 1, 2$$,
                  $$VALUES ('conc25b.a', 0, 15000::bigint), ('conc25b.a', 1, 15000::bigint),
                           ('conc25b.b', 0, 15000::bigint), ('conc25b.b', 1, 15000::bigint)$$,
                  'every partition of both topics is committed to its end');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c25b')$$, 'verify finds nothing wrong');

SELECT dblink_disconnect('other25b');
RESET kafka_lake.batch_max_records;
SELECT * FROM finish();
