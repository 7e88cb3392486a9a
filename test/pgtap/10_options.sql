-- test/pgtap/10_options.sql: the validator.  Needs no broker.
SELECT plan(26);

-- a server needs brokers; everything else is a librdkafka property
SELECT throws_ok($$CREATE SERVER o_nobrokers FOREIGN DATA WRAPPER kafka_lake$$,
  'HV00J', 'a kafka_lake server needs the option "brokers"', 'a server without brokers is refused');
SELECT lives_ok($$CREATE SERVER o_ok FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '127.0.0.1:9', "client.id" 'lake', "socket.timeout.ms" '5000')$$,
  'brokers and valid librdkafka properties are accepted');
SELECT throws_ok($$CREATE SERVER o_unknown FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.mss" '5')$$,
  'HV00D', 'unknown librdkafka property "socket.timeout.mss"', 'an unknown property is refused');
SELECT throws_ok($$CREATE SERVER o_badvalue FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "security.protocol" 'carrier_pigeon')$$,
  'HV024', 'invalid value for librdkafka property "security.protocol"', 'a bad value is refused');
SELECT throws_ok($$CREATE SERVER o_badint FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.ms" 'soon')$$,
  'HV024', NULL, 'a non-integer value for an integer property is refused');
SELECT throws_ok($$CREATE SERVER o_range FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "socket.timeout.ms" '1')$$,
  'HV024', NULL, 'an out-of-range value is refused');
SELECT throws_ok($$ALTER SERVER o_ok OPTIONS (ADD "client.id" 'again')$$,
  '42710', NULL, 'a duplicate option is refused');
SELECT throws_ok($$CREATE SERVER o_owned FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "group.id" 'mine')$$,
  'HV00D', 'librdkafka property "group.id" cannot be set on a kafka_lake server', 'group.id belongs to sources');
SELECT throws_ok($$CREATE SERVER o_reset FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "auto.offset.reset" 'earliest')$$,
  'HV00D', NULL, 'auto.offset.reset is refused: kafka_lake never skips silently');
SELECT throws_ok($$CREATE SERVER o_plugin FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "plugin.library.paths" '/tmp/evil.so')$$,
  'HV00D', NULL, 'loading libraries into a backend is refused');
SELECT throws_ok($$CREATE SERVER o_kinit FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.kerberos.kinit.cmd" 'touch /tmp/pwned')$$,
  'HV00D', NULL, 'running programs from a backend is refused');
SELECT throws_ok($$CREATE SERVER o_signal FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "internal.termination.signal" '15')$$,
  'HV00D', NULL, 'librdkafka''s termination signal is refused, for superusers too');
SELECT throws_ok($$CREATE SERVER o_mock FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "test.mock.num.brokers" '1')$$,
  'HV00D', NULL, 'librdkafka''s test interfaces are refused');
SELECT throws_ok($$CREATE SERVER o_relogin FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.kerberos.min.time.before.relogin" '60000')$$,
  'HV00D', NULL, 'the kinit interval is kafka_lake''s (it keeps kinit off)');
SELECT throws_ok($$CREATE SERVER o_badbrokers FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '')$$,
  'HV024', 'invalid value for option "brokers"', 'empty brokers are refused');
SELECT throws_ok($$CREATE FOREIGN DATA WRAPPER kl2 VALIDATOR kafka_lake.kafka_lake_fdw_validator
  OPTIONS ("client.id" 'x')$$,
  'HV00D', NULL, 'the wrapper itself takes no options');

-- secrets: refused on a server, accepted in a user mapping, never shown
SELECT throws_ok($$CREATE SERVER o_secret FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'h:1', "sasl.password" 'hunter2-on-server')$$,
  'HV00D', 'secret property "sasl.password" is not allowed on a server', 'a secret on a server is refused');
SELECT throws_ok($$ALTER SERVER o_ok OPTIONS (ADD "ssl.key.password" 'hunter2-on-server')$$,
  'HV00D', NULL, 'a secret added to a server is refused');
SELECT throws_ok($$ALTER SERVER o_ok OPTIONS (ADD "sasl.oauthbearer.client.secret" 'hunter2-on-server')$$,
  'HV00D', NULL, 'an OAuth client secret on a server is refused');
SELECT lives_ok($$CREATE USER MAPPING FOR CURRENT_USER SERVER o_ok
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'hunter2-in-mapping')$$,
  'a secret in a user mapping is accepted');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_foreign_server, unnest(srvoptions) o
                      WHERE o LIKE '%hunter2%'),
  'no secret is stored in pg_foreign_server');

-- foreign tables
SELECT throws_ok($$CREATE FOREIGN TABLE o_t1 (x int) SERVER o_ok$$,
  'HV00J', 'a kafka_lake foreign table needs the option "source"', 'a foreign table needs a source');
SELECT throws_ok($$CREATE FOREIGN TABLE o_t2 (x int) SERVER o_ok OPTIONS (source 'a', status 'maybe')$$,
  'HV024', NULL, 'an unknown status is refused');
SELECT throws_ok($$CREATE FOREIGN TABLE o_t3 (x int) SERVER o_ok OPTIONS (source 'a', brokers 'h:1')$$,
  'HV00D', NULL, 'brokers is not a table option');

-- a refused statement is logged by the server unless the error hides it
SELECT is(dblink_exec('dbname=' || current_database() || ' host=' || current_setting('unix_socket_directories')
                      || ' port=' || current_setting('port'),
                      $$CREATE SERVER o_secret2 FOREIGN DATA WRAPPER kafka_lake
                        OPTIONS (brokers 'h:1', "sasl.password" 'hunter2-top-level')$$, false),
          'ERROR', 'a secret on a server is refused at top level too');

-- nothing above printed a secret to the server log
SELECT ok(position('hunter2' IN kl_test.server_log()) = 0, 'no secret reached the server log');

DROP USER MAPPING FOR CURRENT_USER SERVER o_ok;
DROP SERVER o_ok;
SELECT * FROM finish();
