-- test/pgtap/56_fast_path.sql: every line land() writes is read by the fast path of the
-- batch format (batch_format.c), in the foreign table and in the bridge; a line in
-- another layout (members in another order, other whitespace) goes to the strict parser,
-- reads the same, and is counted.  EXPLAIN (ANALYZE, VERBOSE) of a scan shows "Lines
-- Parsed Strictly"; the bridge says at DEBUG1 how many of the accepted lines it read were
-- parsed strictly.  The landed lines cover every shape land() writes: escaped non-ASCII
-- text and a surrogate pair, a key, a null key, a key that is not UTF-8 (key_base64), a
-- duplicate, a quarantined value that is UTF-8 (raw_value), one that is not
-- (raw_value_base64) and a tombstone.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(15);

\o /dev/null
SELECT kl_test.server('fp56_kafka');
SELECT kl_test.broker('create fp56.events 1');
SELECT kafka_lake.create_source('fp56', 'fp56_kafka', 'fp56.events');
SELECT kafka_lake.set_compression('fp56', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('fp56_kafka', 'fp56.events', v, k)
  FROM (VALUES
    (1, kl_test.event('fp56-1', units => 1), convert_to('machine-01', 'UTF8')),
    (2, kl_test.event('fp56-2', units => 2, line => E'l\u00efne-\U0001F600'), NULL),
    (3, kl_test.event('fp56-3', units => 3), '\xff01'::bytea),
    (4, kl_test.event('fp56-4', units => 4), convert_to('machine-01', 'UTF8')),
    (5, kl_test.event('fp56-1', units => 5), NULL),
    (6, convert_to(E'{"event_id": "\U0001F600"}', 'UTF8'), NULL),
    (7, '\xfffe00'::bytea, NULL),
    (8, NULL, NULL)) AS t(i, v, k)
 ORDER BY i;
SELECT * FROM kafka_lake.land('fp56');
\o

CREATE FUNCTION pg_temp.plan(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) ' || q INTO j;
  RETURN j->0->'Plan';
END $$;
-- the foreign scan's plan node (under an aggregate, or the top node)
CREATE FUNCTION pg_temp.scan(q text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE WHEN p->>'Node Type' = 'Foreign Scan' THEN p ELSE p->'Plans'->0 END
    FROM pg_temp.plan(q) p
$$;

SELECT is((SELECT array_agg(status || ':' || count)::text
             FROM (SELECT status, count(*) FROM kafka_lake.fp56_records GROUP BY 1 ORDER BY 1) s),
          '{accepted:4,duplicate_event_id:1,quarantined:3}', 'land() wrote every kind of line');

-- every line land() wrote takes the fast path
SELECT is((SELECT (s->>'Lines Read')::int || ' read, ' || (s->>'Lines Parsed Strictly')::int || ' strictly'
             FROM pg_temp.scan('SELECT * FROM kafka_lake.fp56_records') s),
          '8 read, 0 strictly', 'every column of every line: the fast path');
CREATE FOREIGN TABLE fp56_units (units_produced int, line_id text, key text, "offset" bigint)
  SERVER fp56_kafka OPTIONS (source 'fp56', status 'accepted');
SELECT is((SELECT (s->>'Lines Read')::int || ' read, ' || (s->>'Lines Parsed Strictly')::int || ' strictly'
             FROM pg_temp.scan('SELECT sum(units_produced) FROM fp56_units') s),
          '4 read, 0 strictly', 'one event field: the fast path, stopping at the field');
SELECT is((SELECT (s->>'Lines Parsed Strictly')::int
             FROM pg_temp.scan('SELECT raw_value, validation_error FROM kafka_lake.fp56_records WHERE status = ''quarantined''') s),
          0, 'quarantined lines: the fast path');
SELECT is((SELECT array_agg(coalesce(raw_value, '-') ORDER BY "offset")
             FROM kafka_lake.fp56_records WHERE status = 'quarantined'),
          ARRAY[E'{"event_id": "\U0001F600"}', '//4A', '-'], 'raw values read back exactly');
SELECT is((SELECT array_agg(line_id || '/' || coalesce(key, '-') ORDER BY "offset") FROM fp56_units),
          ARRAY['line-01/machine-01', E'l\u00efne-\U0001F600/-', 'line-01/' || encode('\xff01'::bytea, 'base64'),
                'line-01/machine-01'],
          'escapes, surrogate pairs, keys and base64 keys read back');

-- the bridge: every accepted line takes the fast path
SET log_min_messages = debug1;
SELECT source_hash AS hash FROM kafka_lake.bridge('fp56', '2026-06-29') \gset
RESET log_min_messages;
SELECT ok(position('kafka_lake bridge of "fp56" 2026-06-29: 4 accepted lines read, 0 of them parsed strictly'
                   IN kl_test.server_log()) > 0,
          'the bridge read its 4 accepted lines by the fast path (DEBUG1)');

-- two lines rewritten in other layouts: members in another order, no blanks
SELECT batch_id AS b, kl_test.landing('fp56') || '/topic=fp56.events/partition=0/batch=' || batch_id || '/accepted.jsonl' AS path
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'fp56' \gset
SELECT string_agg(CASE n WHEN 1 THEN regexp_replace(l, '^\{"event": (\{[^{}]*\}), "kafka": (\{[^{}]*\})\}$', '{"kafka": \2, "event": \1}')
                         WHEN 4 THEN replace(replace(l, ', "', ',"'), '": ', '":')
                         ELSE l END, E'\n' ORDER BY n) || E'\n' AS content
  FROM unnest(string_to_array(rtrim(pg_read_file(:'path'), E'\n'), E'\n')) WITH ORDINALITY AS t(l, n) \gset
\o /dev/null
SELECT kl_test.sh(format('echo %s | base64 -d > %s',
                         replace(encode(convert_to(:'content', 'UTF8'), 'base64'), E'\n', ''), :'path'));
\o
UPDATE kafka_lake.batches
   SET file_bytes[1] = octet_length(convert_to(:'content', 'UTF8')),
       file_crc32c[1] = kl_test.crc32c(convert_to(:'content', 'UTF8'))
 WHERE batch_id = :'b';
SELECT ok(pg_read_file(:'path') ~ '^\{"kafka": \{' AND pg_read_file(:'path') ~ E'\n\\{"event":\\{"business_date":',
          'the first line now starts with "kafka", the fourth has no blanks');

SELECT is((SELECT (s->>'Lines Read')::int || ' read, ' || (s->>'Lines Parsed Strictly')::int || ' strictly'
             FROM pg_temp.scan('SELECT sum(units_produced) FROM fp56_units') s),
          '4 read, 2 strictly', 'the two rewritten lines go to the strict parser, and are counted');
SELECT is((SELECT (s->>'Lines Parsed Strictly')::int
             FROM pg_temp.scan('SELECT * FROM kafka_lake.fp56_records') s),
          2, 'also when every column is read');
SELECT is((SELECT sum(units_produced)::int FROM fp56_units), 10, 'they read the same units');
SELECT is((SELECT array_agg(line_id || '/' || coalesce(key, '-') || '/' || "offset" ORDER BY "offset") FROM fp56_units),
          ARRAY['line-01/machine-01/0', E'l\u00efne-\U0001F600/-/1', 'line-01/' || encode('\xff01'::bytea, 'base64') || '/2',
                'line-01/machine-01/3'],
          'and the same text, keys and offsets');

SET log_min_messages = debug1;
SELECT source_hash AS hash2, run_status FROM kafka_lake.bridge('fp56', '2026-06-29') \gset
RESET log_min_messages;
SELECT ok(position('kafka_lake bridge of "fp56" 2026-06-29: 4 accepted lines read, 2 of them parsed strictly'
                   IN kl_test.server_log()) > 0,
          'the bridge counts the two lines it parsed strictly (DEBUG1)');
SELECT is(:'hash2'::text, :'hash'::text, 'and makes the same canonical CSV of them');
SELECT is(:'run_status'::text, 'skipped', 'so the run is the earlier one');

SELECT kafka_lake.drop_source('fp56', drop_landing => true);
SELECT * FROM finish();
