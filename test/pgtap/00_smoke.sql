-- test/pgtap/00_smoke.sql: the harness works (needs the broker).
SELECT plan(5);
SELECT has_extension('kafka_lake', 'kafka_lake is installed');
SELECT ok(EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'kafka_lake'),
          'the foreign-data wrapper exists');
\getenv bootstrap KL_BOOTSTRAP
SELECT isnt(:'bootstrap'::text, '', 'the harness exports the broker''s bootstrap address');
SELECT is(kl_test.bootstrap(), :'bootstrap'::text, 'SQL reaches the broker''s control socket');
SELECT cmp_ok(kl_test.threads(), '>=', 1::bigint, 'a backend can count its threads');
SELECT * FROM finish();
