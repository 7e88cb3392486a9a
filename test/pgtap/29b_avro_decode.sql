-- test/pgtap/29b_avro_decode.sql: kafka_lake.avro_decode() decodes Avro datums as avsc, an independent
-- implementation, does.  test/fixtures/avro/cases.jsonl holds the cases test/avro/generate.js writes
-- with avsc (test/run regenerates and compares them when node is there): every primitive, the
-- logical types (decimal on bytes and fixed, negative, scale 0 and 4; date; time; timestamps in millis
-- and micros; uuid), enums, unions (nullable, and wrapped as {"branch": value}), nested and recursive
-- records, arrays, maps, fixed; schema resolution (defaults, a removed field, aliases, promotions, enum
-- defaults, unions on either side, reordered fields); and the errors: bytes cut short at several points,
-- a varint too long, a negative length, a block count beyond the bytes, invalid UTF-8, trailing bytes,
-- nesting too deep, an unknown magic byte (avro_frame), unresolvable pairs (42804), bad schemas (42P17).
-- A decoded value must equal avsc's as jsonb (numbers exactly, 12.30 is not 12.3); a case in error must
-- give the SQLSTATE and a message (with its detail) that holds the expected text.  Needs no broker.
CREATE TEMP TABLE avro_lines (line text);
\copy avro_lines FROM 'test/fixtures/avro/cases.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
CREATE TEMP TABLE avro_cases AS
  SELECT n, c->>'name' AS name, (c->>'writer')::json AS writer, (c->>'reader')::json AS reader,
         decode(c->>'hex', 'hex') AS value, c->>'expected' AS expected, c->>'sqlstate' AS sqlstate,
         c->>'error' AS error, coalesce((c->>'framed')::boolean, false) AS framed,
         (c->>'schema_id')::bigint AS schema_id, (c->>'schema_guid')::uuid AS schema_guid
    FROM (SELECT row_number() OVER () AS n, line::json AS c FROM avro_lines) s
   WHERE c->>'sqlstate' IS DISTINCT FROM '42P17';
-- a bad schema's text is not JSON sometimes: kept as text
CREATE TEMP TABLE avro_bad_schemas AS
  SELECT c->>'name' AS name, c->>'writer' AS writer, decode(c->>'hex', 'hex') AS value, c->>'error' AS error
    FROM (SELECT line::json AS c FROM avro_lines) s
   WHERE c->>'sqlstate' = '42P17';

SELECT plan((SELECT count(*)::int FROM avro_cases) + (SELECT count(*)::int FROM avro_bad_schemas) + 13);

-- pg_temp.outcome(sql): 'SQLSTATE: message (detail)' of the error sql raises, or its result
CREATE FUNCTION pg_temp.outcome(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  result text;
  msg text;
  detail text;
BEGIN
  EXECUTE sql INTO result;
  RETURN result;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || msg || ' (' || coalesce(detail, '') || ')';
END $$;

-- pg_temp.decode_sql(case): the statement that decodes a case
CREATE FUNCTION pg_temp.decode_sql(c avro_cases) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT kafka_lake.avro_decode(%s, %L::json, %L::json)::jsonb::text',
                CASE WHEN c.framed THEN format('(kafka_lake.avro_frame(%L::bytea)).payload', c.value)
                     ELSE format('%L::bytea', c.value) END,
                c.writer, c.reader)
$$;

-- every case that decodes: avsc's value
SELECT is(pg_temp.outcome(pg_temp.decode_sql(c)), c.expected::jsonb::text, c.name)
  FROM avro_cases c WHERE c.sqlstate IS NULL ORDER BY c.n;

-- every case in error: its SQLSTATE and message
SELECT is(CASE WHEN o LIKE c.sqlstate || ': %' AND position(c.error IN o) > 0 THEN 'as expected' ELSE o END,
          'as expected', c.name || ' (' || c.sqlstate || ')')
  FROM avro_cases c, LATERAL pg_temp.outcome(pg_temp.decode_sql(c)) o
 WHERE c.sqlstate IS NOT NULL ORDER BY c.n;

SELECT is(CASE WHEN o LIKE '42P17: %' AND position(b.error IN o) > 0 THEN 'as expected' ELSE o END,
          'as expected', b.name || ' (42P17)')
  FROM avro_bad_schemas b,
       LATERAL pg_temp.outcome(format('SELECT kafka_lake.avro_decode(%L::bytea, %L::json)', b.value, b.writer)) o
 ORDER BY b.name;

-- the text itself: json.dumps's layout, the reader's field order, a decimal's scale
SELECT is(kafka_lake.avro_decode(value, writer, reader)::text, '{"a": 1, "x": 9, "b": "bee"}',
          'a record is written in the reader''s field order, with ", " and ": " between')
  FROM avro_cases WHERE name = 'reordered fields';
SELECT is(kafka_lake.avro_decode(value, writer)::text,
          '{"id": 42, "customer": {"name": "Ann", "vip": true}, "lines": [{"sku": "a-1", "qty": 2, "price": 19.99}, {"sku": "b-2", "qty": 1, "price": -5.00}], "tags": {"channel": "web"}, "note": "leave at door", "status": "PAID", "billing": {"name": "Bob", "vip": false}}',
          'a nested record, exactly: decimals keep their scale (-5.00), nullable unions are unwrapped')
  FROM avro_cases WHERE name = 'nested record';
SELECT is(kafka_lake.avro_decode(value, writer)::text, '"Gr\u00fc\u00dfe, \u6771\u4eac \ud83d\ude00"',
          'non-ASCII is written as \u escapes, as everything kafka_lake writes')
  FROM avro_cases WHERE name = 'string unicode';

-- the framing
SELECT is((SELECT (f).schema_id FROM (SELECT kafka_lake.avro_frame(value) f FROM avro_cases WHERE name = 'framed: magic byte 0 and a schema id') s),
          456::bigint, 'avro_frame: magic byte 0 gives the schema id');
SELECT is((SELECT (f).schema_guid FROM (SELECT kafka_lake.avro_frame(value) f FROM avro_cases WHERE name = 'framed: magic byte 1 and a schema GUID') s),
          '6f1c2b9e-3a1d-4c5e-9f00-1a2b3c4d5e6f'::uuid, 'avro_frame: magic byte 1 gives the schema GUID');

-- NULLs: a NULL value or writer schema gives NULL, a NULL reader schema means the writer's
SELECT is(kafka_lake.avro_decode(NULL, '"int"')::text, NULL, 'a NULL value decodes to NULL');
SELECT is(kafka_lake.avro_decode('\x02', '"int"', NULL)::text, '1', 'a NULL reader schema is the writer''s');

-- the JSON reads back as the SQL types docs/contracts.md maps the Avro types to
SELECT is((SELECT row((j->>'price')::numeric(10,2), (j->>'sku')::text)::text
             FROM (SELECT kafka_lake.avro_decode(value, writer)->'lines'->1 AS j FROM avro_cases WHERE name = 'nested record') s),
          '(-5.00,b-2)', 'a decimal reads as numeric(p,s)');
SELECT is((SELECT (kafka_lake.avro_decode(value, writer)#>>'{}')::timestamptz FROM avro_cases WHERE name = 'timestamp-micros'),
          '2026-06-29 10:00:00.123456+00'::timestamptz, 'a timestamp-micros reads as timestamptz, to the microsecond');
SELECT is((SELECT (kafka_lake.avro_decode(value, writer)#>>'{}')::date FROM avro_cases WHERE name = 'date'),
          '2026-06-29'::date, 'a date reads as date');

-- many rows, two schemas taking turns: each call decodes with its own pair
SELECT is((SELECT string_agg(kafka_lake.avro_decode(c.value, c.writer, c.reader)::jsonb::text, ' ' ORDER BY i)
             FROM generate_series(1, 4) i
             JOIN avro_cases c ON c.name = CASE WHEN i % 2 = 0 THEN 'int to long' ELSE 'enum' END),
          '"BLUE" {"a": -3} "BLUE" {"a": -3}', 'the compiled pair follows the schemas from row to row');

-- what the functions are
SELECT is((SELECT string_agg(proname || ':' || provolatile::text || proparallel::text || proisstrict::text, ',' ORDER BY proname)
             FROM pg_proc WHERE pronamespace = 'kafka_lake'::regnamespace AND proname IN ('avro_decode', 'avro_frame')),
          'avro_decode:isfalse,avro_frame:istrue', 'both are IMMUTABLE and PARALLEL SAFE; avro_decode takes a NULL reader schema');
SELECT is((SELECT count(*)::int FROM pg_proc p, aclexplode(p.proacl) a
            WHERE p.pronamespace = 'kafka_lake'::regnamespace AND p.proname IN ('avro_decode', 'avro_frame')
              AND a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
          2, 'PUBLIC may execute both: they read nothing of the database');

SELECT * FROM finish();
