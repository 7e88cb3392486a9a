-- test/pgtap/91_compact_faults.sql: a fault at each step of compact() ends with exactly one
-- visible copy of every coordinate.  Before the commit (compact_after_write, _after_rename,
-- _after_catalog) the ERROR rolls back the swap and the new directory goes with it; after the
-- commit (compact_before_remove, compact_during_remove) the replaced directories stay on disk
-- as a crash would leave them, verify() says so, and recovery (recover(), or the next land())
-- removes them, never adopts them.  Each time the coordinates, the rows of the foreign table and
-- the disk equal a landing without compaction, and verify() is clean.  (A backend killed at
-- each step: test/t/90_compact_killed.sh.)  Needs the broker.
SET client_min_messages = error;
SELECT plan(5 * 11 + 7);

\o /dev/null
SELECT kl_test.broker('create cf91.t 2');
SELECT kl_test.server('cf91_kafka');
SELECT kl_test.fill('cf91.t', 40, 2, 1, '--bad-every 9');
SELECT kl_test.fill('cf91.t', 6, 2, 1);
SELECT kafka_lake.create_source('cf91_ref', 'cf91_kafka', 'cf91.t');
SELECT kafka_lake.set_compression('cf91_ref', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT * FROM kafka_lake.land('cf91_ref');
\o

-- every coordinate on disk, from the manifests of the batch directories (copies counted twice)
CREATE FUNCTION pg_temp.disk_coordinates(src text) RETURNS TABLE (p int, o bigint, f text)
LANGUAGE sql AS $$
  SELECT (e->>'partition')::int, (e->>'offset')::bigint, e->>'fingerprint'
  FROM (VALUES (0), (1)) v(part),
       LATERAL pg_ls_dir(kl_test.landing(src) || '/topic=cf91.t/partition=' || part) d,
       LATERAL json_array_elements(pg_read_file(kl_test.landing(src) || '/topic=cf91.t/partition=' ||
                                                part || '/' || d || '/manifest.json')::json->'entries') e
$$;
CREATE FUNCTION pg_temp.coordinates(src text) RETURNS TABLE (p int, o bigint, s text, f text)
LANGUAGE sql AS $$
  SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = src
$$;
CREATE FUNCTION pg_temp.rows(src text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT concat_ws(''|'', partition, "offset", status, event_id, event::text, raw_value)
                               FROM kafka_lake.%I', src || '_records');
END $$;

-- each point: a source of its own, landed 4 records a batch, then compact() with the fault, in a
-- statement of its own (its transaction commits or aborts before anything is checked)
CREATE FUNCTION pg_temp.run_fault(point text, after_commit boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  src text := 'cf91_' || point;
BEGIN
  PERFORM kafka_lake.create_source(src, 'cf91_kafka', 'cf91.t');
  PERFORM kafka_lake.set_compression(src, 'none');  -- plain JSONL: the test reads the files' bytes
  PERFORM set_config('kafka_lake.batch_max_records', '4', false);
  PERFORM * FROM kafka_lake.land(src);
  PERFORM set_config('kafka_lake.batch_max_records', '50000', false);
  PERFORM set_config('kafka_lake.fault_injection', point, false);
  IF after_commit THEN
    RETURN NEXT is((SELECT count(*) FROM kafka_lake.compact(src)), 2::bigint,
                   point || ': compact() commits its two batches');
  ELSE
    RETURN NEXT throws_ok(format('SELECT * FROM kafka_lake.compact(%L)', src), 'XX000',
                          'kafka_lake fault injection: ' || point, point || ': compact() fails at that step');
  END IF;
END $$;

CREATE FUNCTION pg_temp.check_fault(point text, after_commit boolean, leftovers int) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  src text := 'cf91_' || point;
  sid int;
BEGIN
  SELECT source_id INTO sid FROM kafka_lake.sources WHERE source = src;
  IF after_commit THEN
    RETURN NEXT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = sid AND landed_by = 'compact'),
                   2::bigint, point || ': the catalog lists the compacted batches alone');
  ELSE
    RETURN NEXT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = sid AND landed_by = 'land'), 12::bigint,
                   point || ': the catalog still lists the 12 landed batches');
  END IF;
  RETURN NEXT is((SELECT count(*) FROM pg_temp.disk_coordinates(src)), 46::bigint + leftovers,
                 point || ': the disk holds ' ||
                 CASE WHEN leftovers = 0 THEN 'one copy of each coordinate'
                      ELSE 'the compacted batches and ' || leftovers || ' coordinates of replaced ones' END);
  IF leftovers = 0 THEN
    RETURN NEXT is_empty(format('SELECT * FROM kafka_lake.verify(%L)', src), point || ': verify() is clean');
    RETURN NEXT is_empty(format('SELECT * FROM kafka_lake.recover(%L)', src), point || ': recover() has nothing to do');
  ELSE
    RETURN NEXT results_eq(format('SELECT DISTINCT problem FROM kafka_lake.verify(%L)', src),
                           $v$VALUES ('compaction_leftover')$v$,
                           point || ': verify() reports the replaced directories as compaction leftovers');
    RETURN NEXT results_eq(format('SELECT action, count(*)::int FROM kafka_lake.recover(%L) GROUP BY 1', src),
                           format($v$VALUES ('removed_replaced', %s)$v$,
                                  (SELECT count(*) FROM kafka_lake.verify(src))),
                           point || ': recover() removes them, adopting none');
  END IF;
  RETURN NEXT bag_eq(format('SELECT p, o, f FROM pg_temp.disk_coordinates(%L)', src),
                     'SELECT p, o, f FROM pg_temp.coordinates(''cf91_ref'')',
                     point || ': then the disk holds every coordinate once');
  RETURN NEXT bag_eq(format('SELECT * FROM pg_temp.coordinates(%L)', src),
                     'SELECT * FROM pg_temp.coordinates(''cf91_ref'')',
                     point || ': the catalog lists every coordinate once, with its fingerprint and status');
  RETURN NEXT bag_eq(format('SELECT * FROM pg_temp.rows(%L)', src), 'SELECT * FROM pg_temp.rows(''cf91_ref'')',
                     point || ': the foreign table reads what a landing without compaction reads');
  RETURN NEXT is_empty(format('SELECT * FROM kafka_lake.verify(%L)', src), point || ': verify() is clean after recover()');
  RETURN NEXT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing(src) || '/.staging')), 0::bigint,
                 point || ': no staging directory is left');
  RETURN NEXT is((SELECT count(*) FROM kafka_lake.compact(src)), CASE WHEN after_commit THEN 0 ELSE 2 END::bigint,
                 point || CASE WHEN after_commit THEN ': a second compact() has nothing to do'
                               ELSE ': the next compact() succeeds' END);
END $$;

SELECT * FROM pg_temp.run_fault('compact_after_write', false);
SELECT * FROM pg_temp.check_fault('compact_after_write', false, 0);
SELECT * FROM pg_temp.run_fault('compact_after_rename', false);
SELECT * FROM pg_temp.check_fault('compact_after_rename', false, 0);
SELECT * FROM pg_temp.run_fault('compact_after_catalog', false);
SELECT * FROM pg_temp.check_fault('compact_after_catalog', false, 0);
SELECT * FROM pg_temp.run_fault('compact_before_remove', true);
SELECT * FROM pg_temp.check_fault('compact_before_remove', true, 23);
SELECT * FROM pg_temp.run_fault('compact_during_remove', true);
SELECT * FROM pg_temp.check_fault('compact_during_remove', true, 19);

-- the next land() removes what a committed compaction left, as recover() does
\o /dev/null
SELECT kafka_lake.create_source('cf91_land', 'cf91_kafka', 'cf91.t');
SELECT kafka_lake.set_compression('cf91_land', 'none');  -- plain JSONL: the test reads the files' bytes
SET kafka_lake.batch_max_records = 4;
SELECT * FROM kafka_lake.land('cf91_land');
RESET kafka_lake.batch_max_records;
SET kafka_lake.fault_injection = 'compact_before_remove';
SELECT * FROM kafka_lake.compact('cf91_land');
\o
SELECT is((SELECT count(*) FROM pg_temp.disk_coordinates('cf91_land')), 69::bigint,
          'a committed compaction left the replaced directories');
SELECT results_eq($$SELECT status, count(*)::int FROM kafka_lake.land('cf91_land') GROUP BY 1$$,
                  $$VALUES ('empty', 2)$$, 'the next land() finds nothing new');
SELECT bag_eq($$SELECT p, o, f FROM pg_temp.disk_coordinates('cf91_land')$$,
              $$SELECT p, o, f FROM pg_temp.coordinates('cf91_ref')$$,
              'and its recovery removed the replaced directories');

-- recovery in the transaction of a compaction (that left the replaced directories) leaves them
-- alone: a rollback brings their rows back
\o /dev/null
SELECT kafka_lake.create_source('cf91_rb', 'cf91_kafka', 'cf91.t');
SELECT kafka_lake.set_compression('cf91_rb', 'none');  -- plain JSONL: the test reads the files' bytes
SET kafka_lake.batch_max_records = 4;
SELECT * FROM kafka_lake.land('cf91_rb');
RESET kafka_lake.batch_max_records;
BEGIN;
SET LOCAL kafka_lake.fault_injection = 'compact_before_remove';
SELECT * FROM kafka_lake.compact('cf91_rb');
SELECT * FROM kafka_lake.recover('cf91_rb');
SELECT * FROM kafka_lake.verify('cf91_rb');
ROLLBACK;
\o
SELECT bag_eq($$SELECT p, o, f FROM pg_temp.disk_coordinates('cf91_rb')$$,
              $$SELECT p, o, f FROM pg_temp.coordinates('cf91_ref')$$,
              'a compaction rolled back after recover() in its transaction: every coordinate on disk once');
SELECT bag_eq($$SELECT * FROM pg_temp.rows('cf91_rb')$$, $$SELECT * FROM pg_temp.rows('cf91_ref')$$,
              'and the foreign table reads every row');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('cf91_rb')$$, 'and verify() is clean');

-- a pause instead of an ERROR is a setting like the others (test/t/90_compact_killed.sh uses it)
SELECT lives_ok($$SET kafka_lake.fault_injection = 'pause:compact_after_rename'$$,
                'pause:<point> is accepted for every point');
RESET kafka_lake.fault_injection;
SELECT * FROM finish();
