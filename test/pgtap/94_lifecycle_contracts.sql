-- test/pgtap/94_lifecycle_contracts.sql: compact(), expire(), recover() and verify() with
-- contracts as data.  A source of its own contract (lines carrying their own event_id and
-- business_date), moved to a second version, with quarantined records that readmit() re-admitted:
-- compact() merges runs of one contract version only and the compacted batch records that
-- contract (catalog and manifest, so recover() adopts it as such); batches with readmit units and
-- the units themselves are never compacted; a batch and its units expire together, by the dates
-- of them all; readmit() reports an expired batch instead of failing; recover() settles an expired
-- unit in its own directory and adopts a lost one as expired; source_status counts what stays on
-- disk; readmit() re-admits records of a compacted batch; every query result stays the same
-- and verify() stays clean.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(38);

\o /dev/null
SELECT kl_test.server('lc94_srv');
SELECT kl_test.broker('create lc94.t 1');
\o
CREATE FUNCTION pg_temp.orders(statuses text) RETURNS json LANGUAGE sql AS $$
  SELECT format($f${"type": "object",
    "properties": {"order_id": {"type": "string"}, "status": {"type": "string", "enum": [%s]},
                   "day": {"type": "string", "format": "date"}},
    "required": ["order_id", "status", "day"], "event_id": "order_id",
    "business_date": {"field": "day"}}$f$, statuses)::json
$$;
CREATE FUNCTION pg_temp.put(id text, status text, day text) RETURNS void LANGUAGE sql AS $$
  SELECT kafka_lake.produce('lc94_srv', 'lc94.t',
    convert_to(json_build_object('order_id', id, 'status', status, 'day', day)::text, 'UTF8'))
$$;
\o /dev/null
SELECT kafka_lake.create_contract('lc94', pg_temp.orders('"new"'));
SELECT kafka_lake.create_source('lc94', 'lc94_srv', 'lc94.t', contract => 'lc94');
SELECT kafka_lake.set_compression('lc94', 'none');  -- plain JSONL: the test reads the files' bytes
-- version 1: b1 and b2 accepted; b3 two quarantined records of 2026-06-27;
-- b4 one accepted of 2026-06-27 and one quarantined of 2026-06-29
SELECT pg_temp.put('ord-1', 'new', '2026-06-27');
SELECT kafka_lake.land('lc94');
SELECT pg_temp.put('ord-2', 'new', '2026-06-27');
SELECT kafka_lake.land('lc94');
SELECT pg_temp.put('ord-3', 'shipped', '2026-06-27'), pg_temp.put('ord-9', 'bogus', '2026-06-27');
SELECT kafka_lake.land('lc94');
SELECT pg_temp.put('ord-4', 'new', '2026-06-27'), pg_temp.put('ord-8', 'shipped', '2026-06-29');
SELECT kafka_lake.land('lc94');
-- version 2 knows "shipped": b5 and b6 of 2026-06-28
SELECT kafka_lake.create_contract('lc94', pg_temp.orders('"new", "shipped"'));
SELECT kafka_lake.alter_source('lc94', 'lc94');
SELECT pg_temp.put('ord-5', 'shipped', '2026-06-28');
SELECT kafka_lake.land('lc94');
SELECT pg_temp.put('ord-6', 'shipped', '2026-06-28');
SELECT kafka_lake.land('lc94');
\o
SELECT results_eq($$SELECT status, records, accepted, duplicates, quarantined FROM kafka_lake.readmit('lc94') ORDER BY readmit_of$$,
                  $$VALUES ('readmitted', 2, 1, 0, 1), ('readmitted', 1, 1, 0, 0)$$,
                  'readmit() with version 2 re-admits ord-3 (not ord-9) and ord-8, as two units');
SELECT source_id AS sid FROM kafka_lake.sources WHERE source = 'lc94' \gset
SELECT kl_test.landing('lc94') || '/topic=lc94.t/partition=0/' AS pdir \gset
SELECT batch_id AS b3 FROM kafka_lake.batches WHERE source_id = :sid AND first_offset = 2 AND kind = 'landing' \gset
SELECT batch_id AS b4 FROM kafka_lake.batches WHERE source_id = :sid AND first_offset = 4 AND kind = 'landing' \gset
SELECT batch_id AS u3 FROM kafka_lake.batches WHERE source_id = :sid AND readmit_of = :'b3' \gset
SELECT batch_id AS u4 FROM kafka_lake.batches WHERE source_id = :sid AND readmit_of = :'b4' \gset
CREATE TABLE lc94_records AS
  SELECT topic, partition, "offset", key, timestamp_ms, fingerprint, status, event_id, business_date, event,
         raw_value, validation_error, contract, contract_version
  FROM kafka_lake.lc94_records;
CREATE TABLE lc94_events AS SELECT "offset", event_id, business_date, order_id, status, day FROM kafka_lake.lc94_events;
CREATE TABLE lc94_coords AS SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'lc94';
SELECT is((SELECT count(*) FROM lc94_events), 7::bigint, '(seven accepted events: five by landing, two by readmit)');

-- compaction: one contract version per run; batches with readmit units and units stay
CREATE TABLE lc94_compacted AS SELECT * FROM kafka_lake.compact('lc94');
SELECT results_eq($$SELECT batches, records, first_offset, last_offset FROM lc94_compacted ORDER BY first_offset$$,
                  $$VALUES (2, 2, 0::bigint, 1::bigint), (2, 2, 6::bigint, 7::bigint)$$,
                  'compact() merges b1+b2 (version 1) and b5+b6 (version 2): not across the batches with readmit units, nor across versions');
SELECT results_eq($$SELECT b.contract, b.contract_version FROM kafka_lake.batches b JOIN lc94_compacted c USING (batch_id)
                    WHERE b.source_id = $$ || :sid || $$ ORDER BY b.first_offset$$,
                  $$VALUES ('lc94', 1), ('lc94', 2)$$, 'each compacted batch records the contract version that judged its lines');
SELECT results_eq($$SELECT m->>'contract', (m->>'contract_version')::int, json_array_length(m->'compacted_from')
                    FROM lc94_compacted c, LATERAL (SELECT pg_read_file($$ || quote_literal(:'pdir') || $$ || 'batch=' || c.batch_id || '/manifest.json')::json) AS t(m)
                    ORDER BY c.first_offset$$,
                  $$VALUES ('lc94', 1, 2), ('lc94', 2, 2)$$, 'and so does its manifest, for recover() to read');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid AND batch_id IN (:'b3', :'b4', :'u3', :'u4')),
          4::bigint, 'the batches with readmit units and their units are as they were');
SELECT ok((SELECT bool_and(readmit_of IN (:'b3', :'b4')) FROM kafka_lake.batches WHERE source_id = :sid AND kind = 'readmit'),
          'each unit still names a batch of the catalog');
SELECT set_eq($$SELECT topic, partition, "offset", key, timestamp_ms, fingerprint, status, event_id, business_date, event,
                       raw_value, validation_error, contract, contract_version FROM kafka_lake.lc94_records$$,
              'SELECT * FROM lc94_records', 'every row of lc94_records is the same');
SELECT set_eq($$SELECT "offset", event_id, business_date, order_id, status, day FROM kafka_lake.lc94_events$$,
              'SELECT * FROM lc94_events', 'every typed event is the same');
SELECT set_eq($$SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'lc94'$$,
              'SELECT * FROM lc94_coords', 'every coordinate keeps its status and fingerprint');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('lc94')$$, 'verify() is clean after compact()');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('lc94')$$, 'recover() has nothing to do');

-- a compacted batch of version 2 that the catalog lost is adopted as version 2
SELECT batch_id AS c2 FROM lc94_compacted WHERE first_offset = 6 \gset
DELETE FROM kafka_lake.batches WHERE source_id = :sid AND batch_id = :'c2';
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('lc94')$$,
                  format($$VALUES ('adopted', %L)$$, :'c2'), 'recover() adopts the compacted batch the catalog lost');
SELECT results_eq(format($$SELECT contract, contract_version, landed_by FROM kafka_lake.batches WHERE source_id = %s AND batch_id = %L$$, :sid, :'c2'),
                  $$VALUES ('lc94', 2, 'recover')$$, 'with the contract version its manifest names');
SELECT set_eq($$SELECT "offset", event_id, business_date, order_id, status, day FROM kafka_lake.lc94_events$$,
              'SELECT * FROM lc94_events', 'every typed event is still the same');

-- expiry: a batch and its units together, by the dates of them all
SELECT bytes_on_disk AS bytes_before FROM kafka_lake.source_status WHERE source = 'lc94' \gset
CREATE TABLE lc94_expired AS SELECT * FROM kafka_lake.expire('lc94', before => '2026-06-28');
SELECT is((SELECT :bytes_before - bytes_on_disk FROM kafka_lake.source_status WHERE source = 'lc94'),
          (SELECT sum(bytes) FROM lc94_expired),
          'source_status.bytes_on_disk gives back exactly the record files expire() removed');
SELECT set_eq($$SELECT batch_id FROM lc94_expired$$,
              format($$SELECT batch_id FROM lc94_compacted WHERE first_offset = 0 UNION ALL VALUES (%L), (%L)$$, :'b3', :'u3'),
              'expire() before 2026-06-28 expires b1+b2, b3 and its unit (whose event is of 2026-06-27)');
SELECT ok(NOT EXISTS (SELECT 1 FROM lc94_expired WHERE batch_id IN (:'b4', :'u4')),
          'b4 stays, with its unit: the unit holds an event of 2026-06-29');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid AND expired_at IS NOT NULL), 3::bigint,
          'the catalog says so');
SELECT ok((pg_stat_file(:'pdir' || 'readmit=' || :'u3' || '/accepted.jsonl', true)).size IS NULL
          AND pg_read_file(:'pdir' || 'readmit=' || :'u3' || '/EXPIRED')::json->>'batch_id' = :'u3',
          'the unit''s record files are gone, beside its EXPIRED marker');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('lc94')$$, 'verify() is clean after expire()');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('lc94')$$, 'recover() has nothing to do');
SELECT throws_ok($$SELECT count(*) FROM kafka_lake.lc94_events WHERE business_date = '2026-06-27'$$, '55000', NULL,
                 'the expired date is refused');
SELECT is((SELECT count(*) FROM kafka_lake.lc94_events WHERE business_date >= '2026-06-28'), 3::bigint,
          'the others read: ord-5, ord-6 and the re-admitted ord-8');
SELECT results_eq($$SELECT batch_id, readmit_of, status, records, quarantined FROM kafka_lake.readmit('lc94')$$,
                  format($$VALUES (NULL::text, %L, 'expired', 1, 1)$$, :'b3'),
                  'readmit() reports the expired batch (its quarantine lines are gone) instead of failing');
SELECT is((SELECT count(*) FROM kafka_lake.compact('lc94')), 0::bigint, 'compact() leaves expired batches alone');

-- an expired unit that lost its marker gets it back; one the catalog lost (its row and the 'R'
-- of its records, as in a catalog from before the readmit) is adopted as expired
SELECT kl_test.sh(format('rm %sreadmit=%s/EXPIRED', :'pdir', :'u3')) \g /dev/null
SELECT results_eq($$SELECT problem, file FROM kafka_lake.verify('lc94')$$, $$VALUES ('missing_file', 'EXPIRED')$$,
                  'verify() reports the expired unit''s missing marker');
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('lc94')$$,
                  format($$VALUES ('finished_expiry', %L)$$, :'u3'), 'recover() writes it again, in the unit''s directory');
DELETE FROM kafka_lake.batches WHERE source_id = :sid AND batch_id = :'u3';
UPDATE kafka_lake.coordinates SET statuses = translate(statuses, 'R', 'q')
 WHERE source_id = :sid AND batch_id = :'b3';
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('lc94')$$,
                  format($$VALUES ('adopted', %L)$$, :'u3'), 'recover() adopts the expired unit the catalog lost');
SELECT results_eq(format($$SELECT kind, readmit_of, expired_at IS NOT NULL FROM kafka_lake.batches WHERE source_id = %s AND batch_id = %L$$, :sid, :'u3'),
                  format($$VALUES ('readmit', %L, true)$$, :'b3'), 'as an expired unit of its batch');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('lc94')$$, 'verify() is clean');
SELECT set_eq($$SELECT partition, "offset", status FROM kafka_lake.coordinate_list WHERE source = 'lc94'$$,
              'SELECT partition, "offset", status FROM lc94_coords', 'every coordinate is still known, with its status');
SELECT is_empty($$SELECT c.* FROM kafka_lake.coordinate_list c JOIN lc94_coords o USING (partition, "offset", status)
                  WHERE c.source = 'lc94'
                    AND c.fingerprint IS DISTINCT FROM CASE WHEN c.batch_id IN (SELECT batch_id FROM lc94_expired) THEN NULL
                                                            ELSE o.fingerprint END$$,
                'and its fingerprint, in the catalog while its batch has not expired (an expired one''s are in its manifest)');

-- readmit() works on a compacted batch as on any other, and then compact() leaves it alone
\o /dev/null
SELECT pg_temp.put('ord-10', 'bogus', '2026-06-30');
SELECT kafka_lake.land('lc94');
SELECT pg_temp.put('ord-11', 'bogus', '2026-06-30');
SELECT kafka_lake.land('lc94');
\o
SELECT results_eq($$SELECT batches, records, first_offset, last_offset FROM kafka_lake.compact('lc94')$$,
                  $$VALUES (3, 4, 6::bigint, 9::bigint)$$,
                  'compact() merges the compacted batch of version 2 with two new batches of quarantined records');
SELECT batch_id AS c3 FROM kafka_lake.batches WHERE source_id = :sid AND first_offset = 6 \gset
\o /dev/null
SELECT kafka_lake.create_contract('lc94', pg_temp.orders('"new", "shipped", "bogus"'));
SELECT kafka_lake.alter_source('lc94', 'lc94');
\o
SELECT results_eq($$SELECT readmit_of, status, records, accepted FROM kafka_lake.readmit('lc94') WHERE status <> 'expired'$$,
                  format($$VALUES (%L, 'readmitted', 2, 2)$$, :'c3'),
                  'readmit() with version 3 re-admits the two quarantined records of the compacted batch');
SELECT is((SELECT count(*) FROM kafka_lake.lc94_events WHERE business_date = '2026-06-30'), 2::bigint,
          'the typed table reads them from the unit');
SELECT is((SELECT count(*) FROM kafka_lake.compact('lc94')), 0::bigint,
          'compact() leaves the compacted batch alone now that it has a unit');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('lc94')$$, 'verify() is clean');

DROP TABLE lc94_records, lc94_events, lc94_coords, lc94_compacted, lc94_expired;
SELECT * FROM finish();
