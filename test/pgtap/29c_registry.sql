-- test/pgtap/29c_registry.sql: a server's Confluent Schema Registry, against the
-- test peer (test/registry/registry.py, started by test/run; its faults switched
-- with kl_test.registry).  Schemas registered through the peer's REST API are
-- fetched by id and by subject (latest and a version), stored in kafka_lake.schemas
-- with their SHA-256, and served from there when the registry is down; an unknown
-- id, subject or version is 42704; down, slow beyond the timeout, 5xx is HV00N; a
-- malformed or oversized answer HV00L; 401 without the user mapping's credentials
-- (28000), success with them, and the credentials in no error message and not in
-- the server log; a path prefix; a stored schema that the registry answers
-- differently; bad URLs (22023), the secret outside a user mapping, the CA file for
-- superusers only, USAGE on the server, NULL arguments (22004).
-- Needs the registry peer, not the broker.
SET client_min_messages = warning;
SELECT plan(59);

CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
-- every text of an error: SQLSTATE, message, detail, hint
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text; hint text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
                          hint = PG_EXCEPTION_HINT;
  RETURN st || ': ' || msg || coalesce(' / ' || nullif(det, ''), '') || coalesce(' / ' || nullif(hint, ''), '');
END $$;

\o /dev/null
SELECT kl_test.registry_reset();
\o
SELECT kl_test.registry_register('orders-value',
  '{"type": "record", "name": "order", "fields": [{"name": "id", "type": "string"}]}') AS id1 \gset
SELECT kl_test.registry_register('orders-value',
  '{"type": "record", "name": "order", "fields": [{"name": "id", "type": "string"}, {"name": "total", "type": ["null", "double"], "default": null}]}') AS id2 \gset
SELECT kl_test.registry_register('doc-value', '{"type": "object", "properties": {"a": {"type": "integer"}}}', 'JSON') AS id_json \gset
SELECT kl_test.registry_register('only-id-value', '{"type": "string"}') AS id_plain \gset
CREATE TEMP TABLE ids AS SELECT :id1 AS id1, :id2 AS id2, :id_json AS id_json, :id_plain AS id_plain;
SELECT format('CREATE SERVER reg29 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              '127.0.0.1:9', kl_test.registry_url()) \gexec

-- registering
SELECT is(kl_test.registry_register('orders-value',
  '{"type": "record", "name": "order", "fields": [{"name": "id", "type": "string"}]}'), :id1,
  'the same schema registered again has the same id');
SELECT is(kl_test.registry_register('other-value',
  '{"type":"record","name":"order","fields":[{"name":"id","type":"string"}]}'), :id1,
  'and under another subject too');

-- by id
SELECT results_eq($$SELECT schema_id, subject, version, schema_type, schema::text
                      FROM kafka_lake.registry_schema('reg29', $$ || :id_plain || $$)$$,
  $$VALUES ((SELECT id_plain FROM pg_temp.ids), NULL::text, NULL::int, 'AVRO', '{"type":"string"}')$$,
  'registry_schema fetches a schema by id');
SELECT is((SELECT schema->>'name' FROM kafka_lake.registry_schema('reg29', :id1)), 'order',
  'its schema is json');
SELECT is((SELECT count(*)::int FROM kafka_lake.schemas
            WHERE server = 'reg29' AND registry_url = kl_test.registry_url() AND schema_id = :id1), 1,
  'the schema is stored in kafka_lake.schemas under the server and its URL');
SELECT ok((SELECT sha256 = sha256(convert_to(schema, 'UTF8')) AND schema_type = 'AVRO'
                  AND fetched_at <= now() AND subject IS NULL
             FROM kafka_lake.schemas WHERE server = 'reg29' AND schema_id = :id1),
  'with its SHA-256, its type and when it was fetched');

-- by subject
SELECT results_eq($$SELECT schema_id, subject, version FROM kafka_lake.registry_subject('reg29', 'orders-value')$$,
  $$VALUES ((SELECT id2 FROM pg_temp.ids), 'orders-value', 2)$$, 'registry_subject fetches the latest version');
SELECT results_eq($$SELECT schema_id, subject, version FROM kafka_lake.registry_subject('reg29', 'orders-value', 1)$$,
  $$VALUES ((SELECT id1 FROM pg_temp.ids), 'orders-value', 1)$$, 'and a given version');
SELECT results_eq($$SELECT subject, version FROM kafka_lake.schemas WHERE server = 'reg29' AND schema_id = (SELECT id1 FROM pg_temp.ids)$$,
  $$VALUES ('orders-value', 1)$$, 'a stored id learns its subject and version');
SELECT results_eq($$SELECT schema_type, (schema->'properties'->'a'->>'type') FROM kafka_lake.registry_subject('reg29', 'doc-value')$$,
  $$VALUES ('JSON', 'integer')$$, 'a JSON schema keeps its type');
SELECT results_eq($$SELECT schema_id, subject, version FROM kafka_lake.registry_subject(server => 'reg29', subject => 'orders-value', version => NULL)$$,
  $$VALUES ((SELECT id2 FROM pg_temp.ids), 'orders-value', 2)$$, 'named arguments, version NULL is the latest');

-- the registry down: stored schemas are served from the catalog
\o /dev/null
SELECT kl_test.registry('{"mode": "down"}');
\o
SELECT is((SELECT schema_id FROM kafka_lake.registry_schema('reg29', :id1)), :id1,
  'with the registry down a stored id is served from the catalog');
SELECT is((SELECT schema_id FROM kafka_lake.registry_subject('reg29', 'orders-value', 1)), :id1,
  'and so is a stored subject version');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_schema(''reg29'', 777)'), 'HV00N',
  'an id not stored is HV00N while the registry is down');
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_subject(''reg29'', ''orders-value'')'),
  'HV00N: could not reach the schema registry at ' || kl_test.registry_url() || '%Check that the registry is up%',
  'and so is the latest version of a subject, with the URL and a hint');
-- a registry is its URL: a server renamed, or a second server of the registry, is
-- served from the catalog too
\o /dev/null
ALTER SERVER reg29 RENAME TO reg29_renamed;
SELECT format('CREATE SERVER reg29_second FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              '127.0.0.1:9', kl_test.registry_url()) \gexec
\o
SELECT is((SELECT schema_id FROM kafka_lake.registry_schema('reg29_renamed', :id1)), :id1,
  'a renamed server is served from the catalog with the registry down');
SELECT is((SELECT schema_id FROM kafka_lake.registry_subject('reg29_second', 'orders-value', 1)), :id1,
  'and so is another server of the same registry URL');
\o /dev/null
ALTER SERVER reg29_renamed RENAME TO reg29;
DROP SERVER reg29_second;
\o

-- unknown ids, subjects, versions
\o /dev/null
SELECT kl_test.registry('{"mode": "ok"}');
\o
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', 777)'),
  '42704: schema id 777 is not in the schema registry at %', 'an unknown id is 42704');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_subject(''reg29'', ''no-such-value'')'), '42704',
  'an unknown subject is 42704');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_subject(''reg29'', ''orders-value'', 9)'), '42704',
  'an unknown version is 42704');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_subject(''reg29'', ''orders-value'', 0)'), '22023',
  'version 0 is 22023');
\o /dev/null
SELECT kl_test.registry('{"mode": "404"}');
\o
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_schema(''reg29'', 778)'), '42704',
  'a registry answering 404 40403 is 42704');

-- faults
\o /dev/null
SELECT kl_test.registry('{"mode": "slow", "delay_ms": 3000}');
\o
SELECT clock_timestamp() AS t0 \gset
SELECT alike(pg_temp.error_of($$SELECT kafka_lake.registry_schema('reg29', 779, timeout => '300 ms')$$),
  'HV00N: the schema registry at % did not answer in time%', 'a registry slower than the timeout is HV00N');
SELECT ok(clock_timestamp() - :'t0'::timestamptz < interval '2.5 s', 'and the call ends at its timeout');
CREATE FUNCTION pg_temp.canceled(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN query_canceled THEN
  RETURN SQLSTATE;
END $$;
SET statement_timeout = '300ms';
SELECT is(pg_temp.canceled('SELECT kafka_lake.registry_schema(''reg29'', 779)'), '57014',
  'statement_timeout ends a call too');
RESET statement_timeout;
\o /dev/null
SELECT kl_test.registry('{"mode": "500"}');
\o
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', 779)'),
  'HV00N: the schema registry at % failed (HTTP 500)%', 'a registry answering 500 is HV00N');
\o /dev/null
SELECT kl_test.registry('{"mode": "garbage"}');
\o
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', 779)'),
  'HV00L: malformed answer from the schema registry at %', 'an answer that is not JSON is HV00L');
\o /dev/null
SELECT kl_test.registry('{"mode": "huge"}');
\o
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', 779)'),
  'HV00L: the answer of the schema registry at % is larger than 1048576 bytes%', 'an answer over 1 MiB is HV00L');

-- basic auth
\o /dev/null
SELECT kl_test.registry('{"mode": "ok", "auth": "reg29user:kl29-right-password"}');
\o
SELECT kl_test.registry_register('secured-value', '{"type": "int"}', NULL, 'reg29user:kl29-right-password') AS id_auth \gset
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', ' || :id_auth || ')'),
  '28000: the schema registry at % refused the credentials of role "postgres" (HTTP 401)%CREATE USER MAPPING%',
  'a registry that wants credentials is 28000 without them, with a hint');
SET log_statement = 'all';
CREATE USER MAPPING FOR CURRENT_USER SERVER reg29
  OPTIONS ("schema.registry.basic.auth.user.info" 'reg29user:kl29-wrong-password');
RESET log_statement;
SELECT pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29'', ' || :id_auth || ')') AS wrong \gset
SELECT alike(:'wrong'::text, '28000: % refused the credentials %', 'wrong credentials are 28000');
SELECT ok(:'wrong'::text NOT LIKE '%kl29-wrong-password%' AND :'wrong'::text NOT LIKE '%reg29user:%',
  'and the error does not show them');
SET log_statement = 'all';
ALTER USER MAPPING FOR CURRENT_USER SERVER reg29
  OPTIONS (SET "schema.registry.basic.auth.user.info" 'reg29user:kl29-right-password');
RESET log_statement;
SELECT is((SELECT schema::text FROM kafka_lake.registry_schema('reg29', :id_auth)), '{"type":"int"}'::text,
  'with the user mapping''s credentials the schema is fetched');
SELECT ok(EXISTS (SELECT 1 FROM json_array_elements(kl_test.registry('state')::json->'requests') x
                  WHERE x->>'path' = '/schemas/ids/' || :id_auth AND (x->>'auth')::boolean
                    AND x->>'user_agent' LIKE 'kafka_lake/%'), 'kafka_lake sent basic auth');
\o /dev/null
SELECT kl_test.registry('{"mode": "401"}');
\o
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_schema(''reg29'', 780)'), '28000',
  'a registry answering 401 whatever the credentials is 28000');
\o /dev/null
SELECT kl_test.registry('{"mode": "ok", "auth": null}');
\o
SELECT ok(kl_test.server_log() NOT LIKE '%kl29-wrong-password%' AND kl_test.server_log() NOT LIKE '%kl29-right-password%',
  'no credential is in the server log');
SELECT ok(kl_test.server_log() LIKE '%OPTIONS (SET "schema.registry.basic.auth.user.info" ''********'')%',
  'the statements that set them are logged with the value masked');

-- a path prefix
SELECT format('CREATE SERVER reg29_prefix FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              '127.0.0.1:9', kl_test.registry_url() || '/some/prefix/') \gexec
SELECT results_eq($$SELECT schema_id, subject, version FROM kafka_lake.registry_subject('reg29_prefix', 'orders-value')$$,
  $$VALUES ((SELECT id2 FROM pg_temp.ids), 'orders-value', 2)$$, 'a registry behind a path prefix');
SELECT ok(kl_test.registry('state') LIKE '%"path": "/some/prefix/subjects/orders-value/versions/latest"%',
  'the request went to the prefix');
SELECT is((SELECT registry_url FROM kafka_lake.schemas WHERE server = 'reg29_prefix'),
  kl_test.registry_url() || '/some/prefix', 'the catalog names the registry by its URL, without the trailing slash');
SELECT format('CREATE SERVER reg29_wrong FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              '127.0.0.1:9', kl_test.registry_url() || '/wrong/prefix') \gexec
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29_wrong'', 1)'),
  'HV00N: the schema registry at % has no resource /schemas/ids/1 (HTTP 404)%path prefix%',
  'a wrong prefix is HV00N, with a hint');

-- a stored schema that the registry answers differently
UPDATE kafka_lake.schemas SET schema = '"bytes"', sha256 = sha256('"bytes"')
 WHERE server = 'reg29' AND schema_id = :id2;
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_subject(''reg29'', ''orders-value'')'),
  'XX001: schema ' || :id2 || ' of the schema registry at % changed / kafka_lake.schemas holds the schema with SHA-256 '
  || encode(sha256('"bytes"'), 'hex') || '; the registry now answers one with SHA-256 %',
  'a schema id whose text changed is an error naming both hashes');

-- options
SELECT is(pg_temp.sqlstate_of($$CREATE SERVER reg29_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', "schema.registry.url" 'ftp://h/')$$),
  '22023', 'a URL of another scheme is refused');
SELECT is(pg_temp.sqlstate_of($$CREATE SERVER reg29_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', "schema.registry.url" 'file:///etc/passwd')$$),
  '22023', 'a file:// URL is refused');
SELECT is(pg_temp.sqlstate_of($$CREATE SERVER reg29_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', "schema.registry.url" 'registry:8081')$$),
  '22023', 'a URL without a scheme is refused');
SELECT is(pg_temp.error_of($$CREATE SERVER reg29_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', "schema.registry.url" 'https://kl29u:kl29-url-password@h:8081/')$$),
  '22023: invalid value for option "schema.registry.url" / The URL carries credentials; they belong in the user mapping option "schema.registry.basic.auth.user.info". / For example: OPTIONS (ADD "schema.registry.url" ''https://registry.example.com:8081'').',
  'a URL with credentials is refused, without showing them');
SELECT is(pg_temp.sqlstate_of($$ALTER SERVER reg29 OPTIONS (SET "schema.registry.url" 'http://h:1/x?y=1')$$),
  '22023', 'ALTER SERVER is checked too (a query)');
SELECT is(pg_temp.sqlstate_of($$CREATE SERVER reg29_bad FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers 'h:1', "schema.registry.basic.auth.user.info" 'u:p')$$),
  'HV00D', 'the user info on a server is refused');
SELECT is(pg_temp.sqlstate_of($$ALTER USER MAPPING FOR CURRENT_USER SERVER reg29 OPTIONS (ADD "schema.registry.url" 'http://h:1')$$),
  'HV00D', 'the URL in a user mapping is refused');
SELECT is(pg_temp.sqlstate_of($$ALTER SERVER reg29 OPTIONS (ADD "schema.registry.typo" 'x')$$),
  'HV00D', 'an unknown schema.registry option is refused');
SELECT lives_ok($$ALTER SERVER reg29_prefix OPTIONS (ADD "schema.registry.ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt')$$,
  'a superuser sets the CA file');

-- a plain role
CREATE ROLE kl29_plain;
SELECT ok(NOT has_function_privilege('kl29_plain', 'kafka_lake.registry_schema(text, integer, interval)', 'EXECUTE')
          AND NOT has_function_privilege('kl29_plain', 'kafka_lake.registry_subject(text, text, integer, interval)', 'EXECUTE')
          AND NOT has_table_privilege('kl29_plain', 'kafka_lake.schemas', 'SELECT'),
  'nothing of the registry is granted to PUBLIC');
GRANT USAGE ON SCHEMA kafka_lake TO kl29_plain;
GRANT EXECUTE ON FUNCTION kafka_lake.registry_schema(text, integer, interval) TO kl29_plain;
SET ROLE kl29_plain;
SELECT alike(pg_temp.error_of(format('SELECT kafka_lake.registry_schema(''reg29'', %s)', :id1)),
  '42501: permission denied for foreign server reg29%', 'a role without USAGE on the server is refused');
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER reg29 TO kl29_plain;
SET ROLE kl29_plain;
SELECT is((SELECT schema_id FROM kafka_lake.registry_schema('reg29', :id1)), :id1,
  'with USAGE it reads a schema');
SELECT is(pg_temp.sqlstate_of($$CREATE USER MAPPING FOR CURRENT_USER SERVER reg29 OPTIONS ("schema.registry.ssl.ca.location" '/etc/ssl/certs/ca-certificates.crt')$$),
  '42501', 'the CA file is refused to a plain role');
RESET ROLE;

-- arguments
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_schema(NULL, 1)'), '22004', 'a NULL server is 22004');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_schema(''reg29'', NULL)'), '22004', 'a NULL schema_id is 22004');
SELECT is(pg_temp.sqlstate_of('SELECT kafka_lake.registry_subject(''reg29'', NULL)'), '22004', 'a NULL subject is 22004');
CREATE SERVER reg29_none FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');
SELECT alike(pg_temp.error_of('SELECT kafka_lake.registry_schema(''reg29_none'', 1)'),
  'HV00J: server "reg29_none" names no schema registry%', 'a server without a registry is HV00J');
SELECT ok((SELECT 'kafka_lake.schemas'::regclass = ANY (extconfig) FROM pg_extension WHERE extname = 'kafka_lake'),
  'kafka_lake.schemas goes with pg_dump');

-- clean up
REVOKE ALL ON FUNCTION kafka_lake.registry_schema(text, integer, interval) FROM kl29_plain;
REVOKE USAGE ON SCHEMA kafka_lake FROM kl29_plain;
REVOKE USAGE ON FOREIGN SERVER reg29 FROM kl29_plain;
DROP USER MAPPING FOR CURRENT_USER SERVER reg29;
DROP SERVER reg29;
DROP SERVER reg29_prefix;
DROP SERVER reg29_wrong;
DROP SERVER reg29_none;
DROP ROLE kl29_plain;
DELETE FROM kafka_lake.schemas WHERE server LIKE 'reg29%';
SELECT * FROM finish();
