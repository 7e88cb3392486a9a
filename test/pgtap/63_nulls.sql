-- test/pgtap/63_nulls.sql: a NULL where a function needs a value is an ERROR 22004 with a hint,
-- for every function of the extension; never an empty result that reads as "no problem found"
-- (recover, verify and gold_as_of were STRICT).  Optional arguments given as NULL take their
-- defaults.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(27);
SELECT kl_test.broker('create n63.t 1');
SELECT kl_test.server('n63_srv');
SELECT kafka_lake.create_source('n63', 'n63_srv', 'n63.t');

-- state and hint of the error a statement raises
CREATE FUNCTION pg_temp.null_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  state text;
  hint text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, hint = PG_EXCEPTION_HINT;
  RETURN state || CASE WHEN coalesce(hint, '') = '' THEN ' without a hint' ELSE ' with a hint' END;
END $$;

SELECT is(pg_temp.null_error(q), '22004 with a hint', q)
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
  ($$SELECT * FROM kafka_lake.gold_as_of(NULL)$$),
  ($$SELECT kafka_lake.event_key(NULL, 'evt-1')$$),
  ($$SELECT kafka_lake.event_key('n63', NULL)$$)
) AS t(q);

SELECT throws_ok($$SELECT * FROM kafka_lake.verify(NULL)$$, '22004', 'source must not be null',
                 'verify(NULL) does not read as "no problem found"');
SELECT throws_ok($$SELECT kafka_lake.event_key('no_such_source', 'evt-1')$$, '42704', NULL,
                 'event_key of an unknown source is refused, not NULL');

-- optional arguments given as NULL take their defaults
SELECT lives_ok($$SELECT * FROM kafka_lake.land('n63', NULL, NULL, NULL)$$,
                'land with NULL max_records, timeout and allow_expired uses the defaults');
SELECT lives_ok($$SELECT * FROM kafka_lake.lag('n63', NULL)$$, 'lag with a NULL timeout uses the default');
SELECT is(kafka_lake.produce('n63_srv', 'n63.t', NULL, NULL, NULL, NULL), 0::bigint,
          'produce with a NULL value sends a tombstone');
SELECT lives_ok($$SELECT kafka_lake.create_source('n63_d', 'n63_srv', 'n63.t', NULL, NULL)$$,
                'create_source with a NULL group_id and contract uses the defaults');
SELECT lives_ok($$SELECT kafka_lake.drop_source('n63_d', NULL)$$,
                'drop_source with a NULL drop_landing keeps the landing');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing(''), true, false) f WHERE f = 'n63_d'), 1::bigint,
          '(its landing directory stays)');

SELECT kafka_lake.drop_source('n63', drop_landing => true);
SELECT kl_test.sh('rm -rf ' || kl_test.landing('n63_d'));
SELECT * FROM finish();
