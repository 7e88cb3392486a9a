-- test/pgtap/71_contracts_keywords.sql: every keyword of the definition language, accepted
-- and violated, on a landing.  Each case is one value produced in order to one partition;
-- after one land() each coordinate must have the expected status and, when refused, the exact
-- validation_error (the first violation in the order of the checks: type, format and enum of
-- every field before any bound or rule).  Also: normalisation (Unicode lower-casing as
-- Python's str.lower, final sigma), a field from a Kafka header (the value wins), an integer
-- event_id, a business date read in Asia/Tokyo and one from the Kafka timestamp, members made
-- canonical.  Needs the broker and kcat.
SELECT plan(57);

\o /dev/null
SELECT kl_test.server('kw71_srv');
SELECT kl_test.broker('create kw71.t 1');
SELECT kl_test.broker('create kw71.kafka_day 1');
\o
SELECT is(kafka_lake.create_contract('kw71', $${
  "type": "object",
  "properties": {
    "id":      {"type": "integer", "minimum": 1, "maximum": 1000000},
    "code":    {"type": "string", "normalize": ["trim", "lower"], "minLength": 2, "maxLength": 8,
                "pattern": "^[a-z]+-[0-9]+$"},
    "kind":    {"type": "string", "enum": ["a", "b"]},
    "version": {"type": "integer", "const": 2},
    "price":   {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100.5},
    "cost":    {"type": "number", "minimum": 0},
    "weight":  {"type": "number", "exclusiveMinimum": 0.5},
    "day":     {"type": "string", "format": "date"},
    "at":      {"type": "string", "format": "date-time"},
    "flag":    {"type": ["boolean", "null"]},
    "tags":    {"type": "array", "items": {"type": "string", "maxLength": 3}},
    "who":     {"type": "object", "properties": {"name": {"type": "string"}},
                "required": ["name"], "additionalProperties": false},
    "name":    {"type": "string", "normalize": ["lower"]},
    "origin":  {"type": "string", "header": "origin"}
  },
  "required": ["id", "code", "day", "at"],
  "additionalProperties": false,
  "event_id": "id",
  "schema_version": "version",
  "business_date": {"field": "at", "time_zone": "Asia/Tokyo"},
  "rules": ["cost <= price", "id <> 13"],
  "max_value_bytes": 400
}$$), 1, 'a contract with every keyword');
SELECT lives_ok($$SELECT kafka_lake.create_source('kw71', 'kw71_srv', 'kw71.t', contract => 'kw71')$$,
                'a source lands with it');

CREATE TEMP TABLE cases (n serial, label text, value text, status text, reason text);
-- b: a valid base event; each case changes it
CREATE FUNCTION pg_temp.b(changes jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT (jsonb_build_object('id', 1, 'code', ' AB-1 ', 'day', '2026-06-29', 'at', '2026-06-29T20:00:00Z') || changes)::text
$$;
INSERT INTO cases (label, value, status, reason) VALUES
  ('the base event', pg_temp.b('{}'), 'accepted', NULL),
  ('every optional field, valid', pg_temp.b('{"id": 2, "kind": "b", "version": 2, "price": 100.4, "cost": 100.4, "flag": null, "tags": ["x", "yz"], "who": {"name": "w"}, "name": "ΣΑΣ Ä", "origin": "o"}'), 'accepted', NULL),
  ('event_id: an id accepted before', pg_temp.b('{"code": "cd-2"}'), 'duplicate_event_id', NULL),
  ('type', pg_temp.b('{"id": "3"}'), 'quarantined', 'field "id" must be an integer, not a string'),
  ('type: an integer beyond int64', pg_temp.b('{"id": 99999999999999999999}'), 'quarantined', 'field "id" is out of range'),
  ('type: a fraction is no integer', pg_temp.b('{"id": 3.0}'), 'quarantined', 'field "id" must be an integer, not a number with a fraction or exponent'),
  ('type: a boolean is no integer', pg_temp.b('{"id": true}'), 'quarantined', 'field "id" must be an integer, not a boolean'),
  ('minimum', pg_temp.b('{"id": 0}'), 'quarantined', 'field "id" must be at least 1'),
  ('maximum', pg_temp.b('{"id": 1000001}'), 'quarantined', 'field "id" must be at most 1000000'),
  ('minLength, after trim', pg_temp.b('{"id": 4, "code": " a "}'), 'quarantined', 'field "code" must be at least 2 characters long'),
  ('maxLength', pg_temp.b('{"id": 4, "code": "abcdefg-1"}'), 'quarantined', 'field "code" must be at most 8 characters long'),
  ('pattern', pg_temp.b('{"id": 4, "code": "ab_1"}'), 'quarantined', 'field "code" does not match pattern "^[a-z]+-[0-9]+$"'),
  ('enum', pg_temp.b('{"id": 4, "kind": "c"}'), 'quarantined', 'field "kind" has unknown value "c"'),
  ('const of the schema_version field', pg_temp.b('{"id": 4, "version": 3}'), 'quarantined', 'unsupported version 3'),
  ('const: its type', pg_temp.b('{"id": 4, "version": "2"}'), 'quarantined', 'field "version" must be the integer 2, not a string'),
  ('exclusiveMinimum 0', pg_temp.b('{"id": 4, "price": 0}'), 'quarantined', 'field "price" must be positive'),
  ('exclusiveMaximum', pg_temp.b('{"id": 4, "price": 100.50}'), 'quarantined', 'field "price" must be less than 100.5'),
  ('exclusiveMinimum', pg_temp.b('{"id": 4, "weight": 0.50}'), 'quarantined', 'field "weight" must be greater than 0.5'),
  ('minimum 0 of a number', pg_temp.b('{"id": 4, "cost": -0.001}'), 'quarantined', 'field "cost" must not be negative'),
  ('a rule field <= field', pg_temp.b('{"id": 4, "price": 10, "cost": 10.01}'), 'quarantined', 'field "cost" must not exceed price'),
  ('a rule field <> number', pg_temp.b('{"id": 13}'), 'quarantined', 'field "id" must not equal 13'),
  ('format date', pg_temp.b('{"id": 4, "day": "2026-02-30"}'), 'quarantined', 'field "day" must be a real calendar date written YYYY-MM-DD'),
  ('format date-time without a zone', pg_temp.b('{"id": 4, "at": "2026-06-29T20:00:00"}'), 'quarantined', 'field "at" must be an ISO-8601 timestamp with a time zone'),
  ('format date-time, an offset of 16 hours', pg_temp.b('{"id": 4, "at": "2026-06-29T20:00:00+16:00"}'), 'quarantined', 'field "at" has a UTC offset of 16 hours or more, beyond what timestamptz reads'),
  ('a list of types', pg_temp.b('{"id": 4, "flag": 1}'), 'quarantined', 'field "flag" must be a boolean or null, not an integer'),
  ('items', pg_temp.b('{"id": 4, "tags": ["ok", "abcd"]}'), 'quarantined', 'field "tags[1]" must be at most 3 characters long'),
  ('items: their type', pg_temp.b('{"id": 4, "tags": [1]}'), 'quarantined', 'field "tags[0]" must be a string, not an integer'),
  ('an array', pg_temp.b('{"id": 4, "tags": "x"}'), 'quarantined', 'field "tags" must be an array, not a string'),
  ('nested required', pg_temp.b('{"id": 4, "who": {}}'), 'quarantined', 'missing required field "who.name"'),
  ('nested additionalProperties false', pg_temp.b('{"id": 4, "who": {"name": "w", "x": 1}}'), 'quarantined', 'unknown field "who.x"'),
  ('nested properties: their type', pg_temp.b('{"id": 4, "who": {"name": 1}}'), 'quarantined', 'field "who.name" must be a string, not an integer'),
  ('an object', pg_temp.b('{"id": 4, "who": []}'), 'quarantined', 'field "who" must be an object, not an array'),
  ('additionalProperties false', pg_temp.b('{"id": 4, "zzz": 1}'), 'quarantined', 'unknown field "zzz"'),
  ('required', '{"id": 4, "code": "ab-1", "at": "2026-06-29T20:00:00Z"}', 'quarantined', 'missing required field "day"'),
  ('a member named twice', '{"id": 4, "code": "ab-1", "day": "2026-06-29", "at": "2026-06-29T20:00:00Z", "i\u0064": 5}', 'quarantined', 'duplicate field "id"'),
  ('max_value_bytes', pg_temp.b(jsonb_build_object('id', 4, 'name', repeat('x', 400))), 'quarantined', NULL),
  ('a NUL character', '{"id": 4, "code": "ab-1", "day": "2026-06-29", "at": "2026-06-29T20:00:00Z", "name": "a\u0000"}', 'quarantined', 'field "name" contains a NUL character'),
  ('the order of the checks: an enum before a bound', pg_temp.b('{"id": 0, "kind": "c"}'), 'quarantined', 'field "kind" has unknown value "c"'),
  ('the order of the checks: properties order among types', pg_temp.b('{"id": "x", "code": 1}'), 'quarantined', 'field "id" must be an integer, not a string'),
  ('not an object', '[1]', 'quarantined', 'value is an array, not a JSON object'),
  ('not JSON', '{"id": 1', 'quarantined', 'invalid JSON: unexpected end of input at byte 8');
UPDATE cases SET reason = format('value of %s bytes exceeds the contract limit of 400 bytes', octet_length(value))
 WHERE label = 'max_value_bytes';

\o /dev/null
SELECT kafka_lake.produce('kw71_srv', 'kw71.t', convert_to(value, 'UTF8'), partition => 0)
  FROM cases ORDER BY n;
\o
SELECT is((SELECT sum(records)::int FROM kafka_lake.land('kw71')), (SELECT count(*)::int FROM cases),
          'every case lands');
SELECT is(r.status || coalesce(': ' || r.validation_error, ''),
          c.status || coalesce(': ' || c.reason, ''), c.label)
  FROM cases c JOIN kafka_lake.kw71_records r ON r."offset" = c.n - 1
 ORDER BY c.n;

-- what the accepted events became
SELECT is((SELECT event FROM kafka_lake.kw71_records WHERE "offset" = 1),
          '{"at": "2026-06-29T20:00:00Z", "code": "ab-1", "cost": 100.4, "day": "2026-06-29", "flag": null, "id": 2, "kind": "b", "name": "σας ä", "origin": "o", "price": 100.4, "tags": ["x", "yz"], "version": 2, "who": {"name": "w"}}'::jsonb,
          'normalised: code trimmed and lower-cased, name lower-cased as str.lower() does (final sigma)');
SELECT is((SELECT business_date FROM kafka_lake.kw71_records WHERE "offset" = 0), '2026-06-30'::date,
          'business_date: 20:00 UTC is the next day in Asia/Tokyo');
SELECT is((SELECT event_id FROM kafka_lake.kw71_records WHERE "offset" = 2), '1',
          'an integer event_id, as text');

-- a field from a Kafka header: taken when the value lacks it, the value wins otherwise
\o /dev/null
SELECT kl_test.sh(format('echo %s | base64 -d | kcat -P -b %s -t kw71.t -p 0 -H origin=from-header 2>&1',
                         translate(encode(convert_to(v, 'UTF8'), 'base64'), E'\n', ''), kl_test.bootstrap()))
  FROM unnest(ARRAY[pg_temp.b('{"id": 100}'), pg_temp.b('{"id": 101, "origin": "from-value"}')]) v;
\o
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('kw71')), 2, 'two records with headers land');
SELECT results_eq($$SELECT event ->> 'origin', headers FROM kafka_lake.kw71_records WHERE event_id IN ('100', '101') ORDER BY "offset"$$,
                  $$VALUES ('from-header', '[{"key": "origin", "value": "from-header"}]'::jsonb),
                           ('from-value', '[{"key": "origin", "value": "from-header"}]'::jsonb)$$,
                  'a field missing from the value comes from its header; a value that has it wins');

-- the typed table
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.kw71_events'::regclass AND attnum > 10),
          'id bigint, code text, kind text, version bigint, price numeric, cost numeric, weight numeric, day date, '
          'at timestamp with time zone, flag boolean, tags jsonb, who jsonb, name text, origin text',
          'each field has the column type of its JSON type and format');
SELECT results_eq($$SELECT id, code, price, day, at, flag, tags, who ->> 'name' FROM kafka_lake.kw71_events WHERE id = 2$$,
                  $$VALUES (2::bigint, 'ab-1', 100.4::numeric, '2026-06-29'::date, '2026-06-29 20:00:00+00'::timestamptz,
                            NULL::boolean, '["x", "yz"]'::jsonb, 'w')$$,
                  'the typed table reads every kind of field');

-- the Kafka timestamp as the business date
SELECT is(kafka_lake.create_contract('kw71_kafka_day', '{"type": "object", "business_date": {"kafka_timestamp": true, "time_zone": "UTC"}}'),
          1, 'a contract whose business date is the record timestamp');
SELECT lives_ok($$SELECT kafka_lake.create_source('kw71_kd', 'kw71_srv', 'kw71.kafka_day', contract => 'kw71_kafka_day')$$,
                'a source lands with it');
\o /dev/null
SELECT kafka_lake.produce('kw71_srv', 'kw71.kafka_day', convert_to('{"a": 1}', 'UTF8'));
\o
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('kw71_kd')), 1, 'it accepts an object');
SELECT is((SELECT business_date = (to_timestamp(timestamp_ms / 1000.0) AT TIME ZONE 'UTC')::date
           FROM kafka_lake.kw71_kd_records), true, 'its business date is the day of the Kafka timestamp in UTC');

SELECT is_empty($$SELECT * FROM kafka_lake.verify('kw71')$$, 'verify finds nothing wrong');
SELECT lives_ok($$SELECT kafka_lake.drop_source('kw71', drop_landing => true), kafka_lake.drop_source('kw71_kd', drop_landing => true)$$,
                'the sources are dropped');
SELECT * FROM finish();
