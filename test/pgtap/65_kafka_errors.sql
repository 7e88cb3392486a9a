-- test/pgtap/65_kafka_errors.sql: librdkafka's errors get the SQLSTATE of their kind, and a hint.
--  * a cluster that refuses the SASL handshake: 28000 (invalid_authorization_specification), a
--    hint about the user mapping, within the call's timeout (not HV00N "did not answer");
--  * a commit the coordinator refuses for good: HV000 with a hint that the batch is durable.
-- Uses a broker of its own.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(5);
SELECT kl_test.private_broker('ke65', 'ke65.t:1') AS ke_bootstrap \gset

CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
  state := ''; message := ''; hint := '';
  EXECUTE sql;
EXCEPTION WHEN query_canceled OR others THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
END $$;

-- the test broker speaks no SASL: the handshake fails
CREATE SERVER ke65_sasl FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers :'ke_bootstrap', "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'PLAIN');
CREATE USER MAPPING FOR CURRENT_USER SERVER ke65_sasl
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'not-the-password');
SELECT kafka_lake.create_source('ke65_sasl', 'ke65_sasl', 'ke65.t');
SET statement_timeout = '30s';		-- a guard
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('ke65_sasl', timeout => '3 s')$$) \gset sasl_
RESET statement_timeout;
SELECT is(:'sasl_state'::text, '28000', 'a refused SASL handshake is 28000, not a broker that "did not answer"');
SELECT alike(:'sasl_message'::text, '%refused the credentials%', 'the message says the credentials were refused');
SELECT alike(:'sasl_hint'::text, 'Check the user mapping of the current role for server "ke65_sasl"%',
             'the hint points at the user mapping');

-- a commit the coordinator refuses for good (INVALID_COMMIT_OFFSET_SIZE)
CREATE SERVER ke65_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'ke_bootstrap');
SELECT kafka_lake.create_source('ke65', 'ke65_srv', 'ke65.t');
SELECT kafka_lake.produce('ke65_srv', 'ke65.t', kl_test.event('evt-ke65-1'));
SELECT kl_test.private_ctl('ke65', 'errors OffsetCommit 1');
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('ke65')$$) \gset commit_
SELECT is(:'commit_state'::text, 'HV000', 'a refused commit is HV000');
SELECT alike(:'commit_hint'::text, '%Nothing that already landed is lost%', 'with a hint that the landed batch is kept');

SELECT kafka_lake.drop_source('ke65', drop_landing => true);
SELECT kafka_lake.drop_source('ke65_sasl', drop_landing => true);
DROP USER MAPPING FOR CURRENT_USER SERVER ke65_sasl;
SELECT kl_test.private_ctl('ke65', 'shutdown');
SELECT * FROM finish();
