-- test/pgtap/25c_read_ahead.sql: land() reads the next partitions ahead of the one it lands (each
-- with a queue of its own).  A topic of 64 small partitions is landed by two sessions at the same
-- time (each skips the partitions the other owns, some of which it had read ahead, and finds
-- the group's offsets moved under others), twice, then by one session in windows of 7 records:
-- every coordinate lands exactly once, in its own partition's batch at its own offset (event n
-- of the test broker is at partition (n-1) mod 64, offset (n-1) div 64), and verify() is clean.
-- Needs the broker and dblink.
SELECT plan(6);
\o /dev/null
SELECT kl_test.broker('create ahead25c.t 64');
SELECT kl_test.server('ra_srv');
SELECT kafka_lake.create_source('ra_src', 'ra_srv', 'ahead25c.t');
SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
SELECT dblink_connect('ra_other', :'conninfo');
\o

CREATE TABLE pg_temp.results (round int, session text, partition int, status text, records int);
CREATE FUNCTION pg_temp.round(r int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dblink_send_query('ra_other', $q$SELECT partition, status, records FROM kafka_lake.land('ra_src')$q$);
  INSERT INTO pg_temp.results
    SELECT r, 'this', partition, status, records FROM kafka_lake.land('ra_src');
  INSERT INTO pg_temp.results
    SELECT r, 'other', * FROM dblink_get_result('ra_other') AS t(partition int, status text, records int);
  PERFORM * FROM dblink_get_result('ra_other') AS t(partition int, status text, records int);
END $$;

\o /dev/null
SELECT kl_test.fill('ahead25c.t', 1920, 64, 1);
SELECT pg_temp.round(1);
SELECT kl_test.fill('ahead25c.t', 1920, 64, 1921);
SELECT pg_temp.round(2);
SELECT kl_test.fill('ahead25c.t', 1920, 64, 3841);
SET kafka_lake.batch_max_records = 7;
INSERT INTO pg_temp.results SELECT 3, 'this', partition, status, records FROM kafka_lake.land('ra_src');
RESET kafka_lake.batch_max_records;
\o

SELECT is((SELECT sum(records) FROM pg_temp.results WHERE status = 'landed'), 5760::bigint,
          'the landings landed 5,760 records between them');
SELECT ok((SELECT count(DISTINCT session) FROM pg_temp.results WHERE status = 'landed' AND round <= 2) = 2,
          'both sessions landed partitions');
SELECT is((SELECT count(*) || ' ' || count(DISTINCT (partition, "offset")) FROM kafka_lake.coordinate_list WHERE source = 'ra_src'),
          '5760 5760', 'each coordinate exactly once');
SELECT is_empty($$SELECT partition, "offset", event_id FROM kafka_lake.ra_src_records
                   WHERE partition <> (substring(event_id FROM 14)::int - 1) % 64
                      OR "offset" <> (substring(event_id FROM 14)::int - 1) / 64
                      OR status <> 'accepted'$$,
                'every record is in its own partition at its own offset, accepted');
SELECT is((SELECT count(DISTINCT event_id) FROM kafka_lake.ra_src_records), 5760::bigint, '5,760 distinct events');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ra_src')$$, 'verify() is clean');
SELECT dblink_disconnect('ra_other') \g /dev/null
SELECT * FROM finish();
