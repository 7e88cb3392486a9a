-- test/pgtap/75b_bridge_entity.sql: entity streams.  An order stream (placed, paid,
-- shipped, cancelled, deleted) over two partitions, whose versions arrive out of order
-- across them: silver holds per date each order's latest version by "version" (a deletion
-- included), kafka_lake.<source>_state each order's latest version across dates (the date
-- it took effect, deletions left out), a declared gold counts the live versions, its
-- conservation check holds, and a version that arrives for a closed date is a late event.
-- A Debezium-style change stream of a real table (inserts, updates, deletes, their
-- tombstones; before/after envelope; ts_ms and the log position as the order) gives a
-- state view equal to the table it came from.  Every version stays in the landing.  Bad
-- entity definitions are refused with their path.  Needs the broker and kcat.
SELECT plan(44);

CREATE FUNCTION pg_temp.produce(topic text, part int, k text, value text) RETURNS text LANGUAGE sql AS $$
  SELECT kl_test.sh(format('printf ''%%s\t%%s\n'' %s %s | kcat -P -b %s -t %s -p %s -K ''\t'' -Z 2>&1',
    quote_literal(k), quote_literal(coalesce(value, '')), kl_test.bootstrap(), topic, part))
$$;
CREATE FUNCTION pg_temp.o(id text, v int, status text, at text, amount numeric DEFAULT 10) RETURNS text
LANGUAGE sql AS $$
  SELECT format('{"order_id": "%s", "version": %s, "status": "%s", "updated_at": "%s", "amount": %s}',
                id, v, status, at, amount)
$$;

\o /dev/null
SELECT kl_test.server('ent75b_srv');
SELECT kl_test.broker('create ent75b.t 2');
SELECT kl_test.broker('create deb75b.t 1');
SELECT kafka_lake.create_contract('orders75b', $${
  "type": "object",
  "properties": {
    "order_id":   {"type": "string", "minLength": 1},
    "version":    {"type": "integer", "minimum": 1},
    "status":     {"type": "string", "enum": ["placed", "paid", "shipped", "cancelled", "deleted"]},
    "updated_at": {"type": "string", "format": "date-time"},
    "amount":     {"type": "number", "sql_type": "numeric(12,2)"},
    "qty":        {"type": "integer"}
  },
  "required": ["order_id", "version", "status", "updated_at", "amount"],
  "event_id": ["order_id", "version"],
  "business_date": {"field": "updated_at", "time_zone": "UTC"},
  "entity": {"key": ["order_id"], "order_by": ["version"],
             "deleted": {"field": "status", "equals": "deleted"}}
}$$);
\o
SELECT lives_ok($$SELECT kafka_lake.create_source('ent75b', 'ent75b_srv', 'ent75b.t', contract => 'orders75b')$$,
                'a source of an entity contract');
SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'kafka_lake.ent75b_state'::regclass), 'v',
          'it has the view kafka_lake.ent75b_state');
SELECT lives_ok($$SELECT kafka_lake.define_gold('ent75b', 'ent75b_by_status', grain => ARRAY['status'],
    metrics => '{"orders": {"count": "*"}, "amount": {"sum": "amount"}}')$$, 'a declared gold over it');

-- a plain role's SQL gold that reads the state view: defining it grants the view
CREATE ROLE t75b_analyst;
GRANT USAGE ON SCHEMA kafka_lake TO t75b_analyst;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t75b_analyst;
GRANT SELECT, TRIGGER ON kafka_lake.ent75b_records TO t75b_analyst;
SET ROLE t75b_analyst;
SELECT lives_ok($$SELECT kafka_lake.define_gold('ent75b', 'ent75b_live', grain => ARRAY['status'],
    sql => 'SELECT status, count(*) AS versions, (SELECT count(*) FROM kafka_lake.ent75b_state) AS live_before
              FROM silver GROUP BY status')$$, 'a plain role defines a SQL gold that reads the state view');
RESET ROLE;
SELECT throws_ok($$SELECT kafka_lake.define_gold('ent75b', 'orders_state', grain => ARRAY['status'],
    metrics => '{"orders": {"count": "*"}}')$$, '42939', NULL, 'a gold may not take a state view''s name');

-- July 1st: o1 placed (p0), shipped v3 (p0), paid v2 (p1: read after p0's v3); o2 placed (p1),
-- paid (p0); o3 placed, then deleted; o1 v1 again (a duplicate); a tombstone (quarantined)
\o /dev/null
SELECT pg_temp.produce('ent75b.t', p, k, v) FROM (VALUES
  (0, 'o1', pg_temp.o('o1', 1, 'placed', '2026-07-01T08:00:00Z')),
  (0, 'o1', pg_temp.o('o1', 3, 'shipped', '2026-07-01T10:00:00Z', 12)),
  (1, 'o1', pg_temp.o('o1', 2, 'paid', '2026-07-01T09:00:00Z', 11)),
  (1, 'o2', pg_temp.o('o2', 1, 'placed', '2026-07-01T08:00:00Z', 20)),
  (0, 'o2', pg_temp.o('o2', 2, 'paid', '2026-07-01T09:30:00Z', 20)),
  (0, 'o3', pg_temp.o('o3', 1, 'placed', '2026-07-01T08:00:00Z', 30)),
  (1, 'o3', pg_temp.o('o3', 2, 'deleted', '2026-07-01T11:00:00Z', 30)),
  (1, 'o1', pg_temp.o('o1', 1, 'placed', '2026-07-01T08:00:00Z')),
  (0, 'o3', NULL)) AS e(p, k, v);
\o
SELECT results_eq($$SELECT sum(records)::int, sum(accepted)::int, sum(duplicates)::int, sum(quarantined)::int
                      FROM kafka_lake.land('ent75b')$$,
                  $$VALUES (9, 7, 1, 1)$$, 'nine records: seven versions accepted, a duplicate, a tombstone quarantined');
SELECT results_eq($$SELECT silver_rows, gold_rows, quality_passed = quality_total FROM kafka_lake.bridge('ent75b', '2026-07-01')$$,
                  $$VALUES (3, 5, true)$$, 'July 1st: three orders in silver, two live statuses in the declared gold and three in the SQL gold, every check passes');
SELECT results_eq($$SELECT order_id, version, status, amount FROM kafka_lake.ent75b_silver ORDER BY order_id$$,
                  $$VALUES ('o1', 3::bigint, 'shipped', 12.00::numeric(12,2)), ('o2', 2, 'paid', 20), ('o3', 2, 'deleted', 30)$$,
                  'silver: each order''s latest version of the day by version, whatever partition and order it arrived in; the deletion too');
SELECT results_eq($$SELECT status, orders, amount FROM kafka_lake.ent75b_by_status_current ORDER BY status$$,
                  $$VALUES ('paid', 1::bigint, 20.00::numeric), ('shipped', 1, 12.00)$$,
                  'the declared gold counts the live versions: the deletion is in none of its groups');
SELECT is((SELECT passed FROM kafka_lake.quality_results q JOIN kafka_lake.runs r USING (run_id)
           WHERE q.check_name = 'conservation_silver_to_ent75b_by_status' ORDER BY r.started_at DESC LIMIT 1),
          true, 'its conservation check sums the live rows of silver');
SELECT results_eq($$SELECT order_id, status, business_date FROM kafka_lake.ent75b_state ORDER BY order_id$$,
                  $$VALUES ('o1', 'shipped', '2026-07-01'::date), ('o2', 'paid', '2026-07-01')$$,
                  'the state after July 1st: o1 shipped, o2 paid, o3 deleted');
SELECT is((SELECT count(*) FROM kafka_lake.ent75b_events), 7::bigint, 'every version stays in the landing');

-- July 2nd: o2 cancelled; o4 placed; o5 paid (v2, p0) before its placed (v1, p1)
\o /dev/null
SELECT pg_temp.produce('ent75b.t', p, k, v) FROM (VALUES
  (1, 'o2', pg_temp.o('o2', 3, 'cancelled', '2026-07-02T08:00:00Z', 20)),
  (0, 'o4', pg_temp.o('o4', 1, 'placed', '2026-07-02T08:00:00Z', 40)),
  (0, 'o5', pg_temp.o('o5', 2, 'paid', '2026-07-02T09:00:00Z', 50)),
  (1, 'o5', pg_temp.o('o5', 1, 'placed', '2026-07-02T08:00:00Z', 50))) AS e(p, k, v);
\o
SELECT results_eq($$SELECT sum(accepted)::int FROM kafka_lake.land('ent75b')$$, $$VALUES (4)$$, 'four more versions');
SELECT results_eq($$SELECT silver_rows, gold_rows FROM kafka_lake.bridge('ent75b', '2026-07-02')$$,
                  $$VALUES (3, 6)$$, 'July 2nd: three orders');
SELECT results_eq($$SELECT business_date, status, versions, live_before FROM kafka_lake.ent75b_live_current ORDER BY 1, 2$$,
                  $$VALUES ('2026-07-01'::date, 'deleted', 1::bigint, 0::bigint), ('2026-07-01', 'paid', 1, 0), ('2026-07-01', 'shipped', 1, 0),
                           ('2026-07-02', 'cancelled', 1, 2), ('2026-07-02', 'paid', 1, 2), ('2026-07-02', 'placed', 1, 2)$$,
                  'the SQL gold ran as its role, reading silver with its deletion and the state view as published before');
SELECT results_eq($$SELECT order_id, version, status, business_date FROM kafka_lake.ent75b_state ORDER BY order_id$$,
                  $$VALUES ('o1', 3::bigint, 'shipped', '2026-07-01'::date), ('o2', 3, 'cancelled', '2026-07-02'),
                           ('o4', 1, 'placed', '2026-07-02'), ('o5', 2, 'paid', '2026-07-02')$$,
                  'the state across days: each order''s latest version, with the date it took effect');

-- a version of a closed date is a late event; the published state does not move
SELECT results_eq($$SELECT status FROM kafka_lake.close_date('ent75b', '2026-07-01')$$,
                  $$VALUES ('closed')$$, 'July 1st is closed');
\o /dev/null
SELECT pg_temp.produce('ent75b.t', 0, 'o1', pg_temp.o('o1', 4, 'cancelled', '2026-07-01T23:00:00Z', 12));
\o
SELECT results_eq($$SELECT sum(accepted)::int FROM kafka_lake.land('ent75b')$$, $$VALUES (1)$$, 'the late version lands');
SELECT is((SELECT count(*) FROM kafka_lake.late_events WHERE source = 'ent75b' AND business_date = '2026-07-01'),
          1::bigint, 'it is a late event of the closed date');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('ent75b', '2026-07-01')$$, '55000', NULL,
                 'bridge() refuses the closed date that changed, as for any late data');
SELECT is((SELECT status FROM kafka_lake.ent75b_state WHERE order_id = 'o1'), 'shipped',
          'the state stays the published one until the date is reopened');
SELECT results_eq($$SELECT silver_rows FROM kafka_lake.bridge('ent75b', '2026-07-01', reopen => true)$$,
                  $$VALUES (3)$$, 'reopened, July 1st is bridged again');
SELECT is((SELECT status FROM kafka_lake.ent75b_state WHERE order_id = 'o1'), 'cancelled',
          'and the correction reaches the state');

-- a contract version that orders by updated_at, and whose qty is a number (silver's
-- column changes type): the view follows the source's version, its grants kept
CREATE ROLE ent75b_reader;
GRANT USAGE ON SCHEMA kafka_lake TO ent75b_reader;
GRANT SELECT ON kafka_lake.ent75b_state TO ent75b_reader;
\o /dev/null
SELECT kafka_lake.create_contract('orders75b', replace(regexp_replace(definition::text, '"order_by": \["version"\]',
                                  '"order_by": ["updated_at", "version"]'), '"qty":        {"type": "integer"}',
                                  '"qty":        {"type": "number"}')::json)
  FROM kafka_lake.contracts WHERE contract = 'orders75b' AND version = 1;
SELECT kafka_lake.alter_source('ent75b', 'orders75b');
SELECT pg_temp.produce('ent75b.t', 1, 'o6', pg_temp.o('o6', 9, 'placed', '2026-07-03T08:00:00Z', 60));
SELECT pg_temp.produce('ent75b.t', 1, 'o6', pg_temp.o('o6', 1, 'paid', '2026-07-03T09:00:00Z', 60));
SELECT kafka_lake.land('ent75b');
\o
SELECT results_eq($$SELECT silver_rows FROM kafka_lake.bridge('ent75b', '2026-07-03')$$, $$VALUES (1)$$,
                  'July 3rd, under version 2');
SELECT results_eq($$SELECT version, status FROM kafka_lake.ent75b_state WHERE order_id = 'o6'$$,
                  $$VALUES (1::bigint, 'paid')$$, 'the later updated_at wins under version 2, whatever its version field');
SELECT matches(obj_description('kafka_lake.ent75b_state'::regclass), 'order_by updated_at version',
               'the state view was made again for version 2''s order');
SELECT is((SELECT format_type(atttypid, atttypmod) FROM pg_attribute
           WHERE attrelid = 'kafka_lake.ent75b_silver'::regclass AND attname = 'qty'), 'numeric',
          'silver''s qty changed type under version 2');
SET ROLE ent75b_reader;
SELECT is((SELECT count(*) FROM kafka_lake.ent75b_state), 5::bigint, 'a reader granted the state view still reads it');
RESET ROLE;

-- a Debezium-style change stream of a real table
CREATE TABLE pg_temp.items (id int PRIMARY KEY, name text, qty int);
CREATE TEMP TABLE changes (n serial, id int, value text);
CREATE FUNCTION pg_temp.change(op text, id int, name text DEFAULT NULL, qty int DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  before json;
  after json;
BEGIN
  SELECT row_to_json(i) INTO before FROM pg_temp.items i WHERE i.id = change.id;
  IF op = 'c' THEN INSERT INTO pg_temp.items VALUES (id, name, qty);
  ELSIF op = 'u' THEN UPDATE pg_temp.items i SET name = change.name, qty = change.qty WHERE i.id = change.id;
  ELSE DELETE FROM pg_temp.items i WHERE i.id = change.id;
  END IF;
  SELECT row_to_json(i) INTO after FROM pg_temp.items i WHERE i.id = change.id;
  INSERT INTO changes (id, value) VALUES (id, json_build_object(
    'before', before, 'after', after, 'op', op, 'ts_ms', 1782900000000 + (SELECT count(*) FROM changes) * 1000,
    'source', json_build_object('db', 'shop', 'table', 'items', 'lsn', 1000 + (SELECT count(*) FROM changes)))::text);
  IF op = 'd' THEN INSERT INTO changes (id, value) VALUES (id, NULL); END IF;
END $$;
\o /dev/null
SELECT pg_temp.change(op, id, name, qty) FROM (VALUES
  (1, 'c', 1, 'bolt', 10), (2, 'c', 2, 'nut', 5), (3, 'c', 3, 'gear', 1), (4, 'u', 2, 'nut', 6),
  (5, 'd', 3, NULL, NULL), (6, 'u', 1, 'bolt m4', 12), (7, 'c', 4, 'cog', 7), (8, 'u', 1, 'bolt m5', 13),
  (9, 'c', 5, 'pin', 2), (10, 'd', 4, NULL, NULL), (11, 'c', 3, 'gear', 2), (12, 'u', 5, 'pin', 0)
) AS t(n, op, id, name, qty) ORDER BY n;
SELECT kafka_lake.create_contract('debezium75b', $${
  "type": "object",
  "properties": {
    "before": {"type": ["object", "null"]},
    "after":  {"type": ["object", "null"]},
    "op":     {"type": "string", "enum": ["c", "u", "d", "r"]},
    "ts_ms":  {"type": "integer"},
    "source": {"type": "object", "properties": {"lsn": {"type": "integer"}}, "required": ["lsn"]},
    "id":     {"type": "integer", "path": [["after", "id"], ["before", "id"]]},
    "name":   {"type": ["string", "null"], "path": [["after", "name"], ["before", "name"]]},
    "qty":    {"type": ["integer", "null"], "path": [["after", "qty"], ["before", "qty"]]},
    "lsn":    {"type": "integer", "path": ["source", "lsn"]}
  },
  "required": ["op", "ts_ms", "source", "id", "lsn"],
  "event_id": ["id", "lsn"],
  "business_date": {"kafka_timestamp": true, "time_zone": "UTC"},
  "columns": ["id", "name", "qty", "op", "ts_ms", "lsn", "before", "after", "source"],
  "entity": {"key": ["id"], "order_by": ["ts_ms", "lsn"], "deleted": {"field": "op", "equals": "d"}}
}$$);
SELECT kafka_lake.create_source('deb75b', 'ent75b_srv', 'deb75b.t', contract => 'debezium75b');
SELECT pg_temp.produce('deb75b.t', 0, id::text, value) FROM changes ORDER BY n;
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(quarantined)::int FROM kafka_lake.land('deb75b')$$,
                  $$VALUES (12, 2)$$, 'twelve changes accepted; the two tombstones after the deletes quarantined');
SELECT is((SELECT count(*) FROM (SELECT kafka_lake.bridge('deb75b', d) FROM
            (SELECT DISTINCT business_date AS d FROM kafka_lake.deb75b_events) x) y), (SELECT count(DISTINCT business_date) FROM kafka_lake.deb75b_events),
          'every date of the stream is bridged');
SELECT results_eq($$SELECT id::int, name, qty::int FROM kafka_lake.deb75b_state ORDER BY id$$,
                  $$SELECT id, name, qty FROM pg_temp.items ORDER BY id$$,
                  'the state view equals the table the changes came from');

-- a compacted topic whose deletions are tombstones: the key from the Kafka key (its
-- text, or a JSON object naming the key's fields), versions ordered by coordinate
\o /dev/null
SELECT kl_test.broker('create kv75b.t 2');
SELECT kafka_lake.create_contract('kv75b', $${
  "type": "object",
  "properties": {
    "id": {"type": "string", "normalize": ["trim"], "minLength": 1},
    "v":  {"type": "integer"},
    "op": {"type": "string", "enum": ["d"]}
  },
  "required": ["id", "v"],
  "business_date": {"kafka_timestamp": true, "time_zone": "UTC"},
  "entity": {"key": ["id"], "deleted": {"field": "op", "equals": "d", "tombstones": true}}
}$$);
SELECT kafka_lake.create_source('kv75b', 'ent75b_srv', 'kv75b.t', contract => 'kv75b');
SELECT pg_temp.produce('kv75b.t', p, k, v) FROM (VALUES
  (1, 0, 'k1', '{"id": "k1", "v": 1}'), (2, 0, 'k2', '{"id": "k2", "v": 1}'), (3, 0, 'k1', '{"id": "k1", "v": 2}'),
  (4, 0, 'k2', NULL), (5, 0, 'k3', '{"id": "k3", "v": 1}'), (6, 0, 'k2', '{"id": "k2", "v": 3}'),
  (7, 1, '{"id": " k4"}', '{"id": "k4", "v": 1}'), (8, 1, '{"id": "k4"}', NULL), (9, 1, 'k5', '{"id": "k5", "v": 1}'),
  (10, 1, '', NULL)) AS e(n, p, k, v) ORDER BY n;
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(quarantined)::int FROM kafka_lake.land('kv75b')$$,
                  $$VALUES (9, 1)$$, 'the two keyed tombstones are accepted; one without a key is quarantined');
SELECT is((SELECT validation_error FROM kafka_lake.kv75b_records WHERE status = 'quarantined'),
          'null value (tombstone) without a Kafka key: it deletes no entity', 'a tombstone without a key deletes nothing');
SELECT results_eq($$SELECT "partition", "offset", event::jsonb, event_id FROM kafka_lake.kv75b_records
                     WHERE status = 'accepted' AND (event::jsonb) ? 'op' ORDER BY 1, 2$$,
                  $$VALUES (0, 3::bigint, '{"id": "k2", "op": "d"}'::jsonb, NULL::text), (1, 1, '{"id": "k4", "op": "d"}', NULL)$$,
                  'a tombstone lands as its key''s event with the deletion''s value, no event_id');
SELECT is((SELECT count(*) FROM (SELECT kafka_lake.bridge('kv75b', d) FROM
            (SELECT DISTINCT business_date AS d FROM kafka_lake.kv75b_events) x) y),
          (SELECT count(DISTINCT business_date) FROM kafka_lake.kv75b_events), 'its dates bridge');
SELECT results_eq($$SELECT id, v FROM kafka_lake.kv75b_state ORDER BY id$$,
                  $$VALUES ('k1', 2::bigint), ('k2', 3), ('k3', 1), ('k5', 1)$$,
                  'the state: k4 deleted by its tombstone; k2 deleted, then written again after it');
SELECT is((SELECT attnotnull FROM pg_attribute WHERE attrelid = 'kafka_lake.kv75b_silver'::regclass AND attname = 'v'),
          false, 'silver''s other columns are nullable: a tombstone''s row has only its key');

-- bad entity definitions, each with its path
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}, "op": {"type": "string"}},
    "required": ["k", "v"], "business_date": {"kafka_timestamp": true, "time_zone": "UTC"},
    "entity": {"key": ["k"], "order_by": ["v"], "deleted": {"field": "op", "equals": "d", "tombstones": true}}}$$),
          'invalid contract definition at $.entity.deleted.tombstones: tombstones and order_by exclude each other',
          'tombstones are ordered by their coordinate, not by fields');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}, "d": {"type": "string", "format": "date"}},
    "required": ["k", "v", "d"], "business_date": {"field": "d"}, "entity": {"key": ["k"], "order_by": ["v"], "deleted": {"field": "k", "equals": 3}}}$$),
          'invalid contract definition at $.entity.deleted.equals: value 3 is not a string', 'the deletion value has the field''s type');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "number"}, "d": {"type": "string", "format": "date"}},
    "required": ["k", "v", "d"], "business_date": {"field": "d"}, "entity": {"key": ["k"], "order_by": ["v"]}}$$),
          'invalid contract definition at $.entity.order_by[0]: field "v" cannot order versions', 'an order field is an integer, a date, a date-time or a string');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}, "d": {"type": "string", "format": "date"}},
    "required": ["v", "d"], "business_date": {"field": "d"}, "entity": {"key": ["k"], "order_by": ["v"]}}$$),
          'invalid contract definition at $.entity.key[0]: field "k" cannot be part of the key', 'a key field is required');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
    "required": ["k", "v"], "entity": {"key": ["k"], "order_by": ["v"]}}$$),
          'invalid contract definition at $.entity: an entity stream needs a business_date', 'an entity stream has a business date');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}, "d": {"type": "string", "format": "date"}},
    "required": ["k", "v", "d"], "business_date": {"field": "d"}, "natural_key": ["v"], "entity": {"key": ["k"], "order_by": ["v"]}}$$),
          'invalid contract definition at $.entity.key: the entity key and natural_key differ', 'the key is the natural key');
SELECT is(kl_test.contract_error($${"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}, "d": {"type": "string", "format": "date"}},
    "required": ["k", "v", "d"], "business_date": {"field": "d"}, "entity": {"key": ["k"], "orderby": ["v"]}}$$),
          'invalid contract definition at $.entity: unknown key "orderby"', 'entity''s keys are checked');

SELECT * FROM finish();
