-- test/pgtap/29g_registry_faults.sql: the schema registry failing during land() is an
-- infrastructure failure, not bad input.  With the registry slow past the call's time,
-- answering 500, refusing the credentials (401, no user mapping and a wrong password)
-- or answering what is not the REST API, land() stops with its error (HV00N, 28000,
-- HV00L), lands nothing of the window and moves no committed offset; the next call,
-- with the registry well again, lands every record once.  A registry that answers 404
-- for the id is the record's fault: quarantined, and readmit() lands it once the id is
-- known.  Needs the broker and the registry peer.
SET client_min_messages = warning;
SELECT plan(27);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ': ' || msg;
END $$;

CREATE TEMP TABLE avro_lines (line text);
\copy avro_lines FROM 'test/fixtures/avro/orders.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
CREATE TEMP TABLE fx AS
  SELECT l::jsonb ->> 'name' AS name, l::jsonb ->> 'writer' AS writer, (l::jsonb -> 'schema')::text AS schema,
         decode(l::jsonb ->> 'hex', 'hex') AS datum
    FROM avro_lines, LATERAL (SELECT line AS l) x;
CREATE FUNCTION pg_temp.datum(n text) RETURNS bytea LANGUAGE sql AS $$ SELECT datum FROM fx WHERE name = n $$;
CREATE FUNCTION pg_temp.framed(id int, datum bytea) RETURNS bytea LANGUAGE sql AS $$
  SELECT '\x00'::bytea || int4send(id) || datum $$;
-- a schema of the first writer with another doc: a new id, the same encoding
CREATE FUNCTION pg_temp.register(doc text) RETURNS int LANGUAGE sql AS $$
  SELECT kl_test.registry_register('faults29g-value',
    jsonb_set((SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1)::jsonb, '{doc}', to_jsonb(doc))::text,
    auth => 'reader:s3cret') $$;
-- what the source holds: records landed, and the committed offset of partition 0
CREATE FUNCTION pg_temp.held() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM kafka_lake.faults29g_records) || ' records, committed '
         || coalesce((SELECT max(committed_offset)::text FROM kafka_lake.offset_commits c
                        JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'faults29g'), '-');
END $$;

\o /dev/null
SELECT kl_test.registry_reset();
SELECT kl_test.registry('{"auth": "reader:s3cret"}');
\o
SELECT pg_temp.register('v1') AS id1 \gset
\o /dev/null
SELECT format('CREATE SERVER reg29g FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              kl_test.bootstrap(), kl_test.registry_url()) \gexec
CREATE USER MAPPING FOR CURRENT_USER SERVER reg29g
  OPTIONS ("schema.registry.basic.auth.user.info" 'reader:s3cret');
SELECT kl_test.broker('create faults29g.t 1');
\o
SELECT is(kafka_lake.create_contract('faults29g', format($${
  "format": "avro", "server": "reg29g", "subject": "faults29g-value", "version": 1,
  "event_id": "order_id", "business_date": {"field": "day"}}$$)::json), 1, 'a contract over the subject');
SELECT lives_ok($$SELECT kafka_lake.create_source('faults29g', 'reg29g', 'faults29g.t', contract => 'faults29g')$$,
  'create_source');
SELECT kafka_lake.set_compression('faults29g', 'none');  -- plain JSONL: the test reads the files' bytes
\o /dev/null
SELECT kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(:id1, pg_temp.datum('ord-1')), partition => 0);
\o
SELECT results_eq($$SELECT records, accepted FROM kafka_lake.land('faults29g')$$, $$VALUES (1, 1)$$,
  'a record of the first id lands (its schema is in kafka_lake.schemas now)');

-- each fault meets a record of a new id: its schema must be fetched
CREATE FUNCTION pg_temp.fault(mode text, doc text, seconds int DEFAULT 30) RETURNS text LANGUAGE plpgsql AS $$
DECLARE id int; e text;
BEGIN
  id := pg_temp.register(doc);
  PERFORM kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(id, pg_temp.datum('ord-1')), partition => 0);
  PERFORM kl_test.registry(mode);
  e := pg_temp.error_of(format($q$SELECT * FROM kafka_lake.land('faults29g', timeout => '%s s')$q$, seconds));
  PERFORM kl_test.registry('{"mode": "ok", "delay_ms": 0}');
  RETURN e;
END $$;

SELECT alike(pg_temp.fault('{"mode": "slow", "delay_ms": 4000}', 'slow', 1),
  'HV00N: the schema registry at % did not answer in time', 'a registry slower than the call''s time is HV00N');
SELECT is(pg_temp.held(), '1 records, committed 1', 'nothing of that window landed, the offset did not move');
SELECT alike(pg_temp.fault('{"mode": "500"}', 'five hundred'),
  'HV00N: %schema registry%', 'a registry answering 500 is HV00N');
SELECT is(pg_temp.held(), '1 records, committed 1', 'nothing landed after a 500');
SELECT alike(pg_temp.fault('{"mode": "garbage"}', 'garbage'),
  'HV00L: %', 'an answer that is not the REST API''s is HV00L');
SELECT is(pg_temp.held(), '1 records, committed 1', 'nothing landed after a garbled answer');
SELECT alike(pg_temp.fault('{"mode": "401"}', 'refused'),
  '28000: %', 'a registry refusing the credentials (401) is 28000');
SELECT is(pg_temp.held(), '1 records, committed 1', 'nothing landed after a 401');

-- credentials: none, then wrong ones; never shown
\o /dev/null
DROP USER MAPPING FOR CURRENT_USER SERVER reg29g;
\o
SELECT pg_temp.register('no mapping') AS id_nomap \gset
\o /dev/null
SELECT kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(:id_nomap, pg_temp.datum('ord-1')), partition => 0);
\o
SELECT alike(pg_temp.error_of($$SELECT * FROM kafka_lake.land('faults29g')$$), '28000: %',
  'no credentials for a registry that asks for them is 28000');
\o /dev/null
CREATE USER MAPPING FOR CURRENT_USER SERVER reg29g
  OPTIONS ("schema.registry.basic.auth.user.info" 'reader:wrong-password');
\o
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.land('faults29g')$$) AS wrong \gset
SELECT alike(:'wrong'::text, '28000: %', 'a wrong password is 28000');
SELECT unalike(:'wrong'::text, '%wrong-password%', 'and the error does not show it');
SELECT is(pg_temp.held(), '1 records, committed 1', 'nothing landed without the right credentials');

-- the registry well again: every record waiting lands once
\o /dev/null
ALTER USER MAPPING FOR CURRENT_USER SERVER reg29g
  OPTIONS (SET "schema.registry.basic.auth.user.info" 'reader:s3cret');
\o
SELECT results_eq($$SELECT records, accepted, duplicates, quarantined FROM kafka_lake.land('faults29g')$$,
  $$VALUES (5, 0, 5, 0)$$, 'the next land lands the five waiting records, each a duplicate of the first order');
SELECT is((SELECT string_agg(DISTINCT e->>'schema_id', ',')::text
             FROM pg_ls_dir(kl_test.landing('faults29g') || '/topic=faults29g.t/partition=0') AS d,
                  json_array_elements(pg_read_file(kl_test.landing('faults29g') || '/topic=faults29g.t/partition=0/'
                                                   || d || '/manifest.json')::json -> 'entries') AS e
            WHERE d LIKE 'batch=%' AND (e->>'offset')::int >= 1) IS NOT NULL, true,
  'the manifest names their schema ids');
SELECT is(pg_temp.held(), '6 records, committed 6', 'six records, each once, and the offset after the last');
SELECT is((SELECT count(DISTINCT schema_id) FROM kafka_lake.schemas WHERE subject = 'faults29g-value' OR server = 'reg29g'),
  6::bigint, 'the six schemas are kept in kafka_lake.schemas');

-- 404 for an id is the record's: quarantined, and readmit() lands it once it is known
SELECT kl_test.registry_register('faults29g-value', '"string"', auth => 'reader:s3cret') AS id_str \gset
\o /dev/null
SELECT kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(:id_str + 1, pg_temp.datum('ord-3')), partition => 0);
\o
SELECT results_eq($$SELECT records, quarantined FROM kafka_lake.land('faults29g')$$, $$VALUES (1, 1)$$,
  'an id the registry does not know quarantines its record, the call goes on');
SELECT alike((SELECT validation_error FROM kafka_lake.faults29g_records WHERE "offset" = 6),
  'schema id ' || (:id_str + 1) || ' is not in the schema registry at %', 'naming the id');
SELECT is(kl_test.registry_register('faults29g-value',
            (SELECT schema FROM fx WHERE writer = 'v2' LIMIT 1), auth => 'reader:s3cret'), :id_str + 1,
  'the registry learns the id');
SELECT results_eq($$SELECT status, accepted FROM kafka_lake.readmit('faults29g', 0, 6, 6)$$,
  $$VALUES ('readmitted', 1)$$, 'readmit() decodes it now');
SELECT is((SELECT event_id FROM kafka_lake.faults29g_events WHERE "offset" = 6), 'ord-3', 'and it reads back');

-- a producer that frames every record with another unknown id does not stall the
-- partition: one call asks the registry for at most 256 writer schemas, and past
-- that a record of an id the call has not met is quarantined, saying so
\o /dev/null
SELECT kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(:id1, pg_temp.datum('ord-2')), partition => 0);
SELECT kafka_lake.produce('reg29g', 'faults29g.t', pg_temp.framed(1000000 + i, pg_temp.datum('ord-1')), partition => 0)
  FROM generate_series(1, 300) i;
SELECT kl_test.registry('{"clear_requests": true}');
\o
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('faults29g')$$, $$VALUES (301, 1, 300)$$,
  'a record of a known id and 300 of as many unknown ids land: the 300 quarantined');
SELECT cmp_ok((SELECT (kl_test.registry('state')::json ->> 'request_count')::int), '<=', 256,
  'the call asked the registry for at most 256 of them');
SELECT ok((SELECT count(*) FILTER (WHERE validation_error LIKE 'schema id % is not in the schema registry at %') BETWEEN 200 AND 256
              AND count(*) FILTER (WHERE validation_error LIKE 'schema id % was not looked up: this call met more than 256 writer schemas%') >= 44
             FROM kafka_lake.faults29g_records WHERE "offset" > 7),
  'the rest say they were not looked up');

\o /dev/null
SELECT kl_test.registry('{"mode": "ok", "auth": null, "delay_ms": 0}');
\o
SELECT * FROM finish();
