# kafka_lake: PGXS build
#
# `make` builds the extension and the test broker (test/broker/kafka_lake_broker,
# a librdkafka mock cluster used by the tests and the demo; it is never installed
# into PostgreSQL).  `make broker` builds the broker alone (test/broker/Makefile),
# and installs nothing.  `make install` installs the extension.  The whole test suite
# runs with `bash test/run` (see README.md), which calls `make installcheck` for
# the pg_regress part.  ICU (libicuuc) does the contract's Unicode trimming
# and lower-casing; Debian's PostgreSQL links the same library.  libcurl
# (libcurl4-openssl-dev) talks to a server's Confluent Schema Registry.

MODULE_big = kafka_lake
OBJS = \
	src/base/digest.o \
	src/base/json.o \
	src/base/keyset.o \
	src/base/names.o \
	src/base/bulk_insert.o \
	src/base/builtin_types.o \
	src/base/fault.o \
	src/base/settings.o \
	src/base/data_dir.o \
	src/base/args.o \
	src/base/thread_job.o \
	src/contract/iso8601.o \
	src/contract/contract.o \
	src/contract/contract_define.o \
	src/format/batch_format.o \
	src/format/avro.o \
	src/format/parquet.o \
	src/format/export_manifest.o \
	src/kl_catalog/catalog.o \
	src/kl_catalog/catalog_lifecycle.o \
	src/kl_catalog/catalog_exclusions.o \
	src/kl_catalog/catalog_status.o \
	src/kl_catalog/contract_catalog.o \
	src/kl_catalog/avro_contract.o \
	src/kl_catalog/locks.o \
	src/kafka/options.o \
	src/kafka/kafka.o \
	src/kafka/registry.o \
	src/landing/avro_land.o \
	src/landing/landing_files.o \
	src/landing/fileundo.o \
	src/landing/source_lock.o \
	src/landing/batch_read.o \
	src/landing/recover.o \
	src/landing/exclusion_files.o \
	src/landing/verify.o \
	src/landing/land_worker.o \
	src/landing/land.o \
	src/landing/source_status.o \
	src/lifecycle/compact.o \
	src/lifecycle/expire.o \
	src/lifecycle/readmit.o \
	src/lifecycle/exclude.o \
	src/fdw/fdw.o \
	src/bridge/csv.o \
	src/bridge/catalog_bridge.o \
	src/bridge/catalog_close.o \
	src/bridge/bridge_define.o \
	src/bridge/bridge_select.o \
	src/bridge/bridge_adapter.o \
	src/bridge/bridge_silver.o \
	src/bridge/bridge_checks.o \
	src/bridge/bridge_gold.o \
	src/bridge/bridge_closing.o \
	\
	src/bridge/bridge.o \
	src/close/close.o \
	src/close/late_events.o \
	src/close/shard_gold.o \
	src/export/export.o \
	src/export/export_table.o \
	src/kafka_lake.o \
	src/source.o \
	src/claim.o

EXTENSION = kafka_lake
DATA = sql/kafka_lake--1.0.sql sql/kafka_lake--1.0--1.1.sql sql/kafka_lake--1.1--1.2.sql \
       sql/kafka_lake--1.2--1.3.sql sql/kafka_lake--1.3--1.4.sql sql/kafka_lake--1.4--1.5.sql \
       sql/kafka_lake--1.5--1.6.sql sql/kafka_lake--1.6--1.7.sql \
       sql/kafka_lake--1.7--1.8.sql sql/kafka_lake--1.8--1.9.sql sql/kafka_lake--1.9--1.10.sql \
       sql/kafka_lake--1.10--1.11.sql sql/kafka_lake--1.11--1.12.sql \
       sql/kafka_lake--1.12--1.13.sql
PGFILEDESC = "kafka_lake - land Kafka topics into immutable JSONL"

# pg_regress tests, sql/<name>.sql against expected/<name>.out.  REGRESS
# needs nothing but the installed extension, so `make installcheck` runs on
# any server; REGRESS_BROKER needs the test broker too, and runs when its
# address is in KL_BOOTSTRAP (test/run starts one and exports it).
REGRESS = options privileges settings names nulls contracts golds
REGRESS_BROKER = fdw
ifneq ($(KL_BOOTSTRAP),)
REGRESS += $(REGRESS_BROKER)
endif
REGRESS_OPTS = --inputdir=. --load-extension=btree_gist

PG_CPPFLAGS = -I$(srcdir)/src
# Warnings are errors in CI only (.ci/run adds COPT=-Werror, which PGXS
# appends to CFLAGS): a newer compiler's new warning must not break a user's
# build.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lrdkafka -lcrypto -licuuc -lpthread -lcurl -lzstd

EXTRA_CLEAN = test/broker/kafka_lake_broker

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

all: test/broker/kafka_lake_broker

# the test broker alone (test/broker/Makefile: librdkafka, no PostgreSQL)
broker: test/broker/kafka_lake_broker

test/broker/kafka_lake_broker: test/broker/kafka_lake_broker.c
	$(MAKE) -C test/broker kafka_lake_broker

.PHONY: broker

# PGXS tracks no header dependencies: every object is rebuilt when any of
# kafka_lake's own headers changes (a struct that changes size must not
# leave an object compiled against the old one).
KL_HEADERS := $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)
$(OBJS) $(OBJS:.o=.bc): $(KL_HEADERS)
