-- test/pgtap/73_contracts_builtins.sql: the built-in contracts json_object (any JSON object,
-- nothing required, dedupe by coordinate only) and raw (any bytes as they are, base64 where
-- they are not text, a tombstone too); machine_event_v1 written by an owner lands the very
-- bytes the built-in lands; Kafka headers land in the envelope of machine_event_v1 records
-- without changing the event, the fingerprint or the record's other bytes.  Needs the broker
-- and kcat.
SELECT plan(21);

\o /dev/null
SELECT kl_test.server('bi73_srv');
SELECT kl_test.broker('create bi73.json 1');
SELECT kl_test.broker('create bi73.raw 1');
SELECT kl_test.broker('create bi73.mev 1');
\o

-- json_object
SELECT lives_ok($$SELECT kafka_lake.create_source('bi73_json', 'bi73_srv', 'bi73.json', contract => 'json_object')$$,
                'a source with the built-in json_object');
SELECT kafka_lake.set_compression('bi73_json', 'none');  -- plain JSONL: the test reads the files' bytes
\o /dev/null
SELECT kafka_lake.produce('bi73_srv', 'bi73.json', v, partition => 0)
  FROM unnest(ARRAY[convert_to('{"z": 1, "a": {"y": [1, -0, 2.50], "b": "\u00e9"}, "event_id": "x"}', 'UTF8'),
                    convert_to('{"z": 1, "a": {"y": [1, -0, 2.50], "b": "\u00e9"}, "event_id": "x"}', 'UTF8'),
                    convert_to('[1, 2]', 'UTF8'), convert_to('{"a": 1, "a": 2}', 'UTF8'),
                    convert_to('{"a": {"b": 1, "b": 2}}', 'UTF8'), NULL::bytea]) v;
\o
SELECT results_eq($$SELECT accepted, duplicates, quarantined FROM kafka_lake.land('bi73_json')$$,
                  $$VALUES (2, 0, 4)$$, 'json_object accepts any object, the same one twice too (no event_id)');
SELECT results_eq($$SELECT "offset", status, event_id, business_date, validation_error FROM kafka_lake.bi73_json_records ORDER BY "offset"$$,
  $$VALUES (0::bigint, 'accepted', NULL::text, NULL::date, NULL::text), (1, 'accepted', NULL, NULL, NULL),
           (2, 'quarantined', NULL, NULL, 'value is an array, not a JSON object'),
           (3, 'quarantined', NULL, NULL, 'duplicate field "a"'),
           (4, 'quarantined', NULL, NULL, 'duplicate field "a.b"'),
           (5, 'quarantined', NULL, NULL, 'null value (tombstone)')$$,
  'a member named twice is refused at any depth; a field called event_id is not the event''s id');
SELECT is((SELECT split_part(pg_read_file(kl_test.landing('bi73_json') || '/topic=bi73.json/partition=0/batch=' || batch_id || '/accepted.jsonl'), E'\n', 1)
           FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'bi73_json'),
          format('{"business_date": null, "event": {"a": {"b": "\u00e9", "y": [1, 0, 2.50]}, "event_id": "x", "z": 1}, "event_id": null, "kafka": {"key": null, "offset": 0, "partition": 0, "timestamp_ms": %s, "topic": "bi73.json"}}',
                 (SELECT timestamp_ms FROM kafka_lake.bi73_json_records WHERE "offset" = 0)),
          'the event is made canonical (members sorted at every depth, \u escapes, -0 is 0, 2.50 as written); the line says it has no business date and no event_id');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'bi73_json'),
          0::bigint, 'dedupe by coordinate only: no accepted_events row');
SELECT is((SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
           WHERE attrelid = 'kafka_lake.bi73_json_events'::regclass AND attnum > 0),
          'topic, partition, offset, key, timestamp_ms, batch_id, business_date, contract, contract_version',
          'its typed table has the coordinates only');
SELECT is((SELECT count(*) FROM kafka_lake.bi73_json_events), 2::bigint, 'and reads both events');

-- raw
SELECT lives_ok($$SELECT kafka_lake.create_source('bi73_raw', 'bi73_srv', 'bi73.raw', contract => 'raw')$$,
                'a source with the built-in raw');
SELECT kafka_lake.set_compression('bi73_raw', 'none');  -- plain JSONL: the test reads the files' bytes
\o /dev/null
SELECT kafka_lake.produce('bi73_srv', 'bi73.raw', v, key => 'k'::bytea, partition => 0)
  FROM unnest(ARRAY['\xff00fe'::bytea, convert_to('plain text, not JSON', 'UTF8'), NULL::bytea, ''::bytea,
                    convert_to('{"a": 1}', 'UTF8')]) v;
\o
SELECT results_eq($$SELECT accepted, quarantined FROM kafka_lake.land('bi73_raw')$$,
                  $$VALUES (5, 0)$$, 'raw accepts every value: bytes, text, a tombstone, an empty value, JSON');
SELECT results_eq($$SELECT "offset", status, raw_value, event FROM kafka_lake.bi73_raw_records ORDER BY "offset"$$,
  $$VALUES (0::bigint, 'accepted', '/wD+', NULL::jsonb), (1, 'accepted', 'plain text, not JSON', NULL),
           (2, 'accepted', NULL, NULL), (3, 'accepted', '', NULL), (4, 'accepted', '{"a": 1}', NULL)$$,
  'the raw value reads as it came (base64 where it is not text), never as an event');
SELECT is((SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
           WHERE attrelid = 'kafka_lake.bi73_raw_events'::regclass AND attnum > 0),
          'topic, partition, offset, key, timestamp_ms, batch_id, business_date, contract, contract_version, raw_value',
          'its typed table has the coordinates and raw_value');
SELECT is((SELECT string_agg(coalesce(raw_value, '<null>'), '|' ORDER BY "offset") FROM kafka_lake.bi73_raw_events),
          '/wD+|plain text, not JSON|<null>||{"a": 1}', 'the typed table reads the raw values');
SELECT is((SELECT split_part(pg_read_file(kl_test.landing('bi73_raw') || '/topic=bi73.raw/partition=0/batch=' || batch_id || '/accepted.jsonl'), E'\n', 1)
           FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'bi73_raw'),
          format('{"business_date": null, "event_id": null, "kafka": {"key": "k", "offset": 0, "partition": 0, "timestamp_ms": %s, "topic": "bi73.raw"}, "raw_value_base64": "/wD+"}',
                 (SELECT timestamp_ms FROM kafka_lake.bi73_raw_records WHERE "offset" = 0)),
          'an accepted raw line carries raw_value_base64 where the bytes are not text');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('bi73_raw')$$, 'verify finds nothing wrong');

-- machine_event_v1 written by its owner lands the very bytes the built-in lands
SELECT is(kafka_lake.create_contract('bi73_mev', definition), 1, 'machine_event_v1''s definition as a user contract')
  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
\o /dev/null
SELECT kafka_lake.create_source('bi73_builtin', 'bi73_srv', 'bi73.mev');
SELECT kafka_lake.set_compression('bi73_builtin', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.create_source('bi73_user', 'bi73_srv', 'bi73.mev', contract => 'bi73_mev');
SELECT kafka_lake.set_compression('bi73_user', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('bi73_srv', 'bi73.mev', v, key => 'machine-01'::bytea, partition => 0)
  FROM unnest(ARRAY[kl_test.event('evt-73-1'), kl_test.event('evt-73-2', units => 5, defects => 6),
                    convert_to('{"event_id": "x"}', 'UTF8'), kl_test.event('evt-73-1')]) v;
SELECT kl_test.sh(format('echo %s | base64 -d | kcat -P -b %s -t bi73.mev -p 0 -k machine-01 -H trace=t1 -H bin=x 2>&1',
                         translate(encode(kl_test.event('evt-73-3'), 'base64'), E'\n', ''), kl_test.bootstrap()));
SELECT * FROM kafka_lake.land('bi73_builtin');
SELECT * FROM kafka_lake.land('bi73_user');
\o
SELECT is((SELECT string_agg(b.file_sha256::text, ',' ORDER BY s.source) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source IN ('bi73_builtin', 'bi73_user') GROUP BY b.batch_id),
          (SELECT b.file_sha256::text || ',' || b.file_sha256::text FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = 'bi73_builtin'),
          'the user-written machine_event_v1 lands accepted, duplicate and quarantine files identical to the built-in''s');
SELECT results_eq($$SELECT b.contract, b.contract_version FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
                    WHERE s.source IN ('bi73_builtin', 'bi73_user') ORDER BY s.source$$,
                  $$VALUES ('machine_event_v1', 1), ('bi73_mev', 1)$$, 'each batch records which contract judged it');
SELECT is((SELECT m ? 'contract' FROM (SELECT pg_read_file(kl_test.landing('bi73_builtin') || '/topic=bi73.mev/partition=0/batch=' || batch_id || '/manifest.json')::jsonb AS m
           FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'bi73_builtin') x),
          false, 'a machine_event_v1 manifest keeps the keys of the reference implementation (no "contract")');

-- headers: in the envelope, the event and the fingerprint as without them
SELECT is((SELECT headers FROM kafka_lake.bi73_builtin_records WHERE event_id = 'evt-73-3'),
          '[{"key": "trace", "value": "t1"}, {"key": "bin", "value": "x"}]'::jsonb, 'the headers of a machine event land');
SELECT matches((SELECT line FROM (SELECT regexp_split_to_table(pg_read_file(kl_test.landing('bi73_builtin') || '/topic=bi73.mev/partition=0/batch=' || batch_id || '/accepted.jsonl'), E'\n') AS line
                FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'bi73_builtin') x
                WHERE line LIKE '%evt-73-3%'),
               '^\{"event": \{"business_date": "2026-06-29", [^{}]*\}, "kafka": \{"headers": \[\{"key": "trace", "value": "t1"\}, \{"key": "bin", "value": "x"\}\], "key": "machine-01", "offset": 4, "partition": 0, "timestamp_ms": [0-9]+, "topic": "bi73.mev"\}\}$',
               'a line with headers has them first in its envelope, in record order; the rest is as without');
SELECT is((SELECT fingerprint FROM kafka_lake.bi73_builtin_records WHERE event_id = 'evt-73-3'),
          encode(sha256(convert_to('bi73.mev', 'UTF8') || '\x00'::bytea || convert_to('0', 'UTF8') || '\x00'::bytea
                        || convert_to('4', 'UTF8') || '\x00'::bytea || convert_to('machine-01', 'UTF8') || '\x00'::bytea
                        || kl_test.event('evt-73-3')), 'hex'),
          'the fingerprint leaves the headers out: topic, partition, offset, key, value');

SELECT * FROM finish();
