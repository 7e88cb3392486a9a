-- test/pgtap/25_concurrency.sql: two sessions land a 4-partition topic of 100,000 events at the
-- same time; partitions are owned one caller at a time and every coordinate lands exactly once.
-- The broker keeps ~5 MiB per partition, so the events come in two rounds of 50,000.
-- Needs the broker and dblink.
SELECT plan(9);
SELECT kl_test.broker('create conc.t 4');
SELECT kl_test.server('c_srv');
SELECT kafka_lake.create_source('c_src', 'c_srv', 'conc.t');
SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
SELECT dblink_connect('other', :'conninfo');
SELECT dblink_exec('other', 'SET kafka_lake.batch_max_records = 2000');
SET kafka_lake.batch_max_records = 2000;

CREATE TABLE pg_temp.results (round int, session text, partition int, status text, records int);

CREATE FUNCTION pg_temp.round(r int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dblink_send_query('other', $q$SELECT partition, status, records FROM kafka_lake.land('c_src', max_records => 1000000)$q$);
  INSERT INTO pg_temp.results
    SELECT r, 'this', partition, status, records FROM kafka_lake.land('c_src', max_records => 1000000);
  INSERT INTO pg_temp.results
    SELECT r, 'other', * FROM dblink_get_result('other') AS t(partition int, status text, records int);
  PERFORM * FROM dblink_get_result('other') AS t(partition int, status text, records int);
END $$;

SELECT kl_test.fill('conc.t', 50000, 4, 1);
SELECT pg_temp.round(1);
SELECT kl_test.fill('conc.t', 50000, 4, 50001);
SELECT pg_temp.round(2);

SELECT is((SELECT sum(records) FROM pg_temp.results WHERE status = 'landed'), 100000::bigint,
          'the two sessions landed 100,000 records between them');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'c_src'), 100000::bigint,
          '100,000 coordinates are landed');
SELECT is((SELECT count(*) FROM (SELECT DISTINCT partition, "offset" FROM kafka_lake.coordinate_list
                                 WHERE source = 'c_src') d), 100000::bigint,
          'each exactly once');
SELECT is((SELECT count(DISTINCT event_id) FROM kafka_lake.c_src_records WHERE status = 'accepted'),
          100000::bigint, '100,000 distinct accepted events');
SELECT ok((SELECT count(*) FROM pg_temp.results WHERE status = 'locked') > 0,
          'a busy partition was reported locked instead of waited for');
SELECT ok((SELECT count(DISTINCT session) FROM pg_temp.results WHERE status = 'landed') = 2,
          'both sessions landed partitions');
SELECT results_eq($$SELECT partition, committed_offset FROM kafka_lake.lag('c_src') ORDER BY 1$$,
                  $$VALUES (0, 25000::bigint), (1, 25000::bigint), (2, 25000::bigint), (3, 25000::bigint)$$,
                  'every partition is committed to its end');
SELECT is((SELECT sum(records) FROM kafka_lake.land('c_src')), 0::bigint, 'a third land finds nothing left');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c_src')$$, 'verify finds nothing wrong');

SELECT dblink_disconnect('other');
RESET kafka_lake.batch_max_records;
SELECT * FROM finish();
