-- test/pgtap/22_bad_records.sql: bad input never blocks a partition (I7).  Each bad record is
-- quarantined with the reason, its exact bytes are recoverable from the landing, and the offset
-- advances.  A second coordinate of an accepted event_id is duplicate_event_id (I3).
-- Needs the broker.
SELECT plan(26);
SELECT kl_test.broker('create bad.t 1');
SELECT kl_test.server('b_srv');
SELECT kafka_lake.create_source('b_src', 'b_srv', 'bad.t');
SELECT kafka_lake.set_compression('b_src', 'none');  -- plain JSONL: the test reads the files' bytes

CREATE TABLE pg_temp.cases (n serial, name text, value bytea, reason text);
INSERT INTO pg_temp.cases (name, value, reason) VALUES
  ('invalid JSON', convert_to('{"event_id": evt-1}', 'UTF8'), 'invalid JSON: %'),
  ('truncated JSON', substring(kl_test.event('evt-trunc') FROM 1 FOR 60), 'invalid JSON: %'),
  ('invalid UTF-8', '\x7b226576656e745f6964223a2022ff227d', 'value is not valid UTF-8'),
  ('NUL bytes', convert_to('{"event_id"', 'UTF8') || '\x00'::bytea || convert_to(': "x"}', 'UTF8'), 'value contains a NUL byte'),
  ('a JSON array', convert_to('[1, 2, 3]', 'UTF8'), 'value is an array, not a JSON object'),
  ('an unknown field', convert_to(jsonb_set(convert_from(kl_test.event('evt-u'), 'UTF8')::jsonb, '{colour}', '"red"')::text, 'UTF8'), 'unknown field "colour"'),
  ('a missing field', convert_to((convert_from(kl_test.event('evt-m'), 'UTF8')::jsonb - 'line_id')::text, 'UTF8'), 'missing required field "line_id"'),
  ('schema_version as a string', convert_to(jsonb_set(convert_from(kl_test.event('evt-s'), 'UTF8')::jsonb, '{schema_version}', '"1"')::text, 'UTF8'), 'field "schema_version" must be the integer 1, not a string'),
  ('a boolean for an integer', convert_to(jsonb_set(convert_from(kl_test.event('evt-b'), 'UTF8')::jsonb, '{units_produced}', 'true')::text, 'UTF8'), 'field "units_produced" must be an integer, not a boolean'),
  ('a float for an integer', convert_to(replace(convert_from(kl_test.event('evt-fl'), 'UTF8'), '"units_produced" : 10', '"units_produced" : 10.0'), 'UTF8'), 'field "units_produced" must be an integer, not a number with a fraction or exponent'),
  ('defect_count > units_produced', kl_test.event('evt-d', units => 3, defects => 4), 'field "defect_count" must not exceed units_produced'),
  ('a timestamp without zone', kl_test.event('evt-tz', event_time => '2026-06-29T08:00:00'), 'field "event_time" must be an ISO-8601 timestamp with a time zone'),
  ('a zone offset beyond 15:59', kl_test.event('evt-tz16', event_time => '2026-06-29T08:00:00+16:00'), 'field "event_time" has a UTC offset of 16 hours or more, beyond what timestamptz reads'),
  ('an impossible date', convert_to(replace(convert_from(kl_test.event('evt-date'), 'UTF8'), '"business_date" : "2026-06-29"', '"business_date" : "2026-02-30"'), 'UTF8'), 'field "business_date" must be a real calendar date written YYYY-MM-DD'),
  ('a blank id', kl_test.event('   '), 'field "event_id" must not be empty'),
  ('an unknown operation', convert_to(jsonb_set(convert_from(kl_test.event('evt-op'), 'UTF8')::jsonb, '{operation}', '"juggling"')::text, 'UTF8'), 'field "operation" has unknown value "juggling"'),
  ('a ~900 kB value', convert_to('{"event_id": "' || repeat('x', 900000) || '"}', 'UTF8'), 'value of 900016 bytes exceeds the contract limit of 65536 bytes'),
  ('deeply nested JSON', convert_to(repeat('{"a":', 200) || '1' || repeat('}', 200), 'UTF8'), 'invalid JSON: nesting too deep%'),
  ('an empty value', ''::bytea, 'empty value'),
  ('a null value (tombstone)', NULL, 'null value (tombstone)');

-- produce them in order, with a valid event in front and a duplicate of it at the end
SELECT kafka_lake.produce('b_srv', 'bad.t', kl_test.event('evt-good'), key => convert_to('k-good', 'UTF8'));
SELECT kafka_lake.produce('b_srv', 'bad.t', value, key => convert_to('k' || n, 'UTF8')) FROM pg_temp.cases ORDER BY n;
SELECT kafka_lake.produce('b_srv', 'bad.t', kl_test.event('evt-good', units => 99), key => convert_to('k-dup', 'UTF8'));

SELECT results_eq($$SELECT records, accepted, duplicates, quarantined, committed_offset
                    FROM kafka_lake.land('b_src')$$,
                  $$VALUES (22, 1, 1, 20, 22::bigint)$$,
                  'one land takes every record; the offset advances past all the bad ones');

-- the reason of each, through the foreign table, at its offset
SELECT ok((SELECT validation_error LIKE c.reason FROM kafka_lake.b_src_records r
           WHERE r."offset" = c.n AND r.status = 'quarantined'),
          c.name || ': quarantined with the reason')
FROM pg_temp.cases c ORDER BY c.n;

-- the exact bytes, from the landing itself
CREATE TABLE pg_temp.landed AS
SELECT (l::jsonb #>> '{kafka,offset}')::int AS n,
       CASE WHEN l::jsonb ? 'raw_value_base64' THEN decode(l::jsonb ->> 'raw_value_base64', 'base64')
            WHEN l::jsonb -> 'raw_value' = 'null'::jsonb THEN NULL
            ELSE convert_to(l::jsonb ->> 'raw_value', 'UTF8') END AS value,
       l::jsonb -> 'raw_value' = 'null'::jsonb AS is_null
FROM pg_ls_dir(kl_test.landing('b_src') || '/topic=bad.t/partition=0') AS d,
     regexp_split_to_table(rtrim(pg_read_file(kl_test.landing('b_src') || '/topic=bad.t/partition=0/'
                                               || d || '/quarantine.jsonl'), E'\n'), E'\n') AS l;
SELECT is((SELECT count(*) FROM pg_temp.cases c JOIN pg_temp.landed l USING (n)
           WHERE l.value IS NOT DISTINCT FROM c.value), 20::bigint,
          'the exact bytes of all 20 are recoverable from quarantine.jsonl (base64 where not UTF-8)');
SELECT ok((SELECT is_null FROM pg_temp.landed WHERE n = 20), 'a tombstone is kept as a null raw_value');

-- the duplicate
SELECT results_eq($$SELECT status, event_id FROM kafka_lake.b_src_records WHERE "offset" IN (0, 21) ORDER BY "offset"$$,
                  $$VALUES ('accepted', 'evt-good'), ('duplicate_event_id', 'evt-good')$$,
                  'a second coordinate of an accepted event_id is duplicate_event_id');
SELECT is((SELECT l::jsonb -> 'duplicate_of'
           FROM pg_ls_dir(kl_test.landing('b_src') || '/topic=bad.t/partition=0') AS d,
                regexp_split_to_table(rtrim(pg_read_file(kl_test.landing('b_src') || '/topic=bad.t/partition=0/'
                                                         || d || '/duplicates.jsonl'), E'\n'), E'\n') AS l),
          '{"offset": 0, "partition": 0, "topic": "bad.t"}'::jsonb, 'duplicates.jsonl says which coordinate it duplicates');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events WHERE event_key = kafka_lake.event_key('b_src', 'evt-good')),
          1::bigint, 'the event_id is accepted once');

SELECT * FROM finish();
