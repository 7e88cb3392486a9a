-- test/pgtap/49_stray_entries.sql: entries named batch=... in a partition directory that are
-- not batches (an empty file, an empty directory, a directory under a name that is no batch
-- id) never stop a partition: land(), replay(), recover() and the bridge go on, warn, and say
-- what to do, and verify() calls them stray_entry with the same advice.  A directory that looks
-- like a batch but cannot be adopted (its manifest disagrees) stops the partition with XX001
-- and a hint that works; verify() calls it not_adoptable with the same advice.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(13);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN st || E'\n' || msg || E'\nHINT: ' || coalesce(hint, '');
END $$;

\o /dev/null
SELECT kl_test.server('st49_kafka');
SELECT kl_test.broker('create st49.t 1');
SELECT kafka_lake.create_source('st49', 'st49_kafka', 'st49.t');
SELECT kafka_lake.produce('st49_kafka', 'st49.t', kl_test.event('evt-st49-' || n)) FROM generate_series(1, 3) n;
SELECT * FROM kafka_lake.land('st49');
\o
SELECT kl_test.landing('st49') || '/topic=st49.t/partition=0' AS pdir \gset

-- an empty file, an empty directory with a batch's name, and a directory named like no batch
\o /dev/null
SELECT kl_test.sh(format('touch %s/batch=', :'pdir'));
SELECT kl_test.sh(format('mkdir %s/batch=00000000000000000050-00000000000000000052-0123456789ab', :'pdir'));
SELECT kl_test.sh(format('mkdir %s/batch=old', :'pdir'));
SELECT kafka_lake.produce('st49_kafka', 'st49.t', kl_test.event('evt-st49-' || n)) FROM generate_series(4, 5) n;
\o
SELECT is(pg_temp.error_of($$SELECT * FROM kafka_lake.land('st49')$$), 'no error',
          'land() goes on past the stray entries');
SELECT is((SELECT count(*) FROM kafka_lake.st49_records), 5::bigint, 'and landed the two new records');
SELECT results_eq($$SELECT action, count(*)::int FROM kafka_lake.recover('st49') GROUP BY 1$$,
                  $$VALUES ('skipped_stray', 3)$$, 'recover() reports each stray entry and leaves it');
SELECT matches((SELECT string_agg(detail, E'\n' ORDER BY detail) FROM kafka_lake.recover('st49')),
               '"batch=" is not a batch.*\n.*"batch=0000.*" is not a batch.*\n"batch=old" is not a batch.*move it out of the partition directory',
               'naming each, and what to do with it');
SELECT results_eq($$SELECT problem, count(*)::int FROM kafka_lake.verify('st49') GROUP BY 1$$,
                  $$VALUES ('stray_entry', 3)$$, 'verify() calls them stray_entry');
SELECT matches((SELECT action FROM kafka_lake.verify('st49') LIMIT 1),
               'not a batch.*move it out of the partition directory',
               'verify() gives the same advice');
SELECT results_eq($$SELECT selected_events FROM kafka_lake.bridge('st49', '2026-06-29')$$, $$VALUES (5)$$,
                  'the bridge goes on too');

-- a directory that looks like a batch but whose manifest disagrees
\o /dev/null
SELECT kl_test.sh(format('rm -r %s/batch= %s/batch=old %s/batch=00000000000000000050-00000000000000000052-0123456789ab',
                         :'pdir', :'pdir', :'pdir'));
SELECT kl_test.sh(format('cp -r %s/$(ls %s | head -1) %s/batch=00000000000000000060-00000000000000000062-0123456789ab',
                         :'pdir', :'pdir', :'pdir'));
\o
SELECT matches(pg_temp.error_of($$SELECT * FROM kafka_lake.land('st49')$$),
               '^XX001\nbatch directory ".*batch=00000000000000000060-00000000000000000062-0123456789ab" does not match its manifest\nHINT: Move .* out of the landing directory',
               'a directory that cannot be adopted stops the partition with XX001 and a hint');
SELECT matches(pg_temp.error_of($$SELECT * FROM kafka_lake.recover('st49')$$), '^XX001\n.*\nHINT: Move ',
               'recover() says the same');
SELECT results_eq($$SELECT problem FROM kafka_lake.verify('st49')$$, $$VALUES ('not_adoptable')$$,
                  'verify() calls it not_adoptable, not "recover() adopts it"');
SELECT matches((SELECT action FROM kafka_lake.verify('st49')), '^Move .* out of the landing directory',
               'with the same advice as the error''s hint');
\o /dev/null
SELECT kl_test.sh(format('rm -r %s/batch=00000000000000000060-00000000000000000062-0123456789ab', :'pdir'));
\o
SELECT is(pg_temp.error_of($$SELECT * FROM kafka_lake.land('st49')$$), 'no error',
          'once it is moved away, land() goes on');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('st49')$$, 'and verify() is clean');

SELECT * FROM finish();
