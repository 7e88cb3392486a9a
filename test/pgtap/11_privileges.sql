-- test/pgtap/11_privileges.sql: what a plain role may not do.  Needs no broker.
SELECT plan(20);

-- the settings exist once the library is loaded in the session (any kafka_lake
-- function loads it; session_preload_libraries can load it at connection)
LOAD 'kafka_lake';

CREATE ROLE kl_plain LOGIN;
GRANT USAGE ON SCHEMA kafka_lake TO kl_plain;
SET ROLE kl_plain;

SELECT throws_ok($$SELECT kafka_lake.create_source('p_src', 'p_srv', 'p.topic')$$, '42501', NULL,
  'create_source is not for PUBLIC');
SELECT throws_ok($$SELECT kafka_lake.drop_source('p_src')$$, '42501', NULL, 'drop_source is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.land('p_src')$$, '42501', NULL, 'land is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.replay('p_src', 0, 0, 1)$$, '42501', NULL, 'replay is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.recover('p_src')$$, '42501', NULL, 'recover is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.verify('p_src')$$, '42501', NULL, 'verify is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.lag('p_src')$$, '42501', NULL, 'lag is not for PUBLIC');
SELECT throws_ok($$SELECT kafka_lake.produce('p_srv', 'p.topic', '\x00')$$, '42501', NULL,
  'produce is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('p_src', '2026-06-29')$$, '42501', NULL,
  'bridge is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.gold_as_of(1)$$, '42501', NULL, 'gold_as_of is not for PUBLIC');
SELECT throws_ok($$SELECT * FROM kafka_lake.batches$$, '42501', NULL, 'the catalog is not readable by PUBLIC');

SELECT throws_ok($$SET kafka_lake.landing_dir = '/tmp/elsewhere'$$, '42501', NULL,
  'kafka_lake.landing_dir is superuser-only');
SELECT throws_ok($$SET kafka_lake.batch_max_records = 10$$, '42501', NULL,
  'kafka_lake.batch_max_records is superuser-only');
SELECT throws_ok($$SET kafka_lake.batch_max_bytes = '1MB'$$, '42501', NULL,
  'kafka_lake.batch_max_bytes is superuser-only');
SELECT throws_ok($$SET kafka_lake.fault_injection = 'after_rename'$$, '42501', NULL,
  'kafka_lake.fault_injection is superuser-only');
SELECT throws_ok($$SET kafka_lake.no_such_setting = 'x'$$, '42602', NULL,
  'the kafka_lake prefix is reserved');

RESET ROLE;
SELECT throws_ok($$SET kafka_lake.fault_injection = 'after_lunch'$$, '22023', NULL,
  'an unknown fault injection point is refused');
SELECT lives_ok($$SET kafka_lake.fault_injection = ''$$, 'a superuser can set the settings');

-- EXECUTE on create_source or produce does not open a server: that takes USAGE on it
CREATE SERVER p_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');
GRANT EXECUTE ON FUNCTION kafka_lake.create_source(text, text, text, text, text),
                          kafka_lake.produce(text, text, bytea, bytea, integer, interval) TO kl_plain;
SET ROLE kl_plain;
SELECT throws_ok($$SELECT kafka_lake.create_source('p_src', 'p_srv', 'p.topic')$$, '42501',
  'permission denied for foreign server p_srv', 'create_source needs USAGE on the server');
SELECT throws_ok($$SELECT kafka_lake.produce('p_srv', 'p.topic', '\x00')$$, '42501',
  'permission denied for foreign server p_srv', 'produce needs USAGE on the server');
RESET ROLE;
REVOKE ALL ON FUNCTION kafka_lake.create_source(text, text, text, text, text),
                       kafka_lake.produce(text, text, bytea, bytea, integer, interval) FROM kl_plain;
DROP SERVER p_srv;

REVOKE USAGE ON SCHEMA kafka_lake FROM kl_plain;
DROP ROLE kl_plain;
SELECT * FROM finish();
