-- test/pgtap/61_overlap.sql: overlapping land() calls on one source (two pg_cron runs) both
-- succeed.  The first call reads every watermark at its start and is held (by a trigger on its
-- first batch) while a second call lands partition 1 further; when the first reaches partition 1
-- it must see what the second landed and committed, not mistake it for a re-created topic.
-- Then a real refusal after a partition was committed: the error says exactly what this call
-- landed and committed before it.  Uses dblink.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(12);
SELECT kl_test.broker('create ov61.t 2');
SELECT kl_test.server('ov61_srv');
SELECT kafka_lake.create_source('ov61', 'ov61_srv', 'ov61.t');
SELECT kafka_lake.produce('ov61_srv', 'ov61.t', kl_test.event(format('evt-ov61-%s-%s', p, n)), partition => p)
  FROM generate_series(0, 1) p, generate_series(1, 3) n;

-- hold a land() at its first batch of partition 0 while the test holds advisory lock 6161
CREATE FUNCTION kl_test.ov61_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.partition = 0 AND NEW.source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'ov61') THEN
    PERFORM pg_advisory_lock(6161);
    PERFORM pg_advisory_unlock(6161);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ov61_hold AFTER INSERT ON kafka_lake.batches FOR EACH ROW EXECUTE FUNCTION kl_test.ov61_hold();

SELECT dblink_connect('ov61', format('dbname=%s host=%s port=%s', current_database(),
                                     current_setting('unix_socket_directories'), current_setting('port')));
SELECT pg_advisory_lock(6161);
SELECT dblink_send_query('ov61', $$SELECT partition, status, records, committed_offset FROM kafka_lake.land('ov61')$$);
-- wait until the first call is held at its batch of partition 0
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 6161 AND NOT granted);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT ok(EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 6161 AND NOT granted),
          '(the first call is held at partition 0)');

-- meanwhile partition 1 grows and a second call lands it
SELECT kafka_lake.produce('ov61_srv', 'ov61.t', kl_test.event(format('evt-ov61-1-%s', n)), partition => 1)
  FROM generate_series(4, 5) n;
SELECT results_eq($$SELECT partition, status, records, committed_offset FROM kafka_lake.land('ov61') ORDER BY 1$$,
                  $$VALUES (0, 'locked', 0, NULL::bigint), (1, 'landed', 5, 5::bigint)$$,
                  'the second call skips the busy partition 0 and lands partition 1 to offset 5');
SELECT pg_advisory_unlock(6161);

-- the first call goes on
CREATE TABLE pg_temp.first_call (partition int, status text, records int, committed_offset bigint);
CREATE TABLE pg_temp.first_error (state text, message text);
DO $$
BEGIN
  INSERT INTO pg_temp.first_call SELECT * FROM dblink_get_result('ov61')
    AS t(partition int, status text, records int, committed_offset bigint);
EXCEPTION WHEN query_canceled OR others THEN
  INSERT INTO pg_temp.first_error VALUES (SQLSTATE, SQLERRM);
END $$;
SELECT is((SELECT state || ': ' || message FROM pg_temp.first_error), NULL,
          'the first call succeeds too (no false "re-created topic")');
SELECT results_eq($$SELECT partition, status, records, committed_offset FROM pg_temp.first_call ORDER BY 1$$,
                  $$VALUES (0, 'landed', 3, 3::bigint), (1, 'empty', 0, 5::bigint)$$,
                  'it lands partition 0 and finds partition 1 landed up to offset 5');
SELECT dblink_disconnect('ov61');
DROP TRIGGER ov61_hold ON kafka_lake.batches;
DROP FUNCTION kl_test.ov61_hold();

SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'ov61'), 8::bigint, 'eight coordinates landed');
SELECT is((SELECT count(DISTINCT (partition, "offset")) FROM kafka_lake.coordinate_list WHERE source = 'ov61'),
          8::bigint, 'each once');
SELECT results_eq($$SELECT partition, committed_offset FROM kafka_lake.lag('ov61') ORDER BY 1$$,
                  $$VALUES (0, 3::bigint), (1, 5::bigint)$$, 'both partitions are committed to their end');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ov61')$$, 'verify finds nothing wrong');

-- a real refusal on partition 1 after partition 0 was landed and committed by the same call:
-- the catalog claims partition 1 was committed far beyond its end (tampering, for the test)
SELECT kafka_lake.produce('ov61_srv', 'ov61.t', kl_test.event(format('evt-ov61-0-%s', n)), partition => 0)
  FROM generate_series(4, 6) n;
INSERT INTO kafka_lake.offset_commits (source_id, topic, partition, committed_offset)
  SELECT source_id, 'ov61.t', 1, 100 FROM kafka_lake.sources WHERE source = 'ov61';
CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
  state := ''; message := ''; detail := ''; hint := '';
  EXECUTE sql;
EXCEPTION WHEN query_canceled OR others THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                          detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('ov61')$$) \gset refused_
SELECT is(:'refused_state'::text, '55000', 'a partition that ends below what the catalog remembers is refused');
SELECT alike(:'refused_detail'::text, '%this call committed partition 0 to offset 6%',
             'the error says what this call committed before it');
SELECT unalike(:'refused_detail'::text, '%othing was%committed%', 'and does not claim that nothing was committed');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('ov61') WHERE partition = 0), 6::bigint,
          '(partition 0 is indeed committed to offset 6)');
DELETE FROM kafka_lake.offset_commits WHERE committed_offset = 100
   AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'ov61');
SELECT kafka_lake.drop_source('ov61', drop_landing => true);
SELECT * FROM finish();
