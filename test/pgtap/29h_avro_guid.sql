-- test/pgtap/29h_avro_guid.sql: records that name their writer schema by GUID (magic
-- byte 1 and the schema's 16-byte GUID, as Confluent's newer clients write) land under a
-- contract over a subject: the GUID's schema is fetched (GET /schemas/guids/{guid}), its
-- id looked up under the contract's subject, the manifest names that id and
-- kafka_lake.schemas keeps the GUID, so that the next record of the GUID lands with the
-- registry down.  A GUID the registry does not know, and one whose schema is not under
-- the contract's subject, are quarantined with their bytes; a contract over an inline
-- schema reads a GUID kafka_lake.schemas knows, and has no subject to look another's id
-- up under, and says so.  An Avro source from a server that names no registry is
-- refused by create_source and alter_source.  Needs the broker
-- and the registry peer.
SET client_min_messages = warning;
SELECT plan(14);

CREATE TEMP TABLE avro_lines (line text);
\copy avro_lines FROM 'test/fixtures/avro/orders.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
CREATE TEMP TABLE fx AS
  SELECT l::jsonb ->> 'name' AS name, l::jsonb ->> 'writer' AS writer, (l::jsonb -> 'schema')::text AS schema,
         decode(l::jsonb ->> 'hex', 'hex') AS datum
    FROM avro_lines, LATERAL (SELECT line AS l) x;
CREATE FUNCTION pg_temp.datum(n text) RETURNS bytea LANGUAGE sql AS $$ SELECT datum FROM fx WHERE name = n $$;
CREATE FUNCTION pg_temp.by_guid(guid uuid, datum bytea) RETURNS bytea LANGUAGE sql AS $$
  SELECT '\x01'::bytea || decode(replace(guid::text, '-', ''), 'hex') || datum $$;

\o /dev/null
SELECT kl_test.registry_reset();
\o
SELECT kl_test.registry_register('guid29h-value', (SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1)) AS id1 \gset
SELECT kl_test.registry_register('guid29h-value', (SELECT schema FROM fx WHERE writer = 'v2' LIMIT 1)) AS id2 \gset
-- the first writer's schema with a doc, registered under another subject only
SELECT kl_test.registry_register('elsewhere29h-value',
  jsonb_set((SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1)::jsonb, '{doc}', '"elsewhere"')::text) AS id_else \gset
SELECT kl_test.registry_guid(:id1) AS guid1 \gset
SELECT kl_test.registry_guid(:id2) AS guid2 \gset
SELECT kl_test.registry_guid(:id_else) AS guid_else \gset
SELECT ok(:'guid1'::uuid IS NOT NULL AND :'guid1' <> :'guid2', 'the registry gives each schema a GUID');
\o /dev/null
SELECT format('CREATE SERVER guid29h FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L, "schema.registry.url" %L)',
              kl_test.bootstrap(), kl_test.registry_url()) \gexec
SELECT kl_test.broker('create guid29h.t 1');
SELECT kafka_lake.create_contract('guid29h', '{"format": "avro", "server": "guid29h", "subject": "guid29h-value",
  "version": 1, "event_id": "order_id", "business_date": {"field": "day"}}');
SELECT kafka_lake.create_source('guid29h', 'guid29h', 'guid29h.t', contract => 'guid29h');
SELECT kafka_lake.set_compression('guid29h', 'none');  -- plain JSONL: the test reads the files' bytes
\o

CREATE TEMP TABLE produced AS
SELECT n, v FROM (VALUES
  (0, pg_temp.by_guid(:'guid1', pg_temp.datum('ord-1'))),
  (1, pg_temp.by_guid('00000000-0000-4000-8000-000000000001', pg_temp.datum('ord-2'))),
  (2, pg_temp.by_guid(:'guid_else', pg_temp.datum('ord-2'))),
  (3, pg_temp.by_guid(:'guid2', pg_temp.datum('ord-3')))) AS x(n, v);
\o /dev/null
SELECT kafka_lake.produce('guid29h', 'guid29h.t', v, partition => 0) FROM produced ORDER BY n;
\o
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('guid29h')$$,
  $$VALUES (4, 2, 2)$$, 'four records named by GUID land: two accepted, two quarantined');
SELECT results_eq($$SELECT "offset", event_id FROM kafka_lake.guid29h_events ORDER BY "offset"$$,
  $$VALUES (0::bigint, 'ord-1'), (3, 'ord-3')$$, 'the records of known GUIDs decode, the second writer''s too');
SELECT alike((SELECT validation_error FROM kafka_lake.guid29h_records WHERE "offset" = 1),
  'schema GUID 00000000-0000-4000-8000-000000000001 is not in the schema registry at %', 'an unknown GUID is quarantined');
SELECT alike((SELECT validation_error FROM kafka_lake.guid29h_records WHERE "offset" = 2),
  'the schema of GUID ' || :'guid_else' || ' under subject "guid29h-value" is not in the schema registry at %',
  'a GUID whose schema is not under the contract''s subject is quarantined');
SELECT is((SELECT string_agg((e->>'offset') || ':' || coalesce(e->>'schema_id', '-'), ' ' ORDER BY (e->>'offset')::int)
             FROM pg_ls_dir(kl_test.landing('guid29h') || '/topic=guid29h.t/partition=0') AS d,
                  json_array_elements(pg_read_file(kl_test.landing('guid29h') || '/topic=guid29h.t/partition=0/'
                                                   || d || '/manifest.json')::json -> 'entries') AS e
            WHERE d LIKE 'batch=%'),
  format('0:%s 1:- 2:- 3:%s', :id1, :id2), 'the manifest names the id of each known GUID');
SELECT is((SELECT string_agg(schema_id || '=' || guid, ',' ORDER BY schema_id) FROM kafka_lake.schemas
            WHERE registry_url = kl_test.registry_url() AND guid IS NOT NULL),
  format('%s=%s,%s=%s', :id1, :'guid1', :id2, :'guid2'), 'kafka_lake.schemas keeps the GUIDs of the ids');
SELECT is((SELECT count(*) FROM produced p
             JOIN kafka_lake.guid29h_records r ON r."offset" = p.n AND r.status = 'quarantined'
            WHERE decode(r.raw_value, 'base64') = p.v), 2::bigint,
  'the quarantined records keep their exact bytes');

-- the registry down: a GUID kafka_lake.schemas knows needs no registry
\o /dev/null
SELECT kafka_lake.produce('guid29h', 'guid29h.t', pg_temp.by_guid(:'guid1', pg_temp.datum('ord-5')), partition => 0);
SELECT kl_test.registry('{"mode": "down"}');
\o
SELECT results_eq($$SELECT records, accepted FROM kafka_lake.land('guid29h')$$, $$VALUES (1, 1)$$,
  'with the registry down a record of a stored GUID lands');
SELECT kafka_lake.produce('guid29h', 'guid29h.t', pg_temp.by_guid(:'guid2', pg_temp.datum('ord-3')), partition => 0) AS off_dup \gset
SELECT results_eq(format($$SELECT records, accepted, duplicates FROM kafka_lake.replay('guid29h', 0, %s, %s) WHERE status = 'landed'$$, :off_dup, :off_dup),
  $$VALUES (1, 0, 1)$$, 'and replay() decodes a stored GUID: the same order again is a duplicate');
\o /dev/null
SELECT kl_test.registry('{"mode": "ok"}');
\o

-- a contract over an inline schema has no subject for a GUID's id
\o /dev/null
SELECT kl_test.broker('create inline29h.t 1');
SELECT kafka_lake.create_contract('inline29h', format('{"format": "avro", "schema": %s, "event_id": "order_id"}',
  (SELECT schema FROM fx WHERE writer = 'v1' LIMIT 1))::json);
SELECT kafka_lake.create_source('inline29h', 'guid29h', 'inline29h.t', contract => 'inline29h');
SELECT kafka_lake.set_compression('inline29h', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('guid29h', 'inline29h.t', pg_temp.by_guid(:'guid1', pg_temp.datum('ord-1')));
SELECT kafka_lake.produce('guid29h', 'inline29h.t', pg_temp.by_guid(:'guid_else', pg_temp.datum('ord-2')));
\o
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('inline29h')$$, $$VALUES (2, 1, 1)$$,
  'under a contract of an inline schema a GUID kafka_lake.schemas knows lands, another is quarantined');
SELECT alike((SELECT validation_error FROM kafka_lake.inline29h_records WHERE status = 'quarantined'),
  'schema GUID ' || :'guid_else' || ' has no schema id kafka_lake can look up', 'saying why');

-- an Avro source lands from a server that names a registry, said when it is made
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ': ' || msg;
END $$;
\o /dev/null
SELECT format('CREATE SERVER plain29h FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)', kl_test.bootstrap()) \gexec
SELECT kafka_lake.create_contract('json29h', '{"type": "object", "properties": {"order_id": {"type": "string"}}}');
SELECT kafka_lake.create_source('json29h', 'plain29h', 'inline29h.t', contract => 'json29h');
SELECT kafka_lake.set_compression('json29h', 'none');  -- plain JSONL: the test reads the files' bytes
\o
SELECT is(pg_temp.error_of($$SELECT kafka_lake.create_source('avro29h', 'plain29h', 'inline29h.t', contract => 'guid29h')$$),
  'HV00J: contract "guid29h" reads Avro, and server "plain29h" names no schema registry',
  'create_source of an Avro contract from a server without a registry is refused');
SELECT is(pg_temp.error_of($$SELECT kafka_lake.alter_source('json29h', 'inline29h')$$),
  'HV00J: contract "inline29h" reads Avro, and server "plain29h" names no schema registry',
  'and so is alter_source to one');

SELECT * FROM finish();
