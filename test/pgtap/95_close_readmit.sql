-- test/pgtap/95_close_readmit.sql: close_date() of a source with a readmit unit.  The
-- certificate's through_timestamp_ms of a partition the call landed nothing in comes from the
-- manifest of the last batch below the mark: a readmit unit (readmit=<id>, which repeats
-- coordinates of its batch) is never taken for that batch.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(3);

\o /dev/null
SELECT kl_test.server('cr95_srv');
SELECT kl_test.broker('create cr95.t 1');
SELECT kafka_lake.create_source('cr95', 'cr95_srv', 'cr95.t');
SELECT kafka_lake.produce('cr95_srv', 'cr95.t', kl_test.event('evt-cr95-1', business_date => '2026-06-29'));
SELECT kafka_lake.produce('cr95_srv', 'cr95.t', convert_to('{"note": "not an event"}', 'UTF8'));
SELECT kafka_lake.land('cr95');
-- json_object accepts the quarantined record: a readmit unit, then back to machine_event_v1
SELECT kafka_lake.alter_source('cr95', 'json_object');
\o
SELECT results_eq($$SELECT status, accepted FROM kafka_lake.readmit('cr95')$$, $$VALUES ('readmitted', 1)$$,
                  '(readmit() makes a unit of the quarantined record at offset 1)');
\o /dev/null
SELECT kafka_lake.alter_source('cr95', 'machine_event_v1');
\o
SELECT results_eq($$SELECT status, selected_events FROM kafka_lake.close_date('cr95', '2026-06-29')$$,
                  $$VALUES ('closed', 1)$$,
                  'close_date() closes the date; the last batch below the mark is the batch, not its unit');
SELECT results_eq($$SELECT p.through_offset, p.through_timestamp_ms IS NOT NULL
                    FROM kafka_lake.date_closing_partitions p JOIN kafka_lake.date_closings c USING (closing_id)
                    JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'cr95'$$,
                  $$VALUES (2::bigint, true)$$,
                  'the certificate has the mark and the timestamp of the last record below it, from the batch''s manifest');
SELECT * FROM finish();
