-- test/pgtap/17_landing_dir.sql: the landing directory never takes over
-- PostgreSQL's own files.  kafka_lake.landing_dir is refused when it is the
-- data directory, contains it, or lies inside one of PostgreSQL's own
-- directories (sql/settings.sql), also through a symbolic link (here); a source
-- never claims an existing directory that is not a kafka_lake source
-- directory; and drop_source(..., drop_landing => true) removes a source's
-- directory only when it carries this database's marker.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(10);
-- the settings exist once the library is loaded (it is preloaded in the test cluster)
LOAD 'kafka_lake';

CREATE FUNCTION pg_temp.exists(path text) RETURNS boolean LANGUAGE sql AS $$
  SELECT kl_test.sh(format('test -e %s && echo yes || echo no', path)) = 'yes'
$$;
SELECT current_setting('data_directory') AS data \gset

-- refused settings (the others are sql/settings.sql): through a symbolic link
\o /dev/null
SELECT kl_test.sh(format('ln -sfn %s %s/kl17_link', :'data', (SELECT value FROM kl_test.env WHERE name = 'broker_dir')));
\o
SELECT throws_ok(format('SET kafka_lake.landing_dir = %L',
                        (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '/kl17_link'),
                 '22023', NULL, 'a symbolic link to the data directory is refused');
SELECT throws_ok(format('SET kafka_lake.landing_dir = %L',
                        (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '/kl17_link/base/x'),
                 '22023', NULL, 'and a path through it into base');
SELECT is(current_setting('kafka_lake.landing_dir'), 'kafka_lake', 'the setting kept its value');

RESET kafka_lake.landing_dir;

\o /dev/null
SELECT kl_test.server('sec17_kafka');
SELECT kl_test.broker('create sec17.events 1');
SELECT kl_test.fill('sec17.events', 5, 1);
-- an existing directory that is not a source's
SELECT kl_test.sh(format('mkdir -p %1$s && echo keep > %1$s/precious', kl_test.landing('sec17_taken')));
\o

SELECT throws_ok($$SELECT kafka_lake.create_source('sec17_taken', 'sec17_kafka', 'sec17.events')$$,
                 '42710', NULL, 'a source does not claim an existing directory that is not a source directory');
SELECT ok(pg_temp.exists(kl_test.landing('sec17_taken') || '/precious')
          AND NOT pg_temp.exists(kl_test.landing('sec17_taken') || '/.kafka_lake_source'),
          'that directory is left as it was');

-- a source whose marker went missing: drop_landing removes nothing
\o /dev/null
SELECT kafka_lake.create_source('sec17', 'sec17_kafka', 'sec17.events');
SELECT * FROM kafka_lake.land('sec17');
SELECT kl_test.sh(format('rm %s/.kafka_lake_source', kl_test.landing('sec17')));
\o
SELECT throws_ok($$SELECT kafka_lake.drop_source('sec17', drop_landing => true)$$, '55000', NULL,
                 'drop_landing of a directory without this database''s marker is refused');
SELECT ok(pg_temp.exists(kl_test.landing('sec17') || '/topic=sec17.events'), 'its files are still there');
-- another database's marker
\o /dev/null
SELECT kl_test.sh(format('echo "database 1 source sec17" > %s/.kafka_lake_source', kl_test.landing('sec17')));
\o
SELECT throws_ok($$SELECT kafka_lake.drop_source('sec17', drop_landing => true)$$, '55000', NULL,
                 'nor is one with another database''s marker removed');
SELECT ok(pg_temp.exists(kl_test.landing('sec17') || '/topic=sec17.events'), 'its files are still there');
-- this database's marker: removed
\o /dev/null
SELECT kl_test.sh(format('echo "database %s source sec17" > %s/.kafka_lake_source',
                         (SELECT oid FROM pg_database WHERE datname = current_database()),
                         kl_test.landing('sec17')));
SELECT kafka_lake.drop_source('sec17', drop_landing => true);
\o
SELECT ok(NOT pg_temp.exists(kl_test.landing('sec17')), 'with this database''s marker drop_landing removes the directory');

\o /dev/null
SELECT kl_test.sh(format('rm -rf %s %s/kl17_link %s/kl17_landing', kl_test.landing('sec17_taken'),
                         (SELECT value FROM kl_test.env WHERE name = 'broker_dir'),
                         (SELECT value FROM kl_test.env WHERE name = 'broker_dir')));
\o
DROP SERVER sec17_kafka;
SELECT * FROM finish();
