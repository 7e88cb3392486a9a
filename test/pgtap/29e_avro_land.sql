-- test/pgtap/29e_avro_land.sql: an Avro topic lands, is queried and bridged end to
-- end.  The contract names a subject of the Schema Registry test peer
-- (test/registry/registry.py) and is stored with the fetched schema embedded; the
-- records are Confluent-framed datums that avsc encoded (test/avro/encode.js wrote
-- test/fixtures/avro/orders.jsonl), produced with kafka_lake.produce; they land, read
-- back through kafka_lake.orders29e_events with the mapped SQL types (numeric,
-- timestamptz, date, jsonb, text), and bridge into a gold.  A second writer schema
-- (a field added with a default) lands under the same reader; a writer the reader
-- cannot read, an id the registry does not know, truncated bytes and a value without
-- the magic byte are quarantined with their bytes exact; the registry down during
-- land() is HV00N and loses nothing, and the next land lands the rest; readmit() with
-- the registry down decodes from kafka_lake.schemas.  Needs the broker and the registry
-- peer.
SET client_min_messages = warning;
SELECT plan(44);

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

\o /dev/null
SELECT kl_test.registry_reset();
\o
SELECT kl_test.registry_register('orders29e-value', (SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1)) AS id1 \gset
SELECT kl_test.registry_register('orders29e-value', (SELECT schema FROM fx WHERE writer = 'v2' LIMIT 1)) AS id2 \gset
SELECT kl_test.registry_register('orders29e-bad-value', (SELECT schema FROM fx WHERE writer = 'bad' LIMIT 1)) AS id_bad \gset
-- the first writer's schema with a doc: another id, the same encoding
SELECT kl_test.registry_register('orders29e-doc-value',
  jsonb_set((SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1)::jsonb, '{doc}', '"an order"')::text) AS id_doc \gset
\o /dev/null
SELECT format('CREATE SERVER avro29e FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              kl_test.bootstrap(), kl_test.registry_url()) \gexec
SELECT kl_test.broker('create orders29e.t 1');
\o

-- the contract: a subject's version, fetched and embedded
SELECT is(kafka_lake.create_contract('orders29e', $${
  "format": "avro", "server": "avro29e", "subject": "orders29e-value", "version": 1,
  "normalize": {"order_id": ["trim"]},
  "event_id": "order_id", "business_date": {"field": "day"}, "natural_key": ["order_id"],
  "rules": ["amount >= 0"]
}$$), 1, 'create_contract of an Avro subject is version 1');
SELECT ok((SELECT definition->>'schema_id' = :'id1' AND definition->'schema'->>'name' = 'order'
             FROM kafka_lake.contracts WHERE contract = 'orders29e' AND version = 1),
  'the stored definition holds the fetched schema and its id');
SELECT is(pg_temp.error_of($$SELECT kafka_lake.create_contract('bad29e', '{"format": "avro", "schema": {"type": "record", "name": "r", "fields": [{"name": "a", "type": "nope"}]}}')$$),
  '42P17: invalid Avro schema at $.fields[0].type: unknown type "nope"', 'a bad Avro schema is 42P17 with its path');
SELECT alike(pg_temp.error_of($$SELECT kafka_lake.create_contract('bad29e', '{"format": "avro", "schema": {"type": "record", "name": "r", "fields": [{"name": "a", "type": "string"}]}, "event_id": "b"}')$$),
  '42P17: %', 'an event_id that is no field is 42P17');
SELECT alike(pg_temp.error_of($$SELECT kafka_lake.create_contract('bad29e', '{"format": "avro", "server": "avro29e", "subject": "no-such-value"}')$$),
  '42704: %', 'an unknown subject is 42704');
SELECT is(kafka_lake.create_contract('inline29e', format('{"format": "avro", "schema": %s, "event_id": "order_id"}',
                                     (SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1))::json), 1,
  'create_contract of an inline Avro schema');
SELECT alike(pg_temp.error_of($$SELECT kafka_lake.create_contract('bad29e', '{"format": "avro", "schema": {"type": "record", "name": "r", "fields": []}, "properties": {}}')$$),
  '42P17: invalid contract definition at $: unknown key "properties" in an Avro contract', 'JSON Schema keys are not an Avro contract''s');
SELECT lives_ok($$SELECT kafka_lake.create_source('orders29e', 'avro29e', 'orders29e.t', contract => 'orders29e')$$,
  'create_source with the Avro contract');
SELECT kafka_lake.set_compression('orders29e', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders29e_events'::regclass AND attnum > 10),
  'order_id text, amount numeric(10,2), ordered_at timestamp with time zone, day date, note text, customer jsonb, status text',
  'the typed table has the Avro fields with their SQL types');

-- seven records: two of the first writer (one refused by the rule), one of the second,
-- then a writer the reader cannot read, an unknown id, truncated bytes, no magic byte
CREATE TEMP TABLE produced AS
SELECT n, v FROM (VALUES
  (0, pg_temp.framed(:id1, pg_temp.datum('ord-1'))),
  (1, pg_temp.framed(:id1, pg_temp.datum('ord-2'))),
  (2, pg_temp.framed(:id2, pg_temp.datum('ord-3'))),
  (3, pg_temp.framed(:id_bad, pg_temp.datum('bad-writer'))),
  (4, pg_temp.framed(99999, pg_temp.datum('ord-1'))),
  (5, substr(pg_temp.framed(:id1, pg_temp.datum('ord-1')), 1, 12)),
  (6, pg_temp.datum('ord-1'))) AS x(n, v);
\o /dev/null
SELECT kafka_lake.produce('avro29e', 'orders29e.t', v, partition => 0) FROM produced ORDER BY n;
\o
SELECT results_eq($$SELECT records, accepted, duplicates, quarantined FROM kafka_lake.land('orders29e')$$,
  $$VALUES (7, 2, 0, 5)$$, 'seven Avro records land: 2 accepted, 5 quarantined');
SELECT results_eq($$SELECT order_id, amount, ordered_at, day, note, customer, status, business_date
                      FROM kafka_lake.orders29e_events ORDER BY "offset"$$,
  $$VALUES ('ord-1', 12.30::numeric(10,2), '2026-06-29 10:00:00.123+00'::timestamptz, '2026-06-29'::date,
            NULL::text, '{"id": 7, "name": "Ann"}'::jsonb, 'paid', '2026-06-29'::date),
           ('ord-3', 99999999.99, '2026-06-30 08:00:00+00', '2026-06-30', NULL, '{"id": 9, "name": "Cy"}', 'shipped', '2026-06-30')$$,
  'the events read back typed: numeric, timestamptz, date, jsonb, text; the second writer''s too');
SELECT is((SELECT event_id FROM kafka_lake.orders29e_events WHERE "offset" = 0), 'ord-1', 'the event_id is the field''s');

-- fields derived from the nested record, in a second source over the same records
\o /dev/null
SELECT kafka_lake.create_contract('orders29e_derived', $${
  "format": "avro", "server": "avro29e", "subject": "orders29e-value", "version": 1,
  "derived": {"customer_name": {"type": "string", "path": ["customer", "name"], "normalize": ["lower"], "required": true},
              "customer_id": {"type": "integer", "path": ["customer", "id"], "required": true}},
  "event_id": ["order_id", "customer_id"], "business_date": {"field": "day"}
}$$);
SELECT kafka_lake.create_source('orders29e_d', 'avro29e', 'orders29e.t', contract => 'orders29e_derived');
SELECT kafka_lake.set_compression('orders29e_d', 'none');  -- plain JSONL: the test reads the files' bytes
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('orders29e_d')$$, $$VALUES (3)$$,
  'an Avro contract with derived fields lands the same records');
SELECT results_eq($$SELECT order_id, customer_name, customer_id, event_id FROM kafka_lake.orders29e_d_events ORDER BY "offset"$$,
  $$VALUES ('ord-1', 'ann', 7::bigint, '["ord-1", 7]'), ('ord-2', 'bob', 8, '["ord-2", 8]'), ('ord-3', 'cy', 9, '["ord-3", 9]')$$,
  'its derived columns hold the nested record''s fields, normalised, and the event_id combines two fields');
SELECT is(pg_temp.error_of($$SELECT kafka_lake.create_contract('bad29e', '{"format": "avro", "schema": {"type": "record", "name": "r", "fields": [{"name": "a", "type": "string"}]}, "derived": {"b": {"type": "string"}}}')$$),
  '42P17: invalid contract definition at $.derived.b: a derived field needs a "path"', 'a derived field of an Avro contract needs a path');

CREATE FUNCTION pg_temp.reason(o int) RETURNS text LANGUAGE sql AS $$
  SELECT validation_error FROM kafka_lake.orders29e_records WHERE "offset" = o AND status = 'quarantined' $$;
SELECT alike(pg_temp.reason(1), '%amount%', 'the rule refuses a decoded record');
SELECT alike(pg_temp.reason(3), 'schema id ' || :id_bad || ' cannot be read with the schema of contract "orders29e" version 1: %',
  'a writer the reader cannot read is quarantined, naming its id');
SELECT alike(pg_temp.reason(4), 'schema id 99999 is not in the schema registry at %', 'an unknown id is quarantined');
SELECT alike(pg_temp.reason(5), 'the Avro value of schema id ' || :id1 || ' does not decode: % at byte %',
  'truncated bytes are quarantined with the decoder''s field and byte');
SELECT alike(pg_temp.reason(6), 'not an Avro value in Confluent''s wire format: unknown magic byte%',
  'a value without the magic byte is quarantined');

-- the exact bytes, from the landing itself
CREATE TABLE pg_temp.landed AS
SELECT (l::jsonb #>> '{kafka,offset}')::int AS n,
       CASE WHEN l::jsonb ? 'raw_value_base64' THEN decode(l::jsonb ->> 'raw_value_base64', 'base64')
            ELSE convert_to(l::jsonb ->> 'raw_value', 'UTF8') END AS value
FROM pg_ls_dir(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0') AS d,
     regexp_split_to_table(rtrim(pg_read_file(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0/'
                                               || d || '/quarantine.jsonl'), E'\n'), E'\n') AS l
WHERE d LIKE 'batch=%';
SELECT is((SELECT count(*) FROM produced p JOIN pg_temp.landed l USING (n) WHERE l.value = p.v), 5::bigint,
  'the five quarantined records keep their exact bytes');
-- and the accepted ones keep theirs next to the decoded event
SELECT is((SELECT string_agg(n::text, ',' ORDER BY n) FROM produced p JOIN (
    SELECT (l::jsonb #>> '{kafka,offset}')::int AS n, decode(l::jsonb ->> 'raw_value_base64', 'base64') AS value, l::jsonb ? 'event' AS decoded
      FROM pg_ls_dir(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0') AS d,
           regexp_split_to_table(rtrim(pg_read_file(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0/'
                                                     || d || '/accepted.jsonl'), E'\n'), E'\n') AS l
     WHERE d LIKE 'batch=%') a USING (n) WHERE a.value = p.v AND a.decoded), '0,2',
  'an accepted Avro line keeps the value as received (framing included) next to its decoded event');
SELECT is((SELECT count(*) FROM kafka_lake.orders29e_records r JOIN produced p ON p.n = r."offset"
            WHERE r.status = 'accepted' AND decode(r.raw_value, 'base64') = p.v AND r.event IS NOT NULL), 2::bigint,
  'and the foreign table shows it as raw_value');

-- the manifest says which writer schema id each Avro record was framed with
SELECT is((SELECT string_agg((e->>'offset') || ':' || coalesce(e->>'schema_id', '-'), ' ' ORDER BY (e->>'offset')::int)
             FROM pg_ls_dir(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0') AS d,
                  json_array_elements(pg_read_file(kl_test.landing('orders29e') || '/topic=orders29e.t/partition=0/'
                                                   || d || '/manifest.json')::json -> 'entries') AS e
            WHERE d LIKE 'batch=%'),
  format('0:%s 1:%s 2:%s 3:%s 4:99999 5:%s 6:-', :id1, :id1, :id2, :id_bad, :id1),
  'each manifest entry names the schema id of its framing');
-- the registry down during land(): HV00N, nothing lost; the next land lands it
\o /dev/null
SELECT kafka_lake.produce('avro29e', 'orders29e.t', pg_temp.framed(:id_doc, pg_temp.datum('ord-5')), partition => 0);
SELECT kl_test.registry('{"mode": "down"}');
\o
SELECT alike(pg_temp.error_of($$SELECT * FROM kafka_lake.land('orders29e')$$), 'HV00N: could not reach the schema registry%',
  'a new schema id with the registry down stops land() with HV00N');
SELECT is((SELECT count(*) FROM kafka_lake.orders29e_records), 7::bigint, 'nothing of that window landed');
\o /dev/null
SELECT kl_test.registry('{"mode": "ok"}');
\o
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('orders29e')$$,
  $$VALUES (1, 1, 0)$$, 'with the registry up the next land lands it');
SELECT is((SELECT note FROM kafka_lake.orders29e_events WHERE event_id = 'ord-5'), 'late', 'decoded with the new id''s schema');

-- replay() lands the same way: an order of the second writer again is a duplicate
SELECT kafka_lake.produce('avro29e', 'orders29e.t', pg_temp.framed(:id2, pg_temp.datum('ord-3')), partition => 0) AS off_dup \gset
SELECT results_eq(format($$SELECT records, accepted, duplicates FROM kafka_lake.replay('orders29e', 0, %s, %s) WHERE status = 'landed'$$, :off_dup, :off_dup),
  $$VALUES (1, 0, 1)$$, 'replay decodes too: the same order is a duplicate of its event_id');
SELECT results_eq($$SELECT records, reused FROM kafka_lake.land('orders29e') WHERE status = 'reused'$$,
  $$VALUES (1, 1)$$, 'and land reuses what replay landed');

-- a new contract version without the rule, and readmit() with the registry down
SELECT is(kafka_lake.create_contract('orders29e', $${
  "format": "avro", "server": "avro29e", "subject": "orders29e-value", "version": 1,
  "normalize": {"order_id": ["trim"]},
  "event_id": "order_id", "business_date": {"field": "day"}, "natural_key": ["order_id"]
}$$), 2, 'a version without the rule is version 2');
SELECT lives_ok($$SELECT kafka_lake.alter_source('orders29e', 'orders29e', 2)$$, 'alter_source moves to it');
\o /dev/null
SELECT kl_test.registry('{"mode": "down"}');
\o
SELECT results_eq($$SELECT status, records, accepted FROM kafka_lake.readmit('orders29e', 0, 1, 3)$$,
  $$VALUES ('readmitted', 2, 1)$$, 'readmit with the registry down decodes from kafka_lake.schemas: the rule''s refusal is accepted, the unreadable writer stays');
SELECT is((SELECT amount FROM kafka_lake.orders29e_events WHERE event_id = 'ord-2'), -0.05::numeric(10,2),
  'the readmitted order reads back');
\o /dev/null
SELECT kl_test.registry('{"mode": "ok"}');
\o

-- bridged into a gold
SELECT lives_ok($$SELECT kafka_lake.define_gold('orders29e', 'orders29e_by_status', grain => ARRAY['status'],
    metrics => '{"revenue": {"sum": "amount"}, "orders": {"count": "*"}}')$$, 'define_gold over the Avro source');
SELECT results_eq($$SELECT run_status FROM kafka_lake.bridge('orders29e', '2026-06-29')$$,
  $$VALUES ('processed')$$, 'bridge of 2026-06-29');
SELECT results_eq($$SELECT status, revenue, orders FROM kafka_lake.orders29e_by_status
                     WHERE business_date = '2026-06-29' ORDER BY status$$,
  $$VALUES ('new'::text, -0.05::numeric, 1::bigint), ('paid', 12.30, 1)$$, 'the gold holds the Avro orders');

-- every other type, through a subject's latest version
SELECT kl_test.registry_register('types29e-value', (SELECT schema FROM fx WHERE writer = 'types')) AS id_types \gset
\o /dev/null
SELECT kl_test.broker('create types29e.t 1');
SELECT kafka_lake.create_contract('types29e', '{"format": "avro", "server": "avro29e", "subject": "types29e-value"}');
SELECT kafka_lake.create_source('types29e', 'avro29e', 'types29e.t', contract => 'types29e');
SELECT kafka_lake.set_compression('types29e', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('avro29e', 'types29e.t', pg_temp.framed(:id_types, pg_temp.datum('types')));
\o
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.types29e_events'::regclass AND attnum > 9),
  'b boolean, i integer, l bigint, f double precision, d double precision, s text, by text, fx text, u uuid, '
  't time without time zone, lt timestamp without time zone, m jsonb, a jsonb, un jsonb, n3 jsonb, e text, ne text',
  'each Avro type has its SQL type');
SELECT results_eq($$SELECT records, accepted FROM kafka_lake.land('types29e')$$, $$VALUES (1, 1)$$, 'a datum of every type lands');
SELECT results_eq($$SELECT b, i, l, f, d, s, decode(by, 'base64'), decode(fx, 'base64'), u, t, lt, m, a, un, n3, e, ne
                      FROM kafka_lake.types29e_events$$,
  $$VALUES (true, -3, 1234567890123::bigint, 1.5::float8, 0.1::float8, 'héllo', '\x0102ff'::bytea, '\x0908'::bytea,
            '6f1c2b9e-3a1d-4c5e-9f00-1a2b3c4d5e6f'::uuid, '01:02:03.123'::time, '2026-06-29 10:00:00.123'::timestamp,
            '{"k": 1}'::jsonb, '["x", "y"]'::jsonb, '{"string": "z"}'::jsonb, '{"int": 5}'::jsonb, 'B', 'X')$$,
  'and reads back typed');

-- a JSON Schema through the registry: a JSON contract with "framing": "confluent"
\o /dev/null
SELECT kl_test.broker('create json29e.t 1');
SELECT kafka_lake.create_contract('json29e', '{"type": "object", "framing": "confluent",
  "properties": {"a": {"type": "integer"}}, "required": ["a"]}');
SELECT kafka_lake.create_source('json29e', 'avro29e', 'json29e.t', contract => 'json29e');
SELECT kafka_lake.set_compression('json29e', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('avro29e', 'json29e.t', v, partition => 0)
  FROM unnest(ARRAY[pg_temp.framed(5, convert_to('{"a": 1}', 'UTF8')), convert_to('{"a": 2}', 'UTF8'),
                    '\x01'::bytea || decode(repeat('ab', 16), 'hex') || convert_to('{"a": 3}', 'UTF8')]) WITH ORDINALITY AS x(v, n)
 ORDER BY n;
\o
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('json29e')$$,
  $$VALUES (3, 2, 1)$$, 'a JSON contract with "framing": "confluent" judges the JSON after the prefix of an id or a GUID');
SELECT is((SELECT string_agg(a::text, ',' ORDER BY a) FROM kafka_lake.json29e_events), '1,3', 'and the events read back');
SELECT is((SELECT string_agg((e->>'offset') || ':' || coalesce(e->>'schema_id', '-'), ' ' ORDER BY (e->>'offset')::int)
             FROM pg_ls_dir(kl_test.landing('json29e') || '/topic=json29e.t/partition=0') AS d,
                  json_array_elements(pg_read_file(kl_test.landing('json29e') || '/topic=json29e.t/partition=0/'
                                                   || d || '/manifest.json')::json -> 'entries') AS e
            WHERE d LIKE 'batch=%'),
  '0:5 1:- 2:-', 'the manifest keeps the schema id of a framed JSON value (none for no framing or a GUID)');
SELECT alike((SELECT validation_error FROM kafka_lake.json29e_records WHERE status = 'quarantined'),
  'not a value in Confluent''s wire format%', 'a value without the prefix is quarantined');

SELECT * FROM finish();
