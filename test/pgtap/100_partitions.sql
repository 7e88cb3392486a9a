-- test/pgtap/100_partitions.sql: a source that owns some partitions of its topic
-- (create_source(..., partitions => ...), set_partitions), on one server.  The arguments are
-- checked (an empty, two-dimensional or negative list, a partition twice: 22023; a NULL element
-- or source: 22004); replay() of a partition it does not own is refused (55000) and replay() by
-- time passes such partitions over; set_partitions waits for a transaction that is landing the
-- source; set_partitions(NULL) gives it every partition back, and the next land() lands them.
-- Two servers sharing a topic: test/t/100_partition_owners.sh.  Needs the broker and dblink.
SET client_min_messages = warning;
SELECT plan(16);
SELECT kl_test.broker('create p100.t 3');
SELECT kl_test.server('p100_srv');
SELECT kl_test.fill('p100.t', 90, 3, 1, '--date 2026-08-04 --timestamp event') \g /dev/null

CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;

SELECT is(pg_temp.error_of(format($$SELECT kafka_lake.create_source('p100_x', 'p100_srv', 'p100.t', partitions => %L)$$, p)),
          e, 'create_source refuses partitions ' || coalesce(p, 'NULL') || ' with ' || e)
  FROM (VALUES ('{}', '22023'), ('{{0},{1}}', '22023'), ('{-1}', '22023'), ('{0,2,0}', '22023'),
               ('{0,NULL}', '22004')) AS t(p, e);
SELECT is((SELECT count(*)::int FROM kafka_lake.sources WHERE source = 'p100_x'), 0, 'and stores nothing');

SELECT kafka_lake.create_source('p100', 'p100_srv', 'p100.t', partitions => '{2,0}') \g /dev/null
SELECT is((SELECT partitions FROM kafka_lake.sources WHERE source = 'p100'), '{0,2}'::int[],
          'the partitions are stored ascending');
SELECT is((SELECT string_agg(partition || ':' || records, ',' ORDER BY partition) FROM kafka_lake.land('p100')),
          '0:30,2:30', 'land() lands partitions 0 and 2');
SELECT is(pg_temp.error_of($$SELECT * FROM kafka_lake.replay('p100', 1, 0, 5)$$), '55000',
          'replay() of partition 1, which it does not own, is refused');
SELECT is((SELECT count(*)::int FROM kafka_lake.p100_records WHERE partition = 1), 0, 'and lands nothing');
SELECT is((SELECT string_agg(DISTINCT partition::text, ',') FROM kafka_lake.replay('p100', '2026-08-01', '2026-08-10')),
          '0,2', 'replay() by time replays the owned partitions only');
SELECT is(pg_temp.error_of($$SELECT kafka_lake.set_partitions(NULL, '{1}')$$), '22004', 'set_partitions of a NULL source is 22004');
SELECT is(pg_temp.error_of($$SELECT kafka_lake.set_partitions('p100', '{}')$$), '22023', 'and of no partition 22023');

-- set_partitions waits for a transaction that is landing the source
SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
SELECT dblink_connect('p100_land', :'conninfo') \g /dev/null
SELECT dblink_exec('p100_land', 'BEGIN') \g /dev/null
SELECT * FROM dblink('p100_land', $$SELECT count(*) FROM kafka_lake.land('p100')$$) AS t(n bigint) \g /dev/null
SET lock_timeout = '300ms';
SELECT is(pg_temp.error_of($$SELECT kafka_lake.set_partitions('p100', NULL)$$), '55P03',
          'set_partitions waits for a transaction landing the source (here until its lock_timeout)');
RESET lock_timeout;
SELECT dblink_exec('p100_land', 'COMMIT') \g /dev/null
SELECT dblink_disconnect('p100_land') \g /dev/null

SELECT kafka_lake.set_partitions('p100', NULL) \g /dev/null
SELECT is((SELECT partitions FROM kafka_lake.sources WHERE source = 'p100'), NULL::int[],
          'set_partitions(NULL): every partition');
SELECT is((SELECT string_agg(partition || ':' || records, ',' ORDER BY partition) FROM kafka_lake.land('p100') WHERE records > 0),
          '1:30', 'the next land() lands partition 1 too');

SELECT * FROM finish();
SELECT kafka_lake.drop_source('p100', drop_landing => true) \g /dev/null
