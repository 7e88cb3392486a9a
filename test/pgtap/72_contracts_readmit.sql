-- test/pgtap/72_contracts_readmit.sql: alter_source() moves a source to a new contract
-- version, and readmit() re-judges the quarantined records from the landing (not from Kafka):
-- exactly the records the new version accepts are re-admitted, once; an event_id is still
-- accepted once (a re-admitted event whose event_id was accepted elsewhere lands as
-- duplicate_event_id); running it again changes nothing; a readmit whose transaction rolled
-- back is adopted from disk by recover(), a unit whose directory went is forgotten (its records
-- are quarantined again); the typed table follows the contract (a new column, a widened one,
-- a refused change).  bridge() refuses a date holding records another contract judged or
-- readmit() re-admitted.  Needs the broker.
SELECT plan(35);

\o /dev/null
SELECT kl_test.server('ra72_srv');
SELECT kl_test.broker('create ra72.t 2');
SELECT kl_test.broker('create ra72.mev 1');
\o
CREATE FUNCTION pg_temp.orders(statuses text, amount text) RETURNS json LANGUAGE sql AS $$
  SELECT format($f${"type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string", "enum": [%s]},
                   "amount": %s},
    "required": ["order_id", "status"], "event_id": "order_id"}$f$, statuses, amount)::json
$$;
SELECT is(kafka_lake.create_contract('ra72', pg_temp.orders('"new"', '{"type": "integer"}')), 1,
          'version 1 knows status "new" only');
SELECT lives_ok($$SELECT kafka_lake.create_source('ra72', 'ra72_srv', 'ra72.t', contract => 'ra72')$$,
                'a source lands with it');
SELECT kafka_lake.set_compression('ra72', 'none');  -- plain JSONL: the test reads the files' bytes
\o /dev/null
SELECT kafka_lake.produce('ra72_srv', 'ra72.t', convert_to(v, 'UTF8'), partition => p)
  FROM (VALUES (0, '{"order_id": "ord-1", "status": "new", "amount": 1}'),
               (0, '{"order_id": "ord-2", "status": "shipped", "amount": 2}'),
               (0, '{"order_id": "ord-3", "status": "bogus"}'),
               (0, '{"order_id": "ord-4"'),
               (0, '{"order_id": "ord-1", "status": "shipped"}'),
               (0, '{"order_id": "ord-5", "status": "shipped"}'),
               (0, '{"order_id": "ord-5", "status": "shipped", "amount": 5}'),
               (1, '{"order_id": "ord-7", "status": "new"}'),
               (1, '{"order_id": "ord-7", "status": "shipped"}')) AS t(p, v)
 ORDER BY p;
\o
SELECT results_eq($$SELECT partition, accepted, quarantined FROM kafka_lake.land('ra72') ORDER BY partition$$,
                  $$VALUES (0, 1, 6), (1, 1, 1)$$, 'version 1 accepts ord-1 and ord-7 and quarantines the rest');

-- version 2 also knows "shipped", and amounts with a fraction
SELECT is(kafka_lake.create_contract('ra72', pg_temp.orders('"new", "shipped"', '{"type": "number"}')), 2,
          'version 2 is the next version');
SELECT lives_ok($$SELECT kafka_lake.alter_source('ra72', 'ra72')$$, 'alter_source moves the source to the latest version');
SELECT is((SELECT contract_version FROM kafka_lake.sources WHERE source = 'ra72'), 2, 'the source lands with version 2 now');
SELECT is((SELECT format_type(atttypid, atttypmod) FROM pg_attribute
           WHERE attrelid = 'kafka_lake.ra72_events'::regclass AND attname = 'amount'),
          'numeric', 'the typed table''s amount column widened from bigint to numeric');

-- partition 0 re-admitted; partition 1 in a transaction that rolls back
SELECT results_eq($$SELECT partition, status, records, accepted, duplicates, quarantined
                    FROM kafka_lake.readmit('ra72', 0)$$,
                  $$VALUES (0, 'readmitted', 6, 2, 2, 2)$$,
                  'readmit: of the six quarantined records, version 2 accepts ord-2 and ord-5, finds ord-1 and ord-5 again, and still refuses two');
BEGIN;
SELECT results_eq($$SELECT partition, status, records, accepted, duplicates FROM kafka_lake.readmit('ra72', 1)$$,
                  $$VALUES (1, 'readmitted', 1, 0, 1)$$, 'in partition 1, ord-7 again is a duplicate');
ROLLBACK;
SELECT is((SELECT status FROM kafka_lake.ra72_records WHERE partition = 1 AND "offset" = 1), 'quarantined',
          'the rolled-back readmit left the catalog as it was');
SELECT results_eq($$SELECT action, partition FROM kafka_lake.recover('ra72')$$,
                  $$VALUES ('adopted', 1)$$, 'recover() adopts the readmit unit the rolled-back transaction left on disk');

SELECT results_eq($$SELECT partition, "offset", status, event_id, contract_version FROM kafka_lake.ra72_records
                    ORDER BY partition, "offset"$$,
  $$VALUES (0, 0::bigint, 'accepted', 'ord-1', 1), (0, 1, 'accepted', 'ord-2', 2), (0, 2, 'quarantined', NULL, 1),
           (0, 3, 'quarantined', NULL, 1), (0, 4, 'duplicate_event_id', 'ord-1', 2), (0, 5, 'accepted', 'ord-5', 2),
           (0, 6, 'duplicate_event_id', 'ord-5', 2), (1, 0, 'accepted', 'ord-7', 1), (1, 1, 'duplicate_event_id', 'ord-7', 2)$$,
  'every coordinate once, with the status and the contract version that judged it last');
SELECT results_eq($$SELECT partition, "offset", (r.event IS NOT NULL)
                    FROM kafka_lake.ra72_records r WHERE status = 'duplicate_event_id' ORDER BY 1, 2$$,
                  $$VALUES (0, 4::bigint, true), (0, 6, true), (1, 1, true)$$, 'the duplicates carry their events');
SELECT results_eq($$SELECT order_id, status, amount FROM kafka_lake.ra72_events ORDER BY order_id$$,
                  $$VALUES ('ord-1', 'new', 1::numeric), ('ord-2', 'shipped', 2), ('ord-5', 'shipped', NULL), ('ord-7', 'new', NULL)$$,
                  'the typed table has each order_id once');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'ra72'), 4::bigint, 'accepted_events holds each of the four order_ids once');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'ra72'), 9::bigint,
          'coordinate_list lists every coordinate once');
SELECT results_eq($$SELECT kind, landed_by, b.contract_version, readmit_of IS NOT NULL FROM kafka_lake.batches b
                    JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'ra72' ORDER BY partition, kind, landed_by$$,
                  $$VALUES ('landing', 'land', 1, false), ('readmit', 'readmit', 2, true),
                           ('landing', 'land', 1, false), ('readmit', 'recover', 2, true)$$,
                  'each readmit unit is a batch of kind readmit naming its batch, judged by version 2');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('ra72') || '/topic=ra72.t/partition=0') d WHERE d LIKE 'readmit=%'),
          1::bigint, 'the unit lies beside its batch, as readmit=<id>');
SELECT is((SELECT m ->> 'kind' || ' ' || (m ->> 'readmit_of' = (SELECT batch_id FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
                                                                  WHERE s.source = 'ra72' AND partition = 0 AND kind = 'landing'))::text
           FROM (SELECT pg_read_file(kl_test.landing('ra72') || '/topic=ra72.t/partition=0/readmit=' || batch_id || '/manifest.json')::jsonb AS m
                 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
                 WHERE s.source = 'ra72' AND partition = 0 AND kind = 'readmit') x),
          'readmit true', 'its manifest says it is a readmit unit of that batch');

-- running it again changes nothing
SELECT results_eq($$SELECT partition, status, records FROM kafka_lake.readmit('ra72')$$,
                  $$VALUES (0, 'unchanged', 2)$$, 'readmit() again: only the two still refused are judged, and stay');
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'ra72'),
          4::bigint, 'no new unit');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ra72')$$, 'verify checks the units too, and finds nothing wrong');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('ra72')$$, 'recover has nothing to do');

-- a unit whose directory is gone is forgotten: its records are quarantined again
SELECT kl_test.sh(format('mv %s/topic=ra72.t/partition=1/readmit=* %s/', kl_test.landing('ra72'),
                         (SELECT value FROM kl_test.env WHERE name = 'broker_dir'))) IS NOT NULL AS moved;
SELECT results_eq($$SELECT action, partition FROM kafka_lake.recover('ra72')$$,
                  $$VALUES ('forgotten', 1)$$, 'recover() forgets the unit');
SELECT is((SELECT status FROM kafka_lake.ra72_records WHERE partition = 1 AND "offset" = 1), 'quarantined',
          'its record is quarantined again');
SELECT results_eq($$SELECT partition, status, duplicates FROM kafka_lake.readmit('ra72', 1)$$,
                  $$VALUES (1, 'readmitted', 1)$$, 'and readmit() re-admits it again');

-- new records land with version 2
\o /dev/null
SELECT kafka_lake.produce('ra72_srv', 'ra72.t', convert_to('{"order_id": "ord-8", "status": "shipped", "amount": 8.5}', 'UTF8'), partition => 0);
\o
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('ra72')), 1, 'a new record lands by version 2');

-- the typed table follows the contract, or the change is refused before anything changes
SELECT is(kafka_lake.create_contract('ra72', pg_temp.orders('"new", "shipped"', '{"type": "number"}, "note": {"type": "string"}')),
          3, 'version 3 adds a field');
SELECT lives_ok($$SELECT kafka_lake.alter_source('ra72', 'ra72', 3)$$, 'alter_source to a given version');
SELECT is((SELECT count(*) FROM pg_attribute WHERE attrelid = 'kafka_lake.ra72_events'::regclass AND attname = 'note'),
          1::bigint, 'the typed table gains its column');
SELECT is(kafka_lake.create_contract('ra72', pg_temp.orders('"new"', '{"type": "string", "format": "date-time"}')),
          4, 'version 4 makes amount a timestamp');
SELECT throws_ok($$SELECT kafka_lake.alter_source('ra72', 'ra72', 4)$$, '42804', NULL,
                 'a field whose column cannot read both versions is refused (42804)');
SELECT is((SELECT contract_version FROM kafka_lake.sources WHERE source = 'ra72'), 3, 'and the source stays at version 3');

-- machine_event_v1: a date with records another contract judged is not bridged (0A000)
\o /dev/null
SELECT kafka_lake.create_source('ra72_mev', 'ra72_srv', 'ra72.mev');
SELECT kafka_lake.set_compression('ra72_mev', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('ra72_srv', 'ra72.mev', kl_test.event('evt-72-1'));
SELECT kafka_lake.produce('ra72_srv', 'ra72.mev', convert_to(replace(convert_from(kl_test.event('evt-72-2'), 'UTF8'), 'assembly', 'painting'), 'UTF8'));
SELECT * FROM kafka_lake.land('ra72_mev');
SELECT kafka_lake.create_contract('ra72_mev_loose', replace(definition::text, '"calibration"', '"calibration", "painting"')::json)
  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
SELECT kafka_lake.alter_source('ra72_mev', 'ra72_mev_loose');
SELECT * FROM kafka_lake.readmit('ra72_mev');
SELECT kafka_lake.alter_source('ra72_mev', 'machine_event_v1');
\o
SELECT is((SELECT string_agg(event_id || ' ' || operation, ', ' ORDER BY event_id) FROM kafka_lake.ra72_mev_events),
          'evt-72-1 assembly, evt-72-2 painting', 'the re-admitted machine event reads in the typed table');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('ra72_mev', '2026-06-29')$$, '0A000', NULL,
                 'bridge() refuses the date: it holds a record that another contract re-admitted');

SELECT * FROM finish();
