-- test/pgtap/29f_fuzz_regress.sql: what the fuzz targets (fuzz/) found in the product
-- that SQL reaches, each case with the name of its input in fuzz/corpus/<target>/regress-*.
-- avro_decode's output limit (64 MB of text) is on the text: a string whose worst-case
-- escaping (6 bytes a byte) is past the limit but whose text is not decodes (fuzz_avro:
-- regress-limit-string-worst-case), and one whose escaped text is past it is 22P02; an
-- empty union is not a schema (regress-empty-union).  Needs no broker.
SELECT plan(3);

-- a varint length of 11,000,000 (zigzag 80 e3 be 0a) and as many bytes
SELECT is(length(kafka_lake.avro_decode('\x80e3be0a'::bytea || convert_to(repeat('a', 11000000), 'UTF8'),
                                         '"string"')::text),
          11000002,
          'avro_decode: an 11 MB ASCII string decodes (its worst-case escaping is past the 64 MB limit)');


-- 12,000,000 control characters (zigzag 80 ec b8 0b), 72 MB escaped as \u0001
SELECT throws_ok($$SELECT kafka_lake.avro_decode('\x80ecb80b'::bytea || convert_to(repeat(E'\x01', 12000000), 'UTF8'),
                                                 '"string"')$$,
                 '22P02', NULL,
                 'avro_decode: the refusal of a text past the limit is 22P02');

-- fuzz_avro: an empty union was accepted as a schema and then failed to resolve against
-- itself (42804); no datum is of it, so it is not a schema (42P17)
SELECT throws_ok($$SELECT kafka_lake.avro_decode('\x00'::bytea, '[]')$$, '42P17', NULL,
                 'avro_decode: an empty union is not a schema (42P17)');

SELECT * FROM finish();
