-- test/pgtap/60_group_ids.sql: sources never share a consumer group by accident, and a group
-- that moves under a source is an ERROR, never a silent skip.
--  * the default group is kafka_lake.<database>.<source>, stored at creation (a database rename
--    changes nothing), so two databases with a source of the same name land independently;
--  * create_source refuses a group another source of this database uses, and group ids Kafka
--    cannot carry (over 32,767 bytes, control characters);
--  * a source given an existing group on purpose starts at the group's committed offset, and says
--    so (an "adopted" row and a NOTICE);
--  * when the group's offset moves past what a source landed (another consumer commits it), land()
--    stops with 55000 naming the group; replay() of the skipped offsets lets it go on.
-- Uses a second database through dblink.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(25);
SELECT kl_test.broker('create g60.t 1');
SELECT kl_test.server('g60_srv');

-- the default group
SELECT kafka_lake.create_source('g60_a', 'g60_srv', 'g60.t');
SELECT is((SELECT group_id FROM kafka_lake.sources WHERE source = 'g60_a'),
          'kafka_lake.' || current_database() || '.g60_a',
          'the default group is kafka_lake.<database>.<source>');

-- a group another source of this database uses is refused
SELECT throws_ok($$SELECT kafka_lake.create_source('g60_b', 'g60_srv', 'g60.t',
                                                   group_id => 'kafka_lake.' || current_database() || '.g60_a')$$,
                 '42710', NULL, 'a group id another source of this database uses is refused');
CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
  state := ''; message := ''; detail := ''; hint := '';
  EXECUTE sql;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                          detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;
SELECT alike((pg_temp.error_of($$SELECT kafka_lake.create_source('g60_b', 'g60_srv', 'g60.t',
                                  group_id => 'kafka_lake.' || current_database() || '.g60_a')$$)).hint,
             '%group_id%', 'with a hint');

-- group ids Kafka cannot carry are refused before they are stored
SELECT throws_ok(format($$SELECT kafka_lake.create_source('g60_b', 'g60_srv', 'g60.t', group_id => %L)$$,
                        repeat('g', 40000)),
                 '42622', NULL, 'a 40,000-character group id is refused');
SELECT throws_ok(format($$SELECT kafka_lake.create_source('g60_b', 'g60_srv', 'g60.t', group_id => %L)$$,
                        repeat('é', 16384)),
                 '42622', NULL, 'so is a group id of 16,384 characters that take 32,768 bytes');
SELECT throws_ok($$SELECT kafka_lake.create_source('g60_b', 'g60_srv', 'g60.t', group_id => E'lake\ngroup')$$,
                 '42602', NULL, 'a group id with a control character is refused');
SELECT is((SELECT count(*) FROM kafka_lake.sources WHERE source = 'g60_b'), 0::bigint, 'nothing was stored');
SELECT lives_ok(format($$SELECT kafka_lake.create_source('g60_long', 'g60_srv', 'g60.t', group_id => %L)$$,
                       repeat('g', 32767)),
                'a group id of 32,767 bytes is accepted');

SELECT kafka_lake.produce('g60_srv', 'g60.t', kl_test.event(format('evt-g60-%s', n))) FROM generate_series(1, 5) n;
SELECT results_eq($$SELECT status, records, committed_offset FROM kafka_lake.land('g60_long', timeout => '20 s')$$,
                  $$VALUES ('landed', 5, 5::bigint)$$, 'and lands and commits');
SELECT kafka_lake.drop_source('g60_long', drop_landing => true);
SELECT results_eq($$SELECT status, records, committed_offset FROM kafka_lake.land('g60_a')$$,
                  $$VALUES ('landed', 5, 5::bigint)$$, 'g60_a lands five records');

-- a second database with a source of the same name over the same topic
CREATE DATABASE kl_g60;
SELECT format('dbname=%%s host=%s port=%s', current_setting('unix_socket_directories'),
              current_setting('port')) AS conn_fmt \gset
SELECT dblink_connect('g60', format(:'conn_fmt', 'kl_g60'));
SELECT dblink_exec('g60', 'CREATE EXTENSION kafka_lake CASCADE');
SELECT dblink_exec('g60', format('SET kafka_lake.landing_dir = %L',
                                 current_setting('data_directory') || '/kafka_lake_g60'));
SELECT dblink_exec('g60', format($$CREATE SERVER g60_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)$$,
                                 kl_test.bootstrap()));
SELECT * FROM dblink('g60', $$SELECT kafka_lake.create_source('g60_a', 'g60_srv', 'g60.t')::text$$) AS t(v text);
SELECT is((SELECT * FROM dblink('g60', $$SELECT group_id FROM kafka_lake.sources WHERE source = 'g60_a'$$) AS t(g text)),
          'kafka_lake.kl_g60.g60_a', 'the other database''s source has a group of its own');
SELECT results_eq($$SELECT * FROM dblink('g60', 'SELECT status, records, committed_offset FROM kafka_lake.land(''g60_a'')')
                      AS t(status text, records int, committed_offset bigint)$$,
                  $$VALUES ('landed', 5, 5::bigint)$$,
                  'and lands the five records this database landed, too');

-- a rename of the database changes nothing
SELECT dblink_disconnect('g60');
ALTER DATABASE kl_g60 RENAME TO kl_g60_renamed;
SELECT dblink_connect('g60', format(:'conn_fmt', 'kl_g60_renamed'));
SELECT dblink_exec('g60', format('SET kafka_lake.landing_dir = %L',
                                 current_setting('data_directory') || '/kafka_lake_g60'));
SELECT is((SELECT * FROM dblink('g60', $$SELECT group_id FROM kafka_lake.sources WHERE source = 'g60_a'$$) AS t(g text)),
          'kafka_lake.kl_g60.g60_a', 'after a rename of its database a source keeps its group');

-- a source of this database given the other database's group on purpose: it starts at the
-- group's committed offset and says so
SELECT kafka_lake.create_source('g60_m', 'g60_srv', 'g60.t', group_id => 'kafka_lake.kl_g60.g60_a');
SELECT kafka_lake.produce('g60_srv', 'g60.t', kl_test.event(format('evt-g60-%s', n))) FROM generate_series(6, 8) n;
SET log_min_messages = notice;
SELECT results_eq($$SELECT status, records, first_offset, last_offset, committed_offset FROM kafka_lake.land('g60_m')$$,
                  $$VALUES ('adopted', 0, NULL::bigint, NULL::bigint, 5::bigint), ('landed', 3, 5::bigint, 7::bigint, 8::bigint)$$,
                  'a new source given an existing group starts at its committed offset: an adopted row, then what is new');
RESET log_min_messages;
SELECT alike(kl_test.server_log(),
             '%NOTICE:  source "g60_m" starts partition 0 of topic "g60.t" at offset 5, where consumer group "kafka_lake.kl_g60.g60_a" had committed%',
             'and a NOTICE');

-- the other database's source now finds its group moved past what it landed
SELECT is((SELECT * FROM dblink('g60', $$SELECT string_agg(status, ',') FROM kafka_lake.land('g60_a')$$, false) AS t(s text)),
          NULL, 'the other database''s land fails');
SELECT alike(dblink_error_message('g60'), '%consumer group "kafka_lake.kl_g60.g60_a"%',
             'because its group moved past what it landed');
SELECT kafka_lake.produce('g60_srv', 'g60.t', kl_test.event('evt-g60-9'));
SELECT is((SELECT * FROM dblink('g60', $$SELECT count(*) FROM kafka_lake.coordinate_list$$) AS t(n bigint)),
          5::bigint, 'it landed nothing of what it did not see');

-- this database's g60_a: its group was moved by a consumer of the other database
SELECT * FROM dblink('g60', $$SELECT kafka_lake.drop_source('g60_a', drop_landing => true)::text$$) AS t(v text);
SELECT * FROM dblink('g60', $$SELECT kafka_lake.create_source('g60_x', 'g60_srv', 'g60.t', group_id => 'kafka_lake.kl_test.g60_a')::text$$) AS t(v text);
SELECT results_eq($$SELECT * FROM dblink('g60', 'SELECT status, records, committed_offset FROM kafka_lake.land(''g60_x'')')
                      AS t(status text, records int, committed_offset bigint)$$,
                  $$VALUES ('adopted', 0, 5::bigint), ('landed', 4, 9::bigint)$$,
                  '(a source of the other database, given this one''s group, lands offsets 5 to 8)');
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('g60_a')$$) \gset moved_
SELECT is(:'moved_state'::text, '55000', 'land of a source whose group moved past what it landed fails with 55000');
SELECT alike(:'moved_message'::text, '%consumer group "kafka_lake.kl_test.g60_a"%offset 9%', 'naming the group and where it stands');
SELECT alike(:'moved_detail'::text, '%another consumer%', 'saying who else may be using it');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'g60_a'), 5::bigint,
          'no record was skipped silently: nothing new is landed or committed');

-- replaying the offsets the other consumer took lets land go on
SELECT is((SELECT sum(records) FROM kafka_lake.replay('g60_a', 0, 5, 8)), 4::bigint, 'replay lands offsets 5 to 8');
SELECT results_eq($$SELECT status, committed_offset FROM kafka_lake.land('g60_a')$$,
                  $$VALUES ('empty', 9::bigint)$$, 'after which land goes on');

SELECT * FROM dblink('g60', $$SELECT kafka_lake.drop_source('g60_x', drop_landing => true)::text$$) AS t(v text);
SELECT dblink_disconnect('g60');
DROP DATABASE kl_g60_renamed;
SELECT kafka_lake.drop_source('g60_m', drop_landing => true);
SELECT kafka_lake.drop_source('g60_a', drop_landing => true);
SELECT * FROM finish();
