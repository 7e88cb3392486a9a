-- test/pgtap/92c_reduced_manifest.sql: what an expired batch keeps once its event_ids are past
-- the dedupe horizon.  expire() prunes them, then reduces the batch's manifest to
-- manifest.reduced.json(.zst): its statuses, fingerprint prefixes and the SHA-256 over its
-- fingerprints (readable with zstdcat and jq); the catalog records it (reduced_at, the reduced
-- manifest's checks) and its coordinates keep no fingerprints.  A batch whose event_ids are kept
-- (no horizon) keeps its manifest.  A replayed coordinate of a reduced batch is reused; a record
-- changed at its coordinate is refused.  A catalog that lost the batch adopts it from the
-- reduced manifest, as expired and reduced, without its event_ids.  The manifest it replaced,
-- left by a crash, is found by verify() and removed by recover().  Records of a reduced batch
-- cannot be excluded (55000).  A copy of the landing is claimed (claim_landing).  Needs the broker.
SET client_min_messages = warning;
SELECT plan(25);

CREATE FUNCTION pg_temp.send(v bytea) RETURNS bigint LANGUAGE sql AS $$
  SELECT kafka_lake.produce('rm92c_srv', 'rm92c.t', v, partition => 0)
$$;
CREATE FUNCTION pg_temp.batch_dir(source text, batch_id text) RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.landing(source) || '/topic=rm92c.t/partition=0/batch=' || batch_id
$$;

\o /dev/null
SELECT kl_test.server('rm92c_srv');
SELECT kl_test.broker('create rm92c.t 1');
SELECT kafka_lake.create_source('rm92c', 'rm92c_srv', 'rm92c.t');
SELECT kafka_lake.create_source('rm92c_plain', 'rm92c_srv', 'rm92c.t', group_id => 'kl.rm92c.plain');
SELECT kafka_lake.set_compression('rm92c_plain', 'none');
SELECT kafka_lake.create_source('rm92c_keep', 'rm92c_srv', 'rm92c.t', group_id => 'kl.rm92c.keep');
SELECT kafka_lake.set_dedupe_horizon('rm92c', '30 days');
SELECT kafka_lake.set_dedupe_horizon('rm92c_plain', '30 days');
-- June 1st: three events, one quarantined record, a duplicate; then one of yesterday
SELECT pg_temp.send(kl_test.event('rm-1', business_date => '2026-06-01')),
       pg_temp.send(kl_test.event('rm-2', business_date => '2026-06-01')),
       pg_temp.send(convert_to('not json', 'UTF8')),
       pg_temp.send(kl_test.event('rm-1', business_date => '2026-06-01')),
       pg_temp.send(kl_test.event('rm-3', business_date => '2026-06-01'));
SELECT * FROM kafka_lake.land('rm92c');
SELECT * FROM kafka_lake.land('rm92c_plain');
SELECT * FROM kafka_lake.land('rm92c_keep');
SELECT pg_temp.send(kl_test.event('rm-4', business_date => (current_date - 1)));
SELECT * FROM kafka_lake.land('rm92c');
SELECT * FROM kafka_lake.land('rm92c_plain');
SELECT * FROM kafka_lake.land('rm92c_keep');
SELECT * FROM kafka_lake.close_date('rm92c', '2026-06-01');
SELECT * FROM kafka_lake.close_date('rm92c_plain', '2026-06-01');
SELECT * FROM kafka_lake.close_date('rm92c_keep', '2026-06-01');
\o
SELECT batch_id AS june, manifest_bytes AS full_bytes FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'rm92c' AND first_offset = 0 \gset
SELECT pg_temp.batch_dir('rm92c', :'june') AS jdir, pg_temp.batch_dir('rm92c_plain', :'june') AS pdir \gset
CREATE TEMP TABLE rm92c_coords AS
  SELECT source, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source LIKE 'rm92c%';
SELECT kl_test.sh(format('cp %1$s/manifest.json.zst %1$s/../keep.zst', :'jdir')) \g /dev/null

CREATE TEMP TABLE rm92c_expired AS SELECT * FROM kafka_lake.expire('rm92c', before => current_date - 2);
SELECT results_eq($$SELECT status, batch_id, records FROM rm92c_expired ORDER BY status$$,
                  format($$VALUES ('event_ids_pruned', NULL, 3), ('expired', %1$L, 5), ('reduced', %1$L, 5)$$, :'june'),
                  'expire() expires the June batch, prunes its three event_ids, then reduces its manifest');
SELECT ok((SELECT bytes FROM rm92c_expired WHERE status = 'reduced') > 0, 'and says how many bytes the reduction gave back');
SELECT is(kl_test.sh(format('ls %s', :'jdir')), E'EXPIRED\nmanifest.reduced.json.zst',
          'the batch directory holds its marker and its reduced manifest only');
SELECT is(kl_test.sh(format($$zstdcat %s/manifest.reduced.json.zst | jq -r '[.batch_id, .statuses, (.fingerprint_prefixes | length), .new_coordinate_count] | join(" ")'$$, :'jdir')),
          :'june' || ' aaqda 80 5', 'zstdcat | jq reads it: the statuses, 8 bytes of fingerprint each, the coordinates');
SELECT is(kl_test.sh(format($$zstdcat %s/manifest.reduced.json.zst | jq -r '.fingerprints_sha256[0:12]'$$, :'jdir')),
          right(:'june', 12), 'the SHA-256 over the fingerprints is the one the batch_id ends with');
SELECT ok((SELECT reduced_at IS NOT NULL AND manifest_bytes = (pg_stat_file(:'jdir' || '/manifest.reduced.json.zst')).size
                  AND manifest_bytes < :full_bytes
             FROM kafka_lake.batches WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c')),
          'the catalog records the reduction and the reduced manifest''s size');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('rm92c')$$, 'verify() is clean');
SELECT set_eq($$SELECT "offset", status FROM kafka_lake.coordinate_list WHERE source = 'rm92c'$$,
              $$SELECT "offset", status FROM rm92c_coords WHERE source = 'rm92c'$$,
              'every coordinate stays known, with its status');

-- a plain source's reduced manifest is plain JSON; a source without a horizon keeps its manifest
\o /dev/null
SELECT * FROM kafka_lake.expire('rm92c_plain', before => current_date - 2);
\o
SELECT is(pg_read_file(:'pdir' || '/manifest.reduced.json')::json->>'statuses', 'aaqda',
          'a plain source''s reduced manifest is plain JSON');
SELECT results_eq($$SELECT status FROM kafka_lake.expire('rm92c_keep', before => current_date - 2)$$,
                  $$VALUES ('expired')$$, 'without a horizon the batch expires, and is not reduced');
SELECT ok((pg_stat_file(pg_temp.batch_dir('rm92c_keep', :'june') || '/manifest.json.zst', true)).size IS NOT NULL,
          'it keeps its manifest: its event_ids are kept');

-- redeliveries of a reduced batch's coordinates
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('rm92c', 0, 0, 4)$$, $$VALUES ('reused', 5)$$,
                  'a replay of a reduced batch''s coordinates finds them reused');
SELECT manifest_sha256 AS rsha, manifest_bytes AS rbytes, manifest_crc32c AS rcrc FROM kafka_lake.batches
 WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c') \gset
SELECT substr(fingerprint, 1, 16) AS fp2 FROM rm92c_coords WHERE source = 'rm92c' AND "offset" = 2 \gset
SELECT kl_test.sh(format($$cd %1$s && cp manifest.reduced.json.zst ../r.keep && zstdcat ../r.keep | sed 's/%2$s/%3$s/' | zstd -q -f -o manifest.reduced.json.zst$$,
                         :'jdir', :'fp2', repeat('0', 16))) \g /dev/null
UPDATE kafka_lake.batches SET manifest_sha256 = encode(sha256(pg_read_binary_file(:'jdir' || '/manifest.reduced.json.zst')), 'hex'),
       manifest_bytes = NULL, manifest_crc32c = NULL
 WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c');
SELECT throws_matching($$SELECT * FROM kafka_lake.replay('rm92c', 0, 2, 2)$$, 'was delivered again with a different fingerprint',
                       'a record whose fingerprint does not begin with the reduced manifest''s prefix is refused');
SELECT kl_test.sh(format('cd %s && mv ../r.keep manifest.reduced.json.zst', :'jdir')) \g /dev/null
UPDATE kafka_lake.batches SET manifest_sha256 = :'rsha', manifest_bytes = :rbytes, manifest_crc32c = :rcrc
 WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c');

-- a catalog that lost the batch adopts it from its reduced manifest
SELECT count(*) AS ids_before FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c') \gset
DELETE FROM kafka_lake.batches WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c');
SELECT results_eq($$SELECT problem FROM kafka_lake.verify('rm92c')$$, $$VALUES ('not_in_catalog')$$,
                  'verify() finds the reduced batch the catalog lost');
SELECT results_eq($$SELECT action, batch_id, detail ~ 'reduced manifest' FROM kafka_lake.recover('rm92c')$$,
                  format($$VALUES ('adopted', %L, true)$$, :'june'), 'recover() adopts it from its reduced manifest');
SELECT ok((SELECT expired_at IS NOT NULL AND reduced_at IS NOT NULL AND manifest_sha256 = :'rsha'
             FROM kafka_lake.batches WHERE batch_id = :'june' AND source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c')),
          'as an expired, reduced batch with the reduced manifest''s checks');
SELECT set_eq($$SELECT "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'rm92c'$$,
              $$SELECT "offset", status, CASE WHEN "offset" > 4 THEN fingerprint END FROM rm92c_coords WHERE source = 'rm92c'$$,
              'its coordinates and statuses are known again, without fingerprints');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'rm92c')),
          :ids_before::bigint, 'and its event_ids, past the horizon, do not come back');
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('rm92c', 0, 0, 4)$$, $$VALUES ('reused', 5)$$,
                  'its coordinates are reused again');

-- the manifest a reduction replaced, left by a crash after its commit
SELECT kl_test.sh(format('mv %1$s/../keep.zst %1$s/manifest.json.zst', :'jdir')) \g /dev/null
SELECT results_eq($$SELECT file, problem FROM kafka_lake.verify('rm92c')$$, $$VALUES ('manifest.json.zst', 'expiry_unfinished')$$,
                  'verify() reports the manifest the reduced one replaced');
SELECT results_eq($$SELECT action FROM kafka_lake.recover('rm92c')$$, $$VALUES ('finished_expiry')$$,
                  'recover() removes it');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('rm92c')$$, 'verify() is clean again');

SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('rm92c', partition => 0, "offset" => 0, reason => 'test')$$, '55000', NULL,
                 'a record of a reduced batch cannot be excluded (55000)');

-- a copy of a landing with a reduced batch is claimed like any other
SELECT kl_test.landing('rm92c') || '_claimed' AS claimed \gset
SELECT kl_test.sh(format('mkdir -p %1$s && cp -a %2$s %1$s/', :'claimed', kl_test.landing('rm92c'))) \g /dev/null
SELECT lives_ok(format($$SELECT kafka_lake.claim_landing('rm92c', landing_dir => %L, group_id => 'kl.rm92c.claimed')$$, :'claimed'),
                'claim_landing() takes a copy of the landing, whose expired batch has its reduced manifest only');
SELECT is((SELECT (landing_dir LIKE '%_claimed%')::text FROM kafka_lake.sources WHERE source = 'rm92c') || ' ' ||
          (SELECT count(*) FROM kafka_lake.verify('rm92c')) || ' ' ||
          (SELECT status || ' ' || reused FROM kafka_lake.replay('rm92c', 0, 0, 4)),
          'true 0 reused 5', 'the source lands there now: verify() is clean, the reduced batch''s coordinates are reused');

SELECT * FROM finish();
