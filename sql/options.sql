--
-- options: the foreign-data wrapper's validator.  Every option is checked
-- when it is set; librdkafka properties against librdkafka itself; secrets
-- only in a user mapping, and never stored where other roles read them.
-- Needs no broker (no server is ever connected to).
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

-- a server needs brokers; everything else is a librdkafka property
SELECT pg_temp.error_of($$CREATE SERVER regress_o_nobrokers FOREIGN DATA WRAPPER kafka_lake$$);
CREATE SERVER regress_o_ok FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '127.0.0.1:9', "client.id" 'lake', "socket.timeout.ms" '5000');
SELECT pg_temp.error_of($$CREATE SERVER regress_o_unknown FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.mss" '5')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_badvalue FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "security.protocol" 'carrier_pigeon')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_badint FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.ms" 'soon')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_range FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.ms" '1')$$);
SELECT pg_temp.error_of($$ALTER SERVER regress_o_ok OPTIONS (ADD "client.id" 'again')$$);
-- group.id belongs to sources
SELECT pg_temp.error_of($$CREATE SERVER regress_o_owned FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "group.id" 'mine')$$);
-- kafka_lake never skips silently
SELECT pg_temp.error_of($$CREATE SERVER regress_o_reset FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "auto.offset.reset" 'earliest')$$);
-- loading libraries into a backend, running programs, librdkafka's
-- termination signal and its test interfaces are refused, for superusers too
SELECT pg_temp.error_of($$CREATE SERVER regress_o_plugin FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "plugin.library.paths" '/tmp/evil.so')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_kinit FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.kerberos.kinit.cmd" 'touch /tmp/pwned')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_signal FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "internal.termination.signal" '15')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_mock FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "test.mock.num.brokers" '1')$$);
-- the kinit interval is kafka_lake's (it keeps kinit off)
SELECT pg_temp.error_of($$CREATE SERVER regress_o_relogin FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.kerberos.min.time.before.relogin" '60000')$$);
SELECT pg_temp.error_of($$CREATE SERVER regress_o_badbrokers FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '')$$);
-- the wrapper itself takes no options
SELECT pg_temp.error_of($$CREATE FOREIGN DATA WRAPPER regress_kl2 VALIDATOR kafka_lake.kafka_lake_fdw_validator
  OPTIONS ("client.id" 'x')$$);

-- secrets: refused on a server, accepted in a user mapping, never shown
SELECT pg_temp.error_of($$CREATE SERVER regress_o_secret FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.password" 'hunter2-on-server')$$);
SELECT pg_temp.error_of($$ALTER SERVER regress_o_ok OPTIONS (ADD "ssl.key.password" 'hunter2-on-server')$$);
SELECT pg_temp.error_of($$ALTER SERVER regress_o_ok OPTIONS (ADD "sasl.oauthbearer.client.secret" 'hunter2-on-server')$$);
CREATE USER MAPPING FOR CURRENT_USER SERVER regress_o_ok
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'hunter2-in-mapping');
SELECT count(*) AS secrets_in_pg_foreign_server
  FROM pg_foreign_server, unnest(srvoptions) o WHERE o LIKE '%hunter2%';

-- foreign tables
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE regress_o_t1 (x int) SERVER regress_o_ok$$);
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE regress_o_t2 (x int) SERVER regress_o_ok OPTIONS (source 'a', status 'maybe')$$);
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE regress_o_t3 (x int) SERVER regress_o_ok OPTIONS (source 'a', brokers 'h:1')$$);

DROP USER MAPPING FOR CURRENT_USER SERVER regress_o_ok;
DROP SERVER regress_o_ok;
DROP EXTENSION kafka_lake;
