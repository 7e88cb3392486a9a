-- test/pgtap/47_fdw_lines.sql: the line reader takes any valid JSON line,
-- not only the exact layout land() writes.  A landed file is
-- rewritten with reordered members, odd whitespace, nested objects that
-- hold the same key names, keys written with escapes, duplicate keys and
-- escaped strings, and the catalog's checks are updated to match; every
-- column reads what a JSON parser would.  (The fast path of batch_format.c
-- must agree with its strict parser.)  A demoted coordinate reads as a
-- duplicate.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(13);

\o /dev/null
SELECT kl_test.server('fdw47_kafka');
SELECT kl_test.broker('create fdw47.events 1');
SELECT kafka_lake.create_source('fdw47', 'fdw47_kafka', 'fdw47.events');
SELECT kafka_lake.set_compression('fdw47', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('fdw47_kafka', 'fdw47.events', kl_test.event('fdw47-' || i, units => 11 * i))
  FROM generate_series(1, 5) i;
SELECT * FROM kafka_lake.land('fdw47');
\o
SELECT batch_id AS b, kl_test.landing('fdw47') || '/topic=fdw47.events/partition=0/batch=' || batch_id || '/accepted.jsonl' AS path
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'fdw47' \gset

-- five lines for the five coordinates, each valid JSON in an unusual shape
CREATE TEMP TABLE fdw47_lines (n int, line text);
INSERT INTO fdw47_lines VALUES
  (1, E'{ "kafka" : { "topic":"fdw47.events" , "timestamp_ms" : null,\t"partition":0,"offset":0 ,"key":null } ,\t"event" : {"units_produced" : 11 , "line_id":"l1", "event_id":"fdw47-1", "business_date":"2026-06-29", "extra": {"units_produced": 999, "s": "}\\"{[", "a": [1, {"line_id": "no"}]}} }'),
  (2, E'{"event": {"\\u0075nits_produced": 22, "event_id": "fdw47-2", "line_id": "l\\u00e9\\n\\"x\\"", "business_date": "2026-06-29"}, "kafka": {"offset": 1, "partition": 0, "key": "k\\u00e9", "timestamp_ms": 7, "topic": "fdw47.events"}}'),
  (3, E'{"zzz": "{\\"event\\": {\\"units_produced\\": 1}}", "event": {"units_produced": null, "event_id": "fdw47-3", "units_produced": 33, "line_id": "l3", "business_date": "2026-06-29"}, "kafka": {"offset": 2, "partition": 0, "key": null, "timestamp_ms": null, "topic": "fdw47.events"}}'),
  (4, E'{"event":{"business_date":"2026-06-29","event_id":"fdw47-4","line_id":"l4","units_produced":44},"kafka":{"key":null,"offset":3,"partition":0,"timestamp_ms":null,"topic":"fdw47.events"}}'),
  (5, E'{"event": {"event_id": "fdw47-5", "business_date": "2026-06-29", "line_id": "l5", "units_produced": 55, "nested": {"deep": [[[{"x": "]]]}}}"}]]]}}, "kafka": {"topic": "fdw47.events", "key": null, "timestamp_ms": null, "partition": 0, "offset": 4}, "trailing": [1, 2]}');
SELECT string_agg(line, E'\n' ORDER BY n) || E'\n' AS content FROM fdw47_lines \gset
\o /dev/null
SELECT kl_test.sh(format('echo %s | base64 -d > %s',
                         replace(encode(convert_to(:'content', 'UTF8'), 'base64'), E'\n', ''), :'path'));
\o
UPDATE kafka_lake.batches
   SET file_bytes[1] = octet_length(convert_to(:'content', 'UTF8')),
       file_crc32c[1] = kl_test.crc32c(convert_to(:'content', 'UTF8'))
 WHERE batch_id = :'b';
SELECT is(pg_read_file(:'path'), :'content', 'the file was rewritten');

CREATE FOREIGN TABLE fdw47_typed (event_id text, units_produced int, line_id text, business_date date,
                                  "offset" bigint, key text, timestamp_ms bigint)
  SERVER fdw47_kafka OPTIONS (source 'fdw47', status 'accepted');
SELECT is((SELECT array_agg(units_produced ORDER BY "offset")::text FROM fdw47_typed),
          '{11,22,33,44,55}',
          'units_produced: never a nested key''s value; a key written with escapes; the first non-null one');
SELECT is((SELECT array_agg(event_id ORDER BY "offset")::text FROM fdw47_typed),
          '{fdw47-1,fdw47-2,fdw47-3,fdw47-4,fdw47-5}', 'event_id of each line');
SELECT is((SELECT array_agg(line_id ORDER BY "offset") FROM fdw47_typed),
          ARRAY['l1', E'l\u00e9\n"x"', 'l3', 'l4', 'l5'], 'line_id: escapes decoded, nested keys ignored');
SELECT is((SELECT array_agg(coalesce(key, '-') || '/' || coalesce(timestamp_ms::text, '-') ORDER BY "offset")::text
             FROM fdw47_typed),
          E'{-/-,ké/7,-/-,-/-,-/-}', 'key and timestamp_ms from the kafka member wherever it stands');
SELECT is((SELECT array_agg("offset" ORDER BY "offset")::text FROM kafka_lake.fdw47_records),
          '{0,1,2,3,4}', 'offsets from the kafka member');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw47_records r
            WHERE r.event = (SELECT (l.line::jsonb)->'event' FROM fdw47_lines l WHERE l.n = r."offset" + 1)),
          5, 'the event column equals what jsonb parses');
SELECT is((SELECT sum(units_produced)::int FROM fdw47_typed WHERE business_date = '2026-06-29'), 165,
          'a pruned, filtered scan over the same lines');


-- a coordinate recover() demoted ('D': accepted on disk, its event_id
-- accepted first elsewhere) reads as a duplicate_event_id, as recover()
-- reports
UPDATE kafka_lake.coordinates SET statuses = 'aDaaa' WHERE batch_id = :'b';
SELECT is((SELECT array_agg(units_produced ORDER BY "offset")::text FROM fdw47_typed),
          '{11,33,44,55}', 'a demoted coordinate is not accepted');
SELECT is((SELECT array_agg(status || ':' || "offset" ORDER BY "offset")::text FROM kafka_lake.fdw47_records),
          '{accepted:0,duplicate_event_id:1,accepted:2,accepted:3,accepted:4}',
          'it reads as duplicate_event_id');
SELECT is((SELECT array_agg(event_id)::text FROM kafka_lake.fdw47_records WHERE status = 'duplicate_event_id'),
          '{fdw47-2}', 'a scan of duplicates reads it from the accepted file');
CREATE FOREIGN TABLE fdw47_dups (event_id text, units_produced int)
  SERVER fdw47_kafka OPTIONS (source 'fdw47', status 'duplicate_event_id');
SELECT is((SELECT array_agg(event_id || '=' || units_produced)::text FROM fdw47_dups), '{fdw47-2=22}',
          'so does a table of duplicates');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw47_records WHERE status = 'accepted'), 4,
          'and counting accepted records without reading any column skips it');

SELECT * FROM finish();
