-- test/pgtap/42c_coordinate_list.sql: the coordinate_list view lists every landed coordinate
-- of a batch with its offset, status and fingerprint, reading the batch's catalog row once:
-- the rows equal those of the element-by-element expansion the view had before 1.8 (accepted,
-- duplicate, quarantined, excluded and promoted records, a batch whose offsets have gaps
-- listed in offset_list).  Up to 1.7 the view took each record's status and fingerprint out
-- of the batch's values one by one, uncompressing or fetching them again each time: quadratic
-- in the batch's size (tests assert no time; the speed is measured by bench/coordinates.sh).
-- Needs the broker.
SELECT plan(6);

\o /dev/null
SELECT kl_test.server('cl42_srv');
SELECT kl_test.broker('create cl42.t 1');
SELECT kafka_lake.create_source('cl42', 'cl42_srv', 'cl42.t');
SELECT kl_test.fill('cl42.t', 5000, 1, 1, '--bad-every 7');
SELECT kl_test.fill('cl42.t', 300, 1, 1);
SELECT * FROM kafka_lake.land('cl42');
\o
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'cl42' AND b.record_count = 5300), 1::bigint,
          'the 5,300 records landed in one batch');

-- an excluded record whose duplicate is promoted: statuses X and P, and an offset_list
SELECT event_id AS victim FROM kafka_lake.cl42_records
 WHERE status = 'duplicate_event_id' ORDER BY "offset" LIMIT 1 \gset
\o /dev/null
SELECT * FROM kafka_lake.exclude('cl42', event_id => :'victim', reason => 'test');
\o

-- the expansion coordinate_list made up to 1.7, element by element
CREATE TEMP VIEW old_list AS
SELECT s.source, c.topic, c.partition,
       coalesce(c.offset_list[i], lower(c.offsets) + i - 1) AS "offset",
       CASE substr(c.statuses, i, 1)
            WHEN 'a' THEN 'accepted' WHEN 'P' THEN 'accepted' WHEN 'q' THEN 'quarantined'
            WHEN 'X' THEN 'excluded'
            ELSE 'duplicate_event_id' END AS status,
       encode(substring(c.fingerprints FROM (i - 1) * 32 + 1 FOR 32), 'hex') AS fingerprint,
       c.batch_id
FROM kafka_lake.coordinates c
JOIN kafka_lake.sources s USING (source_id)
CROSS JOIN LATERAL generate_series(1, length(c.statuses)) AS i
WHERE substr(c.statuses, i, 1) <> 'R' AND s.source = 'cl42';

SELECT results_eq($$SELECT status, count(*) FROM kafka_lake.coordinate_list WHERE source = 'cl42' GROUP BY 1 ORDER BY 1$$,
                  $$SELECT status, count(*) FROM old_list GROUP BY 1 ORDER BY 1$$,
                  'the statuses are counted as the element-by-element expansion counts them');
SELECT is((SELECT count(DISTINCT status) FROM kafka_lake.coordinate_list WHERE source = 'cl42'), 4::bigint,
          'accepted, duplicate_event_id, quarantined and excluded all occur');
SELECT is((SELECT count(*) FROM ((SELECT * FROM kafka_lake.coordinate_list WHERE source = 'cl42' EXCEPT ALL SELECT * FROM old_list)
                                 UNION ALL
                                 (SELECT * FROM old_list EXCEPT ALL SELECT * FROM kafka_lake.coordinate_list WHERE source = 'cl42')) d),
          0::bigint, 'every row (offset, status, fingerprint, batch) equals the element-by-element expansion''s');

-- a batch whose offsets have gaps (a transactional or compacted topic's) lists them in
-- offset_list; here the batch's offsets are spread out for a moment, then put back
UPDATE kafka_lake.coordinates c
   SET offsets = int8range(lower(c.offsets), lower(c.offsets) + 2 * length(c.statuses)),
       offset_list = ARRAY(SELECT lower(c.offsets) + 2 * g FROM generate_series(0, length(c.statuses) - 1) g)
  FROM kafka_lake.sources s WHERE s.source_id = c.source_id AND s.source = 'cl42';
SELECT is((SELECT max("offset") - min("offset") FROM kafka_lake.coordinate_list WHERE source = 'cl42'), 2 * 5299::bigint,
          'a batch with gaps: the offsets are offset_list''s');
SELECT is((SELECT count(*) FROM ((SELECT * FROM kafka_lake.coordinate_list WHERE source = 'cl42' EXCEPT ALL SELECT * FROM old_list)
                                 UNION ALL
                                 (SELECT * FROM old_list EXCEPT ALL SELECT * FROM kafka_lake.coordinate_list WHERE source = 'cl42')) d),
          0::bigint, 'and every row equals the element-by-element expansion''s');
UPDATE kafka_lake.coordinates c
   SET offsets = int8range(lower(c.offsets), lower(c.offsets) + length(c.statuses)), offset_list = NULL
  FROM kafka_lake.sources s WHERE s.source_id = c.source_id AND s.source = 'cl42';

SELECT * FROM finish();
