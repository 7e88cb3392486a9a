-- test/pgtap/42d_fdw_read_ahead.sql: the foreign table reads the next file on a helper thread
-- while it returns the rows of the current one.  A scan returns every row once; a cursor whose
-- read-ahead a subtransaction's abort stopped reads that file again and still returns every
-- row; a cursor opened inside a subtransaction that fails while its read-ahead is out, and one
-- left open in a transaction that fails, free their memory with no thread writing into it (the
-- backend lives on, no thread is left behind); a damaged next file (one edited byte, read ahead;
-- one truncated, not read ahead) does not fail a query that stops before it, and fails with
-- XX001 naming it a query that reads it.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(13);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || ' ' || msg || ' DETAIL: ' || coalesce(det, '');
END $$;

-- a compressed source (the default) of three batches of 12,000 records: files of a few MB each,
-- so that a read-ahead is still at work when the statement goes on
\o /dev/null
SELECT kl_test.server('fdw42d_kafka');
SELECT kl_test.broker('create fdw42d.events 1');
SELECT kafka_lake.create_source('fdw42d', 'fdw42d_kafka', 'fdw42d.events');
SELECT kl_test.fill('fdw42d.events', 36000, 1);
SET kafka_lake.batch_max_records = 12000;
SELECT * FROM kafka_lake.land('fdw42d');
RESET kafka_lake.batch_max_records;
\o
SELECT kl_test.threads() AS base_threads \gset

SELECT is((SELECT count(*) || ' ' || count(DISTINCT "offset") || ' ' || min("offset") || ' ' || max("offset")
             FROM kafka_lake.fdw42d_records),
          '36000 36000 0 35999', 'a scan of three batches returns every record once');
SELECT is((SELECT count(*)::int FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw42d' AND b.compression = 'zstd'), 3, 'in three compressed batches');
SELECT is((SELECT sum(c)::bigint FROM generate_series(1, 3) g,
                  LATERAL (SELECT count(*) AS c FROM kafka_lake.fdw42d_records WHERE g > 0) x),
          108000::bigint, 'rescanned three times over, it returns them three times');
SELECT is((SELECT count(*)::int FROM (SELECT "offset" FROM kafka_lake.fdw42d_records LIMIT 5) x), 5,
          'a LIMIT stops the scan with a read-ahead out');

-- a cursor fetched inside a subtransaction that is rolled back: the read-ahead it started there
-- is stopped by the rollback, and the file is read again when its turn comes
CREATE FUNCTION pg_temp.rolled_back_fetch() RETURNS text LANGUAGE plpgsql AS $$
DECLARE c refcursor; r record; n bigint := 0; d bigint := 0; prev bigint := -1;
BEGIN
  OPEN c NO SCROLL FOR SELECT "offset" FROM kafka_lake.fdw42d_records;
  BEGIN
    FETCH c INTO r;                     -- the first file is current, the second read ahead
    n := n + 1;
    prev := r."offset";
    RAISE EXCEPTION 'roll back the subtransaction';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
  LOOP
    FETCH c INTO r;
    EXIT WHEN NOT FOUND;
    n := n + 1;
    IF r."offset" <> prev + 1 THEN d := d + 1; END IF;
    prev := r."offset";
  END LOOP;
  CLOSE c;
  RETURN n || ' rows, ' || d || ' out of order';
END $$;
SELECT is(pg_temp.rolled_back_fetch(), '36000 rows, 0 out of order',
          'a cursor whose read-ahead a rolled back subtransaction stopped returns every row, in order');

-- a cursor opened in a subtransaction that fails while its read-ahead is out: the abort frees
-- the cursor's memory, the read-ahead is stopped and joined first
CREATE FUNCTION pg_temp.failed_with_cursor() RETURNS int LANGUAGE plpgsql AS $$
DECLARE c refcursor; r record; i int;
BEGIN
  FOR i IN 1..5 LOOP
    BEGIN
      OPEN c NO SCROLL FOR SELECT "offset" FROM kafka_lake.fdw42d_records;
      FETCH c INTO r;
      PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN
      c := NULL;
    END;
  END LOOP;
  RETURN 5;
END $$;
SELECT is(pg_temp.failed_with_cursor(), 5, 'five subtransactions fail with a cursor reading ahead');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw42d_records), 36000, 'the backend lives on and scans');

-- a transaction that fails with a cursor left open
BEGIN;
DECLARE fdw42d_c NO SCROLL CURSOR FOR SELECT "offset" FROM kafka_lake.fdw42d_records;
FETCH 1 FROM fdw42d_c \g /dev/null
-- the transaction fails at its top level (the error is expected)
\set ON_ERROR_STOP 0
SELECT 1 / 0;
\set ON_ERROR_STOP 1
ROLLBACK;
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw42d_records), 36000,
          'after a transaction failed with a cursor reading ahead, the backend lives on');
SELECT is(kl_test.threads(), :base_threads::bigint, 'and no thread is left behind');

-- a damaged next file: plain JSONL, two batches of five records
\o /dev/null
SELECT kl_test.broker('create fdw42d.small 1');
SELECT kafka_lake.create_source('fdw42d_small', 'fdw42d_kafka', 'fdw42d.small');
SELECT kafka_lake.set_compression('fdw42d_small', 'none');
SELECT kl_test.fill('fdw42d.small', 10, 1);
SET kafka_lake.batch_max_records = 5;
SELECT * FROM kafka_lake.land('fdw42d_small');
RESET kafka_lake.batch_max_records;
\o
SELECT batch_id AS b2,
       kl_test.landing('fdw42d_small') || '/topic=fdw42d.small/partition=0/batch=' || batch_id || '/accepted.jsonl' AS p2
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'fdw42d_small' ORDER BY first_offset DESC LIMIT 1 \gset

-- one edited byte: the file is read ahead, and judged only when its turn comes
SELECT kl_test.sh(format('printf X | dd of=%s bs=1 seek=30 conv=notrunc 2>/dev/null', :'p2')) \g /dev/null
SELECT is((SELECT array_agg("offset" ORDER BY "offset") FROM
             (SELECT "offset" FROM kafka_lake.fdw42d_small_records LIMIT 2) x),
          '{0,1}'::bigint[], 'an edited next file does not fail a query that stops before it');
SELECT matches(pg_temp.error_of('SELECT count(*) FROM kafka_lake.fdw42d_small_records'),
               '^XX001 file accepted.jsonl of batch ' || :'b2' || ' of source "fdw42d_small" does not match its manifest DETAIL: Its CRC-32C differs',
               '... and fails with XX001 naming it a query that reads it');

-- truncated: not read ahead (its size is wrong), refused when its turn comes
SELECT kl_test.sh(format('truncate -s -1 %s', :'p2')) \g /dev/null
SELECT is((SELECT array_agg("offset" ORDER BY "offset") FROM
             (SELECT "offset" FROM kafka_lake.fdw42d_small_records LIMIT 2) x),
          '{0,1}'::bigint[], 'a truncated next file does not fail a query that stops before it');
SELECT matches(pg_temp.error_of('SELECT count(*) FROM kafka_lake.fdw42d_small_records'),
               '^XX001 file accepted.jsonl of batch ' || :'b2' || ' of source "fdw42d_small" has [0-9]+ bytes, its manifest says',
               '... and fails with XX001 naming it a query that reads it');

\o /dev/null
SELECT kafka_lake.drop_source('fdw42d_small', drop_landing => true);
SELECT kafka_lake.drop_source('fdw42d', drop_landing => true);
DROP SERVER fdw42d_kafka;
\o
SELECT * FROM finish();
