-- test/pgtap/70_contracts_orders.sql: a topic that is not machine events lands with a
-- contract its owner wrote.  Orders with a nested customer object, a money amount, an enum
-- status, an ISO timestamp whose business date is read in Europe/Berlin, and a field taken
-- from a Kafka header: landed, deduplicated by order_id, quarantined with reasons, and
-- queried through the typed table kafka_lake.orders70_events (columns of the fields' SQL
-- types, pruning, EXPLAIN, the same integrity checks), and bridged (test 75 bridges orders
-- end to end).  Needs the broker and kcat.
SELECT plan(27);

-- a value produced with Kafka headers (kcat -H), from SQL
CREATE FUNCTION pg_temp.produce_with_headers(topic text, value text, VARIADIC headers text[])
RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.sh(format('echo %s | base64 -d | kcat -P -b %s -t %s -p 0 %s 2>&1',
    translate(encode(convert_to(value, 'UTF8'), 'base64'), E'\n', ''), kl_test.bootstrap(), topic,
    (SELECT string_agg('-H ' || quote_literal(h), ' ') FROM unnest(headers) h)))
$$;

\o /dev/null
SELECT kl_test.server('orders70_srv');
SELECT kl_test.broker('create orders70.t 1');
\o
SELECT is(kafka_lake.create_contract('orders70', $${
  "title": "orders",
  "type": "object",
  "properties": {
    "order_id":   {"type": "string", "normalize": ["trim"], "minLength": 1, "pattern": "^ord-[0-9]+$"},
    "status":     {"type": "string", "normalize": ["trim", "lower"],
                   "enum": ["new", "paid", "shipped", "cancelled"]},
    "ordered_at": {"type": "string", "format": "date-time"},
    "amount":     {"type": "number", "minimum": 0, "sql_type": "numeric(12,2)"},
    "currency":   {"type": "string", "enum": ["EUR", "USD"]},
    "customer":   {"type": "object",
                   "properties": {"id": {"type": "integer"},
                                  "name": {"type": "string", "normalize": ["trim"], "minLength": 1},
                                  "email": {"type": ["string", "null"], "maxLength": 254}},
                   "required": ["id", "name"], "additionalProperties": false},
    "channel":    {"type": "string", "header": "channel"}
  },
  "required": ["order_id", "status", "ordered_at", "amount", "currency", "customer"],
  "event_id": "order_id",
  "business_date": {"field": "ordered_at", "time_zone": "Europe/Berlin"},
  "columns": ["order_id", "ordered_at", "status", "customer", "amount", "currency", "channel"],
  "natural_key": ["order_id"]
}$$), 1, 'create_contract registers orders70 as version 1');
SELECT lives_ok($$SELECT kafka_lake.create_source('orders70', 'orders70_srv', 'orders70.t', contract => 'orders70')$$,
                'create_source takes the contract');
SELECT kafka_lake.set_compression('orders70', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT is((SELECT contract || ' ' || contract_version FROM kafka_lake.sources WHERE source = 'orders70'),
          'orders70 1', 'the source pins the contract and its version');

-- the typed table: the coordinates, then one column per field, of its SQL type
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders70_events'::regclass AND attnum > 0),
          'topic text, partition integer, offset bigint, key text, timestamp_ms bigint, batch_id text, '
          'business_date date, event_id text, contract text, contract_version integer, '
          'order_id text, ordered_at timestamp with time zone, status text, customer jsonb, '
          'amount numeric(12,2), currency text, channel text',
          'kafka_lake.orders70_events has the coordinates and a typed column per field, in "columns" order');
SELECT is((SELECT array_agg(ftoptions) FROM pg_foreign_table WHERE ftrelid = 'kafka_lake.orders70_events'::regclass),
          ARRAY[ARRAY['source=orders70', 'status=accepted']], 'it reads the accepted events of the source');

-- eight orders: two accepted (one just after midnight in Berlin), a repeated order_id, and
-- five refused for a reason each
\o /dev/null
SELECT pg_temp.produce_with_headers('orders70.t', v, 'channel=web')
  FROM unnest(ARRAY[
    '{"order_id": " ord-1 ", "status": " PAID ", "ordered_at": "2026-06-29T22:30:00Z", "amount": 12.30, "currency": "EUR", "customer": {"name": " Ann ", "id": 7, "email": null}}',
    '{"order_id": "ord-2", "status": "new", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob"}, "coupon": "X1"}',
    '{"order_id": "ord-2", "status": "new", "ordered_at": "2026-06-29T11:00:00+02:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob"}}',
    '{"order_id": "ord-3", "status": "lost", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob"}}',
    '{"order_id": "ord-4", "status": "new", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob", "age": 3}}',
    '{"order_id": "ord-5", "status": "new", "ordered_at": "2026-06-29 10:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob"}}',
    '{"order_id": "ord-6", "status": "new", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": -0.01, "currency": "USD", "customer": {"id": 8, "name": "Bob"}}',
    '{"order_id": "order-7", "status": "new", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": 1, "currency": "GBP", "customer": {"id": 8, "name": "Bob"}}'
  ]) AS v;
SELECT pg_temp.produce_with_headers('orders70.t',
  '{"order_id": "ord-9", "status": "new", "ordered_at": "2026-06-30T10:00:00+02:00", "amount": 9, "currency": "EUR", "customer": {"id": 9, "name": "Cy"}}',
  'channel=shop', 'trace=abc');
\o
SELECT results_eq($$SELECT status, records, accepted, duplicates, quarantined FROM kafka_lake.land('orders70')$$,
                  $$VALUES ('landed', 9, 3, 1, 5)$$, 'nine orders land: 3 accepted, 1 duplicate, 5 quarantined');

SELECT results_eq($$SELECT "offset", status, event_id, business_date, validation_error
                    FROM kafka_lake.orders70_records ORDER BY "offset"$$,
  $$VALUES (0::bigint, 'accepted', 'ord-1', '2026-06-30'::date, NULL::text),
           (1, 'accepted', 'ord-2', '2026-06-29', NULL),
           (2, 'duplicate_event_id', 'ord-2', '2026-06-29', NULL),
           (3, 'quarantined', NULL, NULL, 'field "status" has unknown value "lost"'),
           (4, 'quarantined', NULL, NULL, 'unknown field "customer.age"'),
           (5, 'quarantined', NULL, NULL, 'field "ordered_at" must be an ISO-8601 timestamp with a time zone'),
           (6, 'quarantined', NULL, NULL, 'field "amount" must not be negative'),
           (7, 'quarantined', NULL, NULL, 'field "order_id" does not match pattern "^ord-[0-9]+$"'),
           (8, 'accepted', 'ord-9', '2026-06-30', NULL)$$,
  'each record has its status, event_id, business date (22:30 UTC is the next day in Berlin) and reason');

-- the typed table
SELECT results_eq($$SELECT order_id, ordered_at, status, customer, amount, currency, channel, business_date
                    FROM kafka_lake.orders70_events ORDER BY "offset"$$,
  $$VALUES ('ord-1', '2026-06-29 22:30:00+00'::timestamptz, 'paid', '{"id": 7, "name": "Ann", "email": null}'::jsonb,
            12.30::numeric(12,2), 'EUR', 'web', '2026-06-30'::date),
           ('ord-2', '2026-06-29 08:00:00+00', 'new', '{"id": 8, "name": "Bob"}', 5.00, 'USD', 'web', '2026-06-29'),
           ('ord-9', '2026-06-30 08:00:00+00', 'new', '{"id": 9, "name": "Cy"}', 9.00, 'EUR', 'shop', '2026-06-30')$$,
  'the typed table reads each field with its type: timestamptz, jsonb, numeric(12,2), the header field');
SELECT is((SELECT sum(amount) FROM kafka_lake.orders70_events WHERE business_date = '2026-06-30'),
          21.30::numeric, 'the money amount sums exactly');
SELECT is((SELECT customer ->> 'name' FROM kafka_lake.orders70_events WHERE event_id = 'ord-1'),
          'Ann', 'the nested customer object is normalised (trimmed) and queryable as jsonb');
SELECT is((SELECT string_agg(contract || '/' || contract_version, ',') FROM kafka_lake.orders70_events),
          'orders70/1,orders70/1,orders70/1', 'each event names the contract version that judged it');

-- the landed bytes: sorted members, the money amount as written, the line's own ids, headers
SELECT is((SELECT split_part(pg_read_file(kl_test.landing('orders70') || '/topic=orders70.t/partition=0/batch=' || batch_id || '/accepted.jsonl'), E'\n', 1)
           FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'orders70')::jsonb - 'kafka',
          '{"business_date": "2026-06-30", "event_id": "ord-1", "event": {"amount": 12.30, "channel": "web", "currency": "EUR", "customer": {"email": null, "id": 7, "name": "Ann"}, "order_id": "ord-1", "ordered_at": "2026-06-29T22:30:00Z", "status": "paid"}}'::jsonb,
          'an accepted line carries the event, its business_date and its event_id');
SELECT matches((SELECT split_part(pg_read_file(kl_test.landing('orders70') || '/topic=orders70.t/partition=0/batch=' || batch_id || '/accepted.jsonl'), E'\n', 1)
           FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'orders70'),
          '^\{"business_date": "2026-06-30", "event": \{"amount": 12\.30, "channel": "web", "currency": "EUR", "customer": \{"email": null, "id": 7, "name": "Ann"\}, "order_id": "ord-1", "ordered_at": "2026-06-29T22:30:00Z", "status": "paid"\}, "event_id": "ord-1", "kafka": \{"headers": \[\{"key": "channel", "value": "web"\}\], "key": null, "offset": 0, ',
          'the line is json.dumps with sorted keys, 12.30 as written, the headers first in the envelope');
SELECT is((SELECT event ->> 'coupon' FROM kafka_lake.orders70_records WHERE "offset" = 1),
          'X1', 'a member additionalProperties lets in is kept');
SELECT is((SELECT headers FROM kafka_lake.orders70_records WHERE "offset" = 8),
          '[{"key": "channel", "value": "shop"}, {"key": "trace", "value": "abc"}]'::jsonb,
          'the foreign table shows the Kafka headers, in record order');
SELECT is((SELECT headers IS NOT NULL FROM kafka_lake.orders70_records WHERE "offset" = 3),
          true, 'quarantined records keep their headers too');

-- identities: event_id dedupe, fingerprints as the seed computes them
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'orders70'), 3::bigint, 'each accepted order_id is in accepted_events once');
SELECT is((SELECT fingerprint FROM kafka_lake.orders70_records WHERE "offset" = 1),
          (SELECT encode(sha256(convert_to('orders70.t', 'UTF8') || '\x00'::bytea || convert_to('0', 'UTF8')
                                || '\x00'::bytea || convert_to('1', 'UTF8') || '\x00'::bytea || '\x00'::bytea
                                || convert_to(raw_value, 'UTF8')), 'hex')
             FROM (SELECT '{"order_id": "ord-2", "status": "new", "ordered_at": "2026-06-29T10:00:00+02:00", "amount": 5, "currency": "USD", "customer": {"id": 8, "name": "Bob"}, "coupon": "X1"}' AS raw_value) r),
          'the fingerprint is topic, partition, offset, key and value: headers stay outside it');

-- the manifest says which contract judged the batch
SELECT is((SELECT m ->> 'contract' || ' ' || (m ->> 'contract_version')
           FROM (SELECT pg_read_file(kl_test.landing('orders70') || '/topic=orders70.t/partition=0/batch=' || batch_id || '/manifest.json')::jsonb AS m
                 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'orders70') x),
          'orders70 1', 'the manifest names the contract and version');

-- pruning and EXPLAIN work on the typed table as on <source>_records
SELECT is((SELECT count(*) FROM kafka_lake.orders70_events WHERE business_date = '2026-06-29'), 1::bigint,
          'a business_date clause selects by the date read in Berlin');
CREATE FUNCTION pg_temp.explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q; END $$;
SELECT ok((SELECT bool_or(e LIKE '%Batches: 0 read, 1 pruned%') FROM pg_temp.explain(
             $$SELECT * FROM kafka_lake.orders70_events WHERE business_date = '2026-07-15'$$) e),
          'EXPLAIN of the typed table shows its pruning');
SELECT ok((SELECT bool_or(e LIKE '%Statuses: accepted%') FROM pg_temp.explain($$SELECT * FROM kafka_lake.orders70_events$$) e),
          'the typed table reads accepted.jsonl only');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('orders70')$$, 'verify finds nothing wrong');

-- integrity: an edited file is refused through the typed table too
SELECT kl_test.sh(format('cp %1$s/accepted.jsonl %2$s/orders70.acc && sed -i s/Ann/Anx/ %1$s/accepted.jsonl',
                         (SELECT kl_test.landing('orders70') || '/topic=orders70.t/partition=0/batch=' || batch_id
                          FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'orders70'),
                         (SELECT value FROM kl_test.env WHERE name = 'broker_dir'))) IS NOT NULL AS edited;
SELECT throws_ok($$SELECT count(amount) FROM kafka_lake.orders70_events$$, 'XX001', NULL,
                 'an edited accepted.jsonl is refused (XX001) through the typed table');
SELECT kl_test.sh(format('cp %2$s/orders70.acc %1$s/accepted.jsonl',
                         (SELECT kl_test.landing('orders70') || '/topic=orders70.t/partition=0/batch=' || batch_id
                          FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'orders70'),
                         (SELECT value FROM kl_test.env WHERE name = 'broker_dir'))) IS NOT NULL AS restored;

-- the bridge reads any contract with a business date (test 75 has the details)
SELECT results_eq($$SELECT selected_events, run_status, silver_rows FROM kafka_lake.bridge('orders70', '2026-06-29')$$,
                  $$VALUES (1, 'processed', 1)$$, 'bridge() bridges the orders of a date');
SELECT is((SELECT order_id FROM kafka_lake.orders70_silver), 'ord-2', 'into the source''s silver table');

SELECT lives_ok($$SELECT kafka_lake.drop_source('orders70', drop_landing => true)$$,
                'drop_source drops both foreign tables');
SELECT * FROM finish();
