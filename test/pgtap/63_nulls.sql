-- test/pgtap/63_nulls.sql: optional arguments given as NULL take their defaults.  (That a NULL
-- where a function needs a value is an ERROR 22004 with a hint, for every function, never an
-- empty result that reads as "no problem found", is sql/nulls.sql.)  Needs the broker.
SET client_min_messages = warning;
SELECT plan(6);
SELECT kl_test.broker('create n63.t 1');
SELECT kl_test.server('n63_srv');
SELECT kafka_lake.create_source('n63', 'n63_srv', 'n63.t');

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
