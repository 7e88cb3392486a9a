-- test/pgtap/55_bridge_seed.sql: the bridge of events the contract now normalises as the seed
-- does gives the seed's canonical CSV bytes and the seed's gold numbers, pinned by hand.
--
-- Part 1 (run second, after part 2), 2026-07-05: non-ASCII identifiers lower-cased (Ä, Σ final, İ, É), a trimmed NBSP, and
-- event_time in three forms only Python's datetime.fromisoformat reads (basic format, an hour
-- alone, an ISO week date with a comma fraction and an offset with seconds).  The expected file is
-- written out byte for byte (csv.writer(lineterminator="\n") quotes the comma and the quote); the
-- broker's timestamps and the fingerprints come from the landed records.  The two spellings of
-- one plant, line and product make one gold group.
--
-- Part 2, 2026-07-06: the seed computes gold in binary floating point and rounds with Python's
-- round(x, n): the correctly rounded decimal of the exact binary value, exact ties to even.
--   defects / units = 1 / 128 = 0.0078125 exactly: a tie, to even: 0.007812 (not 0.007813)
--   cycle times 7 x 812 + 813 over 8 = 812.125 exactly: a tie, to even: 812.12 (not 812.13)
--   1 / 2000000: the double nearest 5e-07 is 4.99999999999999977e-07, below the tie: 0.000000
--   107 / 40 = 2.675: the double is 2.67499999999999982, below the tie: 2.67 (not 2.68)
--   3 / 128 = 0.0234375, 6499 / 8 = 812.375: ties to even that round up: 0.023438, 812.38
--   2 / 3, 5 / 3: no tie: 0.666667, 1.67; no units: 0; 11 / 2 = 5.5: 5.50
-- Needs the broker.
SELECT plan(9);
SELECT kl_test.broker('create seedb.t 1');
SELECT kl_test.server('sb_srv');
SELECT kafka_lake.create_source('sb_src', 'sb_srv', 'seedb.t');

CREATE FUNCTION pg_temp.ev(id text, day text, event_time text, plant text, line text, wo text,
                           machine text, product text, op text, units int, defects int, cycle int)
RETURNS bytea LANGUAGE sql AS $$
  SELECT convert_to(json_build_object(
    'event_id', id, 'schema_version', 1, 'event_time', event_time, 'business_date', day,
    'plant_id', plant, 'line_id', line, 'work_order_id', wo, 'machine_id', machine,
    'product_code', product, 'operation', op, 'units_produced', units, 'defect_count', defects,
    'cycle_time_ms', cycle)::text, 'UTF8')
$$;

-- part 2
SELECT kafka_lake.produce('sb_srv', 'seedb.t',
         pg_temp.ev('sb-g-' || line || '-' || i, '2026-07-06', format('2026-07-06T08:%s:00Z', lpad(i::text, 2, '0')),
                    'plant-g', line, 'wo-' || line || '-' || i, 'm-1', 'prd-g', 'assembly', units, defects, cycle),
         key => convert_to('g', 'UTF8'))
FROM (SELECT 'tie-a' AS line, i, 16 AS units, (i = 1)::int AS defects, CASE WHEN i = 8 THEN 813 ELSE 812 END AS cycle
        FROM generate_series(1, 8) i
      UNION ALL SELECT 'tie-b', 1, 2000000, 1, 3
      UNION ALL SELECT 'tie-c', i, 1, (i = 1)::int, CASE WHEN i <= 27 THEN 3 ELSE 2 END FROM generate_series(1, 40) i
      UNION ALL SELECT 'tie-d', i, 1, (i <= 2)::int, CASE WHEN i = 1 THEN 1 ELSE 2 END FROM generate_series(1, 3) i
      UNION ALL SELECT 'tie-e', i, 16, (i <= 3)::int, CASE WHEN i <= 5 THEN 812 ELSE 813 END FROM generate_series(1, 8) i
      UNION ALL SELECT 'zero', i, 0, 0, 4 + i FROM generate_series(1, 2) i) g
ORDER BY line, i;
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('sb_src')), 62, 'part 2: 62 events are accepted');
SELECT is((SELECT run_status || ' ' || gold_rows FROM kafka_lake.bridge('sb_src', '2026-07-06')), 'processed 6',
          'part 2: the date is processed into 6 gold groups');
SELECT results_eq(
  $$SELECT line_id, units_produced, defect_count, defect_rate, avg_cycle_time_ms
      FROM kafka_lake.gold_current WHERE source = 'sb_src' AND business_date = '2026-07-06' ORDER BY 1$$,
  $$VALUES ('tie-a', 128::bigint, 1::bigint, 0.007812::numeric(12,6), 812.12::numeric(14,2)),
           ('tie-b', 2000000, 1, 0.000000, 3.00),
           ('tie-c', 40, 1, 0.025000, 2.67),
           ('tie-d', 3, 2, 0.666667, 1.67),
           ('tie-e', 128, 3, 0.023438, 812.38),
           ('zero', 0, 0, 0.000000, 5.50)$$,
  'part 2: every rate and average is Python''s round() of the binary quotient');


-- part 1
SELECT kafka_lake.produce('sb_srv', 'seedb.t', v, key => convert_to('k' || n, 'UTF8')) FROM (VALUES
  (1, pg_temp.ev('sb-1', '2026-07-05', '20260705T080000Z', 'PLÄNT-A', 'ΟΔΟΣ', 'WO-1', E'\u00a0M-1', 'PRD-É', 'Assembly', 10, 1, 1200)),
  (2, pg_temp.ev('sb-2', '2026-07-05', '2026-07-05T08+09:00', 'plänt-a', 'οδος', 'wo-2', 'm-1', 'prd-é', 'assembly', 20, 2, 1300)),
  (3, pg_temp.ev('sb-3', '2026-07-05', '2026-W27-7T08:00:00,5+09:00:30', 'İZMIR', 'LINE,1', 'WO-3', 'M-3', 'P"Q', 'INSPECTION', 30, 3, 1400))
) AS t(n, v) ORDER BY n;
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land('sb_src')), 3, 'part 1: the three events are accepted');
-- (part 2 took offsets 0..61)
SELECT max(timestamp_ms) FILTER (WHERE "offset" = 62) AS ts0, max(fingerprint) FILTER (WHERE "offset" = 62) AS fp0,
       max(timestamp_ms) FILTER (WHERE "offset" = 63) AS ts1, max(fingerprint) FILTER (WHERE "offset" = 63) AS fp1,
       max(timestamp_ms) FILTER (WHERE "offset" = 64) AS ts2, max(fingerprint) FILTER (WHERE "offset" = 64) AS fp2
FROM kafka_lake.sb_src_records \gset
CREATE TEMP TABLE b1 AS SELECT * FROM kafka_lake.bridge('sb_src', '2026-07-05');
SELECT kl_test.landing('sb_src') || '/../' || a.path AS csv_path
FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = 'sb_src' AND a.business_date = '2026-07-05' \gset
SELECT is(pg_read_file(:'csv_path'),
  'event_time,plant_id,line_id,work_order_id,machine_id,product_code,operation,units_produced,defect_count,cycle_time_ms,business_date,event_id,schema_version,kafka_topic,kafka_partition,kafka_offset,kafka_key,kafka_timestamp_ms,kafka_record_fingerprint' || E'\n'
  || format(E'20260705T080000Z,plänt-a,οδος,wo-1,m-1,prd-é,assembly,10,1,1200,2026-07-05,sb-1,1,seedb.t,0,62,k1,%s,%s\n', :'ts0', :'fp0')
  || format(E'2026-07-05T08+09:00,plänt-a,οδος,wo-2,m-1,prd-é,assembly,20,2,1300,2026-07-05,sb-2,1,seedb.t,0,63,k2,%s,%s\n', :'ts1', :'fp1')
  || format(E'"2026-W27-7T08:00:00,5+09:00:30",i\u0307zmir,"line,1",wo-3,m-3,"p""q",inspection,30,3,1400,2026-07-05,sb-3,1,seedb.t,0,64,k3,%s,%s\n', :'ts2', :'fp2'),
  'part 1: events.csv holds the seed''s canonical bytes');
SELECT is(encode(sha256(pg_read_binary_file(:'csv_path')), 'hex'), (SELECT source_hash FROM b1),
          'part 1: source_hash is the SHA-256 of those bytes');
SELECT results_eq($$SELECT run_status, quality_passed, silver_rows, gold_rows FROM b1$$,
                  $$VALUES ('processed'::text, 8, 3, 2)$$,
                  'part 1: processed, 8 of 8 checks (the week date is written on 2026-07-05), 2 gold groups');
SELECT results_eq(
  $$SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
      FROM kafka_lake.gold_current WHERE source = 'sb_src' AND business_date = '2026-07-05' ORDER BY 1, 2$$,
  $$VALUES (E'i\u0307zmir', 'line,1', 'p"q', 30::bigint, 3::bigint, 0.100000::numeric(12,6), 1400.00::numeric(14,2)),
           ('plänt-a', 'οδος', 'prd-é', 30, 3, 0.100000, 1250.00)$$,
  'part 1: gold groups the two spellings of plänt-a, οδος, prd-é together');
SELECT is((SELECT array_agg(event_time ORDER BY kafka_offset) FROM kafka_lake.silver_machine_events
           WHERE run_id = (SELECT run_id FROM b1)),
          ARRAY['2026-07-05 08:00:00+00', '2026-07-04 23:00:00+00', '2026-07-04 22:59:30.5+00']::timestamptz[],
          'part 1: silver holds the instants the three forms name');

SELECT * FROM finish();
