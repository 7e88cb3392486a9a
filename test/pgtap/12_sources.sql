-- test/pgtap/12_sources.sql: create_source/drop_source.  (The name rules, and unknown servers,
-- contracts and sources, are sql/names.sql.)  Needs the broker.
SELECT plan(12);
SELECT kl_test.server('s_srv');

SELECT lives_ok($$SELECT kafka_lake.create_source('s_a', 's_srv', 'Valid.topic_name-1')$$,
  'a valid source is created');
SELECT is((SELECT group_id FROM kafka_lake.sources WHERE source = 's_a'), 'kafka_lake.' || current_database() || '.s_a',
  'the default group is kafka_lake.<database>.<source>');
SELECT has_foreign_table('kafka_lake', 's_a_records', 'its foreign table exists');
SELECT throws_ok($$SELECT kafka_lake.create_source('s_a', 's_srv', 't1')$$, '42710', NULL,
  'a second source of the same name is refused');

SELECT lives_ok($$SELECT kafka_lake.drop_source('s_a')$$, 'drop_source works');
SELECT hasnt_foreign_table('kafka_lake', 's_a_records', 'its foreign table is gone');

-- drop_landing removes the files when the transaction commits, not when a savepoint rolls back
SELECT kafka_lake.create_source('s_d', 's_srv', 'drop.topic');
SELECT kl_test.sh('touch ' || kl_test.landing('s_d') || '/keep-me');
CREATE FUNCTION pg_temp.drop_in_savepoint() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    PERFORM kafka_lake.drop_source('s_d', drop_landing => true);
    RAISE EXCEPTION 'roll the savepoint back';
  EXCEPTION WHEN raise_exception THEN
    NULL;
  END;
END $$;
SELECT pg_temp.drop_in_savepoint();
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('s_d')) f WHERE f = 'keep-me'), 1::bigint,
          'a drop_source rolled back with its savepoint removes nothing');
SELECT lives_ok($$SELECT kafka_lake.drop_source('s_d', drop_landing => true)$$, 'drop_source with drop_landing');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing(''), true, false) f WHERE f = 's_d'), 0::bigint,
          'removes the landing directory when the transaction commits');

-- the landing directory is the cluster's, sources are a database's: no sharing by accident
SELECT lives_ok($$SELECT kafka_lake.create_source('s_b', 's_srv', 'shared.topic')$$, 'source s_b in this database');
CREATE DATABASE kl_other;
SELECT format('dbname=kl_other host=%s port=%s', current_setting('unix_socket_directories'),
              current_setting('port')) AS other \gset
SELECT dblink_exec(:'other', 'CREATE EXTENSION kafka_lake CASCADE');
SELECT dblink_exec(:'other', format($$CREATE SERVER s_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)$$,
                                    kl_test.bootstrap()));
SELECT is(dblink_exec(:'other', $$DO 'BEGIN PERFORM kafka_lake.create_source(''s_b'', ''s_srv'', ''shared.topic''); END'$$, false),
          'ERROR', 'another database cannot create a source over this one''s landing directory');
SELECT is(dblink_exec(:'other', $$DO 'BEGIN PERFORM kafka_lake.create_source(''s_c'', ''s_srv'', ''shared.topic''); END'$$, false),
          'DO', 'under another name it can');
SELECT kafka_lake.drop_source('s_b', drop_landing => true);
SELECT dblink_exec(:'other', $$DO 'BEGIN PERFORM kafka_lake.drop_source(''s_c'', drop_landing => true); END'$$);
DROP DATABASE kl_other;

DROP SERVER s_srv;
SELECT * FROM finish();
