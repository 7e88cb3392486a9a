-- test/pgtap/70b_contracts_derived.sql: fields derived from a path inside the value, and
-- event_ids of several fields.  Orders with a nested customer and a list of items:
-- "country" comes from customer.country (its own normalisation, enum and column), "first_sku"
-- from items[0].sku, "buyer" from customer.id or else guest.id (paths tried in order); the
-- event_id is (order_id, version), written as a JSON array, so values holding the
-- separator, quotes or brackets stay apart.  The derived fields are typed columns of
-- <source>_events and silver, a declared gold's grain (gold by country, no SQL), and CSV
-- columns where "columns" puts them.  Every kind of bad definition is refused with its
-- JSON path.  Needs the broker and kcat.
SELECT plan(35);

CREATE FUNCTION pg_temp.produce(value text) RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.sh(format('echo %s | base64 -d | kcat -P -b %s -t orders70b.t -p 0 2>&1',
    translate(encode(convert_to(value, 'UTF8'), 'base64'), E'\n', ''), kl_test.bootstrap()))
$$;

\o /dev/null
SELECT kl_test.server('orders70b_srv');
SELECT kl_test.broker('create orders70b.t 1');
\o
SELECT is(kafka_lake.create_contract('orders70b', $${
  "type": "object",
  "properties": {
    "order_id":  {"type": "string", "normalize": ["trim"], "minLength": 1},
    "version":   {"type": "integer", "minimum": 1},
    "day":       {"type": "string", "format": "date"},
    "amount":    {"type": "number", "minimum": 0, "sql_type": "numeric(12,2)"},
    "customer":  {"type": ["object", "null"],
                  "properties": {"id": {"type": "integer"}, "country": {"type": "string"}},
                  "additionalProperties": false},
    "guest":     {"type": "object"},
    "items":     {"type": "array", "items": {"type": "object"}},
    "country":   {"type": "string", "path": ["customer", "country"], "normalize": ["trim", "lower"],
                  "enum": ["de", "fr", "us"]},
    "first_sku": {"type": ["string", "null"], "path": ["items", 0, "sku"], "maxLength": 8},
    "buyer":     {"type": "integer", "path": [["customer", "id"], ["guest", "id"]]}
  },
  "required": ["order_id", "version", "day", "amount", "country"],
  "event_id": ["order_id", "version"],
  "business_date": {"field": "day"},
  "columns": ["order_id", "version", "country", "buyer", "first_sku", "day", "amount", "customer", "guest", "items"],
  "natural_key": ["order_id", "version"]
}$$), 1, 'a contract with derived fields and an event_id of two fields is created');
SELECT lives_ok($$SELECT kafka_lake.create_source('orders70b', 'orders70b_srv', 'orders70b.t', contract => 'orders70b')$$,
                'create_source takes it');
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders70b_events'::regclass AND attnum > 0 AND attnum > 10),
          'order_id text, version bigint, country text, buyer bigint, first_sku text, day date, '
          'amount numeric(12,2), customer jsonb, guest jsonb, items jsonb',
          'the derived fields are typed columns of orders70b_events, where "columns" puts them');

\o /dev/null
SELECT pg_temp.produce(v) FROM unnest(ARRAY[
  -- accepted: country from the customer, lower-cased; the first item's sku; buyer from customer.id
  '{"order_id": "o-1", "version": 1, "day": "2026-07-01", "amount": 10, "customer": {"id": 7, "country": " DE "}, "items": [{"sku": "a1"}, {"sku": "b2"}]}',
  -- version 2 of o-1: another event
  '{"order_id": "o-1", "version": 2, "day": "2026-07-01", "amount": 12.50, "customer": {"id": 7, "country": "de"}, "items": []}',
  -- o-1 version 1 again, written otherwise: a duplicate
  '{"version": 1, "order_id": " o-1", "day": "2026-07-01", "amount": 10, "customer": {"country": "DE", "id": 7}, "items": [{"sku": "a1"}]}',
  -- ids whose parts hold the separator, quotes and brackets: each its own event
  '{"order_id": "o-2\", 1", "version": 2, "day": "2026-07-01", "amount": 1, "customer": {"id": 8, "country": "fr"}}',
  '{"order_id": "o-2", "version": 12, "day": "2026-07-01", "amount": 2, "customer": {"id": 8, "country": "fr"}}',
  '{"order_id": "o-2\", 12]", "version": 1, "day": "2026-07-01", "amount": 3, "customer": {"id": 9, "country": "us"}, "guest": {"id": 99}}',
  -- the buyer from the second path: a guest order (customer null)
  '{"order_id": "o-3", "version": 1, "day": "2026-07-02", "amount": 4, "customer": {"country": "us"}, "guest": {"id": 42}}',
  -- refused: the required derived field is absent (no customer.country)
  '{"order_id": "o-4", "version": 1, "day": "2026-07-01", "amount": 5, "customer": {"id": 1}}',
  -- refused: the derived value fails its own check
  '{"order_id": "o-5", "version": 1, "day": "2026-07-01", "amount": 5, "customer": {"id": 1, "country": "xx"}}',
  -- refused: the value has a member named as a derived field
  '{"order_id": "o-6", "version": 1, "day": "2026-07-01", "amount": 5, "customer": {"id": 1, "country": "de"}, "country": "de"}',
  -- refused: a derived field of the wrong type (the first item's sku a number)
  '{"order_id": "o-7", "version": 1, "day": "2026-07-01", "amount": 5, "customer": {"id": 1, "country": "de"}, "items": [{"sku": 5}]}',
  -- refused: the nested object's own check still runs (customer.country must be a string)
  '{"order_id": "o-8", "version": 1, "day": "2026-07-01", "amount": 5, "customer": {"id": 1, "country": 3}}'
]) AS v;
\o
SELECT results_eq($$SELECT records, accepted, duplicates, quarantined FROM kafka_lake.land('orders70b')$$,
                  $$VALUES (12, 6, 1, 5)$$, 'twelve orders land: 6 accepted, 1 duplicate, 5 quarantined');

SELECT results_eq($$SELECT event_id, country, buyer, first_sku FROM kafka_lake.orders70b_events ORDER BY "offset"$$,
                  $$VALUES ('["o-1", 1]', 'de', 7::bigint, 'a1'), ('["o-1", 2]', 'de', 7, NULL),
                           ('["o-2\", 1", 2]', 'fr', 8, NULL), ('["o-2", 12]', 'fr', 8, NULL),
                           ('["o-2\", 12]", 1]', 'us', 9, NULL), ('["o-3", 1]', 'us', 42, NULL)$$,
                  'the event_id is the JSON array of its fields; derived fields hold what their paths reach');
SELECT is((SELECT (event::jsonb) ->> 'country' FROM kafka_lake.orders70b_records WHERE "offset" = 0 AND status = 'accepted'),
          'de', 'the landed event holds the derived field, normalised, next to the nested value');
SELECT is((SELECT (event::jsonb) -> 'customer' ->> 'country' FROM kafka_lake.orders70b_records WHERE "offset" = 0 AND status = 'accepted'),
          ' DE ', 'the nested value stays as its own schema judged it');
SELECT is((SELECT event_id FROM kafka_lake.orders70b_records WHERE status = 'duplicate_event_id'),
          '["o-1", 1]', 'the same two values, written otherwise, are a duplicate');
SELECT results_eq($$SELECT "offset", validation_error FROM kafka_lake.orders70b_records WHERE status = 'quarantined' ORDER BY "offset"$$,
                  $$VALUES (7::bigint, 'missing required field "country"'),
                           (8, 'field "country" has unknown value "xx"'),
                           (9, 'field "country" is derived from customer.country: the value must not have a member of that name'),
                           (10, 'field "first_sku" must be a string or null, not an integer'),
                           (11, 'field "customer.country" must be a string, not an integer')$$,
                  'each refusal says why, naming the derived field');

-- a declared gold by the derived country, and silver's columns
SELECT lives_ok($$SELECT kafka_lake.define_gold('orders70b', 'orders70b_by_country', grain => ARRAY['country'],
    metrics => '{"orders": {"count": "*"}, "revenue": {"sum": "amount"}, "buyers_max": {"max": "buyer"}}')$$,
                'a declared gold takes a derived field as its grain');
SELECT results_eq($$SELECT silver_rows, gold_rows, snapshot_status FROM kafka_lake.bridge('orders70b', '2026-07-01')$$,
                  $$VALUES (5, 3, 'published')$$, 'July 1st bridges: 5 events, one gold row per country');
SELECT results_eq($$SELECT country, orders, revenue, buyers_max FROM kafka_lake.orders70b_by_country_current ORDER BY country$$,
                  $$VALUES ('de', 2::bigint, 22.50::numeric, 7::bigint), ('fr', 2, 3, 8), ('us', 1, 3, 9)$$,
                  'the gold by country, computed from the derived column');
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders70b_silver'::regclass AND attnum > 2 AND attnum < 13),
          'order_id text, version bigint, country text, buyer bigint, first_sku text, day date, '
          'amount numeric(12,2), customer jsonb, guest jsonb, items jsonb',
          'silver has the derived columns in "columns" order, and the event_id''s fields where listed');
SELECT is((SELECT count(*) FROM kafka_lake.orders70b_silver WHERE order_id = 'o-1'), 2::bigint,
          'silver keeps both versions of o-1 (its natural key is (order_id, version))');

-- definitions refused, each with its path
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string", "path": "a.x"}}}$$),
          'invalid contract definition at $.properties.b.path: path must be a list', 'a path is a list');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string", "path": []}}}$$),
          'invalid contract definition at $.properties.b.path: a path must be a non-empty list', 'a path is not empty');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "string", "path": [0]}}}$$),
          'invalid contract definition at $.properties.b.path[0]: a step of a path must be a member name', 'a path starts at a name');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string", "path": ["a", true]}}}$$),
          'invalid contract definition at $.properties.b.path[1]: a step of a path must be a name or an index', 'a step is a name or an index');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "string", "path": ["a", -1]}}}$$),
          'invalid contract definition at $.properties.b.path[1]: an array index must be an integer from 0 to 1000000', 'an index is not negative');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"customer": {"type": "object"}, "b": {"type": "string", "path": ["custmer", "x"]}}, "additionalProperties": false}$$),
          'invalid contract definition at $.properties.b.path[0]: "custmer" is not a property', 'the first step names a property, when no other member may be there');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"c": {"type": "object", "properties": {"country": {"type": "string"}}, "additionalProperties": false}, "b": {"type": "string", "path": ["c", "contry"]}}}$$),
          'invalid contract definition at $.properties.b.path[1]: "contry" is not a property of c', 'a nested step names a property of a closed object');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"c": {"type": "object", "properties": {"country": {"type": "string"}}, "additionalProperties": false}, "b": {"type": "string", "path": ["c", "contry"]}}}$$, hint => true),
          'Perhaps you meant "country". A path names members of c.', 'the hint offers the near name');
SELECT is((SELECT kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "path": ["a", "x"]}}}$$)),
          'invalid contract definition at $.properties.b.path[1]: a is a string, not an object', 'a name steps into an object only');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string", "path": ["a", "x", 0]}}}$$),
          'accepted', 'a member of no schema may hold anything: the rest of the path is not checked');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object", "properties": {"n": {"type": "integer"}}}, "b": {"type": "string", "path": ["a", "n", 2]}}}$$),
          'invalid contract definition at $.properties.b.path[2]: a.n is an integer, not an array', 'an index steps into an array only');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"b": {"type": "string", "path": ["b"]}}}$$),
          'invalid contract definition at $.properties.b.path[0]: field "b" cannot be derived from itself', 'not from itself');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "object", "path": ["a"]}, "c": {"type": "string", "path": ["b", "x"]}}}$$),
          'invalid contract definition at $.properties.c.path[0]: field "b" is itself derived', 'not from a derived field');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "string", "header": "h", "path": ["a", "x"]}}}$$),
          'invalid contract definition at $.properties.b.path: give "header" or "path", not both', 'a header or a path');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "path": ["x"]}}}}}$$),
          'invalid contract definition at $.properties.a.properties.b.path: "path" is not allowed here', 'only a top-level field is derived');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "object", "properties": {"n": {"type": "integer"}}}, "b": {"type": "string", "path": ["a", "n"]}}}$$),
          'invalid contract definition at $.properties.b.path: a.n is an integer, which field "b" (a string) can never be', 'the type the path leads to');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "event_id": []}$$),
          'invalid contract definition at $.event_id: event_id must name from 1 to 8 fields', 'an event_id names fields');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"], "event_id": ["a", "b"]}$$),
          'invalid contract definition at $.event_id[1]: field "b" cannot identify events', 'every field of an event_id is required');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "event_id": ["a", "a"]}$$),
          'invalid contract definition at $.event_id[1]: event_id names "a" twice', 'each field of an event_id once');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "required": ["a", "b"], "event_id": ["a", "b"]}$$),
          'invalid contract definition at $.event_id[1]: field "b" cannot identify events', 'an event_id field is a string or an integer');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "event_id": ["x"]}$$),
          'invalid contract definition at $.event_id[0]: "x" is not a property', 'an event_id field is a property');

SELECT * FROM finish();
