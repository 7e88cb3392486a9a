-- test/pgtap/19_contract_seed.sql: machine_event_v1 judges and normalises a value exactly as the
-- seed's pipeline does (Python 3.11: json.loads, then str.strip on every string, str.lower on the
-- six identifiers, datetime.fromisoformat of event_time after replacing "Z" by "+00:00", a zone
-- required).  Each case is pinned by hand from those rules: the landed event's bytes (keys
-- sorted, json.dumps layout, non-ASCII as \u escapes) or the validation_error, and the instant
-- the foreign table reads.  Test 38_seed_corpus.sh checks the same rules on thousands of values
-- against Python itself.  Needs the broker.
SELECT plan(37);
SELECT kl_test.broker('create seedc.t 1');
SELECT kl_test.server('sc_srv');
SELECT kafka_lake.create_source('sc_src', 'sc_srv', 'seedc.t');
SELECT kafka_lake.set_compression('sc_src', 'none');  -- plain JSONL: the test reads the files' bytes

-- pg_temp.value(id, field, json): a valid value whose member "field" is the JSON text json
CREATE FUNCTION pg_temp.value(id text, field text DEFAULT NULL, val text DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE WHEN field IS NULL THEN b
              ELSE regexp_replace(b, '"' || field || '": ("[^"]*"|[0-9]+)',
                                  '"' || field || '": ' || replace(val, '\', '\\')) END
  FROM (SELECT replace('{"event_id": "@", "schema_version": 1, "event_time": "2026-06-29T08:00:00+09:00", '
                       '"business_date": "2026-06-29", "plant_id": "plant-01", "line_id": "line-01", '
                       '"work_order_id": "wo-@", "machine_id": "m-1", "product_code": "prd-a", '
                       '"operation": "assembly", "units_produced": 10, "defect_count": 1, '
                       '"cycle_time_ms": 1200}', '@', id) AS b) s
$$;
-- pg_temp.landed(id, field, json): the normalised event as accepted.jsonl holds it
CREATE FUNCTION pg_temp.landed(id text, field text DEFAULT NULL, val text DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE WHEN field IS NULL THEN b
              ELSE regexp_replace(b, '"' || field || '": ("[^"]*"|[0-9]+)',
                                  '"' || field || '": ' || replace(val, '\', '\\')) END
  FROM (SELECT replace('{"business_date": "2026-06-29", "cycle_time_ms": 1200, "defect_count": 1, '
                       '"event_id": "@", "event_time": "2026-06-29T08:00:00+09:00", "line_id": "line-01", '
                       '"machine_id": "m-1", "operation": "assembly", "plant_id": "plant-01", '
                       '"product_code": "prd-a", "schema_version": 1, "units_produced": 10, '
                       '"work_order_id": "wo-@"}', '@', id) AS b) s
$$;

CREATE TABLE pg_temp.cases (n serial, name text, value text, landed text, reason text);
INSERT INTO pg_temp.cases (name, value, landed, reason) VALUES
  -- field names are compared after JSON unescaping
  ('a name with an escape', replace(pg_temp.value('sc-1'), '"event_id"', '"event\u005fid"'), pg_temp.landed('sc-1'), NULL),
  ('a name whose first letter is escaped', replace(pg_temp.value('sc-2'), '"plant_id"', '"\u0070lant_id"'), pg_temp.landed('sc-2'), NULL),
  ('an escape with upper-case hex', replace(pg_temp.value('sc-3'), '"units_produced"', '"units_produce\u0064"'), pg_temp.landed('sc-3'), NULL),
  ('a name written entirely in escapes', replace(pg_temp.value('sc-4'), '"line_id"', '"\u006c\u0069\u006e\u0065\u005f\u0069\u0064"'), pg_temp.landed('sc-4'), NULL),
  -- identifiers: str.strip() then str.lower(), Unicode-wide
  ('a non-ASCII identifier, raw UTF-8', pg_temp.value('sc-5', 'plant_id', '"PLÄNT-A"'), pg_temp.landed('sc-5', 'plant_id', '"pl\u00e4nt-a"'), NULL),
  ('a non-ASCII identifier, escaped', pg_temp.value('sc-6', 'plant_id', '"PL\u00c4NT-A"'), pg_temp.landed('sc-6', 'plant_id', '"pl\u00e4nt-a"'), NULL),
  ('İ lower-cases to i and a combining dot', pg_temp.value('sc-7', 'plant_id', '"İSTANBUL"'), pg_temp.landed('sc-7', 'plant_id', '"i\u0307stanbul"'), NULL),
  ('a final sigma', pg_temp.value('sc-8', 'line_id', '"ΟΔΟΣ"'), pg_temp.landed('sc-8', 'line_id', '"\u03bf\u03b4\u03bf\u03c2"'), NULL),
  ('a final sigma and one that is not', pg_temp.value('sc-9', 'line_id', '"ΟΔΟΣ-ΣΑ"'), pg_temp.landed('sc-9', 'line_id', '"\u03bf\u03b4\u03bf\u03c2-\u03c3\u03b1"'), NULL),
  ('fullwidth letters', pg_temp.value('sc-10', 'machine_id', '"ＭＡＣＨＩＮＥ"'), pg_temp.landed('sc-10', 'machine_id', '"\uff4d\uff41\uff43\uff48\uff49\uff4e\uff45"'), NULL),
  ('NBSP and an ideographic space are trimmed', pg_temp.value('sc-11', 'machine_id', '"\u00a0M-1\u3000"'), pg_temp.landed('sc-11', 'machine_id', '"m-1"'), NULL),
  ('U+001C and U+001F are trimmed', pg_temp.value('sc-12', 'work_order_id', '"\u001cWO-12\u001f"'), pg_temp.landed('sc-12', 'work_order_id', '"wo-12"'), NULL),
  ('event_id is trimmed, not lower-cased', pg_temp.value('sc-13', 'event_id', '"\u2003SC-13\u0085"'), replace(pg_temp.landed('sc-13'), '"event_id": "sc-13"', '"event_id": "SC-13"'), NULL),
  ('a zero-width space is not whitespace', pg_temp.value('sc-14', 'product_code', '"\u200bprd\u200b"'), pg_temp.landed('sc-14', 'product_code', '"\u200bprd\u200b"'), NULL),
  ('the Kelvin sign lower-cases to k', pg_temp.value('sc-15', 'operation', '"PAC\u212aAGING"'), pg_temp.landed('sc-15', 'operation', '"packaging"'), NULL),
  ('an operation with a trailing NBSP', pg_temp.value('sc-16', 'operation', '"Welding\u00a0"'), pg_temp.landed('sc-16', 'operation', '"welding"'), NULL),
  -- event_time: every form datetime.fromisoformat reads (after Z -> +00:00), kept as written
  ('an hour and an offset', pg_temp.value('sc-17', 'event_time', '"2026-06-29T08+09:00"'), pg_temp.landed('sc-17', 'event_time', '"2026-06-29T08+09:00"'), NULL),
  ('the basic format', pg_temp.value('sc-18', 'event_time', '"20260629T080000Z"'), pg_temp.landed('sc-18', 'event_time', '"20260629T080000Z"'), NULL),
  ('an offset with seconds', pg_temp.value('sc-19', 'event_time', '"2026-06-29T08:00:00+09:00:30"'), pg_temp.landed('sc-19', 'event_time', '"2026-06-29T08:00:00+09:00:30"'), NULL),
  ('a comma fraction', pg_temp.value('sc-20', 'event_time', '"2026-06-29T08:00:00,5Z"'), pg_temp.landed('sc-20', 'event_time', '"2026-06-29T08:00:00,5Z"'), NULL),
  ('an ISO week date', pg_temp.value('sc-21', 'event_time', '"2026-W27-1T08:00Z"'), pg_temp.landed('sc-21', 'event_time', '"2026-W27-1T08:00Z"'), NULL),
  ('a timestamp trimmed of Unicode spaces', pg_temp.value('sc-22', 'event_time', '"\u00a02026-06-29T08:00:00Z\u3000"'), pg_temp.landed('sc-22', 'event_time', '"2026-06-29T08:00:00Z"'), NULL),
  ('any character separates date and time', pg_temp.value('sc-23', 'event_time', '"2026-06-29é08:00Z"'), pg_temp.landed('sc-23', 'event_time', '"2026-06-29\u00e908:00Z"'), NULL),
  ('seven fraction digits', pg_temp.value('sc-24', 'event_time', '"2026-06-29T23:59:59.9999996Z"'), pg_temp.landed('sc-24', 'event_time', '"2026-06-29T23:59:59.9999996Z"'), NULL),
  -- refused
  ('the same name twice, once escaped', replace(pg_temp.value('sc-25'), '"cycle_time_ms": 1200}', '"cycle_time_ms": 1200, "event\u005fid": "sc-25b"}'), NULL, 'duplicate field "event_id"'),
  ('a lower-case z', pg_temp.value('sc-26', 'event_time', '"2026-06-29T08:00:00z"'), NULL, 'field "event_time" must be an ISO-8601 timestamp with a time zone'),
  ('no zone', pg_temp.value('sc-27', 'event_time', '"2026-06-29T08:00:00"'), NULL, 'field "event_time" must be an ISO-8601 timestamp with a time zone'),
  ('an ordinal date', pg_temp.value('sc-28', 'event_time', '"2026-180T08:00Z"'), NULL, 'field "event_time" must be an ISO-8601 timestamp with a time zone'),
  ('an offset of 24 hours', pg_temp.value('sc-29', 'event_time', '"2026-06-29T08:00:00+24:00"'), NULL, 'field "event_time" must be an ISO-8601 timestamp with a time zone'),
  ('an offset of 16 hours', pg_temp.value('sc-30', 'event_time', '"2026-06-29T08:00:00+16:00"'), NULL, 'field "event_time" has a UTC offset of 16 hours or more, beyond what timestamptz reads'),
  ('fullwidth letters are not an operation', pg_temp.value('sc-31', 'operation', '"ＡＳＳＥＭＢＬＹ"'), NULL, 'field "operation" has unknown value "ａｓｓｅｍｂｌｙ"'),
  ('a basic-format business_date', pg_temp.value('sc-32', 'business_date', '"20260629"'), NULL, 'field "business_date" must be a real calendar date written YYYY-MM-DD'),
  ('an identifier of Unicode spaces only', pg_temp.value('sc-33', 'plant_id', '"\u00a0\u3000\u2029"'), NULL, 'field "plant_id" must not be empty'),
  ('an event_id of U+001E only', pg_temp.value('sc-34', 'event_id', '"\u001e"'), NULL, 'field "event_id" must not be empty');

SELECT kafka_lake.produce('sc_srv', 'seedc.t', convert_to(value, 'UTF8'), key => convert_to('k' || n, 'UTF8'))
FROM pg_temp.cases ORDER BY n;
SELECT results_eq($$SELECT records, accepted, quarantined FROM kafka_lake.land('sc_src')$$,
                  $$VALUES (34, 24, 10)$$, 'one land: 24 accepted, 10 quarantined');

-- accepted: the landed event, byte for byte
CREATE TABLE pg_temp.lines AS
SELECT (l::jsonb #>> '{kafka,offset}')::int + 1 AS n, substring(l FROM '^\{"event": (.*), "kafka": \{') AS event
FROM pg_ls_dir(kl_test.landing('sc_src') || '/topic=seedc.t/partition=0') AS d,
     regexp_split_to_table(rtrim(pg_read_file(kl_test.landing('sc_src') || '/topic=seedc.t/partition=0/'
                                               || d || '/accepted.jsonl'), E'\n'), E'\n') AS l;
SELECT is((SELECT event FROM pg_temp.lines l WHERE l.n = c.n), c.landed, c.name || ': landed as the seed normalises it')
FROM pg_temp.cases c WHERE c.landed IS NOT NULL ORDER BY c.n;

-- refused: the reason
SELECT is((SELECT validation_error FROM kafka_lake.sc_src_records r WHERE r."offset" = c.n - 1), c.reason,
          c.name || ': quarantined')
FROM pg_temp.cases c WHERE c.reason IS NOT NULL ORDER BY c.n;

-- the instant each accepted event_time names, through the typed foreign table's fast path
CREATE FOREIGN TABLE pg_temp.sc_times (event_id text, event_time timestamptz, business_date date)
  SERVER sc_srv OPTIONS (source 'sc_src', status 'accepted');
SELECT results_eq(
  $$SELECT event_id, event_time FROM pg_temp.sc_times
     WHERE event_id IN ('sc-17', 'sc-18', 'sc-19', 'sc-20', 'sc-21', 'sc-22', 'sc-23', 'sc-24') ORDER BY event_id$$,
  $$VALUES ('sc-17', '2026-06-28 23:00:00+00'::timestamptz),     -- 08:00 at +09:00
           ('sc-18', '2026-06-29 08:00:00+00'),
           ('sc-19', '2026-06-28 22:59:30+00'),                  -- 08:00:00 at +09:00:30
           ('sc-20', '2026-06-29 08:00:00.5+00'),
           ('sc-21', '2026-06-29 08:00:00+00'),                  -- Monday of ISO week 27 of 2026
           ('sc-22', '2026-06-29 08:00:00+00'),
           ('sc-23', '2026-06-29 08:00:00+00'),
           ('sc-24', '2026-06-30 00:00:00+00')$$,                -- fractions beyond microseconds round, as in timestamptz
  'event_time reads as the instant it names, in every form');
SELECT is((SELECT count(*) FROM pg_temp.sc_times WHERE event_time IS NULL), 0::bigint,
          'every accepted event_time reads as a timestamptz');

SELECT * FROM finish();
