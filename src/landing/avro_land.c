/*-------------------------------------------------------------------------
 *
 * avro_land.c
 *	  Records of an Avro contract: the writer schema of each record found
 *	  and resolved against the contract's reader schema, on the backend,
 *	  before a window is judged; the datum decoded into JSON text, which
 *	  the contract then judges as the record's value, on either thread.
 *
 * BEFORE JUDGING (backend: kl_avro_landing_prepare)
 *
 * Each new record's schema id is read from its Confluent framing (magic
 * byte 0, a 4-byte id, the datum), or from a __value_schema_id header, whose
 * datum is then the whole value.  A record that names its writer by GUID
 * (magic byte 1 and 16 bytes, in the framing or the header, as Confluent's
 * newer clients write) gets the id of that schema under the contract's
 * subject (kl_registry_schema_by_guid: kafka_lake.schemas, which keeps the
 * GUID, else the registry), and is that id's from then on: the manifest
 * names the id.  Each id the call has not seen yet is
 * looked up (kl_registry_schema_by_id: kafka_lake.schemas first, then the
 * server's registry, within the call's deadline), parsed, and resolved
 * against the contract's reader schema into a program.  The programs are
 * kept by the backend (kl_avro_backend_program), keyed by the server, its
 * registry URL, the compiled reader schema and the id, in a child of the
 * contract's memory, so that they go when the contract is compiled again;
 * each call also keeps the ids it met in a small list of its own.
 * What can be said of one record alone makes that record QUARANTINED, with
 * a validation_error naming the schema id and what is wrong: no or an
 * unknown magic byte, an id or a GUID the registry does not know (its
 * 404, 42704, caught here in a subtransaction), a schema that is not Avro or
 * does not parse, a writer schema the reader cannot read.  Bad input never
 * blocks a partition.  A registry that is down, slow, failing or refusing
 * us is none of those: its error (HV00N, 28000, ...) stops the call before
 * anything of the window is durable, and the next call goes on.
 *
 * JUDGING (any thread: kl_avro_record_value)
 *
 * kl_avro_decode runs the record's program over its datum into a KlAvroOut
 * of the job's (malloc'd: no palloc, no ereport on the helper thread); a
 * datum that does not decode is quarantined with the decoder's message
 * (field path and byte offset).  The raw bytes stay the record's: the
 * fingerprint is over them and a quarantined record keeps them as landed,
 * so readmit() can decode them again (kl_avro_judge_record) under the
 * source's contract then, through kafka_lake.schemas without the registry.
 *
 * IDENTIFICATION
 *	  src/landing/avro_land.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "kafka/options.h"
#include "kafka/registry.h"
#include "kl_catalog/avro_contract.h"
#include "landing/avro_land.h"

/* the registry's time for one id, at least, whatever is left of the call's */
#define KL_AVRO_MIN_REGISTRY_MS		1000

/*
 * The writer schema ids (and GUIDs) one call looks up, at most.  A topic has
 * a handful of writers; a producer that frames each record with another
 * unknown id would otherwise make a call ask the registry once a record,
 * each time with at least KL_AVRO_MIN_REGISTRY_MS, and search a list as
 * long as the window: the partition would stall behind bad input.  Past the
 * bound, a record of an id the call has not met is quarantined, saying so
 * (readmit() judges it again), and the partition moves on.
 */
#define KL_AVRO_MAX_WRITERS			256

/* One writer schema id (or GUID), as this call found it */
typedef struct KlAvroWriter
{
	int64		schema_id;		/* -1: a GUID the registry gave no id of */
	bool		by_guid;		/* found by guid */
	uint8		guid[16];
	const KlAvroProgram *program;	/* resolved, or NULL */
	const char *error;			/* or why not */
} KlAvroWriter;

struct KlAvroLanding
{
	const KlContract *contract;
	char	   *subject;		/* the contract's registry subject, or NULL */
	ForeignServer *server;
	MemoryContext cxt;			/* the programs' (the call's) */
	int			nwriters;
	int			cap;
	KlAvroWriter *writers;
};

/*
 * kl_avro_landing_begin
 *		The Avro state of a call that lands or re-admits with contract c
 *		(an Avro contract) from source's server, kept in cxt.
 */
KlAvroLanding *
kl_avro_landing_begin(const KlContract *c, const char *server, MemoryContext cxt)
{
	KlAvroLanding *al = MemoryContextAllocZero(cxt, sizeof(KlAvroLanding));

	al->contract = c;
	al->subject = kl_avro_definition_subject_name(c->definition);
	if (al->subject != NULL)
		al->subject = MemoryContextStrdup(cxt, al->subject);
	al->server = kl_get_server(server);
	al->cxt = cxt;
	return al;
}

/*
 * kl_avro_ask_registry
 *		The writer schema of id, or of guid when it is not NULL (its id then
 *		in *id), looked up in a subtransaction: its text and type in al's
 *		memory, or NULL and *error when the registry does not know it (42704:
 *		an error of the records that carry it, which may be registered
 *		later).  Every other error of the registry is the call's.
 */
static KlRegistrySchema *
kl_avro_ask_registry(KlAvroLanding *al, int32 id, const uint8 *guid, TimestampTz call_deadline,
					 const char **error)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	KlRegistrySchema *volatile found = NULL;
	TimestampTz least = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), KL_AVRO_MIN_REGISTRY_MS);
	volatile TimestampTz deadline = Max(call_deadline, least);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		KlRegistrySchema *rs = guid != NULL ?
			kl_registry_schema_by_guid(al->server, guid, al->subject, deadline) :
			kl_registry_schema_by_id(al->server, id, deadline);
		KlRegistrySchema *copy = MemoryContextAllocZero(al->cxt, sizeof(KlRegistrySchema));

		copy->id = rs->id;
		copy->schema = MemoryContextStrdup(al->cxt, rs->schema);
		copy->schema_type = MemoryContextStrdup(al->cxt, rs->schema_type);
		found = copy;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(caller);
		ed = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		if (ed->sqlerrcode != ERRCODE_UNDEFINED_OBJECT)
			ReThrowError(ed);
		*error = MemoryContextStrdup(al->cxt, ed->message);	/* "schema id 7 is not in ..." */
		return NULL;
	}
	PG_END_TRY();
	return found;
}

/*
 * kl_avro_fetch_writer
 *		The writer schema of id, resolved: a program, or NULL and *error.
 *		An id the registry does not know (42704) is an error of the records
 *		that carry it; every other error of the registry is the call's.
 */
static const KlAvroProgram *
kl_avro_fetch_writer(KlAvroLanding *al, int32 id, TimestampTz call_deadline, MemoryContext into,
					 const char **error, bool *lasting)
{
	KlRegistrySchema *rs = kl_avro_ask_registry(al, id, NULL, call_deadline, error);
	const char *text;
	const char *type;

	if (rs == NULL)
	{
		*lasting = false;		/* the id may be registered later */
		return NULL;
	}
	text = rs->schema;
	type = rs->schema_type;

	*lasting = true;			/* an id's schema never changes */
	if (strcmp(type, "AVRO") != 0)
	{
		*error = MemoryContextStrdup(into,
									 psprintf("schema id %d is a %s schema, not an Avro one", id, type));
		return NULL;
	}

	/* a writer schema that does not parse, or does not resolve, is the records' */
	{
		MemoryContext old = MemoryContextSwitchTo(into);
		const KlAvroProgram *volatile program = NULL;
		char	   *volatile why = NULL;

		PG_TRY();
		{
			KlAvroSchema *writer = kl_avro_schema_parse(text, strlen(text));

			char	   *because = NULL;

			program = kl_avro_resolve(writer, al->contract->avro, &because);
			why = because;
		}
		PG_CATCH();
		{
			ErrorData  *ed;

			MemoryContextSwitchTo(into);
			ed = CopyErrorData();
			if (ed->sqlerrcode != ERRCODE_INVALID_OBJECT_DEFINITION)
			{
				MemoryContextSwitchTo(old);
				PG_RE_THROW();
			}
			FlushErrorState();
			why = ed->message;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		if (program == NULL)
		{
			*error = MemoryContextStrdup(into,
										 psprintf("schema id %d cannot be read with the schema of contract \"%s\" version %d: %s",
												  id, al->contract->name, al->contract->version,
												  why ? why : "unresolvable"));
			return NULL;
		}
		return program;
	}
}

/* The backend's programs: (server, its registry URL, reader schema, id) */
typedef struct KlAvroProgramKey
{
	Oid			server;
	uint32		url_hash;
	const void *reader;
	int32		schema_id;
} KlAvroProgramKey;

typedef struct KlAvroProgramEntry
{
	KlAvroProgramKey key;
	char	   *url;			/* the registry URL, in cxt */
	MemoryContext cxt;			/* the program's, a child of the contract's */
	const KlAvroProgram *program;
	const char *error;
} KlAvroProgramEntry;

static HTAB *kl_avro_programs = NULL;

/*
 * kl_avro_program_forget
 *		A reset callback of an entry's context: its contract's context is
 *		going (the contract was compiled again), and the entry with it.
 */
static void
kl_avro_program_forget(void *arg)
{
	KlAvroProgramKey *key = arg;

	if (kl_avro_programs != NULL)
		hash_search(kl_avro_programs, key, HASH_REMOVE, NULL);
}

/*
 * kl_avro_registry_url
 *		The server's "schema.registry.url", or "" without one.
 */
static const char *
kl_avro_registry_url(ForeignServer *server)
{
	ListCell   *lc;

	foreach(lc, server->options)
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, "schema.registry.url") == 0)
			return defGetString(d);
	}
	return "";
}

/*
 * kl_avro_backend_program
 *		The program of schema id for the call's contract: kept by the
 *		backend once made (a schema id's schema never changes), in memory
 *		of the contract's own (so it goes when the contract is compiled
 *		again), else found and resolved now.  An id the registry does not
 *		know is not kept: it may be registered later.
 */
static void
kl_avro_backend_program(KlAvroLanding *al, int32 id, TimestampTz deadline, KlAvroWriter *w)
{
	const char *url = kl_avro_registry_url(al->server);
	KlAvroProgramKey key;
	KlAvroProgramEntry *e;
	MemoryContext cxt;
	MemoryContextCallback *cb;
	bool		lasting = false;
	bool		found;

	if (kl_avro_programs == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(KlAvroProgramKey);
		ctl.entrysize = sizeof(KlAvroProgramEntry);
		ctl.hcxt = CacheMemoryContext;
		kl_avro_programs = hash_create("kafka_lake Avro programs", 64, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.server = al->server->serverid;
	key.url_hash = hash_bytes((const unsigned char *) url, strlen(url));
	key.reader = al->contract->avro;
	key.schema_id = id;
	e = hash_search(kl_avro_programs, &key, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->url, url) == 0)
	{
		w->program = e->program;
		w->error = e->error;
		return;
	}

	cxt = AllocSetContextCreate(GetMemoryChunkContext((void *) al->contract->avro),
								"kafka_lake Avro program", ALLOCSET_SMALL_SIZES);
	PG_TRY();
	{
		w->program = kl_avro_fetch_writer(al, id, deadline, cxt, &w->error, &lasting);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!lasting)
	{
		if (w->error)
			w->error = MemoryContextStrdup(al->cxt, w->error);
		MemoryContextDelete(cxt);
		return;
	}
	if (e != NULL)
		MemoryContextDelete(e->cxt);	/* another URL: its callback removes it */
	e = hash_search(kl_avro_programs, &key, HASH_ENTER, &found);
	e->url = MemoryContextStrdup(cxt, url);
	e->cxt = cxt;
	e->program = w->program;
	e->error = w->error;
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = kl_avro_program_forget;
	cb->arg = MemoryContextAlloc(cxt, sizeof(KlAvroProgramKey));
	memcpy(cb->arg, &key, sizeof(key));
	MemoryContextRegisterResetCallback(cxt, cb);
}

/*
 * kl_avro_writer_slot
 *		Room for one more entry of the call's (the caller counts it in).
 *		Entries move as the array grows: a pointer to one is good until the
 *		next slot.
 */
static KlAvroWriter *
kl_avro_writer_slot(KlAvroLanding *al)
{
	KlAvroWriter *w;

	if (al->nwriters == al->cap)
	{
		al->cap = Max(8, al->cap * 2);
		al->writers = al->writers == NULL ?
			MemoryContextAlloc(al->cxt, sizeof(KlAvroWriter) * al->cap) :
			repalloc(al->writers, sizeof(KlAvroWriter) * al->cap);
	}
	w = &al->writers[al->nwriters];
	memset(w, 0, sizeof(*w));
	return w;
}

/*
 * kl_avro_writer_met
 *		The call's entry of schema id (guid NULL) or of a GUID, or NULL when
 *		the call has not met it.
 */
static const KlAvroWriter *
kl_avro_writer_met(const KlAvroLanding *al, int64 id, const uint8 *guid)
{
	for (int i = 0; i < al->nwriters; i++)
	{
		const KlAvroWriter *w = &al->writers[i];

		if (guid == NULL ? (!w->by_guid && w->schema_id == id) :
			(w->by_guid && memcmp(w->guid, guid, 16) == 0))
			return w;
	}
	return NULL;
}

/*
 * kl_avro_writer
 *		The call's entry of schema id, looked up now if it has none.
 */
static const KlAvroWriter *
kl_avro_writer(KlAvroLanding *al, int64 id, TimestampTz deadline)
{
	KlAvroWriter *w;
	const KlAvroWriter *met = kl_avro_writer_met(al, id, NULL);

	if (met != NULL)
		return met;
	w = kl_avro_writer_slot(al);
	w->schema_id = id;
	w->error = NULL;
	if (id > PG_INT32_MAX)
	{
		w->program = NULL;
		w->error = MemoryContextStrdup(al->cxt,
									   psprintf("schema id %lld is out of the registry's range", (long long) id));
	}
	else
		kl_avro_backend_program(al, (int32) id, deadline, w);
	al->nwriters++;
	return w;
}

/*
 * kl_avro_guid_id
 *		The schema id of a GUID under the contract's subject, or -1 and
 *		*error when the registry does not know it (as an unknown id).
 */
static int64
kl_avro_guid_id(KlAvroLanding *al, const uint8 *guid, TimestampTz call_deadline,
				const char **error)
{
	KlRegistrySchema *rs = kl_avro_ask_registry(al, 0, guid, call_deadline, error);

	return rs != NULL ? rs->id : -1;
}

/*
 * kl_avro_writer_guid
 *		The call's entry of a schema GUID: its id's (kl_avro_writer), or
 *		why it has none.
 */
static const KlAvroWriter *
kl_avro_writer_guid(KlAvroLanding *al, const uint8 *guid, TimestampTz deadline)
{
	const char *error = NULL;
	int64		id;
	KlAvroWriter *w;
	const KlAvroWriter *met = kl_avro_writer_met(al, 0, guid);

	if (met != NULL)
		return met;
	id = kl_avro_guid_id(al, guid, deadline, &error);
	if (id >= 0)
		w = (KlAvroWriter *) kl_avro_writer(al, id, deadline);
	else
	{
		w = kl_avro_writer_slot(al);
		w->schema_id = -1;
		w->program = NULL;
		w->error = error;
		al->nwriters++;
	}
	/* the GUID's own entry, a copy of its id's */
	{
		KlAvroWriter copy = *w;
		KlAvroWriter *g;

		if (id >= 0)
		{
			g = kl_avro_writer_slot(al);
			*g = copy;
			al->nwriters++;
		}
		else
			g = w;
		g->by_guid = true;
		memcpy(g->guid, guid, 16);
		return g;
	}
}

/*
 * kl_avro_prepare_record
 *		Split one record's framing and give it its program, or its error.
 */
static void
kl_avro_prepare_record(KlAvroLanding *al, KlRecord *r, TimestampTz deadline)
{
	KlAvroWire	wire;
	const char *why = NULL;
	const KlAvroWriter *w;
	bool		in_header = false;

	r->schema_id = -1;
	r->avro_program = NULL;
	r->avro_error = NULL;
	r->avro_payload = NULL;
	r->avro_payload_len = 0;
	if (r->value == NULL)
		return;					/* a tombstone: the contract judges it */
	why = kl_record_wire(r, &wire, &in_header);
	if (why != NULL)
	{
		/* in the window's memory (the current context): one per bad record */
		r->avro_error = psprintf("not an Avro value in Confluent's wire format%s: %s",
								 in_header ? " (header __value_schema_id)" : "", why);
		return;
	}
	r->avro_payload = (const char *) wire.payload;
	r->avro_payload_len = wire.payload_len;
	if (al->nwriters >= KL_AVRO_MAX_WRITERS &&
		kl_avro_writer_met(al, wire.schema_id, wire.magic == 1 ? wire.guid : NULL) == NULL)
	{
		/* in the window's memory (the current context): one per such record */
		r->schema_id = wire.magic == 1 ? -1 : wire.schema_id;
		r->avro_error = wire.magic == 1 ?
			psprintf("schema GUID %s was not looked up: this call met more than %d writer schemas (readmit() judges the record again)",
					 kl_registry_guid_text(wire.guid), KL_AVRO_MAX_WRITERS) :
			psprintf("schema id %lld was not looked up: this call met more than %d writer schemas (readmit() judges the record again)",
					 (long long) wire.schema_id, KL_AVRO_MAX_WRITERS);
		return;
	}
	if (wire.magic == 1)
		w = kl_avro_writer_guid(al, wire.guid, deadline);
	else
		w = kl_avro_writer(al, wire.schema_id, deadline);
	r->schema_id = w->schema_id;
	r->avro_program = w->program;
	r->avro_error = w->error;
}

/*
 * kl_avro_landing_prepare
 *		Before recs[0..n) are judged: the program (or the error) of each
 *		one not reused.  ERROR when the registry cannot be asked.  Call it
 *		in memory that lives as long as the records' lines (the window's):
 *		a record's own error is allocated there, a schema id's in the call's.
 */
void
kl_avro_landing_prepare(KlAvroLanding *al, KlRecord *recs, int n, TimestampTz deadline)
{
	for (int i = 0; i < n; i++)
	{
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (recs[i].status == KL_STATUS_REUSED)
			continue;
		kl_avro_prepare_record(al, &recs[i], deadline);
	}
}

/*
 * kl_avro_record_value
 *		The JSON text a prepared record of an Avro contract is judged as:
 *		NULL and *value, *len (in out, or the tombstone's NULL), or the
 *		reason it is quarantined (in events; kl_judge_out_of_memory when
 *		that pool ran out).  Any thread: no palloc, no ereport.
 */
const char *
kl_avro_record_value(const KlContract *c, const KlRecord *r, KlAvroOut *out, KlPool *events,
					 const char **value, size_t *len)
{
	KlAvroError err;
	char		buf[512];
	const char *msg;
	const char *reason;

	if (r->value == NULL)
	{
		*value = NULL;
		*len = 0;
		return NULL;
	}
	if (r->avro_error != NULL)
		return r->avro_error;
	out->limit = (size_t) c->max_value_bytes + 1;
	if (kl_avro_decode(r->avro_program, (const uint8 *) r->avro_payload, r->avro_payload_len,
					   out, &err))
	{
		*value = out->data;
		*len = out->len;
		return NULL;
	}
	msg = kl_avro_error_message(&err);
	snprintf(buf, sizeof(buf), "the Avro value of schema id %lld does not decode: %s",
			 (long long) r->schema_id, msg);
	reason = kl_pool_strdup(events, buf, strlen(buf));
	return reason ? reason : kl_judge_out_of_memory;
}

/*
 * kl_avro_judge_record
 *		kl_judge_record for one record of an Avro contract, on the backend
 *		(readmit): prepared, decoded and judged; NULL when accepted, else
 *		the reason.
 */
const char *
kl_avro_judge_record(KlAvroLanding *al, KlRecord *r, KlPool *events, KlPool *scratch,
					 TimestampTz deadline)
{
	KlAvroOut	out;
	KlJudgeInput in;
	const char *reason;

	memset(&out, 0, sizeof(out));
	kl_avro_prepare_record(al, r, deadline);
	reason = kl_avro_record_value(al->contract, r, &out, events, &in.value, &in.value_len);
	if (reason == NULL)
	{
		in.timestamp_ms = r->timestamp_ms;
		in.headers = r->headers;
		in.nheaders = r->nheaders;
		in.key = r->key;
		in.key_len = r->key_len;
		reason = kl_contract_judge(al->contract, &in, events, scratch, &r->event);
	}
	kl_avro_out_free(&out);
	if (reason == kl_judge_out_of_memory)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Judging the record at offset %lld against contract \"%s\" needed more memory than the system gave.",
						   (long long) r->offset, al->contract->name)));
	r->writes_ids = al->contract->writes_ids;
	return reason;
}
