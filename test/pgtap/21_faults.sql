-- test/pgtap/21_faults.sql: a fault at each step of the landing protocol (I1, I5, I8).
-- After the next land, the landed coordinates, the accepted set and the committed offsets equal
-- those of a run without the fault; no staging directory is left; verify reports nothing.
-- Needs the broker.
SELECT plan(4 * 8 + 2);
SELECT kl_test.broker('create faults.t 2');
SELECT kl_test.server('f_srv');

-- 2 partitions: valid events, a duplicate event_id and a contract violation in each
SELECT kafka_lake.produce('f_srv', 'faults.t', kl_test.event(format('evt-f-%s', n)), partition => n % 2)
FROM generate_series(1, 20) AS n;
SELECT kafka_lake.produce('f_srv', 'faults.t', kl_test.event('evt-f-3'), partition => 0);
SELECT kafka_lake.produce('f_srv', 'faults.t', convert_to('{"event_id": 7}', 'UTF8'), partition => 1);
SET kafka_lake.batch_max_records = 4;		-- several batches per partition

-- the reference: no fault
SELECT kafka_lake.create_source('f_control', 'f_srv', 'faults.t');
SELECT ok((SELECT sum(records) FROM kafka_lake.land('f_control')) = 22, 'the reference run lands 22 records');

CREATE FUNCTION pg_temp.coordinates(src text) RETURNS TABLE (p int, o bigint, s text, f text)
LANGUAGE sql AS $$
  SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = src
$$;
CREATE FUNCTION pg_temp.accepted(src text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT event_id FROM kafka_lake.%I WHERE status = ''accepted''', src || '_records');
END $$;
CREATE FUNCTION pg_temp.committed(src text) RETURNS TABLE (p int, c bigint)
LANGUAGE sql AS $$ SELECT partition, committed_offset FROM kafka_lake.lag(src) $$;

CREATE FUNCTION pg_temp.check_fault(point text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  src text := 'f_' || point;
BEGIN
  PERFORM kafka_lake.create_source(src, 'f_srv', 'faults.t');
  PERFORM set_config('kafka_lake.fault_injection', point, false);
  RETURN NEXT throws_ok(format('SELECT * FROM kafka_lake.land(%L)', src), 'XX000',
                        'kafka_lake fault injection: ' || point, point || ': the land fails at that step');
  RETURN NEXT is(current_setting('kafka_lake.fault_injection'), point, point || ': (the setting stays, disarmed)');
  RETURN NEXT lives_ok(format('SELECT * FROM kafka_lake.land(%L)', src), point || ': the next land succeeds');
  RETURN NEXT set_eq(format('SELECT * FROM pg_temp.coordinates(%L)', src),
                     'SELECT * FROM pg_temp.coordinates(''f_control'')',
                     point || ': the landed coordinates equal the reference');
  RETURN NEXT set_eq(format('SELECT * FROM pg_temp.accepted(%L)', src),
                     'SELECT * FROM pg_temp.accepted(''f_control'')',
                     point || ': the accepted set equals the reference');
  RETURN NEXT set_eq(format('SELECT * FROM pg_temp.committed(%L)', src),
                     'SELECT * FROM pg_temp.committed(''f_control'')',
                     point || ': the committed offsets equal the reference');
  RETURN NEXT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing(src) || '/.staging')), 0::bigint,
                 point || ': no staging directory is left');
  RETURN NEXT is_empty(format('SELECT * FROM kafka_lake.verify(%L)', src), point || ': verify reports nothing');
END $$;

SELECT * FROM pg_temp.check_fault('after_staging_write');
SELECT * FROM pg_temp.check_fault('after_rename');
SELECT * FROM pg_temp.check_fault('after_landing_before_commit');
SELECT * FROM pg_temp.check_fault('after_commit');

-- a fault fires once: the second land after SET works
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'f_after_commit' AND b.landed_by = 'recover'), 1::bigint,
          'after_commit: the batch the aborted transaction forgot was adopted from disk');

RESET kafka_lake.fault_injection;
RESET kafka_lake.batch_max_records;
SELECT * FROM finish();
