-- test/pgtap/37_drop_concurrent.sql: drop_source while another session's land() of the same
-- source is still open.  The drop waits for the lander's transaction and then removes
-- everything the lander added as well: no accepted_events row outlives its source, so a new
-- source can never meet one (not under the same name, not under the same source_id).  A land()
-- that starts while the drop is open waits for it, and then says the source is gone.
-- Needs the broker and dblink.
SET client_min_messages = warning;
SELECT plan(9);

SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
\o /dev/null
SELECT dblink_connect('dc37_land', :'conninfo');
SELECT dblink_connect('dc37_drop', :'conninfo');
SELECT dblink_exec('dc37_land', 'SET client_min_messages = warning');
SELECT dblink_exec('dc37_drop', 'SET client_min_messages = warning');
SELECT kl_test.server('dc37_kafka');
SELECT kl_test.broker('create dc37.t 2');
SELECT kafka_lake.create_source('dc37', 'dc37_kafka', 'dc37.t', group_id => 'dc37-group');
SELECT kafka_lake.produce('dc37_kafka', 'dc37.t', kl_test.event('evt-dc37-' || n), partition => n % 2)
  FROM generate_series(1, 6) n;
\o
SELECT source_id AS old_id FROM kafka_lake.sources WHERE source = 'dc37' \gset

-- wait (bounded) until a backend waits for a lock
SELECT pid AS drop_pid FROM dblink('dc37_drop', 'SELECT pg_backend_pid()') AS t(pid int) \gset
CREATE FUNCTION pg_temp.waits(p int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..600 LOOP
    IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p AND wait_event_type = 'Lock') THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN false;
END $$;

-- the lander's transaction stays open after land()
SELECT dblink_exec('dc37_land', 'BEGIN');
SELECT is((SELECT sum(accepted) FROM dblink('dc37_land', $$SELECT accepted FROM kafka_lake.land('dc37')$$)
                                  AS t(accepted int)), 6::bigint, 'the open transaction landed 6 accepted events');
SELECT dblink_send_query('dc37_drop', $$SELECT kafka_lake.drop_source('dc37')$$);
SELECT ok(pg_temp.waits(:drop_pid), 'drop_source waits for the open landing transaction');
SELECT dblink_exec('dc37_land', 'COMMIT');
SELECT is((SELECT r FROM dblink_get_result('dc37_drop') AS t(r text)), '', 'then the drop completes');
SELECT * FROM dblink_get_result('dc37_drop') AS t(r text);

SELECT is((SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = :old_id), 0::bigint,
          'no accepted_events row of the dropped source is left');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a
            WHERE NOT EXISTS (SELECT 1 FROM kafka_lake.sources s WHERE s.source_id = a.source_id)), 0::bigint,
          'no accepted_events row of any source that does not exist');

-- a new source of the same name lands the same events as accepted
\o /dev/null
SELECT kafka_lake.create_source('dc37', 'dc37_kafka', 'dc37.t', group_id => 'dc37-group-2');
\o
SELECT ok((SELECT source_id FROM kafka_lake.sources WHERE source = 'dc37') <> :old_id,
          'the new source has a new source_id');
\o /dev/null
SELECT * FROM kafka_lake.land('dc37');
\o
SELECT results_eq($$SELECT status, count(*)::int FROM kafka_lake.dc37_records GROUP BY 1$$,
                  $$VALUES ('accepted', 6)$$,
                  'a new source of the same name (adopting the files the drop kept) accepts the same six events');

-- a land() that starts while a drop is open waits for it and then finds the source gone
SELECT dblink_exec('dc37_drop', 'BEGIN');
SELECT * FROM dblink('dc37_drop', $$SELECT kafka_lake.drop_source('dc37', drop_landing => true)::text$$) AS t(r text);
SELECT pid AS land_pid FROM dblink('dc37_land', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT dblink_send_query('dc37_land', $$SELECT count(*) FROM kafka_lake.land('dc37')$$);
SELECT ok(pg_temp.waits(:land_pid), 'a land() of a source being dropped waits for the drop');
SELECT dblink_exec('dc37_drop', 'COMMIT');
SELECT throws_like($$SELECT * FROM dblink_get_result('dc37_land') AS t(n bigint)$$,
                   '%source "dc37" does not exist%', 'and then says the source does not exist');
SELECT * FROM dblink_get_result('dc37_land') AS t(n bigint);

SELECT dblink_disconnect('dc37_land');
SELECT dblink_disconnect('dc37_drop');
SELECT * FROM finish();
