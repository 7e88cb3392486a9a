-- test/pgtap/12b_source_topics.sql: a source of several topics (orders of two regions, one
-- contract).  create_source takes them as Kafka Connect's "topics" does (comma-separated);
-- each topic's partitions land, commit and show on their own (land, lag, source_status, the
-- foreign table's topic column and its pruning); an event_id is accepted once across topics
-- (I3), and a duplicate names the other topic's coordinate; the same (partition, offset) on two
-- topics are two records: exclude(), replay() and accepted_events tell them apart; partition
-- locks are per topic; a staging directory of one topic's partition survives the recovery of
-- the same partition of another; bridge() reads every topic into one silver and gold, with each
-- row's topic; close_date() certifies every partition of every topic, and a late event names
-- its topic; verify() and recover() are clean.  Needs the broker.
SELECT plan(43);

\o /dev/null
SELECT kl_test.server('tp12b_srv');
SELECT kl_test.broker('create tp12b.eu 2');
SELECT kl_test.broker('create tp12b.us 1');
SELECT kafka_lake.create_contract('tp12b', $j${"type": "object",
  "properties": {"order_id": {"type": "string"}, "region": {"type": "string"},
                 "total": {"type": "integer"}, "at": {"type": "string", "format": "date-time"}},
  "required": ["order_id", "region", "total", "at"], "event_id": "order_id",
  "business_date": {"field": "at", "time_zone": "UTC"}}$j$::json);
\o

SELECT throws_ok($$SELECT kafka_lake.create_source('tp12b_x', 'tp12b_srv', 'tp12b.eu,tp12b.eu', contract => 'tp12b')$$,
                 '22023', 'topic "tp12b.eu" is named twice', 'a topic named twice is refused');
SELECT throws_ok($$SELECT kafka_lake.create_source('tp12b_x', 'tp12b_srv', 'tp12b.eu,', contract => 'tp12b')$$,
                 '42602', NULL, 'an empty topic name in the list is refused');
SELECT throws_ok($$SELECT kafka_lake.create_source('tp12b_x', 'tp12b_srv', 'tp12b.eu,..', contract => 'tp12b')$$,
                 '42602', NULL, 'a topic of the list that is not a topic name is refused');
SELECT lives_ok($$SELECT kafka_lake.create_source('tp12b', 'tp12b_srv', 'tp12b.eu, tp12b.us', contract => 'tp12b')$$,
                'a source of two topics');
SELECT kafka_lake.set_compression('tp12b', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT is((SELECT topic FROM kafka_lake.sources WHERE source = 'tp12b'), 'tp12b.eu,tp12b.us',
          'sources.topic keeps them separated by commas, in the order given');
SELECT lives_ok($$SELECT kafka_lake.define_gold('tp12b', 'tp12b_by_region', grain => ARRAY['region'],
    metrics => '{"orders": {"count": "*"}, "total": {"sum": "total"}}')$$, 'a declared gold over both topics');

\o /dev/null
SELECT kafka_lake.produce('tp12b_srv', t, convert_to(v, 'UTF8'), partition => p)
  FROM (VALUES (1, 'tp12b.eu', 0, '{"order_id": "o-1", "region": "eu", "total": 10, "at": "2026-07-01T10:00:00Z"}'),
               (2, 'tp12b.eu', 0, '{"order_id": "o-2", "region": "eu", "total": 20, "at": "2026-07-01T11:00:00Z"}'),
               (3, 'tp12b.eu', 1, '{"order_id": "o-3", "region": "eu", "total": 30, "at": "2026-07-01T12:00:00Z"}'),
               (4, 'tp12b.us', 0, '{"order_id": "o-4", "region": "us", "total": 40, "at": "2026-07-01T13:00:00Z"}'),
               (5, 'tp12b.us', 0, '{"order_id": "o-1", "region": "us", "total": 99, "at": "2026-07-01T14:00:00Z"}'),
               (6, 'tp12b.us', 0, '{"order_id": "o-5"')) AS v(n, t, p, v)
 ORDER BY n;
\o

-- each topic's partitions land on their own; o-1 on tp12b.us is a duplicate of tp12b.eu's
SELECT results_eq($$SELECT topic, partition, accepted, duplicates, quarantined, committed_offset
                      FROM kafka_lake.land('tp12b') ORDER BY topic, partition$$,
                  $$VALUES ('tp12b.eu', 0, 2, 0, 0, 2::bigint), ('tp12b.eu', 1, 1, 0, 0, 1::bigint),
                           ('tp12b.us', 0, 1, 1, 1, 3::bigint)$$,
                  'land() lands and commits every partition of both topics, each row naming its topic');
SELECT results_eq($$SELECT topic, partition, committed_offset, lag FROM kafka_lake.lag('tp12b') ORDER BY topic, partition$$,
                  $$VALUES ('tp12b.eu', 0, 2::bigint, 0::bigint), ('tp12b.eu', 1, 1::bigint, 0::bigint),
                           ('tp12b.us', 0, 3::bigint, 0::bigint)$$,
                  'lag() has a row per partition of each topic');
SELECT results_eq($$SELECT topic, partition, accepted::int, duplicates::int, quarantined::int FROM kafka_lake.source_status
                     WHERE source = 'tp12b' ORDER BY topic, partition$$,
                  $$VALUES ('tp12b.eu', 0, 2, 0, 0), ('tp12b.eu', 1, 1, 0, 0), ('tp12b.us', 0, 1, 1, 1)$$,
                  'source_status has a row per partition of each topic');
SELECT results_eq($$SELECT topic, count(*) FROM kafka_lake.tp12b_records GROUP BY topic ORDER BY topic$$,
                  $$VALUES ('tp12b.eu', 3::bigint), ('tp12b.us', 3::bigint)$$,
                  'the foreign table shows each record with its topic');
SELECT results_eq($$SELECT event_id, status FROM kafka_lake.tp12b_records WHERE topic = 'tp12b.us' AND partition = 0 AND "offset" < 2 ORDER BY "offset"$$,
                  $$VALUES ('o-4', 'accepted'), ('o-1', 'duplicate_event_id')$$,
                  'a scan by topic reads that topic''s records');
SELECT is((SELECT count(*) FROM kafka_lake.tp12b_records WHERE topic IN ('tp12b.nowhere')), 0::bigint,
          'a topic the source does not land matches nothing');
CREATE FUNCTION pg_temp.explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  result text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN ' || q LOOP
    result := result || line || E'\n';
  END LOOP;
  RETURN result;
END $$;
SELECT matches(pg_temp.explain($$SELECT * FROM kafka_lake.tp12b_records WHERE topic = 'tp12b.us'$$),
               'Kafka Lake Source: tp12b \(topics tp12b.eu,tp12b.us\)', 'EXPLAIN names the source''s topics');
SELECT is((SELECT pg_read_file(kl_test.landing('tp12b') || '/topic=tp12b.us/partition=0/batch=' || batch_id || '/duplicates.jsonl')::json
                  -> 'duplicate_of' ->> 'topic'
             FROM kafka_lake.tp12b_records WHERE topic = 'tp12b.us' AND event_id = 'o-1'),
          'tp12b.eu', 'the duplicate''s duplicate_of names the other topic''s coordinate');
SELECT results_eq($$SELECT coalesce(topic, '(first)'), partition, "offset" FROM kafka_lake.accepted_events
                     WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'tp12b')
                     ORDER BY 1, 2, 3$$,
                  $$VALUES ('(first)', 0, 0::bigint), ('(first)', 0, 1::bigint), ('(first)', 1, 0::bigint),
                           ('tp12b.us', 0, 0::bigint)$$,
                  'accepted_events names the topic of a coordinate of the second topic (NULL: the first)');

-- a partition lock is per topic: partition 0 of both topics at once
BEGIN;
\o /dev/null
SELECT * FROM kafka_lake.land('tp12b');
\o
SELECT results_eq($$SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19276
                     AND pid = pg_backend_pid() ORDER BY objid$$,
                  $$VALUES (0::bigint), (1::bigint), (16777216::bigint)$$,
                  'land() holds partitions 0 and 1 of the first topic and partition 0 of the second (objid + 2^24)');
COMMIT;

-- (partition 0, offset 0) is o-1 on tp12b.eu and o-4 on tp12b.us
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('tp12b', "partition" => 0, "offset" => 0, reason => 'which one?')$$,
                 '22023', 'source "tp12b" lands 2 topics: name the topic of the partition',
                 'exclude() by coordinate of a source of several topics needs the topic');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('tp12b', "partition" => 0, "offset" => 0, reason => 'x', topic => 'tp12b.nowhere')$$,
                 '22023', 'topic "tp12b.nowhere" is not a topic of source "tp12b"', 'a topic that is not the source''s is refused');
SELECT results_eq($$SELECT action, topic, partition, "offset", event_id
                      FROM kafka_lake.exclude('tp12b', "partition" => 0, "offset" => 0, reason => 'test order', topic => 'tp12b.us')$$,
                  $$VALUES ('excluded', 'tp12b.us', 0, 0::bigint, 'o-4'), ('released', 'tp12b.us', NULL, NULL, 'o-4')$$,
                  'exclude() of (tp12b.us, 0, 0) sets o-4 aside');
SELECT results_eq($$SELECT topic, "offset", event_id, status FROM kafka_lake.tp12b_records
                     WHERE partition = 0 AND "offset" = 0 ORDER BY topic$$,
                  $$VALUES ('tp12b.eu', 0::bigint, 'o-1', 'accepted'), ('tp12b.us', 0::bigint, 'o-4', 'excluded')$$,
                  'o-1 at (tp12b.eu, 0, 0) is still accepted');
SELECT results_eq($$SELECT action, topic FROM kafka_lake.exclude('tp12b', event_id => 'o-1', reason => 'wrong total')$$,
                  $$VALUES ('excluded', 'tp12b.eu'), ('released', 'tp12b.eu')$$,
                  'exclude() by event_id finds the topic of its accepted record; a duplicate on another topic is not promoted');
SELECT results_eq($$SELECT action, topic FROM kafka_lake.unexclude('tp12b', event_id => 'o-1', reason => 'it was right')$$,
                  $$VALUES ('restored', 'tp12b.eu')$$, 'unexclude() by event_id puts it back on its topic');
SELECT results_eq($$SELECT action, topic FROM kafka_lake.unexclude('tp12b', "partition" => 0, "offset" => 0, reason => 'back', topic => 'tp12b.us')$$,
                  $$VALUES ('restored', 'tp12b.us')$$, 'unexclude() by coordinate with its topic');

-- replay of one topic's partition
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('tp12b', 0, 0, 1)$$, '22023', NULL,
                 'replay() of a source of several topics needs the topic');
SELECT results_eq($$SELECT topic, status, reused FROM kafka_lake.replay('tp12b', 0, 0, 1, topic => 'tp12b.us')$$,
                  $$VALUES ('tp12b.us', 'reused', 2)$$, 'replay() of (tp12b.us, 0) reuses its two landed records');

-- a staging directory of partition 0 of the second topic: the recovery of partition 0 of
-- the first leaves it (it may be a landing in progress), recover() of the source removes it
SELECT kl_test.sh(format('mkdir %s/.staging/batch=00000000000000000007-00000000000000000007-abcdefabcdef-p0~1-0badc0de',
                         kl_test.landing('tp12b')));
\o /dev/null
SELECT * FROM kafka_lake.replay('tp12b', 0, 0, 1, topic => 'tp12b.eu');
\o
SELECT is(kl_test.sh(format('ls %s/.staging', kl_test.landing('tp12b'))),
          'batch=00000000000000000007-00000000000000000007-abcdefabcdef-p0~1-0badc0de',
          'recovering partition 0 of tp12b.eu leaves the staging directory of partition 0 of tp12b.us');
SELECT results_eq($$SELECT action, topic, partition FROM kafka_lake.recover('tp12b')$$,
                  $$VALUES ('removed_staging', 'tp12b.us', 0)$$, 'recover() removes it as tp12b.us''s');

-- one silver and one gold of the date from both topics
SELECT results_eq($$SELECT silver_rows, gold_rows, quality_passed = quality_total FROM kafka_lake.bridge('tp12b', '2026-07-01')$$,
                  $$VALUES (4, 2, true)$$, 'bridge() selects the accepted events of both topics; every check passes');
SELECT results_eq($$SELECT kafka_topic, order_id FROM kafka_lake.tp12b_silver ORDER BY order_id$$,
                  $$VALUES ('tp12b.eu', 'o-1'), ('tp12b.eu', 'o-2'), ('tp12b.eu', 'o-3'), ('tp12b.us', 'o-4')$$,
                  'silver keeps each event''s topic');
SELECT results_eq($$SELECT region, orders, total FROM kafka_lake.tp12b_by_region_current ORDER BY region$$,
                  $$VALUES ('eu', 3::bigint, 60::bigint), ('us', 1::bigint, 40::bigint)$$,
                  'the declared gold counts the events of both topics, o-1 once');

-- close_date certifies every partition of every topic
SELECT results_eq($$SELECT status, partitions FROM kafka_lake.close_date('tp12b', '2026-07-01')$$,
                  $$VALUES ('closed', 3)$$, 'close_date() closes the date over three partitions');
SELECT results_eq($$SELECT p.topic, p.partition, p.through_offset FROM kafka_lake.date_closing_partitions p
                     JOIN kafka_lake.date_closings c USING (closing_id)
                    WHERE c.source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'tp12b')
                    ORDER BY 1, 2$$,
                  $$VALUES ('tp12b.eu', 0, 2::bigint), ('tp12b.eu', 1, 1::bigint), ('tp12b.us', 0, 3::bigint)$$,
                  'its certificate has each partition of each topic with its mark');
\o /dev/null
SELECT kafka_lake.produce('tp12b_srv', 'tp12b.us',
  convert_to('{"order_id": "o-9", "region": "us", "total": 5, "at": "2026-07-01T23:00:00Z"}', 'UTF8'), partition => 0);
SELECT * FROM kafka_lake.land('tp12b');
\o
SELECT results_eq($$SELECT topic, partition, "offset", through_offset, event_id FROM kafka_lake.late_events WHERE source = 'tp12b'$$,
                  $$VALUES ('tp12b.us', 0, 3::bigint, 3::bigint, 'o-9')$$,
                  'a late event of the closed date names its topic and that topic''s mark');
SELECT is((SELECT count(*) FROM kafka_lake.verify('tp12b')), 0::bigint, 'verify() finds nothing wrong');
SELECT is((SELECT count(*) FROM kafka_lake.recover('tp12b')), 0::bigint, 'recover() has nothing to do');
SELECT results_eq($$SELECT topic, partition, status, batches FROM kafka_lake.compact('tp12b')$$,
                  $$VALUES ('tp12b.us', 0, 'compacted', 2)$$,
                  'compact() merges the two batches of (tp12b.us, 0), not those of partition 0 of tp12b.eu');
SELECT is((SELECT count(*) FROM kafka_lake.verify('tp12b')), 0::bigint, 'verify() is clean after compact()');

-- a batch of the second topic moved away: recover() forgets it, and says how to land it again
SELECT batch_id AS us_batch FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'tp12b' AND b.topic = 'tp12b.us' \gset
SELECT kl_test.sh(format('mv %1$s/topic=tp12b.us/partition=0/batch=%2$s %1$s/../tp12b_moved', kl_test.landing('tp12b'), :'us_batch'));
SELECT results_eq($$SELECT action, topic, partition, detail ~ 'replay\(''tp12b'', 0, 0, 3, topic => ''tp12b.us''\)'
                      FROM kafka_lake.recover('tp12b')$$,
                  $$VALUES ('forgotten', 'tp12b.us', 0, true)$$,
                  'recover() forgets the moved batch of tp12b.us, its hint a replay() with the topic');
SELECT kl_test.sh(format('mv %1$s/../tp12b_moved %1$s/topic=tp12b.us/partition=0/batch=%2$s', kl_test.landing('tp12b'), :'us_batch'));
SELECT results_eq($$SELECT action, topic FROM kafka_lake.recover('tp12b')$$, $$VALUES ('adopted', 'tp12b.us')$$,
                  'moved back, recover() adopts it as a batch of tp12b.us');
SELECT is((SELECT count(*) FROM kafka_lake.tp12b_records WHERE status = 'accepted'), 5::bigint,
          'every accepted record reads again');

-- a land() that fails on partition 0 of the second topic shows as failed there only
\o /dev/null
SELECT kafka_lake.produce('tp12b_srv', 'tp12b.us',
  convert_to('{"order_id": "o-10", "region": "us", "total": 1, "at": "2026-07-02T10:00:00Z"}', 'UTF8'), partition => 0);
\o
SET kafka_lake.fault_injection = 'after_rename';
SELECT throws_ok($$SELECT * FROM kafka_lake.land('tp12b')$$, 'XX000', NULL, 'a fault while landing (tp12b.us, 0)');
RESET kafka_lake.fault_injection;
SELECT results_eq($$SELECT topic, partition, last_error_sqlstate FROM kafka_lake.source_status
                     WHERE source = 'tp12b' AND last_status = 'failed'$$,
                  $$VALUES ('tp12b.us', 0, 'XX000')$$,
                  'source_status shows the failure on (tp12b.us, 0), not on partition 0 of tp12b.eu');
\o /dev/null
SELECT * FROM kafka_lake.land('tp12b');
\o
SELECT is((SELECT count(*) FROM kafka_lake.source_status WHERE source = 'tp12b' AND last_status = 'failed'), 0::bigint,
          'the next land() adopts the batch, and the failure is past');

SELECT * FROM finish();
