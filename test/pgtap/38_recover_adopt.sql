-- test/pgtap/38_recover_adopt.sql: the catalog loses batch rows while accepted_events keeps the
-- event_ids they reserved (a superuser's TRUNCATE kafka_lake.batches CASCADE, a deleted row, a
-- replay() of a batch whose row was deleted).  recover() adopts the batches from disk, and an
-- event_id reserved by the very coordinate that carries it is that same event: it stays
-- accepted, it is not "accepted elsewhere first".  A real duplicate (another coordinate) is
-- still a duplicate.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(14);

\o /dev/null
SELECT kl_test.server('ra38_kafka');
SELECT kl_test.broker('create ra38.t 2');
SELECT kafka_lake.create_source('ra38', 'ra38_kafka', 'ra38.t');
SELECT kafka_lake.produce('ra38_kafka', 'ra38.t', kl_test.event('evt-ra38-' || n), partition => n % 2)
  FROM generate_series(1, 10) n;
SET kafka_lake.batch_max_records = 3;
SELECT * FROM kafka_lake.land('ra38');
RESET kafka_lake.batch_max_records;
\o
SELECT source_id AS sid FROM kafka_lake.sources WHERE source = 'ra38' \gset
SELECT count(*) AS nbatches FROM kafka_lake.batches WHERE source_id = :sid \gset
SELECT is((SELECT count(*) FROM kafka_lake.ra38_records WHERE status = 'accepted'), 10::bigint,
          'ten accepted events landed');

-- the whole batches table is truncated; accepted_events is not
TRUNCATE kafka_lake.batches CASCADE;
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = :sid), 10::bigint,
          '(accepted_events still holds the ten event_ids)');
SELECT results_eq($$SELECT action, count(*)::int FROM kafka_lake.recover('ra38') GROUP BY 1$$,
                  format($$VALUES ('adopted', %s)$$, :nbatches),
                  'recover() adopts every batch from disk');
SELECT is((SELECT count(*) FROM kafka_lake.recover('ra38')), 0::bigint, 'a second recover() has nothing to do');
SELECT is_empty($$SELECT detail FROM kafka_lake.recover('ra38') WHERE detail LIKE '%elsewhere%'$$,
                'no adopted record is said to be accepted elsewhere');
SELECT is((SELECT count(*) FROM kafka_lake.ra38_records WHERE status = 'accepted'), 10::bigint,
          'the foreign table shows the ten events accepted again');
SELECT is((SELECT count(*) FROM kafka_lake.coordinates WHERE source_id = :sid AND statuses LIKE '%D%'), 0::bigint,
          'no coordinate is demoted');
SELECT results_eq($$SELECT selected_events, run_status FROM kafka_lake.bridge('ra38', '2026-06-29')$$,
                  $$VALUES (10, 'processed')$$, 'the bridge takes all ten');

-- one batch row deleted, then replay() of its offsets (which recovers the partition first)
SELECT b.batch_id AS del_batch, b.partition AS del_p, b.first_offset AS del_first, b.last_offset AS del_last
  FROM kafka_lake.batches b WHERE source_id = :sid ORDER BY partition, first_offset LIMIT 1 \gset
DELETE FROM kafka_lake.batches WHERE source_id = :sid AND batch_id = :'del_batch';
SELECT results_eq(format($$SELECT status, sum(reused)::int FROM kafka_lake.replay('ra38', %s, %s, %s) GROUP BY 1$$,
                         :del_p, :del_first, :del_last),
                  format($$VALUES ('reused', %s)$$, :del_last - :del_first + 1),
                  'replay() of a batch whose row was deleted adopts it and finds its offsets reused');
SELECT is((SELECT count(*) FROM kafka_lake.ra38_records WHERE status = 'accepted'), 10::bigint,
          'still ten accepted events');
SELECT is((SELECT landed_by FROM kafka_lake.batches WHERE source_id = :sid AND batch_id = :'del_batch'),
          'recover', 'the batch came back through adoption');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ra38')$$, 'verify() is clean');

-- a real duplicate: the same event_id at another coordinate
\o /dev/null
SELECT kafka_lake.produce('ra38_kafka', 'ra38.t', kl_test.event('evt-ra38-1'), partition => 0);
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(duplicates)::int FROM kafka_lake.land('ra38')$$,
                  $$VALUES (0, 1)$$, 'an event_id accepted at another coordinate is still a duplicate');
SELECT results_eq($$SELECT status, count(*)::int FROM kafka_lake.ra38_records GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('accepted', 10), ('duplicate_event_id', 1)$$,
                  'ten accepted, one duplicate');

SELECT * FROM finish();
