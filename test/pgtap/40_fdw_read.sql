-- test/pgtap/40_fdw_read.sql: the foreign table reads what landed.
-- Counts per status equal the catalog's; typed user columns read event
-- fields with their types (fast paths equal the types' input functions);
-- a value of the wrong type is an error naming column, file and line;
-- whole-row references, joins, LIMIT and rescans work; EXPLAIN VERBOSE and
-- FORMAT JSON are sane.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(35);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text; ctx text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                          hint = PG_EXCEPTION_HINT, ctx = PG_EXCEPTION_CONTEXT;
  RETURN st || E'\n' || msg || E'\nHINT: ' || coalesce(hint, '') || E'\nCONTEXT: ' || coalesce(ctx, '');
END $$;
CREATE FUNCTION pg_temp.explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; r text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN ' || q LOOP r := r || l || E'\n'; END LOOP;
  RETURN r;
END $$;

-- a source with every status: 20 events over 2 partitions, two redelivered
-- event_ids (duplicate_event_id), three bad values (quarantined, one not UTF-8)
SELECT kl_test.server('fdw40_kafka');
SELECT kl_test.broker('create fdw40.events 2');
SELECT kafka_lake.create_source('fdw40', 'fdw40_kafka', 'fdw40.events');
SELECT kafka_lake.set_compression('fdw40', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kl_test.fill('fdw40.events', 20, 2);
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events',
                          kl_test.event('evt-20260629-000001', units => 5), partition => 0);
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events',
                          kl_test.event('evt-20260629-000002', units => 6), partition => 1);
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events', convert_to('{"event_id": "bad"}', 'UTF8'),
                          key => 'k1', partition => 0);
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events', '\xff00fe'::bytea, partition => 1);
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events', convert_to('{"event_id": "x", "units_produced": "a\"b"}', 'UTF8'),
                          partition => 1);
-- event_time written in every form the contract accepts
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events',
                          kl_test.event('fdw40-t' || i, event_time => t), partition => 0)
  FROM unnest(ARRAY['2026-06-29T08:00:00Z', '2026-06-29T08:00:00.5+00:00',
                    '2026-06-29T08:00:00.123456-05:30', '2026-06-29T08:00:00.1234567+09:00',
                    '2026-06-29 23:59:59+14:00', '2026-06-29t08:00:00Z', '2026-06-29T08:00+09:00',
                    '2026-06-29T08:00:00+0930', '2026-06-29T08:00:00+09',
                    '2026-06-29T00:00:00-12:00', '2026-06-29T08:00:00.000001+01:00'])
       WITH ORDINALITY AS u(t, i);
-- strings that land escaped (quotes, non-ASCII)
SELECT kafka_lake.produce('fdw40_kafka', 'fdw40.events',
                          kl_test.event('fdw40-u1', line => 'Línea "Ü" 1', machine => 'mäquina-ß'),
                          partition => 1);
SET kafka_lake.batch_max_records = 7;
SELECT is((SELECT sum(records)::int FROM kafka_lake.land('fdw40') WHERE status = 'landed'), 37,
          'land() lands all 37 records');

-- counts per status: the foreign table equals the catalog (batches and coordinates)
SELECT bag_eq(
  $$SELECT status, count(*)::bigint FROM kafka_lake.fdw40_records GROUP BY status$$,
  $$SELECT s, n FROM (SELECT sum(accepted_count)::bigint AS a, sum(duplicate_count)::bigint AS d,
                             sum(quarantine_count)::bigint AS q
                        FROM kafka_lake.batches JOIN kafka_lake.sources USING (source_id)
                       WHERE source = 'fdw40') b,
        LATERAL (VALUES ('accepted', a), ('duplicate_event_id', d), ('quarantined', q)) v(s, n)$$,
  'count per status through the foreign table equals kafka_lake.batches');
SELECT bag_eq(
  $$SELECT status, count(*)::bigint FROM kafka_lake.fdw40_records GROUP BY status$$,
  $$SELECT CASE l WHEN 'a' THEN 'accepted' WHEN 'd' THEN 'duplicate_event_id' ELSE 'quarantined' END,
           count(*)
      FROM kafka_lake.coordinates c JOIN kafka_lake.sources s USING (source_id),
           regexp_split_to_table(c.statuses, '') l
     WHERE s.source = 'fdw40' GROUP BY 1$$,
  'count per status through the foreign table equals kafka_lake.coordinates');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw40_records WHERE status = 'quarantined'), 3,
          'three quarantined records');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw40_records WHERE status = 'duplicate_event_id'), 2,
          'two duplicates');
SELECT is((SELECT count(DISTINCT ("partition", "offset"))::int FROM kafka_lake.fdw40_records), 37,
          'every coordinate once');

-- the envelope columns
SELECT is((SELECT row(topic, key, status, event_id, business_date, raw_value, validation_error)::text
             FROM kafka_lake.fdw40_records WHERE "partition" = 0 AND "offset" = 0),
          row('fdw40.events', 'machine-006', 'accepted', 'evt-20260629-000001', '2026-06-29'::date,
              NULL::text, NULL::text)::text,
          'an accepted record: topic, key, status, event_id, business_date');
SELECT ok((SELECT event @> '{"event_id": "evt-20260629-000001", "units_produced": 29}'
                  AND fingerprint ~ '^[0-9a-f]{64}$' AND timestamp_ms > 0
                  AND batch_id ~ '^\d{20}-\d{20}-[0-9a-f]{12}$'
             FROM kafka_lake.fdw40_records WHERE "partition" = 0 AND "offset" = 0),
          'an accepted record: event, fingerprint, timestamp_ms, batch_id');
SELECT is((SELECT row(key, event_id, business_date, event, raw_value, validation_error IS NOT NULL)::text
             FROM kafka_lake.fdw40_records WHERE status = 'quarantined' AND key = 'k1'),
          row('k1', NULL, NULL, NULL, '{"event_id": "bad"}', true)::text,
          'a quarantined record keeps its raw value and says why');
SELECT is((SELECT raw_value FROM kafka_lake.fdw40_records
            WHERE status = 'quarantined' AND "partition" = 1 AND raw_value !~ 'event_id'),
          encode('\xff00fe'::bytea, 'base64'),
          'a value that is not UTF-8 reads back as base64');
SELECT is((SELECT raw_value FROM kafka_lake.fdw40_records
            WHERE status = 'quarantined' AND raw_value ~ 'units'),
          '{"event_id": "x", "units_produced": "a\"b"}',
          'escapes in a raw value are decoded');
SELECT is((SELECT fingerprint FROM kafka_lake.fdw40_records WHERE "partition" = 1 AND "offset" = 0),
          (SELECT encode(substring(c.fingerprints FROM 1 FOR 32), 'hex')
             FROM kafka_lake.coordinates c JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw40' AND c.partition = 1 AND lower(c.offsets) = 0),
          'fingerprint comes from the catalog');

-- a user table with typed columns named after event fields
CREATE FOREIGN TABLE fdw40_typed (
    event_id text, units_produced int, line_id text, event_time timestamptz,
    business_date date, cycle_time_ms bigint, defect_count smallint, schema_version int2,
    operation varchar(20), product text OPTIONS (field 'product_code'),
    "partition" int, "offset" bigint, status text, not_a_field text)
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT is((SELECT row(units_produced, line_id, event_time, business_date, operation, product)::text
             FROM fdw40_typed WHERE event_id = 'evt-20260629-000001'),
          row(29, 'line-02', '2026-06-28 23:00:01+00'::timestamptz, '2026-06-29'::date,
              'welding', 'prd-a')::text,
          'typed columns read units_produced int, line_id text, event_time timestamptz, ...');
SELECT is((SELECT count(*)::int FROM fdw40_typed), 32, 'status option: accepted records only');
SELECT is((SELECT count(*)::int FROM fdw40_typed t JOIN kafka_lake.fdw40_records r USING ("partition", "offset")
            WHERE r.status = 'accepted'
              AND t.units_produced = (r.event->>'units_produced')::int
              AND t.line_id = r.event->>'line_id'
              AND t.event_time = (r.event->>'event_time')::timestamptz
              AND t.business_date = r.business_date
              AND t.cycle_time_ms = (r.event->>'cycle_time_ms')::bigint
              AND t.defect_count = (r.event->>'defect_count')::smallint
              AND t.schema_version = 1
              AND t.operation = r.event->>'operation'
              AND t.product = r.event->>'product_code'
              AND t.status = 'accepted' AND t.not_a_field IS NULL),
          32, 'every typed value equals the event''s value read through jsonb (a join)');
CREATE FOREIGN TABLE fdw40_str (event_id text, line_id text, machine_id varchar(40), "partition" int, "offset" bigint)
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT ok((SELECT t.line_id = r.event->>'line_id' AND t.line_id = 'línea "ü" 1'
                  AND t.machine_id = r.event->>'machine_id' AND t.machine_id LIKE '%äquina-ß'
             FROM fdw40_str t JOIN kafka_lake.fdw40_records r USING ("partition", "offset")
            WHERE t.event_id = 'fdw40-u1'),
          'strings that landed escaped read back decoded, as text and as varchar');
SET TimeZone = 'America/New_York';
SELECT is((SELECT count(*)::int FROM fdw40_typed t JOIN kafka_lake.fdw40_records r USING ("partition", "offset")
            WHERE r.event_id LIKE 'fdw40-t%'
              AND t.event_time = (r.event->>'event_time')::timestamptz
              AND t.event_time::text = (r.event->>'event_time')::timestamptz::text),
          11, 'event_time in every accepted form reads as timestamptz_in reads it');
RESET TimeZone;

-- a value of the wrong type: a clear error naming column, file and line
CREATE FOREIGN TABLE fdw40_wrong (event_id text, line_id int)
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT matches(pg_temp.error_of('SELECT * FROM fdw40_wrong'),
               '^22P02\ninvalid input syntax for type integer: "line-02"\n',
               'wrong type: SQLSTATE 22P02 and the type''s message');
SELECT matches(pg_temp.error_of('SELECT * FROM fdw40_wrong'),
               'CONTEXT: kafka_lake source "fdw40", batch 0{20}-0{18}06-[0-9a-f]{12}, file accepted.jsonl, line 1, column line_id: "line-02"',
               'wrong type: the context names batch, file, line, column and value');
SELECT matches(pg_temp.error_of('SELECT * FROM fdw40_wrong'),
               'HINT: Column "line_id" reads event field "line_id" as type integer; declare it with a type',
               'wrong type: the hint says what to do');
CREATE FOREIGN TABLE fdw40_short (event_time varchar(25), "partition" int)
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT matches(pg_temp.error_of('SELECT * FROM fdw40_short WHERE "partition" = 0'),
               '^22001\nvalue too long for type character varying\(25\)\n.*batch 0{19}7-0{18}13-[0-9a-f]{12}, file accepted.jsonl, line 5, column event_time: "2026-06-29T08:00:00.5\+00:00"',
               'wrong type: a later line is named by its number');
SELECT is(pg_temp.error_of('SELECT count(event_id) FROM fdw40_wrong'), 'no error',
          'a column the query does not read is never converted');
CREATE FOREIGN TABLE fdw40_range (timestamp_ms int)
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT matches(pg_temp.error_of('SELECT timestamp_ms FROM fdw40_range'),
               '^22003\nvalue "[0-9]+" is out of range for type integer\nHINT: Column "timestamp_ms" of a kafka_lake foreign table .*\nCONTEXT: .*column timestamp_ms',
               'an envelope column of too small a type: 22003 naming the column');

-- whole-row references, LIMIT, rescans
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw40_records r
            WHERE row_to_json(r)->>'status' = r.status
              AND (row_to_json(r)->>'offset')::bigint = r."offset"
              AND row_to_json(r)->>'topic' = 'fdw40.events'),
          37, 'a whole-row reference carries every column');
SELECT is((SELECT r::text FROM fdw40_typed r WHERE event_id = 'evt-20260629-000003'),
          (SELECT row(event_id, units_produced, line_id, event_time, business_date, cycle_time_ms,
                      defect_count, schema_version, operation, product, "partition", "offset",
                      status, not_a_field)::text
             FROM fdw40_typed WHERE event_id = 'evt-20260629-000003'),
          'a whole row equals its columns');
SELECT is((SELECT count(*)::int FROM (SELECT * FROM kafka_lake.fdw40_records LIMIT 3) s), 3, 'LIMIT');
SELECT is((SELECT array_agg(event_id ORDER BY event_id)::text
             FROM (SELECT event_id FROM fdw40_typed ORDER BY "partition", "offset" LIMIT 2) s),
          '{evt-20260629-000001,evt-20260629-000003}', 'ORDER BY ... LIMIT');
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT matches(pg_temp.explain('SELECT count(*) FROM generate_series(0, 1) p JOIN fdw40_typed t ON t."partition" = p'),
               'Nested Loop.*Foreign Scan on fdw40_typed', 'the join rescans the foreign table');
SELECT is((SELECT count(*)::int FROM generate_series(0, 1) p JOIN fdw40_typed t ON t."partition" = p),
          32, 'a nested loop with the foreign table inside returns every row once');
SELECT is((SELECT array_agg(n ORDER BY p)::text FROM generate_series(0, 1) p,
             LATERAL (SELECT count(*) AS n FROM (SELECT 1 FROM fdw40_typed t
                                                 WHERE t."partition" = p LIMIT 2) x) l),
          '{2,2}', 'a rescan in the middle of a file starts again from the first batch');
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- EXPLAIN VERBOSE and FORMAT JSON
SELECT matches(pg_temp.explain('(VERBOSE, COSTS OFF) SELECT sum(units_produced) FROM fdw40_typed'),
               'Foreign Scan on public.fdw40_typed\n +Output: .*\n +Kafka Lake Source: fdw40 \(topic fdw40.events\)\n +Statuses: accepted\n +Event Fields: units_produced\n +Batches: \d+ read, \d+ pruned\n +Files: \d+ read, \d+ pruned',
               'EXPLAIN VERBOSE names the source, statuses and the one event field parsed');
SELECT ok((SELECT j->0->'Plan'->>'Node Type' = 'Foreign Scan'
                  AND (j->0->'Plan'->>'Batches Read')::int + (j->0->'Plan'->>'Batches Pruned')::int
                      = (SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
                          WHERE s.source = 'fdw40')
                  AND (j->0->'Plan'->>'File Bytes')::bigint > 0
                  AND j->0->'Plan'->'Event Fields' = '["event_id", "line_id"]'
             FROM (SELECT pg_temp.explain('(FORMAT JSON, VERBOSE) SELECT event_id FROM fdw40_typed WHERE line_id = ''x''')::jsonb AS j) e),
          'EXPLAIN (FORMAT JSON) has numeric batch and file properties');
SELECT ok((SELECT (j->0->'Plan'->>'Lines Read')::int = 32 AND (j->0->'Plan'->>'Actual Rows')::int = 32
                  AND (j->0->'Plan'->>'Files Checked')::int > 0
             FROM (SELECT pg_temp.explain('(ANALYZE, FORMAT JSON) SELECT * FROM fdw40_typed')::jsonb AS j) e),
          'EXPLAIN ANALYZE reports lines read and rows');
SELECT ok((SELECT pg_temp.explain('(FORMAT YAML) SELECT * FROM fdw40_typed') ~ 'Batches Read: \d+'
              AND pg_temp.explain('(FORMAT XML) SELECT * FROM fdw40_typed') ~ '<Batches-Read>\d+</Batches-Read>'),
          'EXPLAIN YAML and XML');

-- the column option "field" turns any name into an event field
CREATE FOREIGN TABLE fdw40_renamed (status text OPTIONS (field 'operation'), u int OPTIONS (field 'units_produced'))
  SERVER fdw40_kafka OPTIONS (source 'fdw40', status 'accepted');
SELECT is((SELECT row(status, u)::text FROM fdw40_renamed LIMIT 1), '(welding,29)',
          'the option "field" reads an event field under another column name');

SELECT * FROM finish();
