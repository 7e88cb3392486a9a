--
-- names: what create_source() refuses before it records anything.  A
-- source name is [a-z_][a-z0-9_]* and short enough for its foreign table
-- kafka_lake.<source>_records; a topic follows Kafka's rule
-- [A-Za-z0-9._-]{1,249}, not "." or ".."; the server must exist and the
-- contract be known.  Needs no broker (nothing is recorded, no server is
-- connected to).
--
CREATE EXTENSION kafka_lake;

-- the SQLSTATE and message of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE SERVER regress_s_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');

-- source names
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('Bad-Name', 'regress_s_srv', 't1')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('../etc', 'regress_s_srv', 't1')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('1abc', 'regress_s_srv', 't1')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('', 'regress_s_srv', 't1')$$);
SELECT pg_temp.error_of(format($$SELECT kafka_lake.create_source(%L, 'regress_s_srv', 't1')$$, repeat('a', 56)));
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source(NULL, 'regress_s_srv', 't1')$$);

-- topics
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', '../../etc')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', '..')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', 'a b')$$);
SELECT pg_temp.error_of(format($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', %L)$$, repeat('t', 250)));

-- servers, contracts, consumer groups
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'no_such_server', 't1')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', 't1', contract => 'v2')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', 't1', group_id => '')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('s_a', 'regress_s_srv', 't1', group_id => E'a\tb')$$);
SELECT count(*) AS sources FROM kafka_lake.sources;

-- unknown sources
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.land('no_such_source')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.event_key('no_such_source', 'evt-1')$$);

DROP SERVER regress_s_srv;
DROP EXTENSION kafka_lake;
