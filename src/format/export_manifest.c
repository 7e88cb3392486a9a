/*-------------------------------------------------------------------------
 *
 * export_manifest.c
 *	  The per-date JSON of an export (export/export.c), written and read:
 *
 *	{"source": "orders", "business_date": "2026-06-29", "snapshot_id": 12,
 *	 "run_id": "...", "source_hash": "...", "closing_status": "closed",
 *	 "files": [
 *	  {"relation": "orders_silver", "kind": "silver",
 *	   "path": "orders_silver/business_date=2026-06-29/part-00000.parquet",
 *	   "rows": 48213, "bytes": 912345, "sha256": "..."},
 *	  ...]}
 *
 * It is written last, once every file it names is in place, and read back
 * by the next export of the date, to tell an unchanged snapshot (nothing to
 * do) and which relations the export it replaces had.  The file lies in a
 * directory the server's OS user shares with whoever writes the export
 * directory, so the reader takes nothing on trust: a document that is not
 * exactly this shape (every member present, of its type; a relation name of
 * lower-case letters, digits and underscores; sizes and counts not
 * negative; a SHA-256 of 64 hex digits) reads as no export at all, and the
 * date is exported again.  fuzz/fuzz_export_manifest.c fuzzes the reader,
 * with the property that what it reads is written back to a document that
 * reads the same.
 *
 * IDENTIFICATION
 *	  src/format/export_manifest.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "base/json.h"
#include "format/export_manifest.h"

/*
 * kl_export_manifest_text
 *		The JSON of m, one file a line.
 */
char *
kl_export_manifest_text(const KlExportManifest *m)
{
	StringInfoData j;

	initStringInfo(&j);
	appendStringInfoString(&j, "{\"source\": ");
	kl_json_append_string(&j, m->source, strlen(m->source));
	appendStringInfoString(&j, ", \"business_date\": ");
	kl_json_append_string(&j, m->business_date, strlen(m->business_date));
	appendStringInfoString(&j, ", \"snapshot_id\": ");
	kl_json_append_int64(&j, m->snapshot_id);
	appendStringInfoString(&j, ", \"run_id\": ");
	kl_json_append_string(&j, m->run_id, strlen(m->run_id));
	appendStringInfoString(&j, ", \"source_hash\": ");
	kl_json_append_string(&j, m->source_hash, strlen(m->source_hash));
	appendStringInfoString(&j, ", \"closing_status\": ");
	kl_json_append_string(&j, m->closing_status, strlen(m->closing_status));
	appendStringInfoString(&j, ", \"files\": [");
	for (int i = 0; i < m->nfiles; i++)
	{
		const KlExportFile *f = &m->files[i];

		appendStringInfoString(&j, i ? ",\n  {\"relation\": " : "\n  {\"relation\": ");
		kl_json_append_string(&j, f->relation, strlen(f->relation));
		appendStringInfoString(&j, ", \"kind\": ");
		kl_json_append_string(&j, f->kind, strlen(f->kind));
		appendStringInfoString(&j, ", \"path\": ");
		kl_json_append_string(&j, f->path, strlen(f->path));
		appendStringInfoString(&j, ", \"rows\": ");
		kl_json_append_int64(&j, f->rows);
		appendStringInfoString(&j, ", \"bytes\": ");
		kl_json_append_int64(&j, f->bytes);
		appendStringInfo(&j, ", \"sha256\": \"%s\"}", f->sha256);
	}
	appendStringInfoString(&j, "\n]}\n");
	return j.data;
}

/*
 * kl_export_string
 *		A string member's text (without NUL bytes), or NULL.
 */
static char *
kl_export_string(const KlJsonValue *v)
{
	StringInfoData s;

	if (v->type != KL_JSON_STRING)
		return NULL;
	initStringInfo(&s);
	kl_json_decode_string(v, &s);
	if (strlen(s.data) != (size_t) s.len)
		return NULL;
	return s.data;
}

/*
 * kl_export_count
 *		A number member that is an integer, not negative, into *out.
 */
static bool
kl_export_count(const KlJsonValue *v, int64 *out)
{
	return v->type == KL_JSON_NUMBER && v->is_integer &&
		kl_json_parse_int64(v->start, v->len, out) && *out >= 0;
}

/*
 * kl_export_file_parse
 *		One member of "files", or false.
 */
static bool
kl_export_file_parse(const KlJsonValue *v, KlExportFile *f)
{
	KlJsonReader o;
	KlJsonValue key,
				value;
	bool		has_rows = false,
				has_bytes = false;
	char	   *sha = NULL;

	if (v->type != KL_JSON_OBJECT)
		return false;
	memset(f, 0, sizeof(*f));
	kl_json_object_open(&o, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&o, &key, &value))
	{
		if (kl_json_key_is(&key, "relation", 8))
			f->relation = kl_export_string(&value);
		else if (kl_json_key_is(&key, "kind", 4))
			f->kind = kl_export_string(&value);
		else if (kl_json_key_is(&key, "path", 4))
			f->path = kl_export_string(&value);
		else if (kl_json_key_is(&key, "sha256", 6))
			sha = kl_export_string(&value);
		else if (kl_json_key_is(&key, "rows", 4))
			has_rows = kl_export_count(&value, &f->rows);
		else if (kl_json_key_is(&key, "bytes", 5))
			has_bytes = kl_export_count(&value, &f->bytes);
	}
	if (f->relation == NULL || f->relation[0] == '\0' ||
		strspn(f->relation, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(f->relation) ||
		f->kind == NULL || f->path == NULL || !has_rows || !has_bytes ||
		sha == NULL || strlen(sha) != KL_SHA256_LEN * 2 ||
		strspn(sha, "0123456789abcdef") != KL_SHA256_LEN * 2)
		return false;
	memcpy(f->sha256, sha, sizeof(f->sha256));
	return true;
}

/*
 * kl_export_manifest_parse
 *		Read a per-date JSON into m; false when it is not one (see the file
 *		header): the caller takes the date as not exported.
 */
bool
kl_export_manifest_parse(const char *json, size_t len, KlExportManifest *m)
{
	KlJsonReader r,
				o;
	KlJsonValue doc,
				key,
				value;
	bool		has_snapshot = false,
				has_files = false;

	memset(m, 0, sizeof(*m));
	kl_json_init(&r, json, len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &doc) || doc.type != KL_JSON_OBJECT)
		return false;
	kl_json_object_open(&o, doc.start, doc.start + doc.len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&o, &key, &value))
	{
		if (kl_json_key_is(&key, "source", 6))
			m->source = kl_export_string(&value);
		else if (kl_json_key_is(&key, "business_date", 13))
			m->business_date = kl_export_string(&value);
		else if (kl_json_key_is(&key, "run_id", 6))
			m->run_id = kl_export_string(&value);
		else if (kl_json_key_is(&key, "source_hash", 11))
			m->source_hash = kl_export_string(&value);
		else if (kl_json_key_is(&key, "closing_status", 14))
			m->closing_status = kl_export_string(&value);
		else if (kl_json_key_is(&key, "snapshot_id", 11))
			has_snapshot = kl_export_count(&value, &m->snapshot_id);
		else if (kl_json_key_is(&key, "files", 5))
		{
			KlJsonReader a;
			KlJsonValue f;
			int			cap = 4;

			if (value.type != KL_JSON_ARRAY)
				return false;
			m->nfiles = 0;
			m->files = palloc(sizeof(KlExportFile) * cap);
			kl_json_array_open(&a, value.start, value.start + value.len, KL_JSON_MAX_DEPTH);
			while (kl_json_array_next(&a, &f))
			{
				if (m->nfiles == cap)
				{
					cap *= 2;
					m->files = repalloc(m->files, sizeof(KlExportFile) * cap);
				}
				if (!kl_export_file_parse(&f, &m->files[m->nfiles]))
					return false;
				m->nfiles++;
			}
			has_files = true;
		}
	}
	return has_snapshot && has_files && m->source != NULL && m->business_date != NULL &&
		m->run_id != NULL && m->source_hash != NULL && m->closing_status != NULL;
}
