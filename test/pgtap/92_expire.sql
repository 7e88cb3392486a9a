-- test/pgtap/92_expire.sql: expire() removes the record files of batches whose business dates
-- are all older than the limit and keeps their manifests, EXPIRED markers, catalog rows and
-- coordinates: a replayed expired coordinate is still reused; the foreign table and the bridge
-- refuse an expired date with 55000 and a clear message, and a query or bridge of a date that did
-- not expire works; gold snapshots stay readable; verify() tells an expired batch from a damaged
-- one; a rollback, and each crash in the middle (simulated on disk and in the catalog), ends
-- consistent after recover(); closed_only expires dates closed by close_date() and not reopened,
-- and late_events stays readable.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(58);

\o /dev/null
SELECT kl_test.broker('create ex92.t 2');
SELECT kl_test.server('ex92_kafka');
SELECT kafka_lake.create_source(s, 'ex92_kafka', 'ex92.t') FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;
SELECT kafka_lake.set_compression(s, 'none') FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', kl_test.event('evt-ex92-27-' || n, business_date => '2026-06-27'),
                          partition => n % 2) FROM generate_series(1, 4) n;
SELECT kafka_lake.land(s) FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', kl_test.event('evt-ex92-28-' || n, business_date => '2026-06-28'),
                          partition => n % 2) FROM generate_series(1, 4) n;
SELECT kafka_lake.land(s) FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', convert_to('{"event_id": ' || n || '}', 'UTF8'), partition => 0)
  FROM generate_series(1, 2) n;
SELECT kafka_lake.land(s) FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', kl_test.event('evt-ex92-29-' || n, business_date => '2026-06-29'),
                          partition => n % 2) FROM generate_series(1, 4) n;
SELECT kafka_lake.land(s) FROM unnest(ARRAY['ex92', 'ex92b', 'ex92c']) s;
SELECT * FROM kafka_lake.bridge('ex92', '2026-06-27');
\o
SELECT source_id AS sid FROM kafka_lake.sources WHERE source = 'ex92' \gset
SELECT snapshot_id AS snap27 FROM kafka_lake.snapshots WHERE source_id = :sid AND business_date = '2026-06-27' \gset
SELECT kl_test.landing('ex92') || '/topic=ex92.t/partition=' AS pdir \gset
CREATE TABLE ex92_coords AS
  SELECT partition, "offset", status, fingerprint, batch_id FROM kafka_lake.coordinate_list WHERE source = 'ex92';
CREATE TABLE ex92_events AS SELECT * FROM kafka_lake.accepted_events WHERE source_id = :sid;
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 7::bigint,
          '(landed: 2026-06-27, 2026-06-28 and 2026-06-29 in both partitions, and a batch of two quarantined records)');

-- expire what is older than 2026-06-29
CREATE TABLE ex92_expired AS SELECT * FROM kafka_lake.expire('ex92', before => '2026-06-29');
SELECT results_eq($$SELECT partition, status, records, min_business_date, max_business_date FROM ex92_expired ORDER BY 4, 1$$,
                  $$VALUES (0, 'expired', 2, '2026-06-27'::date, '2026-06-27'::date), (1, 'expired', 2, '2026-06-27', '2026-06-27'),
                           (0, 'expired', 2, '2026-06-28', '2026-06-28'), (1, 'expired', 2, '2026-06-28', '2026-06-28')$$,
                  'expire() expires the four batches of 2026-06-27 and 2026-06-28, not the dateless one landed today');
SELECT ok((SELECT bool_and(bytes > 0) FROM ex92_expired), 'and says how many bytes of record files went');
SELECT is((SELECT count(*) FROM ex92_expired e, LATERAL (VALUES ('accepted.jsonl'), ('duplicates.jsonl'), ('quarantine.jsonl')) f(name)
           WHERE (pg_stat_file(:'pdir' || e.partition || '/batch=' || e.batch_id || '/' || f.name, true)).size IS NOT NULL),
          0::bigint, 'their record files are gone');
SELECT is((SELECT count(*) FROM ex92_expired e
           WHERE (pg_stat_file(:'pdir' || e.partition || '/batch=' || e.batch_id || '/manifest.json', true)).size IS NOT NULL
             AND pg_read_file(:'pdir' || e.partition || '/batch=' || e.batch_id || '/EXPIRED')::json->>'batch_id' = e.batch_id),
          4::bigint, 'their manifests stay, beside an EXPIRED marker naming the batch');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid AND expired_at IS NOT NULL), 4::bigint,
          'the catalog keeps their rows, with expired_at');
SELECT set_eq($$SELECT partition, "offset", status, batch_id FROM kafka_lake.coordinate_list WHERE source = 'ex92'$$,
              'SELECT partition, "offset", status, batch_id FROM ex92_coords', 'every coordinate stays known');
SELECT set_eq($$SELECT c.partition, c."offset", c.fingerprint FROM kafka_lake.coordinate_list c
                 WHERE c.source = 'ex92' AND c.batch_id NOT IN (SELECT batch_id FROM ex92_expired)$$,
              $$SELECT partition, "offset", fingerprint FROM ex92_coords WHERE batch_id NOT IN (SELECT batch_id FROM ex92_expired)$$,
              'a batch that did not expire keeps its fingerprints in the catalog');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list c JOIN ex92_expired e USING (batch_id)
            WHERE c.source = 'ex92' AND c.fingerprint IS NOT NULL),
          0::bigint, 'an expired batch''s fingerprints leave the catalog');
SELECT set_eq(format($$SELECT e.partition, (x->>'offset')::bigint, x->>'fingerprint'
                 FROM ex92_expired e,
                      json_array_elements(pg_read_file(%L || e.partition || '/batch=' || e.batch_id || '/manifest.json')::json->'entries') x$$,
                     :'pdir'),
              $$SELECT partition, "offset", fingerprint FROM ex92_coords WHERE batch_id IN (SELECT batch_id FROM ex92_expired)$$,
              'they stay in its manifest');
SELECT set_eq('SELECT * FROM kafka_lake.accepted_events WHERE source_id = ' || :sid, 'SELECT * FROM ex92_events',
              'every accepted event_id stays accepted');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ex92')$$, 'verify() is clean: expired is not missing');
SELECT is((SELECT count(*) FROM kafka_lake.expire('ex92', before => '2026-06-29')), 0::bigint,
          'a second expire() has nothing to do');

-- readers refuse an expired date, and read the others
SELECT throws_ok($$SELECT count(*) FROM kafka_lake.ex92_records$$, '55000',
                 'business dates 2026-06-27 to 2026-06-28 of source "ex92" have expired',
                 'a query that needs expired batches is refused, naming the dates');
SELECT throws_ok($$SELECT count(*) FROM kafka_lake.ex92_records WHERE business_date = '2026-06-28'$$, '55000',
                 'business date 2026-06-28 of source "ex92" has expired', 'a query of an expired date is refused');
SELECT is((SELECT count(*) FROM kafka_lake.ex92_records WHERE business_date = '2026-06-29'), 4::bigint,
          'a query of a date that did not expire reads it');
SELECT is((SELECT count(*) FROM kafka_lake.ex92_records WHERE status = 'quarantined'), 2::bigint,
          'a query pruned to batches that did not expire reads them');
CREATE FUNCTION pg_temp.error_parts(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text; h text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  RETURN d || ' || ' || h;
END $$;
SELECT matches(pg_temp.error_parts($$SELECT count(*) FROM kafka_lake.ex92_records$$),
               '^kafka_lake.expire\(\) removed the record files of 4 batches this query needs \(the first: batch .*\|\| Restrict the query to business dates after 2026-06-28 \(business_date > ''2026-06-28''\)',
               'its detail says what expire() removed and what is kept, its hint what to query instead');
CREATE FUNCTION pg_temp.explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := '';
BEGIN
  FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
  RETURN o;
END $$;
SELECT matches(pg_temp.explain('SELECT * FROM kafka_lake.ex92_records'),
               'Batches: 3 read, 0 pruned, 4 expired', 'EXPLAIN counts the expired batches (and does not fail)');
CREATE FOREIGN TABLE ex92_typed (event_id text, business_date date, units_produced int)
  SERVER ex92_kafka OPTIONS (source 'ex92', status 'accepted');
SELECT throws_ok($$SELECT sum(units_produced) FROM ex92_typed WHERE business_date < '2026-06-29'$$, '55000', NULL,
                 'a typed table refuses the expired dates too');
SELECT is((SELECT sum(units_produced) FROM ex92_typed WHERE business_date >= '2026-06-29'), 40::bigint,
          'and reads the others');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('ex92', '2026-06-28')$$, '55000',
                 'business date 2026-06-28 of source "ex92" has expired', 'the bridge refuses an expired date');
SELECT results_eq($$SELECT run_status, selected_events FROM kafka_lake.bridge('ex92', '2026-06-29')$$,
                  $$VALUES ('processed', 4)$$, 'and bridges a date that did not expire');
SELECT results_eq(format('SELECT business_date, units_produced FROM kafka_lake.gold_as_of(%s)', :snap27),
                  $$VALUES ('2026-06-27'::date, 10::bigint)$$,
                  'the gold snapshot of an expired date stays readable');

-- coordinates stay known: replay finds them reused, land lands nothing again
SELECT results_eq(format($$SELECT status, reused FROM kafka_lake.replay('ex92', 0, %s, %s)$$,
                         (SELECT first_offset FROM kafka_lake.batches WHERE source_id = :sid AND partition = 0
                             AND expired_at IS NOT NULL ORDER BY first_offset LIMIT 1),
                         (SELECT last_offset FROM kafka_lake.batches WHERE source_id = :sid AND partition = 0
                             AND expired_at IS NOT NULL ORDER BY first_offset LIMIT 1)),
                  $$VALUES ('reused', 2)$$, 'a replayed expired coordinate is reused, never landed twice');
SELECT results_eq($$SELECT status FROM kafka_lake.land('ex92')$$, $$VALUES ('empty'), ('empty')$$,
                  'land() lands nothing again');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 7::bigint, 'no batch was added');

-- the fingerprints of an expired batch are its manifest's (the catalog keeps none): a
-- redelivered record is judged by them, and a manifest that cannot tell stops the replay
SELECT batch_id AS old0, first_offset AS old0_first, manifest_sha256 AS old0_sha,
       manifest_bytes AS old0_bytes, manifest_crc32c AS old0_crc
  FROM kafka_lake.batches WHERE source_id = :sid AND partition = 0 AND expired_at IS NOT NULL
 ORDER BY first_offset LIMIT 1 \gset
SELECT fingerprint AS old0_fp FROM ex92_coords WHERE partition = 0 AND "offset" = :old0_first \gset
SELECT :'pdir' || '0/batch=' || :'old0' || '/manifest.json' AS old0_manifest \gset
SELECT kl_test.sh(format('cp %1$s %1$s.keep && printf x >> %1$s', :'old0_manifest')) \g /dev/null
SELECT throws_ok(format($$SELECT * FROM kafka_lake.replay('ex92', 0, %s, %s)$$, :old0_first, :old0_first),
                 'XX001', NULL, 'a replayed coordinate of an expired batch whose manifest is damaged is refused (XX001)');
SELECT throws_matching(format($$SELECT * FROM kafka_lake.replay('ex92', 0, %s, %s)$$, :old0_first, :old0_first),
                       'fingerprints of expired batch .* manifest\.json differs from the catalog',
                       'naming the batch and its manifest');
-- a record that changed at its coordinate (the manifest, and the catalog's record of it, edited
-- to another fingerprint) is refused as it is in a batch that did not expire
SELECT kl_test.sh(format('sed "s/%s/%s/" %s.keep > %s', :'old0_fp', repeat('0', 64), :'old0_manifest', :'old0_manifest')) \g /dev/null
UPDATE kafka_lake.batches SET manifest_sha256 = encode(sha256(pg_read_binary_file(:'old0_manifest')), 'hex'),
       manifest_bytes = NULL, manifest_crc32c = NULL
 WHERE source_id = :sid AND batch_id = :'old0';
SELECT throws_matching(format($$SELECT * FROM kafka_lake.replay('ex92', 0, %s, %s)$$, :old0_first, :old0_first),
                       'was delivered again with a different fingerprint',
                       'a record delivered again with another fingerprint than its expired batch''s manifest is refused');
SELECT kl_test.sh(format('mv %1$s.keep %1$s', :'old0_manifest')) \g /dev/null
UPDATE kafka_lake.batches SET manifest_sha256 = :'old0_sha', manifest_bytes = :old0_bytes, manifest_crc32c = :old0_crc
 WHERE source_id = :sid AND batch_id = :'old0';
SELECT results_eq(format($$SELECT status, reused FROM kafka_lake.replay('ex92', 0, %s, %s)$$, :old0_first, :old0_first),
                  $$VALUES ('reused', 1)$$, 'the manifest restored, the record is reused again');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 7::bigint, 'and nothing landed meanwhile');

-- compaction leaves expired batches alone
SELECT results_eq($$SELECT partition, batches FROM kafka_lake.compact('ex92')$$, $$VALUES (0, 2)$$,
                  'compact() merges the unexpired batches of partition 0, not the expired ones');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid AND expired_at IS NOT NULL), 4::bigint,
          'the expired batches are as they were');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ex92')$$, 'verify() is clean');

-- a batch whose files were removed by hand is damage, not expiry
SELECT batch_id AS hand FROM kafka_lake.batches WHERE source_id = :sid AND partition = 1 AND expired_at IS NULL \gset
SELECT kl_test.sh(format('rm %s1/batch=%s/accepted.jsonl', :'pdir', :'hand')) \g /dev/null
SELECT results_eq($$SELECT problem, file FROM kafka_lake.verify('ex92')$$, $$VALUES ('missing_file', 'accepted.jsonl')$$,
                  'verify() reports a record file removed by hand as missing_file');

-- the limits
SELECT throws_ok($$SELECT * FROM kafka_lake.expire('ex92')$$, '22004', NULL, 'no limit is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.expire('ex92', before => '2026-06-29', older_than => '1 day')$$, '22023', NULL,
                 'two limits are refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.expire('ex92', older_than => '-1 day')$$, '22023', NULL,
                 'a negative age is refused');

-- another source over the same topic: older_than, dateless batches, closed_only, rollback, crashes
SELECT source_id AS bid FROM kafka_lake.sources WHERE source = 'ex92b' \gset
SELECT kl_test.landing('ex92b') || '/topic=ex92.t/partition=' AS bdir \gset
SELECT is((SELECT count(*) FROM kafka_lake.expire('ex92b', older_than => '1 year')), 0::bigint,
          'older_than => 1 year: nothing is that old');
BEGIN;
SELECT is((SELECT count(*) FROM kafka_lake.expire('ex92b', older_than => '30 days')), 6::bigint,
          'older_than => 30 days expires every dated batch (inside a transaction)');
SELECT is((SELECT count(*) FROM kafka_lake.recover('ex92b')), 0::bigint,
          'recover() in the same transaction leaves the record files to the commit');
ROLLBACK;
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :bid AND expired_at IS NOT NULL), 0::bigint,
          'after ROLLBACK nothing is expired');
SELECT is((SELECT count(*) FROM kafka_lake.batches b
           WHERE source_id = :bid AND (pg_stat_file(:'bdir' || b.partition || '/batch=' || b.batch_id || '/EXPIRED', true)).size IS NULL
             AND (pg_stat_file(:'bdir' || b.partition || '/batch=' || b.batch_id || '/accepted.jsonl', true)).size IS NOT NULL),
          (SELECT count(*) FROM kafka_lake.batches WHERE source_id = :bid),
          'every batch keeps its record files, and no marker is left');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ex92b')$$, 'verify() is clean');
SELECT results_eq($$SELECT min_business_date IS NULL, status, count(*)::int FROM kafka_lake.expire('ex92b', before => current_date + 1) GROUP BY 1, 2 ORDER BY 1, 2$$,
                  $$VALUES (false, 'expired', 6), (true, 'expired', 1), (true, 'reduced', 1)$$,
                  'before => tomorrow also expires the batch without dates, by the day it landed, and reduces its manifest (it accepted no event_id)');
SELECT throws_ok($$SELECT count(*) FROM kafka_lake.ex92b_records WHERE status = 'quarantined'$$, '55000',
                 'quarantined records of source "ex92b" have expired', 'then its quarantined records are refused too');

-- crashes, simulated: the catalog lost an expired batch; an expiry committed but its files stayed;
-- a marker without a committed expiry
SELECT b.batch_id AS lost, b.partition AS lost_p FROM kafka_lake.batches b
 WHERE source_id = :bid AND min_business_date = '2026-06-27' ORDER BY partition LIMIT 1 \gset
DELETE FROM kafka_lake.batches WHERE source_id = :bid AND batch_id = :'lost';
SELECT results_eq($$SELECT problem FROM kafka_lake.verify('ex92b')$$, $$VALUES ('not_in_catalog')$$,
                  'an expired batch the catalog lost: verify() says recover() adopts it');
SELECT results_eq($$SELECT action, detail ~ 'an expired batch' FROM kafka_lake.recover('ex92b')$$,
                  $$VALUES ('adopted', true)$$, 'recover() adopts it as an expired batch, from its manifest');
SELECT is((SELECT expired_at IS NOT NULL FROM kafka_lake.batches WHERE source_id = :bid AND batch_id = :'lost'), true,
          'with expired_at, and its coordinates are known again');
SELECT source_id AS cid FROM kafka_lake.sources WHERE source = 'ex92c' \gset
SELECT kl_test.landing('ex92c') || '/topic=ex92.t/partition=' AS cdir \gset
SELECT b.batch_id AS half, b.partition AS half_p FROM kafka_lake.batches b
 WHERE source_id = :cid AND min_business_date = '2026-06-28' ORDER BY partition LIMIT 1 \gset
SELECT b.batch_id AS stale, b.partition AS stale_p FROM kafka_lake.batches b
 WHERE source_id = :cid AND min_business_date = '2026-06-29' ORDER BY partition LIMIT 1 \gset
UPDATE kafka_lake.batches SET expired_at = now() WHERE source_id = :cid AND batch_id = :'half';
SELECT kl_test.sh(format($$echo '{"batch_id": "%s"}' > %s%s/batch=%s/EXPIRED$$, :'half', :'cdir', :'half_p', :'half')) \g /dev/null
SELECT kl_test.sh(format($$echo '{"batch_id": "%s"}' > %s%s/batch=%s/EXPIRED$$, :'stale', :'cdir', :'stale_p', :'stale')) \g /dev/null
SELECT results_eq($$SELECT problem, count(*)::int FROM kafka_lake.verify('ex92c') GROUP BY 1$$,
                  $$VALUES ('expiry_unfinished', 4)$$,
                  'verify() reports the record files of an expired batch and the marker of a whole one as an unfinished expiry');
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('ex92c') ORDER BY 1$$,
                  format($$VALUES ('finished_expiry', %L), ('undid_expiry', %L)$$, :'half', :'stale'),
                  'recover() removes the files of the expired batch and the marker of the whole one');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ex92c')$$, 'verify() is clean after recover()');
SELECT is((SELECT count(*) FROM kafka_lake.ex92c_records WHERE business_date = '2026-06-29'), 4::bigint,
          'the batch whose expiry did not commit reads whole');

-- a FIFO where the marker belongs is refused at once, never opened
SELECT kl_test.sh(format('mkfifo %s%s/batch=%s/EXPIRED', :'cdir', :'stale_p', :'stale')) \g /dev/null
SELECT throws_ok($$SELECT * FROM kafka_lake.expire('ex92c', before => '2026-06-30')$$, 'XX001', NULL,
                 'a FIFO in place of the EXPIRED marker is an error at once, not a blocked backend');
SELECT kl_test.sh(format('rm %s%s/batch=%s/EXPIRED', :'cdir', :'stale_p', :'stale')) \g /dev/null

-- closed_only expires the batches of dates whose certificate is in effect: closed, not reopened.
-- A late event of a closed date stays in late_events until its batch expires; the view stays
-- readable once it has.
\o /dev/null
SELECT * FROM kafka_lake.close_date('ex92c', '2026-06-27');
SELECT * FROM kafka_lake.close_date('ex92c', '2026-06-29');
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', kl_test.event('evt-ex92-27-late', business_date => '2026-06-27'),
                          partition => 0);
SELECT kafka_lake.produce('ex92_kafka', 'ex92.t', kl_test.event('evt-ex92-29-late', business_date => '2026-06-29'),
                          partition => 1);
SELECT kafka_lake.land('ex92c');
SELECT * FROM kafka_lake.bridge('ex92c', '2026-06-29', reopen => true);
\o
SELECT results_eq($$SELECT business_date, closing_status FROM kafka_lake.late_events WHERE source = 'ex92c' ORDER BY 1$$,
                  $$VALUES ('2026-06-27'::date, 'closed'), ('2026-06-29', 'reopened')$$,
                  '(a late event of each closed date; 2026-06-29 reopened to count it)');
SELECT results_eq($$SELECT min_business_date, count(*)::int
                    FROM kafka_lake.expire('ex92c', before => '2026-06-30', closed_only => true) GROUP BY 1$$,
                  $$VALUES ('2026-06-27'::date, 3)$$,
                  'closed_only expires the batches of the closed date alone (its late event''s too), not those of the reopened one');
SELECT results_eq($$SELECT business_date, closing_status FROM kafka_lake.late_events WHERE source = 'ex92c'$$,
                  $$VALUES ('2026-06-29'::date, 'reopened')$$,
                  'late_events stays readable, and lists what the landing still holds');

DROP TABLE ex92_coords, ex92_events, ex92_expired;
DROP FOREIGN TABLE ex92_typed;
SELECT * FROM finish();
