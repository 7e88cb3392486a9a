--
-- contracts: the definition language of create_contract(), every bad
-- definition with its error (SQLSTATE 42P17, the JSON path of the bad key,
-- a hint saying what is allowed there, "Perhaps you meant" for near
-- misses), versions, the built-ins, alter_source() and readmit() refusals,
-- NULL arguments and privileges of the contract functions.  Needs no broker
-- (no source is created: alter_source and readmit are refused before they
-- need one).
--
CREATE EXTENSION kafka_lake;

-- the SQLSTATE, message and hint of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  hint text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(E'\n  HINT: ' || nullif(hint, ''), E'\n  no hint');
END $$;

-- a definition that is fine, and one that is not
CREATE FUNCTION pg_temp.bad(definition text) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.error_of(format('SELECT kafka_lake.create_contract(%L, %L)', 'probe', definition))
$$;

-- the built-ins, in the catalog
SELECT contract, version, builtin, created_by FROM kafka_lake.contracts ORDER BY contract;
SELECT definition::text FROM kafka_lake.contracts WHERE contract IN ('json_object', 'raw') ORDER BY contract;
SELECT json_object_keys(definition) FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
SELECT json_object_keys(definition -> 'properties') FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';

-- versions: a new name is 1, the same definition the same version (also
-- written otherwise), another definition the next one
SELECT kafka_lake.create_contract('orders_v1', '{"type": "object", "properties": {"order_id": {"type": "string"}}}');
SELECT kafka_lake.create_contract('orders_v1', '{ "type":"object","properties" : {"order\u005fid":{"type":"string"}} }');
SELECT kafka_lake.create_contract('orders_v1', '{"type": "object", "properties": {"order_id": {"type": "string", "minLength": 1}}}');
SELECT kafka_lake.create_contract('orders_v1', '{"type": "object", "properties": {"order_id": {"type": "string"}}}');
SELECT contract, version FROM kafka_lake.contracts WHERE contract = 'orders_v1' ORDER BY version;
-- member order is meaningful (it is the order of the checks): another version
SELECT kafka_lake.create_contract('pair', '{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}');
SELECT kafka_lake.create_contract('pair', '{"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}}');
-- machine_event_v1 written by an owner is a contract like any other
SELECT kafka_lake.create_contract('machine_events_copy', definition)
  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
-- every keyword at once
SELECT kafka_lake.create_contract('everything', $${
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "every keyword", "description": "a test", "$comment": "of each keyword",
  "type": "object",
  "properties": {
    "id":       {"type": "integer", "minimum": 1, "maximum": 1000000, "title": "id"},
    "code":     {"type": "string", "normalize": ["trim", "lower"], "minLength": 2, "maxLength": 8,
                 "pattern": "^[a-z]+-[0-9]+$", "description": "a code"},
    "kind":     {"type": "string", "enum": ["a", "b"]},
    "version":  {"type": "integer", "const": 2},
    "price":    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100.5, "sql_type": "numeric(8,2)"},
    "cost":     {"type": "number", "minimum": 0},
    "day":      {"type": "string", "format": "date"},
    "at":       {"type": "string", "format": "date-time"},
    "flag":     {"type": ["boolean", "null"]},
    "tags":     {"type": "array", "items": {"type": "string", "maxLength": 3}},
    "who":      {"type": "object", "properties": {"name": {"type": "string"}},
                 "required": ["name"], "additionalProperties": false},
    "origin":   {"type": "string", "header": "origin", "$comment": "a Kafka header"}
  },
  "required": ["id", "code", "day", "at"],
  "additionalProperties": false,
  "event_id": "id",
  "schema_version": "version",
  "business_date": {"field": "at", "time_zone": "Europe/Berlin"},
  "rules": ["cost <= price", "id > 0", "day <> day"],
  "max_value_bytes": 4096,
  "columns": ["id", "code", "kind", "version", "price", "cost", "day", "at", "flag", "tags", "who", "origin"],
  "natural_key": ["id", "code"]
}$$);
SELECT kafka_lake.create_contract('kafka_day', '{"type": "object", "business_date": {"kafka_timestamp": true, "time_zone": "UTC"}}');
SELECT kafka_lake.create_contract('raw_days', '{"raw": true, "business_date": {"kafka_timestamp": true, "time_zone": "Asia/Tokyo"}, "max_value_bytes": 1048576}');

-- names
SELECT pg_temp.error_of($$SELECT kafka_lake.create_contract('Orders', '{"type": "object"}')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_contract('1orders', '{"type": "object"}')$$);
SELECT pg_temp.error_of(format('SELECT kafka_lake.create_contract(%L, %L)', repeat('o', 64), '{"type": "object"}'));
SELECT pg_temp.error_of($$SELECT kafka_lake.create_contract('machine_event_v1', '{"type": "object"}')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.create_contract('raw', '{"raw": true}')$$);

-- the shape of a definition
SELECT pg_temp.bad('[]');
SELECT pg_temp.bad('"object"');
SELECT pg_temp.bad('{}');
SELECT pg_temp.bad('{"type": "array"}');
SELECT pg_temp.bad('{"type": ["object"]}');
SELECT pg_temp.bad('{"type": "object", "type": "object"}');
SELECT pg_temp.bad('{"type": "object", "title": "\ud800"}');

-- keys at the top
SELECT pg_temp.bad('{"type": "object", "requird": []}');
SELECT pg_temp.bad('{"type": "object", "eventid": "a"}');
SELECT pg_temp.bad('{"type": "object", "oneOf": []}');
SELECT pg_temp.bad('{"type": "object", "zzz": 1}');
SELECT pg_temp.bad('{"type": "object", "properties": []}');
SELECT pg_temp.bad('{"type": "object", "properties": {"": {"type": "string"}}}');
SELECT pg_temp.bad('{"type": "object", "additionalProperties": {"type": "string"}}');
SELECT pg_temp.bad('{"type": "object", "required": "a"}');
SELECT pg_temp.bad('{"type": "object", "required": ["a"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]}');
SELECT pg_temp.bad('{"type": "object", "max_value_bytes": 0}');
SELECT pg_temp.bad('{"type": "object", "max_value_bytes": 16777217}');
SELECT pg_temp.bad('{"type": "object", "max_value_bytes": 1.5}');

-- a property
SELECT pg_temp.bad('{"type": "object", "properties": {"a": 1}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "strng"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "text"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": []}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": ["string", "string"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": 1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "minLenght": 1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "sqltype": "text"}}}}}');
-- strings
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "minLength": 1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "maxLength": "3"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "minLength": 4, "maxLength": 3}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "pattern": "(a"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "pattern": 1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "pattern": "a"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "format": "datetime"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "number", "format": "date"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "normalize": "trim"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "normalize": ["trimm"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "normalize": ["trim", "trim"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "normalize": ["upper"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "boolean", "normalize": ["lower"]}}}');
-- numbers
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "minimum": 0}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "minimum": "0"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "exclusiveMinimum": true}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "exclusiveMaximum": false}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "number", "minimum": 10, "maximum": 9.99}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "boolean", "maximum": 1}}}');
-- enum and const
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": "x"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": []}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "x"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": ["x", 1]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "enum": [1.5]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": [{"x": 1}]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "const": "x"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "const": "1"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "enum": ["x", null]}}}');
-- objects and arrays
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "properties": {}}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "required": ["b"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object", "required": ["b"]}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object", "additionalProperties": 1}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "items": {"type": "string"}}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "strin"}}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}');
-- kafka_lake's own per property
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer", "header": "h"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "header": ""}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "header": "h"}}}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "number", "sql_type": "numerc(12,2)"}}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "sql_type": "text"}}}}}');

-- kafka_lake's own at the top
SELECT pg_temp.bad('{"type": "object", "event_id": "id"}');
SELECT pg_temp.bad('{"type": "object", "properties": {"id": {"type": "string"}}, "event_id": "id"}');
SELECT pg_temp.bad('{"type": "object", "properties": {"id": {"type": "boolean"}}, "required": ["id"], "event_id": "id"}');
SELECT pg_temp.bad('{"type": "object", "properties": {"id": {"type": ["string", "null"]}}, "required": ["id"], "event_id": "id"}');
SELECT pg_temp.bad('{"type": "object", "event_id": 1}');
SELECT pg_temp.bad('{"type": "object", "schema_version": "v"}');
SELECT pg_temp.bad('{"type": "object", "business_date": "day"}');
SELECT pg_temp.bad('{"type": "object", "business_date": {"feild": "day"}}');
SELECT pg_temp.bad('{"type": "object", "business_date": {}}');
SELECT pg_temp.bad('{"type": "object", "business_date": {"field": "day"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "business_date": {"field": "day"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"], "business_date": {"field": "day"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"], "business_date": {"field": "day", "time_zone": "UTC"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}, "required": ["at"], "business_date": {"field": "at"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}, "required": ["at"], "business_date": {"field": "at", "time_zone": "Europe/Berln"}}');
SELECT pg_temp.bad('{"type": "object", "business_date": {"kafka_timestamp": true}}');
SELECT pg_temp.bad('{"type": "object", "business_date": {"kafka_timestamp": false, "time_zone": "UTC"}}');
SELECT pg_temp.bad('{"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}, "required": ["at"], "business_date": {"field": "at", "kafka_timestamp": true, "time_zone": "UTC"}}');
SELECT pg_temp.bad('{"type": "object", "rules": "a < b"}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer"}}, "rules": ["a << 1"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer"}}, "rules": ["a <= b"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer"}}, "rules": ["a <= 1 2"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer"}}, "rules": ["a <= 1x"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "rules": ["a <= 1"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "format": "date"}}, "rules": ["a <= 1"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "format": "date"}}, "rules": ["a <= b"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string", "format": "date"}, "b": {"type": "string", "format": "date-time"}}, "rules": ["a <= b"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "columns": "a"}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "columns": ["b"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "columns": ["a", "a"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "columns": ["a"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "string"}}, "natural_key": ["a"]}');
SELECT pg_temp.bad('{"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"], "natural_key": ["a"]}');
SELECT pg_temp.bad('{"type": "object", "natural_key": ["nope"]}');

-- raw contracts
SELECT pg_temp.bad('{"raw": false}');
SELECT pg_temp.bad('{"raw": true, "properties": {}}');
SELECT pg_temp.bad('{"raw": true, "business_date": {"field": "x"}}');
SELECT pg_temp.bad('{"raw": "yes"}');

-- alter_source, readmit: refused before any source is needed
SELECT pg_temp.error_of($$SELECT kafka_lake.alter_source('nope', 'orders_v1')$$);
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.readmit('nope')$$);

-- a NULL where a value is needed: 22004 with a hint
SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT kafka_lake.create_contract(NULL, '{"type": "object"}')$$),
    ($$SELECT kafka_lake.create_contract('c', NULL)$$),
    ($$SELECT kafka_lake.alter_source(NULL, 'orders_v1')$$),
    ($$SELECT kafka_lake.alter_source('s', NULL)$$),
    ($$SELECT * FROM kafka_lake.readmit(NULL)$$)) AS t(q);

-- privileges: nothing is granted to PUBLIC
CREATE ROLE regress_contracts_plain;
GRANT USAGE ON SCHEMA kafka_lake TO regress_contracts_plain;
SET ROLE regress_contracts_plain;
SELECT pg_temp.error_of(q)
  FROM (VALUES
    ($$SELECT kafka_lake.create_contract('c', '{"type": "object"}')$$),
    ($$SELECT kafka_lake.alter_source('s', 'orders_v1')$$),
    ($$SELECT * FROM kafka_lake.readmit('s')$$),
    ($$SELECT * FROM kafka_lake.contracts$$)) AS t(q);
RESET ROLE;
REVOKE USAGE ON SCHEMA kafka_lake FROM regress_contracts_plain;
DROP ROLE regress_contracts_plain;

DROP EXTENSION kafka_lake;
