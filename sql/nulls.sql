--
-- nulls: a NULL where a function needs a value is an ERROR 22004 with a
-- hint, for every function of the extension; never an empty result that
-- reads as "no problem found" (recover, verify and gold_as_of were STRICT).
-- Each of these is refused before any source is looked up, so none needs
-- to exist.  (That optional arguments given as NULL take their defaults
-- takes a broker: test/pgtap/63_nulls.sql.)  Needs no broker.
--
CREATE EXTENSION kafka_lake;

-- the SQLSTATE, message and hint of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  hint text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' | HINT: ' || nullif(hint, ''), ' | no hint');
END $$;

SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT kafka_lake.create_source(NULL, 'n63_srv', 'n63.t')$$),
    ($$SELECT kafka_lake.create_source('n63_x', NULL, 'n63.t')$$),
    ($$SELECT kafka_lake.create_source('n63_x', 'n63_srv', NULL)$$),
    ($$SELECT kafka_lake.drop_source(NULL)$$),
    ($$SELECT * FROM kafka_lake.land(NULL)$$),
    ($$SELECT * FROM kafka_lake.replay(NULL, 0, 0, 0)$$),
    ($$SELECT * FROM kafka_lake.replay('n63', NULL, 0, 0)$$),
    ($$SELECT * FROM kafka_lake.replay('n63', 0, NULL, 0)$$),
    ($$SELECT * FROM kafka_lake.replay('n63', 0, 0, NULL)$$),
    ($$SELECT * FROM kafka_lake.recover(NULL)$$),
    ($$SELECT * FROM kafka_lake.verify(NULL)$$),
    ($$SELECT * FROM kafka_lake.lag(NULL)$$),
    ($$SELECT kafka_lake.produce(NULL, 'n63.t', 'x'::bytea)$$),
    ($$SELECT kafka_lake.produce('n63_srv', NULL, 'x'::bytea)$$),
    ($$SELECT * FROM kafka_lake.bridge(NULL, '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.bridge('n63', NULL)$$),
    ($$SELECT * FROM kafka_lake.bridge(NULL, '2026-06-29', reopen => true)$$),
    ($$SELECT * FROM kafka_lake.close_date(NULL, '2026-06-29')$$),
    ($$SELECT * FROM kafka_lake.close_date('n63', NULL)$$),
    ($$SELECT * FROM kafka_lake.gold_as_of(NULL)$$),
    ($$SELECT kafka_lake.event_key(NULL, 'evt-1')$$),
    ($$SELECT kafka_lake.event_key('n63', NULL)$$),
    ($$SELECT * FROM kafka_lake.shard_gold(NULL, 'g', '2026-06-29') AS g(n bigint)$$),
    ($$SELECT * FROM kafka_lake.shard_gold('n63', 'g', NULL) AS g(n bigint)$$)) AS t(q);
-- the landing's life cycle
SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT * FROM kafka_lake.compact(NULL)$$),
    ($$SELECT * FROM kafka_lake.expire(NULL, before => '2026-01-01')$$),
    ($$SELECT * FROM kafka_lake.expire('n63')$$),
    ($$SELECT * FROM kafka_lake.expire('n63', before => NULL, older_than => NULL)$$),
    ($$SELECT * FROM kafka_lake.replay(NULL, from_time => now() - interval '1 hour', to_time => now())$$),
    ($$SELECT * FROM kafka_lake.replay('n63', from_time => NULL, to_time => now())$$),
    ($$SELECT * FROM kafka_lake.replay('n63', from_time => now(), to_time => NULL)$$)) AS t(q);

DROP EXTENSION kafka_lake;
