-- test/pgtap/43_fdw_snapshot.sql: a scan returns a consistent set while
-- land() adds batches.  The batch list comes from the catalog
-- under the statement's snapshot: a REPEATABLE READ transaction and an open
-- cursor keep returning the set they started with, a scan running while
-- another session lands returns the set of its start, and a land that has
-- not committed is invisible although its batch directories are on disk.
-- Uses dblink for the second session.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(15);

\o /dev/null
SELECT dblink_connect('fdw43', format('dbname=%s host=%s port=%s user=%s', current_database(),
                                      current_setting('unix_socket_directories'),
                                      current_setting('port'), current_user));
\o

CREATE FUNCTION pg_temp.batch_dirs_on_disk() RETURNS int LANGUAGE sql AS $$
  SELECT count(*)::int FROM generate_series(0, 1) p,
         pg_ls_dir(kl_test.landing('fdw43') || '/topic=fdw43.events/partition=' || p) d
   WHERE d LIKE 'batch=%' $$;
CREATE FUNCTION pg_temp.catalog_batches() RETURNS int LANGUAGE sql AS $$
  SELECT count(*)::int FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
   WHERE s.source = 'fdw43' $$;
CREATE FUNCTION pg_temp.land_elsewhere() RETURNS int LANGUAGE sql AS $$
  SELECT n FROM dblink('fdw43', $q$SET kafka_lake.batch_max_records = 4;
                                  SELECT coalesce(sum(records), 0)::int FROM kafka_lake.land('fdw43')$q$)
           AS t(n int) $$;

\o /dev/null
SELECT kl_test.server('fdw43_kafka');
SELECT kl_test.broker('create fdw43.events 2');
SELECT kafka_lake.create_source('fdw43', 'fdw43_kafka', 'fdw43.events');
SELECT kl_test.fill('fdw43.events', 10, 2, 1);
\o
SELECT is(pg_temp.land_elsewhere(), 10, 'the other session lands 10 records');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 10, 'and they are visible');

-- REPEATABLE READ: the transaction's snapshot decides the batch list
\o /dev/null
SELECT kl_test.fill('fdw43.events', 10, 2, 11);
\o
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 10, 'REPEATABLE READ: 10 at the first scan');
SELECT is(pg_temp.land_elsewhere(), 10, 'meanwhile the other session lands and commits 10 more');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 10,
          'REPEATABLE READ: still 10, the set of the transaction''s snapshot');
COMMIT;
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 20, 'after COMMIT: 20');

-- a cursor opened before a concurrent land keeps its set
\o /dev/null
SELECT kl_test.fill('fdw43.events', 10, 2, 21);
\o
BEGIN;
DECLARE fdw43_c NO SCROLL CURSOR FOR SELECT "partition", "offset" FROM kafka_lake.fdw43_records;
\o /dev/null
FETCH 3 FROM fdw43_c;
\o
SELECT is(pg_temp.land_elsewhere(), 10, 'a land commits while the cursor is open');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 30,
          'READ COMMITTED: a new statement sees 30');
DO $$
DECLARE r record; n int := 0; c refcursor := 'fdw43_c';
BEGIN
  LOOP
    FETCH c INTO r;
    EXIT WHEN NOT FOUND;
    n := n + 1;
  END LOOP;
  CREATE TEMP TABLE fdw43_rest AS SELECT n;
END $$;
SELECT is((SELECT n FROM fdw43_rest), 17, 'the cursor returns the rest of the 20 it started with');
COMMIT;

-- a land that has not committed is invisible, though its files are on disk
\o /dev/null
SELECT kl_test.fill('fdw43.events', 10, 2, 31);
\o
\o /dev/null
SELECT dblink_exec('fdw43', 'BEGIN');
\o
SELECT is(pg_temp.land_elsewhere(), 10, 'the other session lands 10 more in an open transaction');
SELECT cmp_ok(pg_temp.batch_dirs_on_disk(), '>', pg_temp.catalog_batches(),
              'their batch directories are on disk, not yet in the visible catalog');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 30, 'an uncommitted land is invisible');
\o /dev/null
SELECT dblink_exec('fdw43', 'COMMIT');
\o
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw43_records), 40, 'visible once committed');

-- a scan running while another session lands returns the set of its start
\o /dev/null
SELECT kl_test.fill('fdw43.events', 10, 2, 41);
SELECT dblink_send_query('fdw43',
  $q$SELECT count(*), max(clock_timestamp()) FROM kafka_lake.fdw43_records WHERE pg_sleep(0.05) IS NOT NULL$q$);
SELECT pg_sleep(0.3);
SET kafka_lake.batch_max_records = 4;
CREATE TEMP TABLE fdw43_land AS
  SELECT coalesce(sum(records), 0)::int AS n, clock_timestamp() AS done FROM kafka_lake.land('fdw43');
\o
CREATE TEMP TABLE fdw43_scan AS SELECT * FROM dblink_get_result('fdw43') AS t(n bigint, ended timestamptz);
SELECT ok((SELECT l.n = 10 AND l.done < s.ended FROM fdw43_land l, fdw43_scan s),
          'a land committed while the other session''s scan was running');
SELECT is((SELECT n::int FROM fdw43_scan), 40, 'that scan returns the 40 records of its start, not 50');

\o /dev/null
SELECT dblink_disconnect('fdw43');
\o
SELECT * FROM finish();
