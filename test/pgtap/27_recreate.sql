-- test/pgtap/27_recreate.sql: a topic deleted and re-created under a source, and a server that
-- now points at another cluster: an ERROR that says so, nothing re-landed, nothing committed.
-- Uses a broker of its own ("recreate" keeps the cluster id, "replace" changes it).
SELECT plan(9);
SELECT kl_test.private_broker('rc', 'rc.t:1') AS rc_bootstrap \gset
CREATE SERVER rc_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'rc_bootstrap');
SELECT kafka_lake.create_source('rc_src', 'rc_srv', 'rc.t');
SELECT kafka_lake.produce('rc_srv', 'rc.t', kl_test.event(format('evt-rc-%s', n))) FROM generate_series(1, 5) n;
SELECT results_eq($$SELECT records, committed_offset FROM kafka_lake.land('rc_src')$$,
                  $$VALUES (5, 5::bigint)$$, 'five records land');
SELECT isnt((SELECT cluster_id FROM kafka_lake.sources WHERE source = 'rc_src'), NULL, 'the cluster id is remembered');

-- the topic is deleted and re-created (same cluster): new records at offsets 0 and 1
SELECT kl_test.private_ctl('rc', 'recreate') AS rc_bootstrap2 \gset
SELECT is(:'rc_bootstrap2'::text, :'rc_bootstrap'::text, '(the re-created cluster listens where it did)');
SELECT kafka_lake.produce('rc_srv', 'rc.t', kl_test.event(format('evt-rc-new-%s', n))) FROM generate_series(1, 2) n;
SELECT throws_like($$SELECT * FROM kafka_lake.land('rc_src')$$,
                   'partition 0 of topic "rc.t" ends at offset 2, below offset 5 that source "rc_src" already landed or committed',
                   'land refuses a partition that ends below what it landed');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'rc_src'), 5::bigint, 'nothing was re-landed');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('rc_src')), NULL::bigint,
          'nothing was committed to the re-created topic''s group');

-- the server now answers as another cluster
SELECT kl_test.private_ctl('rc', 'replace');
SELECT throws_like($$SELECT * FROM kafka_lake.land('rc_src')$$,
                   'the Kafka cluster behind server "rc_srv" changed',
                   'land refuses a different cluster');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'rc_src'), 5::bigint, 'still nothing re-landed');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('rc_src')$$, 'the landed batches are intact');
SELECT kl_test.private_ctl('rc', 'shutdown');
SELECT * FROM finish();
