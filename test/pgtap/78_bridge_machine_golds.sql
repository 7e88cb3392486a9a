-- test/pgtap/78_bridge_machine_golds.sql: golds of one's own on a machine_event_v1 source.
-- The seed's gold_daily_line_metrics is one built-in declared gold: a gold declared with the
-- same definition gives the very same rows; a coarser declared gold and a SQL gold (by a
-- superuser, who may read silver_machine_events) are published in the same snapshot, and a
-- gold per instant has one group for an instant written two ways; the
-- eight checks keep their names and one conservation check is added per declared gold with
-- sums; a plain role's SQL gold over the shared silver_machine_events is refused.  Needs
-- the broker.
SELECT plan(13);

\o /dev/null
SELECT kl_test.server('mg78_srv');
SELECT kl_test.broker('create mg78.t 2');
SELECT kafka_lake.create_source('mg78', 'mg78_srv', 'mg78.t');
SELECT kafka_lake.produce('mg78_srv', 'mg78.t',
         kl_test.event('e78-' || i, units => 10 + i, defects => i % 3, machine => 'm-' || (i % 2),
                       line => 'line-0' || (i % 3), work_order => 'wo-' || i,
                       event_time => CASE WHEN i = 12 THEN '2026-06-28T23:00:00Z' END), NULL, i % 2)
  FROM generate_series(1, 12) i;
\o
SELECT results_eq($$SELECT sum(accepted)::int FROM kafka_lake.land('mg78')$$, $$VALUES (12)$$, 'twelve events land');

SELECT lives_ok($$SELECT kafka_lake.define_gold('mg78', 'mg78_copy', grain => grain, metrics => metrics)
                    FROM kafka_lake.golds WHERE gold = 'gold_daily_line_metrics'$$,
                'the built-in definition, declared again as a gold of the source');
SELECT lives_ok($$SELECT kafka_lake.define_gold('mg78', 'mg78_lines', ARRAY['line_id'],
                    '{"events": {"count": "*"}, "units": {"sum": "units_produced"},
                      "worst": {"max": "defect_count"}, "rate": {"ratio": ["worst", "units"], "round": 3}}')$$,
                'a coarser declared gold');
SELECT lives_ok($$SELECT kafka_lake.define_gold('mg78', 'mg78_instants', ARRAY['event_time'], '{"n": {"count": "*"}}')$$,
                'a declared gold per instant');
SELECT lives_ok($$SELECT kafka_lake.define_gold('mg78', 'mg78_machines', ARRAY['machine_id'],
                    sql => 'SELECT machine_id, count(DISTINCT work_order_id) AS orders FROM silver GROUP BY 1')$$,
                'a SQL gold, by a role that may read silver_machine_events');

CREATE TEMP TABLE b AS SELECT * FROM kafka_lake.bridge('mg78', '2026-06-29');
SELECT results_eq($$SELECT run_status, quality_passed, quality_total, gold_rows FROM b$$,
                  $$VALUES ('processed', 11, 11, 3 + 3 + 3 + 1 + 2)$$,
                  'processed: 8 + 3 conservation checks; the rows of five golds');
SELECT results_eq($$SELECT check_name FROM kafka_lake.quality_results WHERE run_id = (SELECT run_id FROM b) ORDER BY check_name$$,
                  $$VALUES ('accepted_values_operation'), ('conservation_silver_to_mg78_copy'), ('conservation_silver_to_mg78_instants'),
                           ('conservation_silver_to_mg78_lines'),
                           ('freshness_business_date'), ('not_null_required_columns'), ('numeric_range_within_bounds'),
                           ('row_count_source_to_silver'), ('schema_drift'), ('unique_natural_key'),
                           ('unit_conservation_silver_to_gold')$$,
                  'the eight checks under their names, and one conservation check per declared gold');
SELECT is_empty($$SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
                    FROM kafka_lake.gold_current WHERE source = 'mg78'
                  EXCEPT
                  SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
                    FROM kafka_lake.mg78_copy_current$$,
                'the declared copy has every row of the built-in gold ...');
SELECT is((SELECT count(*)::int FROM kafka_lake.mg78_copy_current), (SELECT count(*)::int FROM kafka_lake.gold_current WHERE source = 'mg78'),
          '... and no other');
SELECT results_eq($$SELECT line_id, events, units, worst, rate FROM kafka_lake.mg78_lines_current ORDER BY line_id$$,
                  $$VALUES ('line-00', 4::bigint, 70::bigint, 0::bigint, 0.000::numeric),
                           ('line-01', 4, 62, 1, 0.016), ('line-02', 4, 66, 2, 0.030)$$,
                  'the coarser gold: counts, sums, maxima, a ratio of two of them');
SELECT results_eq($$SELECT event_time, n FROM kafka_lake.mg78_instants_current$$,
                  $$VALUES ('2026-06-28 23:00:00+00'::timestamptz, 12::bigint)$$,
                  'one group per instant, however the events write it (+09:00 and Z)');
SELECT results_eq($$SELECT machine_id, orders, snapshot_id FROM kafka_lake.mg78_machines_current ORDER BY 1$$,
                  $$SELECT m, 6::bigint, (SELECT snapshot_id FROM b) FROM (VALUES ('m-0'), ('m-1')) v(m)$$,
                  'the SQL gold, in the same snapshot');

CREATE ROLE t78_plain;
GRANT USAGE ON SCHEMA kafka_lake TO t78_plain;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t78_plain;
GRANT SELECT, TRIGGER ON kafka_lake.mg78_records TO t78_plain;
SET ROLE t78_plain;
SELECT throws_ok($$SELECT kafka_lake.define_gold('mg78', 'mg78_plain', ARRAY['machine_id'],
                    sql => 'SELECT machine_id, count(*) AS n FROM silver GROUP BY 1')$$, '42501', NULL,
                 'a plain role''s SQL gold over the shared silver_machine_events is refused');
RESET ROLE;

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('mg78', drop_landing => true);
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) FROM t78_plain;
REVOKE ALL ON SCHEMA kafka_lake FROM t78_plain;
DROP ROLE t78_plain;
\o
