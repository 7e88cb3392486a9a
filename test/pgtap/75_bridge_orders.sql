-- test/pgtap/75_bridge_orders.sql: the bridge for a contract that is not machine events.
-- Orders (a nested customer object, a money amount, enum status and currency, an ISO
-- timestamp read in Europe/Berlin, a field from a Kafka header) are landed and bridged end
-- to end: the canonical CSV has the contract's fields and quotes the customer's JSON; silver
-- is the typed table kafka_lake.orders75_silver; two golds (one declared, one the owner's
-- SQL) are published in one snapshot; the quality checks are derived from the contract
-- plus an owner's check, which fails and blocks publication (the previous snapshot stays
-- current); a late event makes a correction snapshot for its date only; the gold as of both
-- snapshots stays readable.  Needs the broker and kcat.
SELECT plan(46);

CREATE FUNCTION pg_temp.produce(value text, channel text DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.sh(format('echo %s | base64 -d | kcat -P -b %s -t orders75.t -p 0 %s 2>&1',
    translate(encode(convert_to(value, 'UTF8'), 'base64'), E'\n', ''), kl_test.bootstrap(),
    CASE WHEN channel IS NULL THEN '' ELSE '-H ' || quote_literal('channel=' || channel) END))
$$;
CREATE FUNCTION pg_temp.order_json(id text, status text, at text, amount text, currency text,
                                   customer text DEFAULT '{"id": 7, "name": "Ann"}') RETURNS text
LANGUAGE sql AS $$
  SELECT format('{"order_id": "%s", "status": "%s", "ordered_at": "%s", "amount": %s, "currency": "%s", "customer": %s}',
                id, status, at, amount, currency, customer)
$$;
CREATE FUNCTION pg_temp.csv_path(hash text) RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.landing('orders75') || '/' || regexp_replace(a.path, '^orders75/', '')
    FROM kafka_lake.adapter_versions a WHERE a.source_hash = hash
$$;

\o /dev/null
SELECT kl_test.server('orders75_srv');
SELECT kl_test.broker('create orders75.t 1');
SELECT kafka_lake.create_contract('orders75', $${
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
}$$);
\o
SELECT lives_ok($$SELECT kafka_lake.create_source('orders75', 'orders75_srv', 'orders75.t', contract => 'orders75')$$,
                'create_source of an orders contract');

-- silver: a typed table of the source, visible in \d, from the contract
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN '!' ELSE '' END,
                             ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders75_silver'::regclass AND attnum > 0),
          'run_id text!, business_date date!, ordered_at timestamp with time zone!, status text!, '
          'customer jsonb!, amount numeric(12,2)!, currency text!, channel text, order_id text!, '
          'kafka_topic text!, kafka_partition integer!, kafka_offset bigint!, kafka_key text, '
          'kafka_timestamp_ms bigint, kafka_record_fingerprint text!',
          'create_source made kafka_lake.orders75_silver: run_id, business_date, the fields typed, the provenance');

-- its BRIN index on run_id summarises at VACUUM: no work item per filled range, which a large
-- bridge overflows with one LOG line per dropped request
SELECT is((SELECT array_agg(pg_catalog.array_to_string(c.reloptions, ','))
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
           WHERE i.indrelid = 'kafka_lake.orders75_silver'::regclass AND a.amname = 'brin'),
          ARRAY['autosummarize=off'],
          'the silver table''s BRIN index on run_id has autosummarize off');

-- two golds: one declared, one written as SQL; and the owner's own check
SELECT lives_ok($$SELECT kafka_lake.define_gold('orders75', 'orders75_by_currency',
    grain => ARRAY['business_date', 'currency'],
    metrics => '{"revenue": {"sum": "amount"}, "orders": {"count": "*"}, "with_channel": {"count": "channel"},
                 "max_amount": {"max": "amount"}, "min_amount": {"min": "amount"},
                 "avg_amount": {"avg": "amount", "round": 2},
                 "channel_rate": {"ratio": ["with_channel", "orders"], "round": 4},
                 "avg_py": {"avg": "amount", "round": 1, "rounding": "python"}}')$$,
                'define_gold with declared metrics');
SELECT lives_ok($$SELECT kafka_lake.define_gold('orders75', 'orders75_by_status', grain => ARRAY['status'],
    sql => 'SELECT status, count(*) AS orders, sum(amount) AS revenue, string_agg(order_id, '','' ORDER BY order_id) AS ids,
                   max(customer ->> ''name'') AS a_customer
              FROM silver GROUP BY status')$$,
                'define_gold with the owner''s SQL');
SELECT lives_ok($$SELECT kafka_lake.add_check('orders75', 'no_big_orders',
    'SELECT order_id, amount FROM silver WHERE amount > 1000')$$, 'add_check');
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders75_by_currency'::regclass AND attnum > 0),
          'snapshot_id bigint, business_date date, currency text, revenue numeric, orders bigint, with_channel bigint, '
          'max_amount numeric(12,2), min_amount numeric(12,2), avg_amount numeric(38,2), channel_rate numeric(38,4), '
          'avg_py numeric(38,1), closing_status text',
          'the declared gold is a typed table: grain, then each metric with its type');
SELECT is((SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = 'kafka_lake.orders75_by_status'::regclass AND attnum > 0),
          'snapshot_id bigint, business_date date, status text, orders bigint, revenue numeric, ids text, '
          'a_customer text, closing_status text',
          'the SQL gold is a typed table with the query''s columns');

-- June 29th (Berlin): three orders; June 30th: one
\o /dev/null
SELECT pg_temp.produce(pg_temp.order_json('ord-1', 'paid', '2026-06-29T08:00:00Z', '12.30', 'EUR',
                       '{"id": 7, "name": " Ann ", "email": "ann@example.com"}'), 'web');
SELECT pg_temp.produce(pg_temp.order_json('ord-2', 'new', '2026-06-29T10:00:00+02:00', '5', 'EUR'), 'shop');
SELECT pg_temp.produce(pg_temp.order_json('ord-3', 'paid', '2026-06-29T21:59:59Z', '7.25', 'USD'));
SELECT pg_temp.produce(pg_temp.order_json('ord-4', 'new', '2026-06-29T22:30:00Z', '100', 'USD'), 'web');
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('orders75')$$, $$VALUES (4)$$, 'four orders land');

CREATE TEMP TABLE b1 AS SELECT * FROM kafka_lake.bridge('orders75', '2026-06-29');
SELECT results_eq($$SELECT selected_events, adapter_status, run_status, quality_passed, quality_total,
                           silver_rows, gold_rows, snapshot_status FROM b1$$,
                  $$VALUES (3, 'created', 'processed', 10, 10, 3, 4, 'published')$$,
                  'June 29th is bridged: 3 events, 10 checks passed, 4 gold rows (2 currencies, 2 statuses), published');
CREATE TEMP TABLE b2 AS SELECT * FROM kafka_lake.bridge('orders75', '2026-06-30');
SELECT results_eq($$SELECT selected_events, run_status, gold_rows FROM b2$$,
                  $$VALUES (1, 'processed', 2)$$, 'June 30th is bridged on its own');

-- the canonical CSV: the contract's fields, order_id (the event_id field) last, the provenance
SELECT is(split_part(pg_read_file(pg_temp.csv_path(source_hash)), E'\n', 1),
          'ordered_at,status,customer,amount,currency,channel,order_id,kafka_topic,kafka_partition,'
          'kafka_offset,kafka_key,kafka_timestamp_ms,kafka_record_fingerprint',
          'the CSV header: the fields in "columns" order, the event_id field last, then the provenance')
  FROM b1;
SELECT matches(split_part(pg_read_file(pg_temp.csv_path(source_hash)), E'\n', 2),
               '^2026-06-29T08:00:00Z,paid,"\{""email"": ""ann@example.com"", ""id"": 7, ""name"": ""Ann""\}",12\.30,EUR,web,ord-1,orders75\.t,0,0,,[0-9]+,[0-9a-f]{64}$',
               'a line: the timestamp as landed, the object as its canonical JSON (quoted), 12.30 as landed, no key')
  FROM b1;
SELECT matches(split_part(pg_read_file(pg_temp.csv_path(source_hash)), E'\n', 4),
               '^2026-06-29T21:59:59Z,paid,"\{""id"": 7, ""name"": ""Ann""\}",7\.25,USD,,ord-3,',
               'an absent header field is an empty field')
  FROM b1;
SELECT is(encode(sha256(pg_read_binary_file(pg_temp.csv_path(source_hash))), 'hex'), source_hash,
          'source_hash is the SHA-256 of the CSV') FROM b1;

-- silver
SELECT results_eq($$SELECT order_id, business_date, ordered_at, status, customer ->> 'name', amount, currency, channel
                    FROM kafka_lake.orders75_silver WHERE run_id = (SELECT run_id FROM b1) ORDER BY kafka_offset$$,
  $$VALUES ('ord-1', '2026-06-29'::date, '2026-06-29 08:00:00+00'::timestamptz, 'paid', 'Ann', 12.30::numeric, 'EUR', 'web'),
           ('ord-2', '2026-06-29', '2026-06-29 08:00:00+00', 'new', 'Ann', 5.00, 'EUR', 'shop'),
           ('ord-3', '2026-06-29', '2026-06-29 21:59:59+00', 'paid', 'Ann', 7.25, 'USD', NULL)$$,
  'silver holds the typed rows of the run');

-- the checks, derived from the contract, and the owner's
SELECT results_eq($$SELECT check_name, passed, expected, observed FROM kafka_lake.quality_results
                    WHERE run_id = (SELECT run_id FROM b1) ORDER BY check_name$$,
  $$VALUES ('accepted_values_currency', true, '0', '0'), ('accepted_values_status', true, '0', '0'),
           ('conservation_silver_to_orders75_by_currency', true, 'revenue=24.55 orders=3 with_channel=2',
            'revenue=24.55 orders=3 with_channel=2'),
           ('freshness_business_date', true, '0', '0'), ('no_big_orders', true, '0', '0'),
           ('not_null_required_columns', true, '0', '0'), ('numeric_range_within_bounds', true, '0', '0'),
           ('row_count_source_to_silver', true, '3', '3'), ('schema_drift', true,
            (SELECT expected FROM kafka_lake.quality_results WHERE run_id = (SELECT run_id FROM b1) AND check_name = 'schema_drift'),
            (SELECT expected FROM kafka_lake.quality_results WHERE run_id = (SELECT run_id FROM b1) AND check_name = 'schema_drift')),
           ('unique_natural_key', true, '0', '0')$$,
  'ten checks: the eight derived (one accepted_values per enum field), the conservation of the declared gold, the owner''s');
SELECT is((SELECT detail FROM kafka_lake.quality_results WHERE run_id = (SELECT run_id FROM b1) AND check_name = 'numeric_range_within_bounds'),
          'silver rows outside amount >= 0', 'the bounds come from the contract');

-- the golds of the snapshot
SELECT results_eq($$SELECT business_date, currency, revenue, orders, with_channel, max_amount, min_amount, avg_amount,
                           channel_rate, avg_py, closing_status
                    FROM kafka_lake.orders75_by_currency_current ORDER BY business_date, currency$$,
  $$VALUES ('2026-06-29'::date, 'EUR', 17.30::numeric, 2::bigint, 2::bigint, 12.30::numeric, 5.00::numeric, 8.65::numeric,
            1.0000::numeric, 8.7::numeric, 'provisional'),
           ('2026-06-29', 'USD', 7.25, 1, 0, 7.25, 7.25, 7.25, 0.0000, 7.2, 'provisional'),
           ('2026-06-30', 'USD', 100.00, 1, 1, 100.00, 100.00, 100.00, 1.0000, 100.0, 'provisional')$$,
  'the declared gold: sums, counts, min, max, avg half_up, a ratio, avg as Python rounds (8.65 -> 8.7, 7.25 -> 7.2)');
SELECT results_eq($$SELECT business_date, status, orders, revenue, ids, a_customer FROM kafka_lake.orders75_by_status_current
                    ORDER BY business_date, status$$,
  $$VALUES ('2026-06-29'::date, 'new', 1::bigint, 5.00::numeric, 'ord-2', 'Ann'),
           ('2026-06-29', 'paid', 2, 19.55, 'ord-1,ord-3', 'Ann'),
           ('2026-06-30', 'new', 1, 100.00, 'ord-4', 'Ann')$$,
  'the SQL gold, computed over the day''s silver rows');
SELECT is((SELECT count(DISTINCT snapshot_id)::int FROM kafka_lake.orders75_by_currency_current WHERE business_date = '2026-06-29')
          + (SELECT count(DISTINCT snapshot_id)::int FROM kafka_lake.orders75_by_status_current WHERE business_date = '2026-06-29'),
          2, 'each gold of the date is in the snapshot');
SELECT is((SELECT DISTINCT snapshot_id FROM kafka_lake.orders75_by_status_current WHERE business_date = '2026-06-29'),
          (SELECT snapshot_id FROM b1), 'both golds are published in one snapshot');
SELECT is((SELECT gold_rows FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM b1)), 4,
          'the snapshot counts the rows of every gold');

-- the same input again: skipped
SELECT results_eq($$SELECT adapter_status, run_status, snapshot_status, snapshot_id FROM kafka_lake.bridge('orders75', '2026-06-29')$$,
                  $$SELECT 'reused'::text, 'skipped'::text, 'skipped'::text, snapshot_id FROM b1$$,
                  'the same accepted set is skipped: no new snapshot');

-- a late order over 1000 on June 30th: the owner's check fails, nothing is published
\o /dev/null
SELECT pg_temp.produce(pg_temp.order_json('ord-5', 'paid', '2026-06-30T09:00:00Z', '5000', 'EUR'), 'web');
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('orders75')$$, $$VALUES (1)$$, 'a late big order lands');
CREATE TEMP TABLE b3 AS SELECT * FROM kafka_lake.bridge('orders75', '2026-06-30');
SELECT results_eq($$SELECT run_status, quality_passed, quality_total, gold_rows, snapshot_status FROM b3$$,
                  $$VALUES ('failed_quality', 9, 10, 0, 'not_published')$$,
                  'the owner''s check fails: failed_quality, not published');
SELECT is((SELECT snapshot_id FROM b3), (SELECT snapshot_id FROM b2), 'the previous snapshot of June 30th stays current');
SELECT results_eq($$SELECT passed, observed, detail FROM kafka_lake.quality_results
                    WHERE run_id = (SELECT run_id FROM b3) AND check_name = 'no_big_orders'$$,
                  $$VALUES (false, '1', 'rows of kafka_lake.orders75_check_no_big_orders; the first: (ord-5,5000.00)')$$,
                  'the failed check records what it found');
SELECT results_eq($$SELECT currency, revenue FROM kafka_lake.orders75_by_currency_current WHERE business_date = '2026-06-30'$$,
                  $$VALUES ('USD', 100.00::numeric)$$, 'the gold of June 30th is as it was');
SELECT is((SELECT count(*)::int FROM kafka_lake.orders75_silver WHERE run_id = (SELECT run_id FROM b3)), 2,
          'the failed run''s silver rows are kept for inspection');

-- a late order of June 29th: a correction snapshot of that date only
\o /dev/null
SELECT pg_temp.produce(pg_temp.order_json('ord-6', 'shipped', '2026-06-29T12:00:00+02:00', '0.70', 'EUR'), 'web');
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('orders75')$$, $$VALUES (1)$$, 'a late order of June 29th lands');
CREATE TEMP TABLE b4 AS SELECT * FROM kafka_lake.bridge('orders75', '2026-06-29');
SELECT results_eq($$SELECT selected_events, adapter_status, run_status, quality_passed, gold_rows, snapshot_status FROM b4$$,
                  $$VALUES (4, 'created', 'processed', 10, 5, 'published')$$,
                  'June 29th again: a new source_hash, a new run, a new snapshot');
SELECT isnt((SELECT source_hash FROM b4), (SELECT source_hash FROM b1), 'the late order changed the source_hash');
SELECT results_eq($$SELECT replaces_snapshot_id, is_current FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM b4)$$,
                  $$SELECT snapshot_id, true FROM b1$$, 'the new snapshot replaces the first one');
SELECT is((SELECT is_current FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM b1)), false,
          'the first snapshot is no longer current');
SELECT is((SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id)
           WHERE source = 'orders75' AND business_date = '2026-06-30' AND is_current),
          (SELECT snapshot_id FROM b2), 'June 30th keeps its snapshot');
SELECT results_eq($$SELECT currency, revenue, orders FROM kafka_lake.orders75_by_currency_current
                    WHERE business_date = '2026-06-29' ORDER BY currency$$,
                  $$VALUES ('EUR', 18.00::numeric, 3::bigint), ('USD', 7.25, 1)$$, 'the current gold counts the late order');

-- as of each snapshot
SELECT results_eq($$SELECT currency, revenue, orders FROM kafka_lake.orders75_by_currency_as_of((SELECT snapshot_id FROM b1)) ORDER BY currency$$,
                  $$VALUES ('EUR', 17.30::numeric, 2::bigint), ('USD', 7.25, 1)$$, 'the declared gold as of the first snapshot');
SELECT results_eq($$SELECT currency, revenue, orders FROM kafka_lake.orders75_by_currency_as_of((SELECT snapshot_id FROM b4)) ORDER BY currency$$,
                  $$VALUES ('EUR', 18.00::numeric, 3::bigint), ('USD', 7.25, 1)$$, 'the declared gold as of the correction');
SELECT results_eq($$SELECT status, ids FROM kafka_lake.orders75_by_status_as_of((SELECT snapshot_id FROM b1)) ORDER BY status$$,
                  $$VALUES ('new', 'ord-2'), ('paid', 'ord-1,ord-3')$$, 'the SQL gold as of the first snapshot');
SELECT results_eq($$SELECT status, ids FROM kafka_lake.orders75_by_status_as_of((SELECT snapshot_id FROM b4)) ORDER BY status$$,
                  $$VALUES ('new', 'ord-2'), ('paid', 'ord-1,ord-3'), ('shipped', 'ord-6')$$, 'the SQL gold as of the correction');
SELECT throws_ok($$SELECT * FROM kafka_lake.orders75_by_status_as_of(999999999)$$, 'P0002', NULL,
                 'an unknown snapshot is P0002');

-- closing the date publishes a copy of every gold
SELECT results_eq($$SELECT status FROM kafka_lake.close_date('orders75', '2026-06-29', timeout => '20 s')$$,
                  $$VALUES ('closed')$$, 'close_date closes June 29th');
SELECT results_eq($$SELECT DISTINCT closing_status FROM kafka_lake.orders75_by_status_current WHERE business_date = '2026-06-29'$$,
                  $$VALUES ('closed')$$, 'the SQL gold of the closed snapshot is closed');

SELECT lives_ok($$SELECT kafka_lake.drop_source('orders75', drop_landing => true)$$, 'drop_source');
SELECT is((SELECT count(*)::int FROM pg_class WHERE relnamespace = 'kafka_lake'::regnamespace AND relname LIKE 'orders75%'), 0,
          'its silver, golds and views are gone with it');
SELECT * FROM finish();
