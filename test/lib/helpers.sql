-- test/lib/helpers.sql -- helper functions for the pgTAP tests, created by
-- test/run in the test database (schema kl_test).  psql variables broker,
-- broker_dir, bootstrap, server_log, registry, registry_dir and registry_url
-- are set by the harness.

CREATE SCHEMA kl_test;

-- what the harness knows, for functions that run in the server
CREATE TABLE kl_test.env (name text PRIMARY KEY, value text NOT NULL);
INSERT INTO kl_test.env VALUES
  ('broker', :'broker'), ('broker_dir', :'broker_dir'),
  ('bootstrap', :'bootstrap'), ('server_log', :'server_log'),
  ('registry', :'registry'), ('registry_dir', :'registry_dir'),
  ('registry_url', :'registry_url');

-- kl_test.sh(command): run a shell command as the server's user, return stdout
CREATE FUNCTION kl_test.sh(cmd text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  IF to_regclass('pg_temp.kl_sh_out') IS NULL THEN
    CREATE TEMP TABLE kl_sh_out (line text);
  END IF;
  TRUNCATE kl_sh_out;
  EXECUTE format('COPY kl_sh_out FROM PROGRAM %L WITH (FORMAT text, DELIMITER E''\x01'')', cmd);
  SELECT string_agg(line, E'\n') INTO result FROM kl_sh_out;
  RETURN coalesce(result, '');
END $$;

-- kl_test.broker(args): a control command for the test broker
CREATE FUNCTION kl_test.broker(args text) RETURNS text
LANGUAGE sql AS $$
  SELECT kl_test.sh(format('%s ctl --dir %s %s',
    (SELECT value FROM kl_test.env WHERE name = 'broker'),
    (SELECT value FROM kl_test.env WHERE name = 'broker_dir'), args))
$$;

-- kl_test.fill(topic, count, ...): produce seed-style events fast
CREATE FUNCTION kl_test.fill(topic text, count int, partitions int DEFAULT 1,
                             start bigint DEFAULT 1, extra text DEFAULT '') RETURNS text
LANGUAGE sql AS $$
  SELECT kl_test.sh(format('%s fill --bootstrap %s --topic %s --count %s --partitions %s --start %s %s 2>&1',
    (SELECT value FROM kl_test.env WHERE name = 'broker'),
    (SELECT value FROM kl_test.env WHERE name = 'bootstrap'),
    topic, count, partitions, start, extra))
$$;

-- kl_test.bootstrap(): the broker's current bootstrap address
CREATE FUNCTION kl_test.bootstrap() RETURNS text
LANGUAGE sql AS $$ SELECT kl_test.broker('bootstrap') $$;

-- kl_test.server(name): a kafka_lake server on the test broker
CREATE FUNCTION kl_test.server(name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)',
                 name, kl_test.bootstrap());
END $$;

-- kl_test.event(id, ...): one valid machine_event_v1 value
CREATE FUNCTION kl_test.event(id text, units int DEFAULT 10, defects int DEFAULT 0,
                              business_date date DEFAULT '2026-06-29',
                              machine text DEFAULT 'machine-01', line text DEFAULT 'line-01',
                              work_order text DEFAULT 'wo-000001',
                              event_time text DEFAULT NULL) RETURNS bytea
LANGUAGE sql AS $$
  SELECT convert_to(json_build_object(
    'event_id', id, 'schema_version', 1,
    'event_time', coalesce(event_time, business_date::text || 'T08:00:00+09:00'),
    'business_date', business_date::text, 'plant_id', 'plant-01', 'line_id', line,
    'work_order_id', work_order, 'machine_id', machine, 'product_code', 'prd-a',
    'operation', 'assembly', 'units_produced', units, 'defect_count', defects,
    'cycle_time_ms', 1200)::text, 'UTF8')
$$;

-- kl_test.threads(): threads of the calling backend that are still running.  A thread the
-- backend has joined may stay listed in /proc/<pid>/task for a moment after the join (the
-- kernel wakes the joiner in the thread's exit, before it unlists the task; seen under
-- load): such a task carries PF_EXITING (0x4) in the flags of its stat line (field 9,
-- the 7th after the command's closing parenthesis) and is not counted.
CREATE FUNCTION kl_test.threads() RETURNS bigint
LANGUAGE sql AS $$
  SELECT count(*)
  FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task') tid,
       LATERAL pg_read_file('/proc/' || pg_backend_pid() || '/task/' || tid || '/stat', 0, 4096, true) stat
  WHERE stat IS NOT NULL
    AND (split_part(substr(stat, length(stat) - strpos(reverse(stat), ')') + 3), ' ', 7)::bigint & 4) = 0
$$;

-- kl_test.landing(source): the landing directory of a source
CREATE FUNCTION kl_test.landing(source text) RETURNS text
LANGUAGE sql AS $$ SELECT current_setting('data_directory') || '/kafka_lake/' || source $$;

-- kl_test.server_log(): the cluster's log so far
CREATE FUNCTION kl_test.server_log() RETURNS text
LANGUAGE sql AS $$ SELECT pg_read_file((SELECT value FROM kl_test.env WHERE name = 'server_log')) $$;

-- kl_test.private_broker(name, topics...): a broker of the test's own (for faults that must not
-- disturb other tests); returns its bootstrap address.  The harness stops it at the end.
CREATE FUNCTION kl_test.private_broker(name text, VARIADIC topics text[]) RETURNS text
LANGUAGE sql AS $$
  SELECT kl_test.sh(format('mkdir -p %1$s && %2$s serve --dir %1$s --detach %3$s',
    (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '.' || name,
    (SELECT value FROM kl_test.env WHERE name = 'broker'),
    (SELECT string_agg('--topic ' || t, ' ') FROM unnest(topics) t)))
$$;

-- kl_test.private_ctl(name, args): a control command for a private broker
CREATE FUNCTION kl_test.private_ctl(name text, args text) RETURNS text
LANGUAGE sql AS $$
  SELECT kl_test.sh(format('%s ctl --dir %s %s',
    (SELECT value FROM kl_test.env WHERE name = 'broker'),
    (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '.' || name, args))
$$;

-- kl_test.crc32c(bytes): CRC-32C computed in SQL, independently of kafka_lake's C code
CREATE FUNCTION kl_test.crc32c(data bytea) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  tbl bigint[] := '{}';
  c bigint;
  crc bigint := 4294967295;
BEGIN
  FOR n IN 0..255 LOOP
    c := n;
    FOR k IN 1..8 LOOP
      IF c & 1 = 1 THEN c := (c >> 1) # 2197175160; ELSE c := c >> 1; END IF;
    END LOOP;
    tbl := tbl || c;
  END LOOP;
  FOR i IN 0..length(data) - 1 LOOP
    crc := tbl[((crc # get_byte(data, i)) & 255) + 1] # (crc >> 8);
  END LOOP;
  RETURN crc # 4294967295;
END $$;

-- kl_test.registry(command): a control command for the Schema Registry test peer
-- (test/registry/registry.py: '{"mode": "down"}', 'state', ...); returns its answer
CREATE FUNCTION kl_test.registry(command text) RETURNS text
LANGUAGE sql AS $$
  SELECT kl_test.sh(format('python3 %s ctl --dir %s %s',
    (SELECT value FROM kl_test.env WHERE name = 'registry'),
    (SELECT value FROM kl_test.env WHERE name = 'registry_dir'),
    CASE WHEN command IN ('state', 'shutdown') THEN command
         ELSE quote_literal(command) END))
$$;

-- kl_test.registry_url(): the peer's base URL (http://127.0.0.1:port)
-- kl_test.registry_reset(): the registry peer as new (no schemas, no faults, no auth),
-- and kafka_lake.schemas without the rows of its URL: a registry that forgets its
-- schemas and gives their ids to others is one kafka_lake refuses (XX001), as it must
CREATE FUNCTION kl_test.registry_reset() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM kl_test.registry('{"mode": "ok", "auth": null, "delay_ms": 0, "reset": true}');
  DELETE FROM kafka_lake.schemas WHERE registry_url LIKE kl_test.registry_url() || '%';
END $$;

-- kl_test.registry_guid(id): the GUID the peer gives schema id (GET /schemas/ids/{id})
CREATE FUNCTION kl_test.registry_guid(id int) RETURNS uuid
LANGUAGE plpgsql AS $$
BEGIN
  RETURN substring(kl_test.sh(format('python3 %s get --dir %s /schemas/ids/%s',
    (SELECT value FROM kl_test.env WHERE name = 'registry'),
    (SELECT value FROM kl_test.env WHERE name = 'registry_dir'), id))
    FROM '^200 .*"guid": "([0-9a-f-]{36})"')::uuid;
END $$;

CREATE FUNCTION kl_test.registry_url() RETURNS text
LANGUAGE sql AS $$ SELECT value FROM kl_test.env WHERE name = 'registry_url' $$;

-- kl_test.registry_register(subject, schema, schema_type): register a schema through the
-- peer's REST API, as a client does; returns its id
CREATE FUNCTION kl_test.registry_register(subject text, schema text, schema_type text DEFAULT NULL,
                                          auth text DEFAULT NULL) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  answer text;
BEGIN
  answer := kl_test.sh(format('python3 %s post --dir %s %s %s %s',
    (SELECT value FROM kl_test.env WHERE name = 'registry'),
    (SELECT value FROM kl_test.env WHERE name = 'registry_dir'),
    CASE WHEN auth IS NULL THEN '' ELSE '--auth ' || quote_literal(auth) END,
    quote_literal('/subjects/' || subject || '/versions'),
    translate(encode(convert_to(json_strip_nulls(json_build_object('schema', schema,
                                                                   'schemaType', schema_type))::text,
                                'UTF8'), 'base64'), E'\n', '')));
  IF answer NOT LIKE '200 %' THEN
    RAISE EXCEPTION 'registering under % failed: %', subject, answer;
  END IF;
  RETURN (substr(answer, 5)::json ->> 'id')::int;
END $$;

-- kl_test.contract_error(definition): the message (or, hint => true, the hint) of
-- the 42P17 that create_contract raises for a definition, or 'accepted' (then a
-- version of contract kl_test_probe is created)
CREATE FUNCTION kl_test.contract_error(definition text, hint boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  h text;
BEGIN
  PERFORM kafka_lake.create_contract('kl_test_probe', definition::json);
  RETURN 'accepted';
EXCEPTION WHEN invalid_object_definition THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN CASE WHEN hint THEN h ELSE SQLERRM END;
END $$;
