-- test/pgtap/29_drop_recreate.sql: drop_source(drop_landing => true) and create_source of the
-- same name in one transaction.  The removal at commit takes only what the dropped source owned:
-- the new source's batches, landed in the same transaction with their offsets committed to
-- Kafka, stay on disk (I1, I4).  A rollback, or a rolled-back savepoint, puts the dropped
-- source's files back together with what the rolled-back part landed (its offsets may be
-- committed), so the next land() adopts it.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(23);

-- how many rows a query returns, or -1 when it fails (a damaged landing fails with XX001)
CREATE FUNCTION pg_temp.rows_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || q || ') q' INTO n;
  RETURN n;
EXCEPTION WHEN OTHERS THEN
  RETURN -1;
END $$;

-- the batch directories the catalog lists for a source that are missing on disk
CREATE FUNCTION pg_temp.missing_dirs(src text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
   WHERE s.source = src
     AND pg_stat_file(format('%s/topic=%s/partition=%s/batch=%s', kl_test.landing(src), b.topic,
                             b.partition, b.batch_id), true) IS NULL
$$;

-- the landing entries under the landing directory whose name contains a pattern
CREATE FUNCTION pg_temp.on_disk(pattern text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM regexp_split_to_table(kl_test.sh(format(
      'find %s -name %s 2>/dev/null', current_setting('data_directory') || '/kafka_lake',
      quote_literal(pattern))), E'\n') f WHERE f <> ''
$$;

\o /dev/null
SELECT kl_test.server('dr29_kafka');
SELECT kl_test.broker('create dr29.t 1');
SELECT kl_test.broker('create dr29r.t 1');
SELECT kl_test.broker('create dr29s.t 1');
\o

----------------------------------------------------------------------------
-- drop and re-create in one committed transaction
----------------------------------------------------------------------------
\o /dev/null
SELECT kafka_lake.create_source('dr29', 'dr29_kafka', 'dr29.t', group_id => 'dr29-group');
SELECT kafka_lake.produce('dr29_kafka', 'dr29.t', kl_test.event('evt-dr29-a' || n)) FROM generate_series(1, 5) n;
\o
SELECT results_eq($$SELECT status, records, committed_offset FROM kafka_lake.land('dr29')$$,
                  $$VALUES ('landed', 5, 5::bigint)$$, 'the first source lands offsets 0 to 4');
SELECT b.batch_id AS old_batch FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'dr29' \gset

BEGIN;
\o /dev/null
SELECT kafka_lake.drop_source('dr29', drop_landing => true);
SELECT kafka_lake.create_source('dr29', 'dr29_kafka', 'dr29.t', group_id => 'dr29-group');
SELECT kafka_lake.produce('dr29_kafka', 'dr29.t', kl_test.event('evt-dr29-b' || n)) FROM generate_series(1, 3) n;
\o
-- the new source starts where the group is (a row 'adopted' at 5), then lands
SELECT results_eq($$SELECT status, records, first_offset, committed_offset FROM kafka_lake.land('dr29')$$,
                  $$VALUES ('adopted', 0, NULL, 5::bigint), ('landed', 3, 5::bigint, 8::bigint)$$,
                  'in the same transaction the new source lands offsets 5 to 7 and commits 8');
COMMIT;

SELECT is(pg_temp.missing_dirs('dr29'), 0::bigint,
          'after COMMIT every batch the new source recorded is on disk');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.verify('dr29')$$), 0::bigint,
          'verify() finds nothing wrong with the new source');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.dr29_records WHERE status = 'accepted'$$), 3::bigint,
          'the foreign table reads the three records the new source landed');
SELECT is(pg_temp.on_disk('batch=' || :'old_batch'), 0::bigint,
          'the dropped source''s batch is gone from the disk');
SELECT is(kl_test.sh(format('find %s -name ''batch=*'' | wc -l', kl_test.landing('dr29'))), '1',
          'the source directory holds exactly the new source''s one batch');
SELECT is(pg_read_file(kl_test.landing('dr29') || '/.kafka_lake_source'),
          format(E'database %s source dr29\n', (SELECT oid FROM pg_database WHERE datname = current_database())),
          'the source directory is the new source''s, with its marker');

----------------------------------------------------------------------------
-- drop and re-create, land, then ROLLBACK: the old source gets its files back,
-- and what the rolled-back land wrote (offsets committed) is adopted
----------------------------------------------------------------------------
\o /dev/null
SELECT kafka_lake.create_source('dr29r', 'dr29_kafka', 'dr29r.t', group_id => 'dr29r-group');
SELECT kafka_lake.produce('dr29_kafka', 'dr29r.t', kl_test.event('evt-dr29r-a' || n)) FROM generate_series(1, 5) n;
SELECT * FROM kafka_lake.land('dr29r');
\o
BEGIN;
\o /dev/null
SELECT kafka_lake.drop_source('dr29r', drop_landing => true);
SELECT kafka_lake.create_source('dr29r', 'dr29_kafka', 'dr29r.t', group_id => 'dr29r-group');
SELECT kafka_lake.produce('dr29_kafka', 'dr29r.t', kl_test.event('evt-dr29r-b' || n)) FROM generate_series(1, 2) n;
\o
SELECT results_eq($$SELECT records, committed_offset FROM kafka_lake.land('dr29r') WHERE status <> 'adopted'$$,
                  $$VALUES (2, 7::bigint)$$, 'the re-created source lands 2 and commits 7 to the group');
ROLLBACK;

SELECT is(pg_temp.missing_dirs('dr29r'), 0::bigint, 'after ROLLBACK the old source''s batches are on disk');
SELECT results_eq($$SELECT status, records, reused FROM kafka_lake.land('dr29r')$$,
                  $$VALUES ('empty', 0, 0)$$,
                  'the group is at 7: nothing is left to poll');
SELECT results_eq($$SELECT "offset" FROM kafka_lake.coordinate_list WHERE source = 'dr29r' ORDER BY 1$$,
                  $$SELECT generate_series(0, 6)::bigint$$,
                  'the batch of the rolled-back land was adopted: offsets 0 to 6, each once');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.dr29r_records WHERE status = 'accepted'$$), 7::bigint,
          'the foreign table reads all seven');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.verify('dr29r')$$), 0::bigint, 'verify() is clean');

----------------------------------------------------------------------------
-- savepoints
----------------------------------------------------------------------------
\o /dev/null
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t');
SELECT kafka_lake.produce('dr29_kafka', 'dr29s.t', kl_test.event('evt-dr29s-a' || n)) FROM generate_series(1, 3) n;
SELECT * FROM kafka_lake.land('dr29s');
BEGIN;
SAVEPOINT a;
SELECT kafka_lake.drop_source('dr29s', drop_landing => true);
ROLLBACK TO a;
COMMIT;
\o
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.dr29s_records$$), 3::bigint,
          'a drop in a rolled-back savepoint removes nothing');

-- the drop stays, the re-creation (and its land) is rolled back: everything goes
\o /dev/null
BEGIN;
SELECT kafka_lake.drop_source('dr29s', drop_landing => true);
SAVEPOINT a;
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t');
SELECT kafka_lake.produce('dr29_kafka', 'dr29s.t', kl_test.event('evt-dr29s-b1'));
SELECT * FROM kafka_lake.land('dr29s');
ROLLBACK TO a;
\o
SELECT ok((pg_stat_file(kl_test.landing('dr29s') || '/.kafka_lake_source', true)).size IS NOT NULL,
          'after ROLLBACK TO the dropped source''s directory is back in place until COMMIT');
COMMIT;
SELECT is((SELECT count(*) FROM kafka_lake.sources WHERE source = 'dr29s'), 0::bigint, 'the source is gone');
SELECT is(pg_temp.on_disk('*dr29s*'), 0::bigint, 'and all of its files, the rolled-back land''s too');

-- drop, create, drop, create in one transaction: only the last source's directory remains
\o /dev/null
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t', group_id => 'dr29s-2');
SELECT * FROM kafka_lake.land('dr29s');
BEGIN;
SELECT kafka_lake.drop_source('dr29s', drop_landing => true);
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t', group_id => 'dr29s-3');
SELECT * FROM kafka_lake.land('dr29s');
SELECT kafka_lake.drop_source('dr29s', drop_landing => true);
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t', group_id => 'dr29s-4');
SELECT * FROM kafka_lake.land('dr29s');
COMMIT;
\o
SELECT is(pg_temp.missing_dirs('dr29s'), 0::bigint, 'the last source''s batches are on disk');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.dr29s_records$$), 4::bigint,
          'and read: the last group started from the beginning');
SELECT is(pg_temp.on_disk('batch=' || (SELECT b.batch_id FROM kafka_lake.batches b
                                        JOIN kafka_lake.sources s USING (source_id)
                                        WHERE s.source = 'dr29s')), 1::bigint,
          'the dropped sources'' copies of the same batch are gone: one copy is left');

-- a source whose directory is already gone: the re-created one's files still stay
\o /dev/null
SELECT kl_test.sh(format('rm -r %s', kl_test.landing('dr29s')));
BEGIN;
SELECT kafka_lake.drop_source('dr29s', drop_landing => true);
SELECT kafka_lake.create_source('dr29s', 'dr29_kafka', 'dr29s.t', group_id => 'dr29s-5');
SELECT * FROM kafka_lake.land('dr29s');
COMMIT;
\o
SELECT is(pg_temp.missing_dirs('dr29s'), 0::bigint,
          'when the dropped source had no directory left, the new source''s batches stay on disk');
SELECT is(pg_temp.rows_of($$SELECT * FROM kafka_lake.dr29s_records$$), 4::bigint, 'and read');

SELECT * FROM finish();
