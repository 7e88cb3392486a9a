-- test/pgtap/10_options.sql: secrets in options never reach the server log.  The validator's
-- refusals themselves are sql/options.sql (pg_regress); what is here needs the test harness
-- (dblink, the server log).  Needs no broker.
SELECT plan(8);

SELECT lives_ok($$CREATE SERVER o_ok FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '127.0.0.1:9', "client.id" 'lake', "socket.timeout.ms" '5000')$$,
  'brokers and valid librdkafka properties are accepted');

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
