-- test/pgtap/98_harden_names.sql: every field name a contract accepts works end to end.  A
-- contract whose fields need quoting in SQL (Region, offset, "a b"), hold a quote (we"ird),
-- are longer than a column name may be (68 bytes), or meet silver's own columns (kafka_offset,
-- run_id) lands, and its dates bridge with every check passing: silver names such a field's
-- column as <source>_events does (clipped to 63 bytes, event_<name> where it meets another),
-- the canonical CSV's header quotes a name as CSV quotes a value, the schema_drift check
-- compares names as PostgreSQL stores them, and a declared gold and a SQL gold group by such
-- fields.  Needs the broker.
SELECT plan(13);

CREATE FUNCTION pg_temp.csv_head(hash text) RETURNS text LANGUAGE sql AS $$
  SELECT split_part(pg_read_file(kl_test.landing('names98') || '/' || regexp_replace(a.path, '^names98/', '')),
                    E'\n', 1)
    FROM kafka_lake.adapter_versions a WHERE a.source_hash = hash
$$;

\o /dev/null
SELECT kl_test.server('names98_srv');
SELECT kl_test.broker('create names98.t 1');
\o
SELECT lives_ok($$SELECT kafka_lake.create_contract('names98', $c${
  "type": "object",
  "properties": {
    "id":      {"type": "string"},
    "day":     {"type": "string", "format": "date"},
    "Region":  {"type": "string", "enum": ["North", "South"]},
    "offset":  {"type": "integer"},
    "a b":     {"type": "string"},
    "we\"ird": {"type": "string"},
    "quantity_of_items_in_the_order_as_the_warehouse_counted_them_at_pick": {"type": "integer", "minimum": 0},
    "kafka_offset": {"type": "integer"},
    "run_id":  {"type": "string"}
  },
  "required": ["id", "day", "Region", "a b", "kafka_offset"],
  "event_id": "id",
  "business_date": {"field": "day"},
  "rules": ["kafka_offset >= 0"],
  "natural_key": ["id", "a b"]
}$c$)$$, 'a contract whose field names need quoting, are long, or meet silver''s own columns');
SELECT lives_ok($$SELECT kafka_lake.create_source('names98', 'names98_srv', 'names98.t', contract => 'names98')$$,
                'create_source makes its silver');
SELECT is((SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
            WHERE attrelid = 'kafka_lake.names98_silver'::regclass AND attnum > 0),
          'run_id, business_date, day, Region, offset, a b, we"ird, '
          'quantity_of_items_in_the_order_as_the_warehouse_counted_them_at, event_kafka_offset, event_run_id, '
          'id, kafka_topic, kafka_partition, kafka_offset, kafka_key, kafka_timestamp_ms, kafka_record_fingerprint',
          'silver has a column per field: quoted names as they are, a long one clipped, clashing ones as event_<name>');

\o /dev/null
SELECT kafka_lake.produce('names98_srv', 'names98.t', convert_to(format(
         '{"id": "n-%s", "day": "2026-07-04", "Region": "%s", "offset": %s, "a b": "%s", "we\"ird": "w,%s", '
         '"quantity_of_items_in_the_order_as_the_warehouse_counted_them_at_pick": %s, "kafka_offset": %s, "run_id": "r-%s"}',
         i, CASE WHEN i % 2 = 0 THEN 'North' ELSE 'South' END, i * 10, CASE WHEN i <= 2 THEN 'x' ELSE 'y' END,
         i, i, 1000 + i, i), 'UTF8'))
  FROM generate_series(1, 4) i;
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('names98')$$, $$VALUES (4)$$, 'four events land');

SELECT lives_ok($$SELECT kafka_lake.define_gold('names98', 'names98_by_region', grain => ARRAY['Region'],
    metrics => '{"quantity": {"sum": "quantity_of_items_in_the_order_as_the_warehouse_counted_them_at_pick"},
                 "offsets": {"sum": "kafka_offset"}, "events": {"count": "*"}}')$$,
                'a declared gold groups by a field whose name needs quoting, and sums the long and the clashing one');
SELECT lives_ok($$SELECT kafka_lake.define_gold('names98', 'names98_by_ab', grain => ARRAY['a b'],
    sql => 'SELECT "a b", count(*) AS events, string_agg("we""ird", ''|'' ORDER BY id) AS weird,
                   max(event_run_id) AS last_run FROM silver GROUP BY "a b"')$$,
                'and a SQL gold groups by a field with a space');

CREATE TEMP TABLE b98 AS SELECT * FROM kafka_lake.bridge('names98', '2026-07-04');
SELECT results_eq($$SELECT run_status, quality_passed = quality_total, silver_rows, snapshot_status FROM b98$$,
                  $$VALUES ('processed', true, 4, 'published')$$,
                  'the date bridges and every check passes, schema_drift included');
SELECT is((SELECT observed FROM kafka_lake.quality_results q JOIN b98 USING (run_id) WHERE q.check_name = 'schema_drift'),
          (SELECT expected FROM kafka_lake.quality_results q JOIN b98 USING (run_id) WHERE q.check_name = 'schema_drift'),
          'schema_drift observes the silver columns and CSV header it expects');
SELECT is(pg_temp.csv_head((SELECT source_hash FROM b98)),
          'day,Region,offset,a b,"we""ird",quantity_of_items_in_the_order_as_the_warehouse_counted_them_at_pick,'
          'kafka_offset,run_id,id,kafka_topic,kafka_partition,kafka_offset,kafka_key,kafka_timestamp_ms,kafka_record_fingerprint',
          'the CSV header has the fields'' own names, quoted as CSV quotes a value');
SELECT results_eq($$SELECT "Region", quantity, offsets, events FROM kafka_lake.names98_by_region_current ORDER BY 1$$,
                  $$VALUES ('North', 6::bigint, 2006::bigint, 2::bigint), ('South', 4::bigint, 2004::bigint, 2::bigint)$$,
                  'the declared gold');
SELECT results_eq($$SELECT "a b", events, weird, last_run FROM kafka_lake.names98_by_ab_current ORDER BY 1$$,
                  $$VALUES ('x', 2::bigint, 'w,1|w,2', 'r-2'), ('y', 2::bigint, 'w,3|w,4', 'r-4')$$,
                  'the SQL gold');
SELECT results_eq($$SELECT event_kafka_offset, kafka_offset, event_run_id FROM kafka_lake.names98_silver
                     WHERE id = 'n-1'$$,
                  $$VALUES (1001::bigint, 0::bigint, 'r-1')$$,
                  'the field kafka_offset and the record''s own offset are two columns');
SELECT results_eq($$SELECT run_status FROM kafka_lake.bridge('names98', '2026-07-04')$$, $$VALUES ('skipped')$$,
                  'the same accepted set bridges again to the same source_hash');

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('names98', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract = 'names98';
DROP SERVER names98_srv CASCADE;
\o
