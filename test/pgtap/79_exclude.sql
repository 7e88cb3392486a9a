-- test/pgtap/79_exclude.sql: exclude() sets an accepted record aside and unexclude() puts it
-- back, by event_id or by coordinate, with a reason kept in kafka_lake.exclusions (who, when,
-- why).  The foreign tables read an excluded record as status 'excluded' (its reason in
-- validation_error) and a promoted duplicate as accepted; a corrected re-send that landed as
-- duplicate_event_id is promoted (the earliest by partition and offset), a re-send that lands
-- after the event_id was released is accepted; unexclude refuses while a later record holds
-- the event_id.  An event_id is accepted once at every step (I3) and verify() is clean after
-- each.  compact() leaves batches holding exclusions alone, expire() keeps exclusions,
-- recover() leaves nothing of a rolled-back exclude; privileges, NULLs, bad coordinates.
-- Needs the broker.
SELECT plan(55);

\o /dev/null
SELECT kl_test.server('ex79_srv');
SELECT kl_test.broker('create ex79.t 2');
SELECT kafka_lake.create_contract('ex79', $j${"type": "object",
  "properties": {"order_id": {"type": "string"}, "total": {"type": "integer"}},
  "required": ["order_id", "total"], "event_id": "order_id"}$j$::json);
SELECT kafka_lake.create_source('ex79', 'ex79_srv', 'ex79.t', contract => 'ex79');
SELECT kafka_lake.produce('ex79_srv', 'ex79.t', convert_to(v, 'UTF8'), partition => p)
  FROM (VALUES (1, 0, '{"order_id": "ord-1", "total": -10}'),
               (2, 0, '{"order_id": "ord-2", "total": 5}'),
               (3, 0, '{"order_id": "ord-1", "total": 10}'),
               (4, 0, '{"order_id": "ord-9"'),
               (5, 1, '{"order_id": "ord-3", "total": 7}')) AS t(n, p, v)
 ORDER BY n;
\o
-- partition 0: offset 0 ord-1 (wrong), 1 ord-2, 2 ord-1 (the corrected re-send), 3 quarantined;
-- partition 1: offset 0 ord-3.  (Partition 1 gets a duplicate of ord-1 later.)
SELECT results_eq($$SELECT partition, accepted, duplicates, quarantined FROM kafka_lake.land('ex79') ORDER BY partition$$,
                  $$VALUES (0, 2, 1, 1), (1, 1, 0, 0)$$, 'the wrong ord-1 is accepted, its corrected re-send is a duplicate');

CREATE FUNCTION pg_temp.accepted(id text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.ex79_records WHERE event_id = id AND status = 'accepted'
$$;
CREATE FUNCTION pg_temp.holder(id text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT partition || '/' || "offset" FROM kafka_lake.accepted_events
                    WHERE event_key = kafka_lake.event_key('ex79', id)), 'none')
$$;
CREATE FUNCTION pg_temp.status(p int, o bigint) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(status, ',') FROM kafka_lake.ex79_records WHERE partition = p AND "offset" = o
$$;
CREATE FUNCTION pg_temp.clean() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.verify('ex79')
$$;

-- exclude by event_id: the corrected re-send is promoted
SELECT results_eq($$SELECT action, partition, "offset", event_id, status
                    FROM kafka_lake.exclude('ex79', 'ord-1', reason => 'total fails the owner''s check')$$,
                  $$VALUES ('excluded', 0, 0::bigint, 'ord-1', 'excluded'),
                           ('promoted', 0, 2::bigint, 'ord-1', 'accepted')$$,
                  'exclude by event_id: the accepted ord-1 is set aside, its re-send at offset 2 promoted');
SELECT is(pg_temp.status(0, 0) || ' ' || pg_temp.status(0, 2), 'excluded accepted',
          'the foreign table reads the excluded record as excluded, the promoted one as accepted');
SELECT is((SELECT string_agg(partition || '/' || "offset", ',') FROM kafka_lake.ex79_records WHERE status = 'excluded'),
          '0/0', 'a scan of status excluded finds it (and only it)');
SELECT is((SELECT validation_error FROM kafka_lake.ex79_records WHERE partition = 0 AND "offset" = 0),
          'total fails the owner''s check', 'the excluded record''s validation_error is the reason');
SELECT is((SELECT total FROM kafka_lake.ex79_events WHERE order_id = 'ord-1'), 10::bigint,
          'the typed table holds the corrected total, once');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1'), '1 0/2', 'I3: ord-1 accepted once, at 0/2');
SELECT is(pg_temp.clean(), 0::bigint, 'verify() is clean after the exclusion');
SELECT results_eq($$SELECT kind, event_id, partition, "offset", letters, promoted_partition, promoted_offset,
                           promoted_letters, reason, created_by = current_user, created_at <= now(), landed_by
                    FROM kafka_lake.exclusions
                   WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'ex79') ORDER BY seq$$,
                  $$VALUES ('exclude', 'ord-1', 0, 0::bigint, 'aX', 0, 2::bigint, 'dP',
                            'total fails the owner''s check', true, true, 'exclude')$$,
                  'the audit row: what, who, when, why');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('ex79') || '/exclusions') d
            WHERE d ~ '^exclusion=[0-9]{20}-[0-9a-f]{12}$'), 1::bigint, 'one exclusion unit on disk');
SELECT is((SELECT e.manifest_sha256 = encode(sha256(pg_read_binary_file(kl_test.landing('ex79') || '/exclusions/exclusion=' || e.exclusion_id || '/exclusion.json')), 'hex')
             FROM kafka_lake.exclusions e JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex79'), true,
          'the catalog records the SHA-256 of its exclusion.json');
SELECT results_eq($$SELECT accepted, duplicates FROM kafka_lake.source_status WHERE source = 'ex79' AND partition = 0$$,
                  $$VALUES (2::bigint, 0::bigint)$$, 'source_status counts ord-1 and ord-2 accepted, no duplicate');
SELECT results_eq($$SELECT status FROM kafka_lake.coordinate_list WHERE source = 'ex79' AND partition = 0 ORDER BY "offset"$$,
                  $$VALUES ('excluded'), ('accepted'), ('accepted'), ('quarantined')$$, 'coordinate_list follows');

-- a copy of ord-1 lands in partition 1 (offset 1): a duplicate of the promoted one
\o /dev/null
SELECT kafka_lake.produce('ex79_srv', 'ex79.t', convert_to('{"order_id": "ord-1", "total": 11}', 'UTF8'), partition => 1);
\o
SELECT results_eq($$SELECT partition, accepted, duplicates FROM kafka_lake.land('ex79') WHERE records > 0$$,
                  $$VALUES (1, 0, 1)$$, 'a further copy of ord-1 lands as a duplicate');

-- exclude by coordinate the promoted record: the next duplicate is promoted
SELECT results_eq($$SELECT action, partition, "offset", status
                    FROM kafka_lake.exclude('ex79', partition => 0, "offset" => 2, reason => 'also wrong')$$,
                  $$VALUES ('excluded', 0, 2::bigint, 'duplicate_event_id'), ('promoted', 1, 1::bigint, 'accepted')$$,
                  'exclude by coordinate: a promoted record is a duplicate again, the next copy is promoted');
SELECT is(pg_temp.status(0, 2) || ' ' || pg_temp.status(1, 1), 'duplicate_event_id accepted',
          'the foreign table follows');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1'), '1 1/1', 'I3: ord-1 accepted once, at 1/1');
SELECT is(pg_temp.clean(), 0::bigint, 'verify() is clean');

-- the last copy excluded: nothing left to promote, the event_id is released
SELECT results_eq($$SELECT action, partition, "offset" FROM kafka_lake.exclude('ex79', 'ord-1', reason => 'all wrong')$$,
                  $$VALUES ('excluded', 1, 1::bigint), ('released', NULL::integer, NULL::bigint)$$,
                  'excluding the last copy releases ord-1');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1'), '0 none', 'I3: no record accepts ord-1');
SELECT results_eq($$SELECT action, partition, "offset" FROM kafka_lake.exclude('ex79', 'ord-1', reason => 'again')$$,
                  $$VALUES ('already_excluded', 1, 1::bigint)$$, 'a second exclude of ord-1 says it is already excluded');
SELECT results_eq($$SELECT action FROM kafka_lake.exclude('ex79', partition => 0, "offset" => 0, reason => 'again')$$,
                  $$VALUES ('already_excluded')$$, 'so does one by coordinate');

-- a re-send that lands now is accepted as a new record (partition 1 offset 2)
\o /dev/null
SELECT kafka_lake.produce('ex79_srv', 'ex79.t', convert_to('{"order_id": "ord-1", "total": 10}', 'UTF8'), partition => 1);
\o
SELECT results_eq($$SELECT partition, accepted, duplicates FROM kafka_lake.land('ex79') WHERE records > 0$$,
                  $$VALUES (1, 1, 0)$$, 'a re-send landing after the release is accepted');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1'), '1 1/2', 'I3: ord-1 accepted once, at 1/2');
SELECT throws_ok($$SELECT * FROM kafka_lake.unexclude('ex79', 'ord-1', reason => 'oops')$$, '55000', NULL,
                 'unexclude refuses while a record that landed later holds ord-1');
SELECT is(pg_temp.clean(), 0::bigint, 'verify() is clean');

-- that one excluded too; then the first record put back (by coordinate)
SELECT results_eq($$SELECT action FROM kafka_lake.exclude('ex79', partition => 1, "offset" => 2, reason => 'late copy')$$,
                  $$VALUES ('excluded'), ('released')$$, 'the late copy excluded: ord-1 released again');
SELECT results_eq($$SELECT action, partition, "offset", status
                    FROM kafka_lake.unexclude('ex79', partition => 1, "offset" => 1, reason => 'it was right')$$,
                  $$VALUES ('restored', 1, 1::bigint, 'accepted')$$, 'unexclude by coordinate: the promoted copy is accepted again');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1'), '1 1/1', 'I3: ord-1 accepted once, at 1/1');
SELECT results_eq($$SELECT action, partition, "offset", status
                    FROM kafka_lake.unexclude('ex79', partition => 0, "offset" => 0, reason => 'the owner fixed the check')$$,
                  $$VALUES ('restored', 0, 0::bigint, 'accepted'), ('unpromoted', 1, 1::bigint, 'duplicate_event_id')$$,
                  'unexclude of the first record: it is accepted again, the promoted copy a duplicate again');
SELECT is(pg_temp.accepted('ord-1') || ' ' || pg_temp.holder('ord-1') || ' ' || pg_temp.status(0, 0),
          '1 0/0 accepted', 'I3: ord-1 accepted once, at 0/0');
SELECT results_eq($$SELECT action FROM kafka_lake.unexclude('ex79', partition => 0, "offset" => 0, reason => 'again')$$,
                  $$VALUES ('not_excluded')$$, 'unexclude of an accepted record says it is not excluded');
SELECT is((SELECT count(*) FROM kafka_lake.exclusions JOIN kafka_lake.sources USING (source_id)
            WHERE source = 'ex79' AND kind = 'unexclude' AND undoes IS NOT NULL), 2::bigint,
          'each unexclude names the exclusion it undid');
SELECT is((SELECT string_agg(partition || '/' || "offset", ' ' ORDER BY "offset") FROM kafka_lake.excluded_records
            WHERE source = 'ex79'), '0/2 1/2', 'excluded_records lists the exclusions in effect');
SELECT is(pg_temp.clean(), 0::bigint, 'verify() is clean');

-- bad calls
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', partition => 0, "offset" => 999, reason => 'x')$$, '22023', NULL,
                 'a coordinate that was never landed is 22023');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', partition => 7, "offset" => 0, reason => 'x')$$, '22023', NULL,
                 'so is a partition without records');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', partition => 0, "offset" => 3, reason => 'x')$$, '55000', NULL,
                 'a quarantined record cannot be excluded');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', partition => 0, "offset" => -1, reason => 'x')$$, '22023', NULL,
                 'a negative offset is 22023');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', 'ord-404', reason => 'x')$$, '22023', NULL,
                 'an event_id no record accepts is 22023');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', 'ord-2')$$, '22004', NULL, 'a reason is required');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', 'ord-2', reason => '  ')$$, '22023', NULL, 'and must say something');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude(NULL, 'ord-2', reason => 'x')$$, '22004', NULL, 'a NULL source is 22004');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', reason => 'x')$$, '22004', NULL, 'naming no record is 22004');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', partition => 0, reason => 'x')$$, '22004', NULL, 'a partition without offset is 22004');
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', 'ord-2', 0, 1, 'x')$$, '22023', NULL, 'both ways at once is 22023');
SELECT throws_ok($$SELECT * FROM kafka_lake.unexclude('ex79', 'ord-2', reason => 'x')$$, '22023', NULL,
                 'unexclude of an event_id without exclusion is 22023');

-- privileges: a plain role may not
CREATE ROLE ex79_plain;
GRANT USAGE ON SCHEMA kafka_lake TO ex79_plain;
SET ROLE ex79_plain;
SELECT throws_ok($$SELECT * FROM kafka_lake.exclude('ex79', 'ord-2', reason => 'x')$$, '42501', NULL, 'a plain role may not exclude');
SELECT throws_ok($$SELECT * FROM kafka_lake.unexclude('ex79', 'ord-2', reason => 'x')$$, '42501', NULL, 'nor unexclude');
RESET ROLE;

-- a rolled-back exclude leaves nothing on disk or in the catalog
BEGIN;
SELECT * FROM kafka_lake.exclude('ex79', 'ord-2', reason => 'rolled back') \g /dev/null
ROLLBACK;
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('ex79') || '/exclusions') d), 6::bigint,
          'a rolled-back exclude leaves no unit on disk (six units)');
SELECT is(pg_temp.accepted('ord-2') || ' ' || (SELECT count(*) FROM kafka_lake.recover('ex79')), '1 0',
          'ord-2 is still accepted, and recover() has nothing to do');

-- compact() leaves the batches holding exclusions alone, expire() keeps the exclusions
SELECT is((SELECT count(*) FROM kafka_lake.compact('ex79', target_records => 1000) c
             JOIN kafka_lake.coordinates k ON k.batch_id = c.batch_id
            WHERE c.status = 'compacted' AND k.statuses ~ '[XP]')
          + (SELECT count(*) FROM kafka_lake.excluded_records e
              WHERE source = 'ex79' AND NOT EXISTS (SELECT 1 FROM kafka_lake.batches b WHERE b.batch_id = e.batch_id)
                AND EXISTS (SELECT 1 FROM kafka_lake.coordinates k WHERE k.batch_id = e.batch_id)),
          0::bigint, 'compact() merges no batch holding an excluded or promoted record');
SELECT is(pg_temp.clean() || ' ' || pg_temp.status(0, 2) || ' ' || pg_temp.status(1, 2), '0 duplicate_event_id excluded',
          'after compact() the statuses and verify() are unchanged');
SELECT is((SELECT count(*) FROM kafka_lake.expire('ex79', before => current_date + 2) WHERE status = 'expired') > 0, true,
          'expire() expires the batches');
SELECT is(pg_temp.clean() || ' ' || (SELECT count(*) FROM kafka_lake.excluded_records WHERE source = 'ex79') || ' ' ||
          pg_temp.holder('ord-1'), '0 2 0/0', 'the exclusions stay with the expired batches; verify() is clean');

SELECT * FROM finish();
