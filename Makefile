# kafka_lake: PGXS build
#
# `make` builds the extension and the test broker (test/broker/kafka_lake_broker,
# a librdkafka mock cluster used by the tests and the demo; it is never installed
# into PostgreSQL).  `make broker` builds the broker alone (test/broker/Makefile),
# and installs nothing.  `make install` installs the extension.  The whole test suite
# runs with `bash test/run` (see README.md), which calls `make installcheck` for
# the pg_regress part.  ICU (libicuuc) does the contract's Unicode trimming
# and lower-casing; Debian's PostgreSQL links the same library.

MODULE_big = kafka_lake
OBJS = \
	src/kafka_lake.o \
	src/options.o \
	src/names.o \
	src/builtin_types.o \
	src/kafka.o \
	src/json.o \
	src/contract.o \
	src/contract_define.o \
	src/digest.o \
	src/batch_format.o \
	src/landing_files.o \
	src/batch_read.o \
	src/fileundo.o \
	src/locks.o \
	src/bulk_insert.o \
	src/catalog.o \
	src/catalog_lifecycle.o \
	src/contract_catalog.o \
	src/source.o \
	src/claim.o \
	src/land.o \
	src/land_worker.o \
	src/recover.o \
	src/readmit.o \
	src/verify.o \
	src/compact.o \
	src/expire.o \
	src/fdw.o \
	src/csv.o \
	src/keyset.o \
	src/catalog_bridge.o \
	src/bridge.o \
	src/bridge_define.o \
	src/bridge_select.o \
	src/bridge_adapter.o \
	src/bridge_silver.o \
	src/bridge_checks.o \
	src/bridge_gold.o \
	src/bridge_closing.o \
	src/catalog_close.o \
	src/catalog_status.o \
	src/source_status.o \
	src/close.o \
	src/late_events.o

EXTENSION = kafka_lake
DATA = sql/kafka_lake--1.0.sql sql/kafka_lake--1.0--1.1.sql sql/kafka_lake--1.1--1.2.sql
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
SHLIB_LINK = -lrdkafka -lcrypto -licuuc -lpthread

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
KL_HEADERS := $(wildcard $(srcdir)/src/*.h)
$(OBJS) $(OBJS:.o=.bc): $(KL_HEADERS)
