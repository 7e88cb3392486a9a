-- test/pgtap/39_damaged_batch.sql: a damaged batch is landed again from the broker by the
-- procedure docs/operations.md gives, end to end: verify() names the problem and what to do; the batch
-- directory is moved out of the landing directory; recover() forgets the batch; replay() of its
-- offsets lands it again; then the foreign table reads every record, verify() is clean, the
-- bridge takes every event and the group's offsets never moved.  The same for a batch directory
-- that was deleted.  Every kind of problem verify() reports carries an action.  Needs the
-- broker.
SET client_min_messages = warning;
SELECT plan(23);

\o /dev/null
SELECT kl_test.server('db39_kafka');
SELECT kl_test.broker('create db39.t 1');
SELECT kafka_lake.create_source('db39', 'db39_kafka', 'db39.t');
SELECT kafka_lake.set_compression('db39', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('db39_kafka', 'db39.t', kl_test.event('evt-db39-' || n, units => n, machine => 'machine-' || n))
  FROM generate_series(1, 12) n;
SET kafka_lake.batch_max_records = 3;
SELECT * FROM kafka_lake.land('db39');
RESET kafka_lake.batch_max_records;
\o
SELECT kl_test.landing('db39') || '/topic=db39.t/partition=0' AS pdir \gset
SELECT current_setting('data_directory') || '/kl39_moved' AS moved \gset
SELECT batch_id AS b2 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'db39' AND first_offset = 3 \gset
SELECT batch_id AS b4 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'db39' AND first_offset = 9 \gset
SELECT is((SELECT count(*) FROM kafka_lake.db39_records), 12::bigint, 'twelve records in four batches');

----------------------------------------------------------------------------
-- a damaged file
----------------------------------------------------------------------------
\o /dev/null
SELECT kl_test.sh(format('printf X | dd of=%s/batch=%s/accepted.jsonl bs=1 seek=30 conv=notrunc 2>/dev/null',
                         :'pdir', :'b2'));
\o
SELECT throws_ok('SELECT count(*) FROM kafka_lake.db39_records', 'XX001', NULL,
                 'the foreign table refuses the damaged batch');
SELECT results_eq($$SELECT batch_id, problem FROM kafka_lake.verify('db39')$$,
                  format($$VALUES (%L, 'checksum_mismatch')$$, :'b2'), 'verify() names it');
CREATE TEMP TABLE db39_first_action AS SELECT * FROM kafka_lake.verify('db39');

-- the procedure
\o /dev/null
SELECT kl_test.sh(format('mkdir -p %s && mv %s/batch=%s %s/', :'moved', :'pdir', :'b2', :'moved'));
\o
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('db39')$$,
                  format($$VALUES ('forgotten', %L)$$, :'b2'),
                  'recover() forgets the batch whose directory is gone');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('db39')$$, 'verify() has nothing more to say');
SELECT is((SELECT count(*) FROM kafka_lake.db39_records), 9::bigint, 'the foreign table reads the nine others');
SELECT results_eq($$SELECT status, records, first_offset, last_offset FROM kafka_lake.replay('db39', 0, 3, 5)$$,
                  $$VALUES ('landed', 3, 3::bigint, 5::bigint)$$,
                  'replay() of its offsets lands them again');
SELECT is((SELECT count(*) FROM kafka_lake.db39_records WHERE status = 'accepted'), 12::bigint,
          'the foreign table reads all twelve, accepted');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('db39')$$, 'verify() is clean');
SELECT results_eq($$SELECT "offset" FROM kafka_lake.coordinate_list WHERE source = 'db39' ORDER BY 1$$,
                  $$SELECT generate_series(0, 11)::bigint$$, 'each coordinate once');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('db39')), 12::bigint, 'the group''s offset did not move');
SELECT results_eq($$SELECT selected_events, run_status FROM kafka_lake.bridge('db39', '2026-06-29')$$,
                  $$VALUES (12, 'processed')$$, 'the bridge takes all twelve events');
SELECT is((SELECT sum(units_produced) FROM kafka_lake.gold_current WHERE source = 'db39'), 78::numeric,
          'gold sums the units of all twelve');

SELECT matches((SELECT action FROM db39_first_action),
               format('move %s/batch=%s out of the landing directory, run kafka_lake.recover\(''db39''\), then kafka_lake.replay\(''db39'', 0, 3, 5\)',
                      :'pdir', :'b2'),
               'the action verify() gave for the damaged batch was this procedure');

----------------------------------------------------------------------------
-- a batch directory deleted
----------------------------------------------------------------------------
\o /dev/null
SELECT kl_test.sh(format('rm -r %s/batch=%s', :'pdir', :'b4'));
\o
SELECT results_eq($$SELECT batch_id, problem FROM kafka_lake.verify('db39')$$,
                  format($$VALUES (%L, 'missing_batch')$$, :'b4'), 'verify() reports the missing batch');
SELECT matches((SELECT action FROM kafka_lake.verify('db39')),
               'run kafka_lake.recover\(''db39''\), then kafka_lake.replay\(''db39'', 0, 9, 11\)',
               'its action: recover(), then replay() of its offsets');
SELECT results_eq($$SELECT action, batch_id FROM kafka_lake.recover('db39')$$,
                  format($$VALUES ('forgotten', %L)$$, :'b4'), 'recover() forgets it');
SELECT results_eq($$SELECT status, records FROM kafka_lake.replay('db39', 0, 9, 11)$$,
                  $$VALUES ('landed', 3)$$, 'replay() lands it again');
SELECT is((SELECT count(*) FROM kafka_lake.db39_records WHERE status = 'accepted'), 12::bigint,
          'all twelve read again');

----------------------------------------------------------------------------
-- every kind of problem has an action
----------------------------------------------------------------------------
SELECT batch_id AS b1 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'db39' AND first_offset = 0 \gset
SELECT batch_id AS b3 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'db39' AND first_offset = 6 \gset
\o /dev/null
SELECT kl_test.sh(format('rm %s/batch=%s/duplicates.jsonl', :'pdir', :'b1'));
SELECT kl_test.sh(format('printf x >> %s/batch=%s/accepted.jsonl', :'pdir', :'b2'));
SELECT kl_test.sh(format('sed -i s/created_at/created_AT/ %s/batch=%s/manifest.json', :'pdir', :'b3'));
SELECT kl_test.sh(format('cp -r %s/batch=%s %s/batch=00000000000000000100-00000000000000000102-aaaaaaaaaaaa', :'pdir', :'b4', :'pdir'));
SELECT kl_test.sh(format('mkdir -p %s/.staging/batch=00000000000000000200-00000000000000000201-bbbbbbbbbbbb-p0-12345678',
                         kl_test.landing('db39')));
SELECT kl_test.sh(format('touch %s/batch=stray', :'pdir'));
\o
SELECT set_eq($$SELECT problem FROM kafka_lake.verify('db39')$$,
              $$VALUES ('missing_file'), ('size_mismatch'), ('checksum_mismatch'), ('not_adoptable'),
                       ('abandoned_staging'), ('stray_entry')$$,
              'verify() reports six kinds of problem');
SELECT is((SELECT count(*) FROM kafka_lake.verify('db39') WHERE action IS NULL OR action = ''), 0::bigint,
          'each with an action');
SELECT is((SELECT count(DISTINCT action) FROM kafka_lake.verify('db39')), 6::bigint,
          'the action fits the problem');
SELECT matches((SELECT action FROM kafka_lake.verify('db39') WHERE problem = 'stray_entry'),
               'not a batch', 'a stray entry is said not to be a batch');

\o /dev/null
SELECT kl_test.sh(format('rm -rf %s', :'moved'));
\o
SELECT * FROM finish();
