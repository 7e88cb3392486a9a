-- test/pgtap/16_user_mappings.sql: user mappings end to end.  A mapping that
-- holds secrets works for land(), lag() and produce(), for a superuser and
-- for a plain role (with security.protocol plaintext the broker never asks
-- for them); no option value of any length breaks a call; secret values are
-- scrubbed from librdkafka's text.  And no option a plain role may set runs a
-- program or reaches the server's own files and credentials: Kerberos
-- options, debug, file paths and URLs are for superusers, the properties
-- that load code or take over the backend's signals are refused everywhere,
-- and librdkafka's kinit command never runs, whatever a mapping holds.
-- Needs the broker.
SET client_min_messages = warning;
SELECT plan(34);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || ': ' || msg || coalesce(' / ' || nullif(det, ''), '');
END $$;
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
CREATE FUNCTION pg_temp.exists(path text) RETURNS boolean LANGUAGE sql AS $$
  SELECT kl_test.sh(format('test -e %s && echo yes || echo no', path)) = 'yes'
$$;

\o /dev/null
SELECT kl_test.server('sec16_kafka');
SELECT kl_test.broker('create sec16.events 1');
SELECT kl_test.broker('create sec16.plain 1');
SELECT kafka_lake.create_source('sec16', 'sec16_kafka', 'sec16.events');
SELECT kafka_lake.create_source('sec16_plain', 'sec16_kafka', 'sec16.plain');
SELECT kl_test.fill('sec16.events', 5, 1);
SELECT kl_test.fill('sec16.plain', 7, 1);
\o
SELECT (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '/kl16_kinit_ran' AS marker \gset

------------------------------------------------------------------------
-- a user mapping that holds secrets, as in the README's Getting started
------------------------------------------------------------------------
CREATE USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'secret');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('sec16')), 5,
          'land() works through a user mapping that holds secrets');
SELECT is((SELECT count(*)::int FROM kafka_lake.lag('sec16') WHERE lag = 0), 1, 'lag() too');
SELECT is(kafka_lake.produce('sec16_kafka', 'sec16.events', kl_test.event('evt-16-extra')), 5::bigint,
          'produce() too');

-- option values of every length, empty included
CREATE FUNCTION pg_temp.each_length(option text, n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  failures text := '';
BEGIN
  FOR len IN 0..n LOOP
    EXECUTE format('ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka OPTIONS (SET %I %L)',
                   option, repeat('x', len));
    BEGIN
      PERFORM * FROM kafka_lake.lag('sec16');
    EXCEPTION WHEN OTHERS THEN
      failures := failures || len || ':' || SQLSTATE || ' ';
    END;
  END LOOP;
  RETURN failures;
END $$;
SELECT is(pg_temp.each_length('sasl.password', 40), '', 'a secret of any length from 0 to 40 bytes works');
SELECT is(pg_temp.each_length('sasl.username', 20), '', 'another option of any length too');
ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka OPTIONS (ADD "ssl.key.password" 'y', ADD "client.id" '');
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM kafka_lake.lag('sec16')$$), 'no error',
          'several secrets, one of them a single character, and an empty value');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('sec16')), 1, 'and land() still lands');
DROP USER MAPPING FOR CURRENT_USER SERVER sec16_kafka;

-- a plain role with its own mapping
CREATE ROLE kl16_plain;
GRANT USAGE ON SCHEMA kafka_lake TO kl16_plain;
GRANT USAGE ON FOREIGN SERVER sec16_kafka TO kl16_plain;
GRANT EXECUTE ON FUNCTION kafka_lake.land(text, integer, interval, boolean),
                          kafka_lake.lag(text, interval),
                          kafka_lake.produce(text, text, bytea, bytea, integer, interval) TO kl16_plain;
SET ROLE kl16_plain;
CREATE USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS ("sasl.username" 'lake', "sasl.password" 'x');
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.land('sec16_plain')$$) AS plain_land,
       pg_temp.error_of($$SELECT * FROM kafka_lake.lag('sec16_plain')$$) AS plain_lag,
       pg_temp.error_of($$SELECT kafka_lake.produce('sec16_kafka', 'sec16.plain', '\x00')$$) AS plain_produce \gset
RESET ROLE;
SELECT is(split_part(:'plain_land'::text, ' / ', 1), 'no error', 'a plain role lands through its own mapping with a one-character secret');
SELECT is((SELECT count(*)::int FROM kafka_lake.sec16_plain_records), 7, 'and what it landed is there');
SELECT is(:'plain_lag'::text, 'no error', 'lag() works for it');
SELECT is(:'plain_produce'::text, 'no error', 'produce() works for it');

-- secret values are scrubbed from librdkafka's text
CREATE SERVER sec16_nowhere FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers 'kl16-hidden-host.invalid:9092');
CREATE USER MAPPING FOR CURRENT_USER SERVER sec16_nowhere OPTIONS ("sasl.password" 'kl16-hidden-host');
SELECT pg_temp.error_of($$SELECT kafka_lake.produce('sec16_nowhere', 'sec16.x', '\x00', timeout => '2 s')$$)
  AS nowhere_error \gset
SELECT is(left(:'nowhere_error'::text, 5), 'HV00N', 'a cluster that cannot be reached is HV00N');
SELECT ok(position('kl16-hidden-host' IN :'nowhere_error'::text) = 0, 'the error does not show the secret');
SELECT ok(position('********.invalid' IN kl_test.server_log()) > 0,
          'librdkafka''s log lines reach the server log with the secret value scrubbed');
SELECT ok(position('kl16-hidden-host' IN kl_test.server_log()) = 0, 'the secret value never reached the server log');
DROP USER MAPPING FOR CURRENT_USER SERVER sec16_nowhere;
DROP SERVER sec16_nowhere;

------------------------------------------------------------------------
-- nothing a plain role may set runs a program or reaches the server's files
------------------------------------------------------------------------
SET ROLE kl16_plain;
SELECT pg_temp.error_of(format($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "security.protocol" 'SASL_PLAINTEXT', ADD "sasl.mechanism" 'PLAIN',
           ADD "sasl.kerberos.principal" '$(touch %s)')$$, :'marker')) AS m_principal,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.kerberos.service.name" 'x;touch /tmp/x')$$) AS m_service,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.kerberos.keytab" '/etc/krb5.keytab')$$) AS m_keytab,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.kerberos.kinit.cmd" 'touch /tmp/x')$$) AS m_kinit,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.kerberos.min.time.before.relogin" '1000')$$) AS m_relogin,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.mechanism" 'GSSAPI')$$) AS m_gssapi,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.mechanisms" 'gssapi')$$) AS m_gssapi2,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "ssl.ca.location" '/etc/ssl/private')$$) AS m_ca,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "debug" 'all')$$) AS m_debug,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "sasl.oauthbearer.token.endpoint.url" 'file:///etc/passwd')$$) AS m_url,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "internal.termination.signal" '15')$$) AS m_signal,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "test.mock.num.brokers" '1')$$) AS m_mock,
       pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka
  OPTIONS (ADD "plugin.library.paths" '/tmp/x.so')$$) AS m_plugin \gset
-- a mapping that leaves the mechanism to librdkafka's default (GSSAPI)
ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka OPTIONS (ADD "security.protocol" 'SASL_PLAINTEXT');
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.lag('sec16_plain', timeout => '2 s')$$) AS m_default_gssapi \gset
ALTER USER MAPPING FOR CURRENT_USER SERVER sec16_kafka OPTIONS (DROP "security.protocol");
RESET ROLE;
SELECT is(split_part(:'m_principal'::text, ' / ', 1), '42501: only superusers can set "sasl.kerberos.principal"',
          'a plain role cannot put a Kerberos principal (here: shell syntax) into its mapping');
SELECT is(:'m_service'::text, '42501', 'nor sasl.kerberos.service.name');
SELECT is(:'m_keytab'::text, '42501', 'nor a keytab (a file on the server)');
SELECT is(:'m_kinit'::text, 'HV00D', 'the kinit command is refused everywhere');
SELECT is(:'m_relogin'::text, 'HV00D', 'and so is its refresh interval: kafka_lake turns it off');
SELECT is(:'m_gssapi'::text, '42501', 'a plain role cannot choose GSSAPI (the server''s own Kerberos credentials)');
SELECT is(:'m_gssapi2'::text, '42501', 'in any spelling');
SELECT is(:'m_ca'::text, '42501', 'nor a file path');
SELECT is(:'m_debug'::text, '42501', 'nor librdkafka''s debug output');
SELECT is(:'m_url'::text, '42501', 'nor a URL the backend would fetch');
SELECT is(:'m_signal'::text, 'HV00D', 'librdkafka''s termination signal (it would replace a backend signal handler) is refused everywhere');
SELECT is(:'m_mock'::text, 'HV00D', 'librdkafka''s test properties too');
SELECT is(:'m_plugin'::text, 'HV00D', 'plugins too');
SELECT is(split_part(:'m_default_gssapi'::text, ' / ', 1),
          '42501: only superusers can use the Kerberos credentials of the database server',
          'SASL with the default mechanism (GSSAPI) is refused for a plain role when it is used');
SELECT ok(NOT pg_temp.exists(:'marker'), 'no command ran so far');

-- a server that uses GSSAPI, as a superuser configured it (the keytab is what
-- librdkafka's kinit command line needs); a plain role with USAGE on it
SELECT format($$CREATE SERVER sec16_gss FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers %L, "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanism" 'GSSAPI',
           "sasl.kerberos.keytab" '/nonexistent/kl16.keytab')$$, kl_test.bootstrap()) AS gss_server \gset
:gss_server;
\o /dev/null
SELECT kafka_lake.create_source('sec16_gss', 'sec16_gss', 'sec16.events');
\o
GRANT USAGE ON FOREIGN SERVER sec16_gss TO kl16_plain;
SET ROLE kl16_plain;
SELECT pg_temp.sqlstate_of(format($$CREATE USER MAPPING FOR CURRENT_USER SERVER sec16_gss
  OPTIONS ("sasl.kerberos.principal" '$(touch %s)')$$, :'marker')) AS gss_mapping \gset
SELECT pg_temp.sqlstate_of($$SELECT * FROM kafka_lake.lag('sec16_gss', timeout => '2 s')$$) AS gss_lag \gset
RESET ROLE;
SELECT is(:'gss_mapping'::text, '42501', 'on a GSSAPI server too, a plain role cannot set the principal');
SELECT ok(NOT pg_temp.exists(:'marker'), 'and its lag() runs no command');

-- a mapping with shell syntax in its principal that a superuser wrote (or an
-- older release let in): kinit never runs
SELECT lives_ok(format($$CREATE USER MAPPING FOR CURRENT_USER SERVER sec16_gss
  OPTIONS ("sasl.kerberos.principal" '$(touch %s)')$$, :'marker'),
  'a superuser may set a Kerberos principal');
SELECT pg_temp.sqlstate_of($$SELECT * FROM kafka_lake.lag('sec16_gss', timeout => '2 s')$$) AS su_lag \gset
SELECT ok(NOT pg_temp.exists(:'marker'), 'librdkafka''s kinit command never ran: kafka_lake turns it off');
DROP USER MAPPING FOR CURRENT_USER SERVER sec16_gss;
\o /dev/null
SELECT kafka_lake.drop_source('sec16_gss', drop_landing => true);
\o
REVOKE USAGE ON FOREIGN SERVER sec16_gss FROM kl16_plain;
DROP SERVER sec16_gss;

\o /dev/null
SELECT kl_test.sh('rm -f ' || :'marker');
SELECT kafka_lake.drop_source('sec16', drop_landing => true);
SELECT kafka_lake.drop_source('sec16_plain', drop_landing => true);
\o
DROP USER MAPPING FOR kl16_plain SERVER sec16_kafka;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA kafka_lake FROM kl16_plain;
REVOKE USAGE ON SCHEMA kafka_lake FROM kl16_plain;
REVOKE USAGE ON FOREIGN SERVER sec16_kafka FROM kl16_plain;
DROP SERVER sec16_kafka;
DROP ROLE kl16_plain;
SELECT * FROM finish();
