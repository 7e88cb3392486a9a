-- test/pgtap/25b_concurrency_topics.sql: two sessions land a source of two topics (2 partitions
-- each) at the same time, whose event_ids overlap across the topics: each partition of each
-- topic is owned one caller at a time (partition 0 of one topic never blocks partition 0 of the
-- other), every coordinate lands once (I2) and every event_id is accepted once across both
-- topics (I3), whichever session reached it first; a call that needs an event_id the other
-- session is accepting leaves that partition for a later call instead of waiting for the other
-- transaction (two calls that each waited for the other were a deadlock).  Needs the broker and
-- dblink.
SELECT plan(15);
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
-- a partition whose next event_ids the other session was accepting was left ("locked")
INSERT INTO pg_temp.results
  SELECT 'third', topic, partition, status, records, accepted, duplicates
    FROM kafka_lake.land('c25b', max_records => 1000000);
SELECT is((SELECT sum(records) FROM pg_temp.results WHERE status = 'landed'), 60000::bigint,
          'the two sessions, then a third call for what they left, landed 60,000 records between them');
SELECT is((SELECT count(*) FROM (SELECT DISTINCT topic, partition, "offset" FROM kafka_lake.coordinate_list
                                 WHERE source = 'c25b') d), 60000::bigint,
          '60,000 coordinates, each once');
SELECT is((SELECT count(*) || ' ' || count(DISTINCT event_id) FROM kafka_lake.c25b_records WHERE status = 'accepted'),
          '45000 45000', 'each of the 45,000 event_ids is accepted once, across both topics');
SELECT is((SELECT count(*) FROM kafka_lake.c25b_records WHERE status = 'duplicate_event_id'), 15000::bigint,
          'the other 15,000 copies are duplicates');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'c25b'), 45000::bigint, 'accepted_events holds each event_id once');
SELECT is((SELECT count(DISTINCT session) FROM pg_temp.results WHERE session IN ('this', 'other')), 2::bigint,
          'both concurrent calls returned (neither was a deadlock''s victim), each with its rows');
SELECT results_eq($$SELECT topic, partition, committed_offset FROM kafka_lake.lag('c25b') ORDER BY 1, 2$$,
                  $$VALUES ('conc25b.a', 0, 15000::bigint), ('conc25b.a', 1, 15000::bigint),
                           ('conc25b.b', 0, 15000::bigint), ('conc25b.b', 1, 15000::bigint)$$,
                  'every partition of both topics is committed to its end');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c25b')$$, 'verify finds nothing wrong');

-- deterministically: the other session holds an event_id uncommitted; this call leaves the
-- partition that needs it (no deadlock, no long wait), and lands it once the other commits
SELECT kl_test.broker('create conc25c.a 1');
SELECT kl_test.broker('create conc25c.b 1');
SELECT kafka_lake.create_source('c25c', 'c25b_srv', 'conc25c.a,conc25c.b');
-- (y-2 after y-1: the other call's budget of one record stops it there, before conc25c.b)
SELECT kafka_lake.produce('c25b_srv', 'conc25c.a', kl_test.event('y-1'), partition => 0);
SELECT kafka_lake.produce('c25b_srv', 'conc25c.a', kl_test.event('y-2'), partition => 0);
SELECT kafka_lake.produce('c25b_srv', 'conc25c.b', kl_test.event('y-0'), partition => 0);
SELECT kafka_lake.produce('c25b_srv', 'conc25c.b', kl_test.event('y-1'), partition => 0);
SELECT dblink_exec('other25b', 'BEGIN');
SELECT is((SELECT sum(accepted)::int FROM dblink('other25b', $q$SELECT topic, accepted FROM kafka_lake.land('c25c', max_records => 1)$q$)
             AS t(topic text, accepted int)), 1, 'the other session accepts y-1 on conc25c.a and keeps its transaction open');
SELECT results_eq($$SELECT topic, partition, status FROM kafka_lake.land('c25c') ORDER BY topic$$,
                  $$VALUES ('conc25c.a', 0, 'locked'), ('conc25c.b', 0, 'locked')$$,
                  'this call leaves (conc25c.a, 0), owned by the other, and (conc25c.b, 0), whose y-1 the other is accepting');
SELECT dblink_exec('other25b', 'COMMIT');
SELECT results_eq($$SELECT topic, partition, status, accepted, duplicates FROM kafka_lake.land('c25c') ORDER BY topic$$,
                  $$VALUES ('conc25c.a', 0, 'landed', 1, 0), ('conc25c.b', 0, 'landed', 1, 1)$$,
                  'once it committed, the next call lands y-2 and conc25c.b: y-0 accepted, y-1 a duplicate of the other''s');
SELECT is((SELECT string_agg(topic || ':' || event_id || ':' || status, ',' ORDER BY topic, "offset") FROM kafka_lake.c25c_records),
          'conc25c.a:y-1:accepted,conc25c.a:y-2:accepted,conc25c.b:y-0:accepted,conc25c.b:y-1:duplicate_event_id',
          'each event_id accepted once');

-- the same between two partitions of one topic (the defect was there before several topics)
SELECT kl_test.broker('create conc25d.t 2');
SELECT kafka_lake.create_source('c25d', 'c25b_srv', 'conc25d.t');
SELECT kafka_lake.produce('c25b_srv', 'conc25d.t', kl_test.event('z-1'), partition => 0);
SELECT kafka_lake.produce('c25b_srv', 'conc25d.t', kl_test.event('z-2'), partition => 0);
SELECT kafka_lake.produce('c25b_srv', 'conc25d.t', kl_test.event('z-0'), partition => 1);
SELECT kafka_lake.produce('c25b_srv', 'conc25d.t', kl_test.event('z-1'), partition => 1);
SELECT dblink_exec('other25b', 'BEGIN');
SELECT is((SELECT sum(accepted)::int FROM dblink('other25b', $q$SELECT topic, accepted FROM kafka_lake.land('c25d', max_records => 1)$q$)
             AS t(topic text, accepted int)), 1, 'the other session accepts z-1 on partition 0 and keeps its transaction open');
SELECT results_eq($$SELECT partition, status FROM kafka_lake.land('c25d') ORDER BY partition$$,
                  $$VALUES (0, 'locked'), (1, 'locked')$$,
                  'this call leaves partition 1, whose z-1 the other is accepting, rather than wait for its transaction');
SELECT dblink_exec('other25b', 'COMMIT');
SELECT results_eq($$SELECT partition, status, accepted, duplicates FROM kafka_lake.land('c25d') ORDER BY partition$$,
                  $$VALUES (0, 'landed', 1, 0), (1, 'landed', 1, 1)$$, 'then lands it: z-0 accepted, z-1 a duplicate');

SELECT dblink_disconnect('other25b');
RESET kafka_lake.batch_max_records;
SELECT * FROM finish();
