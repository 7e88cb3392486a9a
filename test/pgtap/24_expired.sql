-- test/pgtap/24_expired.sql: records that expired on the broker before they landed are an ERROR
-- naming the range, never a silent skip; allow_expired records the range and goes on.
-- The test broker keeps about 5 MiB per partition: uncompressed fills push
-- older records out.  Needs the broker.
SELECT plan(9);
SELECT kl_test.broker('create expire.t 1');
SELECT kl_test.server('e_srv');
SELECT kafka_lake.create_source('e_src', 'e_srv', 'expire.t');

SELECT kl_test.fill('expire.t', 10, 1, 1, '--compression none');
SELECT results_eq($$SELECT records, committed_offset FROM kafka_lake.land('e_src')$$,
                  $$VALUES (10, 10::bigint)$$, 'the first ten records land');

-- about 9 MiB more without landing: the broker drops the oldest
SELECT kl_test.fill('expire.t', 30000, 1, 11, '--compression none');
SELECT cmp_ok((SELECT high_watermark FROM kafka_lake.lag('e_src')), '=', 30010::bigint, 'all were produced');

SELECT throws_like($$SELECT * FROM kafka_lake.land('e_src')$$,
                   'offsets 10 to % of partition 0 of topic "expire.t" expired on the broker before they landed',
                   'land refuses to skip the expired records, and names the range');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('e_src')), 10::bigint, 'nothing was committed');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'e_src'), 10::bigint,
          'nothing was landed');

SELECT lives_ok($$SELECT * FROM kafka_lake.land('e_src', allow_expired => true, max_records => 100000)$$,
                'allow_expired goes on from the low watermark');
SELECT ok((SELECT first_offset = 10 AND last_offset >= 10 AND records = last_offset - 9
           FROM kafka_lake.expired_ranges r JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'e_src'),
          'the lost range is recorded in expired_ranges');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('e_src')), 30010::bigint, 'and the rest landed');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'e_src')
          + (SELECT sum(records) FROM kafka_lake.expired_ranges r JOIN kafka_lake.sources s USING (source_id)
             WHERE s.source = 'e_src'),
          30010::numeric, 'landed plus expired accounts for every offset');
SELECT * FROM finish();
