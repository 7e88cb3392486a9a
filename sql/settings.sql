--
-- settings: kafka_lake.landing_dir never takes over PostgreSQL's own files.
-- It is refused when it is the data directory, contains it, or lies inside
-- one of PostgreSQL's own directories (also through a relative path), and
-- the setting keeps its value.  (Through a symbolic link too: that takes a
-- shell, test/pgtap/17_landing_dir.sql.)  Needs no broker.
--
CREATE EXTENSION kafka_lake;
LOAD 'kafka_lake';

-- the SQLSTATE, message and detail of the error a statement raises, with
-- the data directory's path written DATADIR (and its parent DATADIR/..)
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  detail text;
  data text := current_setting('data_directory');
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN replace(replace(SQLSTATE || ': ' || SQLERRM || coalesce(' | DETAIL: ' || nullif(detail, ''), ''),
                         data, 'DATADIR'),
                 '"' || regexp_replace(data, '/[^/]*$', '') || '"', '"DATADIR/.."');
END $$;

-- refused: the data directory, what contains it, PostgreSQL's own directories
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = '.'$$);
SELECT pg_temp.error_of(format('SET kafka_lake.landing_dir = %L', current_setting('data_directory')));
SELECT pg_temp.error_of(format('SET kafka_lake.landing_dir = %L', current_setting('data_directory') || '/'));
SELECT pg_temp.error_of(format('SET kafka_lake.landing_dir = %L', current_setting('data_directory') || '/..'));
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = '/'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'base'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'global/kl'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'pg_wal'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'pg_xact/x/y'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'pg_tblspc'$$);
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = 'kafka_lake/../base'$$);
SELECT pg_temp.error_of(format('SET kafka_lake.landing_dir = %L',
                               current_setting('data_directory') || '/./pg_multixact/'));
SHOW kafka_lake.landing_dir;

-- accepted: a directory of its own, under the data directory or outside it
SET kafka_lake.landing_dir = 'kafka_lake_elsewhere';
SHOW kafka_lake.landing_dir;
SET kafka_lake.landing_dir = '/nonexistent/kafka_lake_regress';
SHOW kafka_lake.landing_dir;
RESET kafka_lake.landing_dir;

-- the cut of a batch and the fault injection points
SELECT pg_temp.error_of($$SET kafka_lake.batch_max_records = 0$$);
SELECT pg_temp.error_of($$SET kafka_lake.fault_injection = 'after_lunch'$$);
SET kafka_lake.fault_injection = 'after_rename';
SET kafka_lake.fault_injection = '';

DROP EXTENSION kafka_lake;
