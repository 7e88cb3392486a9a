--
-- fdw: EXPLAIN of kafka_lake foreign scans, pruned by every prunable
-- column.  Needs the test broker: the harness (test/run) exports its
-- address as KL_BOOTSTRAP.  Plans are shown with COSTS OFF; the one plan
-- with costs goes through explain_filter, which masks cost figures and file
-- sizes (they depend on the planner's cost settings), so the row estimate
-- from the catalog's counts stays visible.
--
\getenv bootstrap KL_BOOTSTRAP
CREATE EXTENSION kafka_lake;
CREATE SERVER regress_fdw_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source('regress_fdw', 'regress_fdw_kafka', 'regress.fdw.events');

-- 48 events over 4 partitions and 3 business dates, then one bad value
SELECT count(*) FROM (
  SELECT kafka_lake.produce('regress_fdw_kafka', 'regress.fdw.events',
           convert_to(json_build_object(
             'event_id', 'regress-fdw-' || g, 'schema_version', 1,
             'event_time', d || 'T08:00:00+09:00', 'business_date', d,
             'plant_id', 'plant-01', 'line_id', 'line-0' || (g % 3 + 1), 'work_order_id', 'wo-1',
             'machine_id', 'machine-0' || (g % 5), 'product_code', 'prd-a', 'operation', 'assembly',
             'units_produced', g, 'defect_count', 0, 'cycle_time_ms', 1000)::text, 'UTF8'),
           convert_to('machine-0' || (g % 5), 'UTF8'), g % 4)
    FROM generate_series(1, 48) g,
         LATERAL (SELECT CASE WHEN g <= 16 THEN '2026-06-28' WHEN g <= 32 THEN '2026-06-29'
                              ELSE '2026-06-30' END AS d) dd
   ORDER BY g) s;
SELECT kafka_lake.produce('regress_fdw_kafka', 'regress.fdw.events',
                          convert_to('{"event_id": "broken"', 'UTF8'), NULL, 1);

-- batches of at most 4 records: 3 per partition, one date each, and one
-- batch holding the quarantined record
SET kafka_lake.batch_max_records = 4;
SELECT partition, status, records, accepted, quarantined, first_offset, last_offset
  FROM kafka_lake.land('regress_fdw') ORDER BY partition, first_offset;
SELECT status, count(*), sum((event->>'units_produced')::int) AS units
  FROM kafka_lake.regress_fdw_records GROUP BY status ORDER BY status;

CREATE FUNCTION explain_filter(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN ' || q LOOP
    l := regexp_replace(l, 'cost=\d+\.\d+\.\.\d+\.\d+', 'cost=N..N');
    l := regexp_replace(l, 'File Bytes: \d+', 'File Bytes: N');
    RETURN NEXT l;
  END LOOP;
END $$;

-- no clause: every batch; the estimate is the landed count
SELECT explain_filter('SELECT * FROM kafka_lake.regress_fdw_records');
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records;

-- each prunable column
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE topic = 'another.topic';
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE partition = 1;
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE partition IN (0, 2);
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE "offset" BETWEEN 4 AND 7;
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE "offset" IN (0, 12);
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE status = 'quarantined';
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records
  WHERE status IN ('accepted', 'duplicate_event_id');
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE business_date = '2026-06-29';
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE business_date >= '2026-06-30';
SELECT batch_id AS some_batch FROM kafka_lake.regress_fdw_records
 WHERE partition = 2 AND "offset" = 5 \gset
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE batch_id = :'some_batch';
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records
  WHERE partition = 3 AND business_date > '2026-06-28' AND status = 'accepted';
-- a contradiction prunes everything
EXPLAIN (COSTS OFF) SELECT * FROM kafka_lake.regress_fdw_records WHERE "offset" < 0;

-- the same rows as without pruning
SELECT count(*), sum("offset") FROM kafka_lake.regress_fdw_records
 WHERE partition = 3 AND business_date > '2026-06-28' AND status = 'accepted';
SELECT count(*), sum("offset") FROM kafka_lake.regress_fdw_records
 WHERE partition + 0 = 3 AND business_date + 0 > '2026-06-28' AND status || '' = 'accepted';

-- a typed table: VERBOSE shows the event fields parsed; ANALYZE the work done
CREATE FOREIGN TABLE regress_fdw_units (units_produced int, line_id text, business_date date)
  SERVER regress_fdw_kafka OPTIONS (source 'regress_fdw', status 'accepted');
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT line_id, sum(units_produced) FROM regress_fdw_units
   WHERE business_date = '2026-06-30' GROUP BY line_id;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT sum(units_produced) FROM regress_fdw_units WHERE business_date = '2026-06-30';
SELECT line_id, sum(units_produced) FROM regress_fdw_units
 WHERE business_date = '2026-06-30' GROUP BY line_id ORDER BY line_id;

-- parameters prune at execution, also in a generic plan
ALTER FOREIGN TABLE regress_fdw_units ADD COLUMN "partition" int;
PREPARE regress_fdw_q(int) AS SELECT count(*) FROM regress_fdw_units WHERE "partition" = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE regress_fdw_q(2);
EXECUTE regress_fdw_q(2);
RESET plan_cache_mode;

-- FORMAT JSON carries the same facts as numbers
EXPLAIN (COSTS OFF, FORMAT JSON) SELECT * FROM kafka_lake.regress_fdw_records WHERE partition = 0;

-- errors
CREATE FOREIGN TABLE regress_fdw_wrong (line_id int)
  SERVER regress_fdw_kafka OPTIONS (source 'regress_fdw', status 'accepted');
SELECT * FROM regress_fdw_wrong WHERE false;
SELECT * FROM regress_fdw_wrong;  -- ERROR

DROP FOREIGN TABLE regress_fdw_units, regress_fdw_wrong;
SELECT kafka_lake.drop_source('regress_fdw', drop_landing => true);
DROP SERVER regress_fdw_kafka;
DROP EXTENSION kafka_lake;
