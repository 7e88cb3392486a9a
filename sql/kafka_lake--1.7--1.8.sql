/* sql/kafka_lake--1.7--1.8.sql
 *
 * Upgrade of kafka_lake 1.7 to 1.8.  The scripts up to 1.7 are released and
 * never change: every catalog or function change of 1.8 is made here, so
 * that a database created at an earlier version and one created at 1.8 end
 * with the same objects (test/t/99d_upgrade_1_8.sh checks the path).
 * Nothing landed changes: only how coordinate_list reads the catalog.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.8'" to load this file. \quit

-- coordinate_list in time linear in a batch's records
--
-- A batch's statuses, offset_list and fingerprints are each one value,
-- stored out of line (TOAST) once a batch holds a few hundred records, and
-- statuses compressed.  The view of 1.0-1.7 took the i-th element of each
-- with substr(), [i] and substring(), and each of those reads the value
-- again from its start: quadratic in the batch's size (28 s for four
-- batches of 50,000 records).  Here each value is read once per batch:
-- statuses and offset_list are unnested side by side (ROWS FROM zips them;
-- offset_list is NULL when every offset of the range is present), and the
-- fingerprints are taken into memory once (the concatenation makes an
-- in-memory copy that the per-row substring() slices without reading it
-- again).  Same columns, same rows, same values.
CREATE OR REPLACE VIEW kafka_lake.coordinate_list AS
SELECT s.source, c.topic, c.partition,
       coalesce(e.off, lower(c.offsets) + e.i - 1) AS "offset",
       CASE e.st
            WHEN 'a' THEN 'accepted' WHEN 'P' THEN 'accepted' WHEN 'q' THEN 'quarantined'
            WHEN 'X' THEN 'excluded'
            ELSE 'duplicate_event_id' END AS status,
       encode(substring(f.fp FROM (e.i::int - 1) * 32 + 1 FOR 32), 'hex') AS fingerprint,
       c.batch_id
FROM kafka_lake.coordinates c
JOIN kafka_lake.sources s USING (source_id)
CROSS JOIN LATERAL (SELECT c.fingerprints || ''::bytea AS fp OFFSET 0) f
CROSS JOIN LATERAL ROWS FROM (string_to_table(c.statuses, NULL), unnest(c.offset_list))
                   WITH ORDINALITY AS e(st, off, i)
WHERE e.st <> 'R';
