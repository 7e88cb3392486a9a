--
-- privileges: what a plain role may not do.  Every function is granted by
-- EXECUTE (none to PUBLIC, but the two behind the views late_events and
-- source_status, which answer only a role that may read the view, and
-- avro_decode, avro_frame and metric_quotient, which read nothing of the database, and
-- shard_gold, which answers only a role that may read the combined gold's view), the
-- catalog and its views are the extension owner's, every
-- setting is superuser-only and the prefix is reserved; EXECUTE on
-- create_source or produce does not open a server: that takes USAGE on it.
-- Needs no broker.
--
CREATE EXTENSION kafka_lake;
-- the settings exist once the library is loaded in the session (any kafka_lake
-- function loads it; session_preload_libraries can load it at connection)
LOAD 'kafka_lake';

-- the SQLSTATE and message of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE ROLE regress_kl_plain LOGIN;
GRANT USAGE ON SCHEMA kafka_lake TO regress_kl_plain;
SET ROLE regress_kl_plain;

SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT kafka_lake.create_source('p_src', 'regress_p_srv', 'p.topic')$$),
    ($$SELECT kafka_lake.drop_source('p_src')$$),
    ($$SELECT kafka_lake.set_partitions('p_src', '{0,1}')$$),
    ($$SELECT * FROM kafka_lake.attach_shards('p_src', ARRAY['p_shard'])$$),
    ($$SELECT kafka_lake.detach_shards('p_src')$$),
    ($$SELECT * FROM kafka_lake.shard_partitions('p_src')$$),
    ($$SELECT * FROM kafka_lake.certify_shards('p_src', '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.shard_gold('p_src', 'p_gold', '2026-06-29') AS g(n bigint)$$),
    ($$SELECT * FROM kafka_lake.shards$$),
    ($$SELECT * FROM kafka_lake.shard_certificates$$),
    ($$SELECT * FROM kafka_lake.land('p_src')$$),
    ($$SELECT * FROM kafka_lake.replay('p_src', 0, 0, 1)$$),
    ($$SELECT * FROM kafka_lake.recover('p_src')$$),
    ($$SELECT * FROM kafka_lake.verify('p_src')$$),
    ($$SELECT * FROM kafka_lake.lag('p_src')$$),
    ($$SELECT kafka_lake.produce('regress_p_srv', 'p.topic', '\x00')$$),
    ($$SELECT * FROM kafka_lake.bridge('p_src', '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.bridge('p_src', '2026-06-29', reopen => true)$$),
    ($$SELECT * FROM kafka_lake.close_date('p_src', '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.bridge('p_src', '2026-06-29', export => true)$$),
    ($$SELECT * FROM kafka_lake.export('p_src', '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.gold_as_of(1)$$),
    ($$SELECT * FROM kafka_lake.batches$$),
    ($$SELECT * FROM kafka_lake.date_closings$$),
    ($$SELECT * FROM kafka_lake.partition_state$$),
    ($$SELECT * FROM kafka_lake.late_events$$),
    ($$SELECT * FROM kafka_lake.source_status$$),
    ($$SELECT * FROM kafka_lake.late_event_list()$$),
    ($$SELECT * FROM kafka_lake.source_errors()$$)) AS t(q);
-- the landing's life cycle
SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT * FROM kafka_lake.compact('p_src')$$),
    ($$SELECT * FROM kafka_lake.expire('p_src', before => '2026-01-01')$$),
    ($$SELECT * FROM kafka_lake.replay('p_src', from_time => now() - interval '1 hour', to_time => now())$$)) AS t(q);

-- every setting is superuser-only; the prefix is reserved
SELECT pg_temp.error_of($$SET kafka_lake.landing_dir = '/tmp/elsewhere'$$);
SELECT pg_temp.error_of($$SET kafka_lake.batch_max_records = 10$$);
SELECT pg_temp.error_of($$SET kafka_lake.batch_max_bytes = '1MB'$$);
SELECT pg_temp.error_of($$SET kafka_lake.fault_injection = 'after_rename'$$);
SELECT pg_temp.error_of($$SET kafka_lake.no_such_setting = 'x'$$);

RESET ROLE;
SELECT pg_temp.error_of($$SET kafka_lake.fault_injection = 'after_lunch'$$);
SET kafka_lake.fault_injection = '';

-- EXECUTE on create_source or produce does not open a server: that takes USAGE on it
CREATE SERVER regress_p_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');
GRANT EXECUTE ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]),
                          kafka_lake.produce(text, text, bytea, bytea, integer, interval) TO regress_kl_plain;
SET ROLE regress_kl_plain;
SELECT pg_temp.error_of($$SELECT kafka_lake.create_source('p_src', 'regress_p_srv', 'p.topic')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.produce('regress_p_srv', 'p.topic', '\x00')$$);
RESET ROLE;
REVOKE ALL ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]),
                       kafka_lake.produce(text, text, bytea, bytea, integer, interval) FROM regress_kl_plain;
DROP SERVER regress_p_srv;

REVOKE USAGE ON SCHEMA kafka_lake FROM regress_kl_plain;
DROP ROLE regress_kl_plain;
DROP EXTENSION kafka_lake;
