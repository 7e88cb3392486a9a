/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  A server's Confluent Schema Registry: schemas by id and by subject
 *	  version, fetched over HTTP with libcurl and kept durably in the
 *	  catalog table kafka_lake.schemas; the SQL functions registry_schema()
 *	  and registry_subject().
 *
 * A server names its registry with the option "schema.registry.url" (the
 * registry's base URL, which may carry a path prefix); the calling role's
 * user mapping may give "schema.registry.basic.auth.user.info" (HTTP basic
 * auth, a secret) and a superuser "schema.registry.ssl.ca.location"
 * (options.c validates them and hands them over, kl_registry_settings).
 *
 * Schemas are durable.  A schema id's text never changes on a registry, so
 * a schema fetched once is stored in kafka_lake.schemas under the registry's
 * identity, its URL (so that a server moved to another registry never serves
 * the old one's ids, and a server renamed, or a second server of the same
 * registry, is served from the catalog alike; before 1.4 the server's name
 * was part of it), with its SHA-256, and every later
 * fetch of that id is served from the catalog without asking the registry:
 * a landing that decodes Avro keeps working while the registry is down, and
 * a dump of the database carries the schemas its landed records need.  A
 * registry that answers an id already stored with another text is an ERROR
 * naming both hashes (a registry rebuilt with other ids, or a server pointed
 * at another registry under the same URL), never a silent change.  A subject
 * version is a name: "latest" is always asked of the registry; an explicit
 * version is served from the catalog when it is there.
 *
 * A schema GUID (what Confluent's newer clients put in a record instead of
 * an id) is a third name.  Its schema is GET /schemas/guids/{guid}, the one
 * call every registry that serves those clients answers; its id is then
 * looked up under the subject the record's contract reads (POST
 * /subjects/{subject}, as a client looks up a schema it has), and the
 * schema is served and stored by that id as any other, with the GUID in
 * the row, so that the next record of the GUID needs no registry.  A GUID
 * whose schema is not registered under the subject is 42704 (the record's,
 * as an unknown id).
 *
 * Every request is bounded and interruptible.  It is a GET (libcurl, one
 * easy handle driven by a multi handle) with an absolute deadline (the
 * caller's, KL_REGISTRY_DEFAULT_TIMEOUT_MS by default); the backend waits in
 * curl_multi_poll for at most 100 ms at a time and runs CHECK_FOR_INTERRUPTS
 * in between, so cancel and statement_timeout end it.  libcurl's threaded
 * resolver starts a thread: every signal is blocked while libcurl runs, so
 * that no thread of it ever runs PostgreSQL's handlers.  Only http and https
 * are spoken, redirects included (at most 3), an answer larger than
 * KL_REGISTRY_MAX_ANSWER is refused, and libcurl never installs signal
 * handlers (CURLOPT_NOSIGNAL).  The handles are released on every path
 * (PG_FINALLY).
 *
 * Errors: a registry that cannot be reached, does not answer in time or
 * fails (5xx) is HV00N with a hint; credentials it refuses (401, 403) are
 * 28000; an unknown schema id, subject or version (404 with error code
 * 40403, 40401, 40402) is 42704; an answer that is not what the REST API
 * defines is HV00L.  Messages name the registry by its URL, which holds no
 * credentials (the validator refuses a URL with user info); libcurl's and
 * the registry's own text is scrubbed of the user info before it is shown.
 *
 * IDENTIFICATION
 *	  src/kafka/registry.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>

#include <curl/curl.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/args.h"
#include "base/digest.h"
#include "base/json.h"
#include "kafka/kafka.h"
#include "kafka/options.h"
#include "kafka/registry.h"
#include "kl_catalog/catalog.h"

PG_FUNCTION_INFO_V1(kafka_lake_registry_schema);
PG_FUNCTION_INFO_V1(kafka_lake_registry_subject);

/* One registry as a role reaches it */
typedef struct KlRegistry
{
	ForeignServer *server;
	char	   *url;			/* base URL, without a trailing slash */
	KlRegistrySettings settings;
	List	   *secrets;		/* scrubbed from any text shown */
} KlRegistry;

/* An answer being read (malloc'd: filled inside libcurl's callback) */
typedef struct KlHttpBody
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		too_large;		/* more than KL_REGISTRY_MAX_ANSWER */
	bool		no_memory;
} KlHttpBody;

/* The handles of one request, released by PG_FINALLY */
typedef struct KlHttpRequest
{
	CURL	   *easy;
	CURLM	   *multi;
	bool		added;			/* easy is in multi */
	struct curl_slist *headers;
	KlHttpBody body;
	char		errbuf[CURL_ERROR_SIZE];
} KlHttpRequest;

/* What a request got */
typedef struct KlHttpAnswer
{
	const char *method;			/* GET or POST */
	long		status;			/* HTTP status */
	char	   *body;			/* palloc'd, NUL-terminated */
	size_t		len;
} KlHttpAnswer;

static bool kl_curl_ready = false;

/*
 * kl_curl_init
 *		libcurl's global initialisation, once per backend.
 */
static void
kl_curl_init(void)
{
	if (kl_curl_ready)
		return;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not initialise libcurl")));
	kl_curl_ready = true;
}

/*
 * kl_http_write
 *		libcurl's write callback: append to the answer, up to the limit.
 *		It runs inside libcurl, so it never raises an ERROR.
 */
static size_t
kl_http_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	KlHttpBody *b = (KlHttpBody *) userdata;
	size_t		n = size * nmemb;

	if (b->len + n > KL_REGISTRY_MAX_ANSWER)
	{
		b->too_large = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = Max(b->cap * 2, Max(b->len + n + 1, 4096));
		char	   *data = realloc(b->data, cap);

		if (data == NULL)
		{
			b->no_memory = true;
			return 0;
		}
		b->data = data;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/*
 * kl_ms_until
 *		Milliseconds from now to deadline, 0 when it has passed.
 */
static int
kl_ms_until(TimestampTz deadline)
{
	TimestampTz now = GetCurrentTimestamp();

	if (now >= deadline)
		return 0;
	return (int) Min((deadline - now) / 1000 + 1, INT_MAX);
}

/*
 * kl_curl_perform
 *		One step of libcurl's work, with every signal blocked so that a
 *		thread libcurl starts (its resolver) never runs PostgreSQL's
 *		handlers; a signal that arrives meanwhile is delivered after.
 */
static void
kl_curl_perform(CURLM *multi, int *running)
{
	sigset_t	all;
	sigset_t	old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	(void) curl_multi_perform(multi, running);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * kl_registry_error_text
 *		The registry's own "message" of an error answer (scrubbed), or NULL;
 *		its "error_code" in *code (0 when there is none).
 */
static char *
kl_registry_error_text(KlRegistry *reg, const KlHttpAnswer *a, int64 *code)
{
	KlJsonReader r;
	KlJsonReader it;
	KlJsonValue doc;
	KlJsonValue key;
	KlJsonValue val;
	char	   *message = NULL;

	*code = 0;
	kl_json_init(&r, a->body, a->len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &doc) || doc.type != KL_JSON_OBJECT)
		return NULL;
	kl_json_object_open(&it, doc.start, doc.start + doc.len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &key, &val))
	{
		if (kl_json_key_is(&key, "error_code", 10) && val.type == KL_JSON_NUMBER && val.is_integer)
			(void) kl_json_parse_int64(val.start, val.len, code);
		else if (kl_json_key_is(&key, "message", 7) && val.type == KL_JSON_STRING)
		{
			StringInfoData s;

			initStringInfo(&s);
			kl_json_decode_string(&val, &s);
			message = kl_scrub_secrets(s.data, reg->secrets);
		}
	}
	return message;
}

/*
 * kl_registry_request
 *		GET url/path from the registry before deadline, or POST the JSON
 *		body there when body is not NULL; the answer's status and body.
 *		Transport failures are raised here (see the file header); the
 *		caller judges the status.
 */
static KlHttpAnswer
kl_registry_request(KlRegistry *reg, const char *path, const char *body, TimestampTz deadline)
{
	KlHttpRequest *req = palloc0(sizeof(KlHttpRequest));
	char	   *full = psprintf("%s%s", reg->url, path);
	const char *method = body != NULL ? "POST" : "GET";
	KlHttpAnswer answer = {0};
	CURLcode	result = CURLE_OK;
	bool		timed_out = false;
	int			timeout_ms = kl_ms_until(deadline);

	answer.method = method;
	kl_curl_init();
	PG_TRY();
	{
		int			running = 1;

		req->easy = curl_easy_init();
		req->multi = curl_multi_init();
		if (req->easy == NULL || req->multi == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("libcurl could not start a request.")));
		req->headers = curl_slist_append(NULL, "Accept: application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json");
		if (body != NULL)
		{
			req->headers = curl_slist_append(req->headers, "Content-Type: application/vnd.schemaregistry.v1+json");
			curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) strlen(body));
			/* a redirected POST stays a POST (libcurl makes it a GET otherwise) */
			curl_easy_setopt(req->easy, CURLOPT_POSTREDIR, (long) CURL_REDIR_POST_ALL);
		}
		curl_easy_setopt(req->easy, CURLOPT_URL, full);
		curl_easy_setopt(req->easy, CURLOPT_HTTPHEADER, req->headers);
		curl_easy_setopt(req->easy, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(req->easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(req->easy, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(req->easy, CURLOPT_MAXREDIRS, 3L);
		curl_easy_setopt(req->easy, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(req->easy, CURLOPT_NOPROGRESS, 1L);
		curl_easy_setopt(req->easy, CURLOPT_TIMEOUT_MS, (long) Max(timeout_ms, 1));
		curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT_MS, (long) Max(timeout_ms, 1));
		curl_easy_setopt(req->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) KL_REGISTRY_MAX_ANSWER);
		curl_easy_setopt(req->easy, CURLOPT_WRITEFUNCTION, kl_http_write);
		curl_easy_setopt(req->easy, CURLOPT_WRITEDATA, &req->body);
		curl_easy_setopt(req->easy, CURLOPT_ERRORBUFFER, req->errbuf);
		curl_easy_setopt(req->easy, CURLOPT_USERAGENT, "kafka_lake/1.4");
		if (reg->settings.user_info != NULL)
		{
			curl_easy_setopt(req->easy, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
			curl_easy_setopt(req->easy, CURLOPT_USERPWD, reg->settings.user_info);
		}
		if (reg->settings.ca_location != NULL)
			curl_easy_setopt(req->easy, CURLOPT_CAINFO, reg->settings.ca_location);
		curl_multi_add_handle(req->multi, req->easy);
		req->added = true;

		while (timeout_ms > 0)
		{
			kl_curl_perform(req->multi, &running);
			if (running == 0)
				break;
			timeout_ms = kl_ms_until(deadline);
			if (timeout_ms <= 0)
				break;
			(void) curl_multi_poll(req->multi, NULL, 0, Min(timeout_ms, 100), NULL);
			CHECK_FOR_INTERRUPTS();
			timeout_ms = kl_ms_until(deadline);
		}
		if (running != 0)
			timed_out = true;
		else
		{
			CURLMsg    *msg;
			int			left;

			while ((msg = curl_multi_info_read(req->multi, &left)) != NULL)
			{
				if (msg->msg == CURLMSG_DONE)
					result = msg->data.result;
			}
			curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &answer.status);
			answer.len = req->body.len;
			answer.body = palloc(answer.len + 1);
			if (answer.len > 0)
				memcpy(answer.body, req->body.data, answer.len);
			answer.body[answer.len] = '\0';
		}
	}
	PG_FINALLY();
	{
		if (req->added)
			curl_multi_remove_handle(req->multi, req->easy);
		if (req->easy)
			curl_easy_cleanup(req->easy);
		if (req->multi)
			curl_multi_cleanup(req->multi);
		curl_slist_free_all(req->headers);
		free(req->body.data);
		req->body.data = NULL;
	}
	PG_END_TRY();

	if (timed_out || result == CURLE_OPERATION_TIMEDOUT)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("the schema registry at %s did not answer in time", reg->url),
				 errdetail("%s %s was abandoned after its timeout.", method, path),
				 errhint("Check that the registry is up and reachable from the database server, or give the call more time (timeout => ...).")));
	if (req->body.too_large || result == CURLE_FILESIZE_EXCEEDED)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("the answer of the schema registry at %s is larger than %d bytes",
						reg->url, KL_REGISTRY_MAX_ANSWER),
				 errdetail("%s %s.", method, path),
				 errhint("Check that \"schema.registry.url\" of server %s names a Schema Registry.",
						 quote_identifier(reg->server->servername))));
	if (req->body.no_memory)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Reading the answer of the schema registry at %s.", reg->url)));
	if (result != CURLE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not reach the schema registry at %s", reg->url),
				 errdetail_internal("libcurl: %s",
									kl_scrub_secrets(req->errbuf[0] ? req->errbuf :
													 curl_easy_strerror(result),
													 reg->secrets)),
				 errhint("Check that the registry is up and reachable from the database server, and \"schema.registry.url\" of server %s.",
						 quote_identifier(reg->server->servername))));
	return answer;
}

/*
 * kl_registry_check_status
 *		Raise the ERROR an answer that is not 200 stands for (see the file
 *		header); what names what was asked for ("schema id 7").
 */
static void
kl_registry_check_status(KlRegistry *reg, const KlHttpAnswer *a, const char *path,
						 const char *what)
{
	int64		code;
	char	   *message;

	if (a->status == 200)
		return;
	message = kl_registry_error_text(reg, a, &code);
	if (a->status == 401 || a->status == 403)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("the schema registry at %s %s role \"%s\" (HTTP %ld)", reg->url,
						a->status == 401 ? "refused the credentials of" : "denied access to",
						GetUserNameFromId(GetUserId(), false), a->status),
				 message ? errdetail_internal("%s", message) : 0,
				 reg->settings.user_info == NULL ?
				 errhint("Give the registry's credentials in the user mapping: CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (\"schema.registry.basic.auth.user.info\" 'user:password').",
						 quote_identifier(reg->server->servername)) :
				 errhint("Check \"schema.registry.basic.auth.user.info\" in the user mapping of role \"%s\" for server %s.",
						 GetUserNameFromId(GetUserId(), false),
						 quote_identifier(reg->server->servername))));
	if (a->status == 404 && (code == 40401 || code == 40402 || code == 40403))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s is not in the schema registry at %s", what, reg->url),
				 message ? errdetail_internal("%s (error code %lld)", message, (long long) code) : 0,
				 errhint("GET %s/subjects lists the registry's subjects.", reg->url)));
	if (a->status == 404)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("the schema registry at %s has no resource %s (HTTP 404)", reg->url, path),
				 errhint("Check \"schema.registry.url\" of server %s: it is the registry's base URL, with the path prefix of a registry behind one.",
						 quote_identifier(reg->server->servername))));
	if (a->status == 422)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the schema registry at %s refused the request for %s (HTTP 422)", reg->url, what),
				 message ? errdetail_internal("%s (error code %lld)", message, (long long) code) : 0));
	if (a->status >= 500)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("the schema registry at %s failed (HTTP %ld)", reg->url, a->status),
				 message ? errdetail_internal("%s (error code %lld)", message, (long long) code) : 0,
				 errhint("The registry or its backing store is in trouble; try again later.")));
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
			 errmsg("unexpected answer from the schema registry at %s (HTTP %ld)", reg->url, a->status),
			 errdetail("%s %s.", a->method, path)));
}

/*
 * kl_registry_malformed
 *		The ERROR of an answer that is not what the REST API defines.
 */
static void
kl_registry_malformed(KlRegistry *reg, const KlHttpAnswer *a, const char *path, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
			 errmsg("malformed answer from the schema registry at %s", reg->url),
			 errdetail("The answer to %s %s %s.", a->method, path, why),
			 errhint("Check that \"schema.registry.url\" of server %s names a Confluent-compatible Schema Registry.",
					 quote_identifier(reg->server->servername))));
}

/*
 * kl_registry_parse
 *		The schema of a 200 answer: {"schema", "schemaType"?} of an id, or
 *		{"subject", "version", "id", "schema", "schemaType"?} of a subject
 *		version (with_subject).  An Avro or JSON schema must be JSON.
 */
static KlRegistrySchema *
kl_registry_parse(KlRegistry *reg, const KlHttpAnswer *a, const char *path, bool with_subject)
{
	KlRegistrySchema *s = palloc0(sizeof(KlRegistrySchema));
	KlJsonReader r;
	KlJsonReader it;
	KlJsonValue doc;
	KlJsonValue key;
	KlJsonValue val;
	bool		have_id = false;

	kl_json_init(&r, a->body, a->len, KL_JSON_MAX_DEPTH);
	if (!kl_json_parse_document(&r, &doc))
		kl_registry_malformed(reg, a, path, "is not JSON");
	if (doc.type != KL_JSON_OBJECT)
		kl_registry_malformed(reg, a, path, "is not a JSON object");
	kl_json_object_open(&it, doc.start, doc.start + doc.len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &key, &val))
	{
		StringInfoData str;
		int64		n;

		if (val.type == KL_JSON_STRING &&
			(kl_json_key_is(&key, "schema", 6) || kl_json_key_is(&key, "schemaType", 10) ||
			 kl_json_key_is(&key, "subject", 7)))
		{
			initStringInfo(&str);
			kl_json_decode_string(&val, &str);
			if (strlen(str.data) != str.len)
				kl_registry_malformed(reg, a, path, "has a string with a NUL character");
			if (kl_json_key_is(&key, "schema", 6))
				s->schema = str.data;
			else if (kl_json_key_is(&key, "schemaType", 10))
				s->schema_type = str.data;
			else
				s->subject = str.data;
		}
		else if (val.type == KL_JSON_NUMBER && val.is_integer &&
				 (kl_json_key_is(&key, "id", 2) || kl_json_key_is(&key, "version", 7)))
		{
			if (!kl_json_parse_int64(val.start, val.len, &n) || n < 0 || n > PG_INT32_MAX)
				kl_registry_malformed(reg, a, path, "has an id or a version out of range");
			if (kl_json_key_is(&key, "id", 2))
			{
				s->id = (int32) n;
				have_id = true;
			}
			else
				s->version = (int32) n;
		}
	}
	if (it.error != NULL)
		kl_registry_malformed(reg, a, path, "is not JSON");
	if (s->schema == NULL)
		kl_registry_malformed(reg, a, path, "has no \"schema\" string");
	if (with_subject && (s->subject == NULL || s->version <= 0 || !have_id))
		kl_registry_malformed(reg, a, path, "lacks \"subject\", \"version\" or \"id\"");
	if (s->schema_type == NULL || s->schema_type[0] == '\0')
		s->schema_type = "AVRO";
	if (strcmp(s->schema_type, "AVRO") != 0 && strcmp(s->schema_type, "JSON") != 0 &&
		strcmp(s->schema_type, "PROTOBUF") != 0)
		kl_registry_malformed(reg, a, path, "names a schemaType other than AVRO, JSON and PROTOBUF");
	if (strcmp(s->schema_type, "PROTOBUF") != 0)
	{
		KlJsonReader sr;
		KlJsonValue sv;

		kl_json_init(&sr, s->schema, strlen(s->schema), KL_JSON_MAX_DEPTH);
		if (!kl_json_parse_document(&sr, &sv))
			kl_registry_malformed(reg, a, path, psprintf("has an %s schema that is not JSON", s->schema_type));
	}
	kl_sha256(s->schema, strlen(s->schema), s->sha256);
	return s;
}

/*
 * kl_registry_open
 *		The registry of a server as the calling role reaches it; ERROR when
 *		the server names none.
 */
static KlRegistry *
kl_registry_open(ForeignServer *server)
{
	KlRegistry *reg = palloc0(sizeof(KlRegistry));
	size_t		len;

	reg->server = server;
	kl_registry_settings(server, GetUserId(), &reg->settings);
	if (reg->settings.url == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("server \"%s\" names no schema registry", server->servername),
				 errhint("ALTER SERVER %s OPTIONS (ADD \"schema.registry.url\" 'https://registry.example.com:8081');",
						 quote_identifier(server->servername))));
	reg->url = pstrdup(reg->settings.url);
	len = strlen(reg->url);
	while (len > 0 && reg->url[len - 1] == '/')
		reg->url[--len] = '\0';
	if (reg->settings.user_info != NULL)
	{
		const char *colon = strchr(reg->settings.user_info, ':');

		reg->secrets = lappend(reg->secrets, pstrdup(reg->settings.user_info));
		if (colon != NULL && strlen(colon + 1) >= 4)
			reg->secrets = lappend(reg->secrets, pstrdup(colon + 1));
	}
	return reg;
}

/*
 * kl_url_escape
 *		A path segment, percent-encoded (RFC 3986 unreserved bytes as they
 *		are).
 */
static char *
kl_url_escape(const char *segment)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const unsigned char *c = (const unsigned char *) segment; *c; c++)
	{
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			*c == '-' || *c == '.' || *c == '_' || *c == '~')
			appendStringInfoChar(&out, *c);
		else
			appendStringInfo(&out, "%%%02X", *c);
	}
	return out.data;
}

/* ----------------------------------------------------------------
 *		kafka_lake.schemas
 * ----------------------------------------------------------------
 */

/*
 * kl_schemas_row
 *		The schema of the first row of SPI's result (schema_id, subject,
 *		version, schema_type, schema, sha256), copied out of SPI.
 */
static KlRegistrySchema *
kl_schemas_row(MemoryContext cxt)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	MemoryContext old = MemoryContextSwitchTo(cxt);
	KlRegistrySchema *s = palloc0(sizeof(KlRegistrySchema));
	bool		isnull;
	Datum		d;
	bytea	   *hash;

	s->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	d = SPI_getbinval(tup, desc, 2, &isnull);
	s->subject = isnull ? NULL : TextDatumGetCString(d);
	d = SPI_getbinval(tup, desc, 3, &isnull);
	s->version = isnull ? 0 : DatumGetInt32(d);
	s->schema_type = TextDatumGetCString(SPI_getbinval(tup, desc, 4, &isnull));
	s->schema = TextDatumGetCString(SPI_getbinval(tup, desc, 5, &isnull));
	hash = DatumGetByteaPP(SPI_getbinval(tup, desc, 6, &isnull));
	if (VARSIZE_ANY_EXHDR(hash) == KL_SHA256_LEN)
		memcpy(s->sha256, VARDATA_ANY(hash), KL_SHA256_LEN);
	s->from_catalog = true;
	MemoryContextSwitchTo(old);
	return s;
}

#define KL_SCHEMAS_COLUMNS \
	"schema_id, subject, version, schema_type, schema, sha256"

/*
 * kl_schemas_have_guid
 *		Does kafka_lake.schemas have its 1.4 form: one row per registry URL
 *		and id, and a guid column?  (A catalog of 1.3, not updated yet, keys
 *		a row by the server's name too.)
 */
static bool
kl_schemas_have_guid(void)
{
	Oid			nsp = get_namespace_oid("kafka_lake", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("schemas", nsp) : InvalidOid;

	return OidIsValid(rel) && get_attnum(rel, "guid") != InvalidAttrNumber;
}

/*
 * kl_schemas_lookup
 *		The stored schema of an id (subject NULL) or of a subject version,
 *		or NULL.  A registry is its URL (see the file header).
 */
static KlRegistrySchema *
kl_schemas_lookup(KlRegistry *reg, int32 id, const char *subject, int32 version)
{
	MemoryContext cxt = CurrentMemoryContext;
	KlCatalogSave save = kl_catalog_begin();
	KlRegistrySchema *found = NULL;
	Oid			types[3] = {TEXTOID, INT4OID, INT4OID};
	Datum		values[3];
	int			rc;

	values[0] = CStringGetTextDatum(reg->url);
	if (subject == NULL)
	{
		values[1] = Int32GetDatum(id);
		rc = SPI_execute_with_args("SELECT " KL_SCHEMAS_COLUMNS " FROM kafka_lake.schemas"
								   " WHERE registry_url = $1 AND schema_id = $2"
								   " ORDER BY fetched_at LIMIT 1",
								   2, types, values, NULL, true, 1);
	}
	else
	{
		types[1] = TEXTOID;
		values[1] = CStringGetTextDatum(subject);
		values[2] = Int32GetDatum(version);
		rc = SPI_execute_with_args("SELECT " KL_SCHEMAS_COLUMNS " FROM kafka_lake.schemas"
								   " WHERE registry_url = $1 AND subject = $2 AND version = $3"
								   " ORDER BY fetched_at LIMIT 1",
								   3, types, values, NULL, true, 1);
	}
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "unexpected SPI result %s reading kafka_lake.schemas", SPI_result_code_string(rc));
	if (SPI_processed > 0)
		found = kl_schemas_row(cxt);
	kl_catalog_end(save);
	return found;
}

/*
 * kl_schemas_lookup_guid
 *		The stored schema of a GUID, or NULL (always NULL on a 1.3 catalog,
 *		which keeps no GUIDs).
 */
static KlRegistrySchema *
kl_schemas_lookup_guid(KlRegistry *reg, const char *guid)
{
	MemoryContext cxt = CurrentMemoryContext;
	KlCatalogSave save;
	KlRegistrySchema *found = NULL;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	int			rc;

	if (!kl_schemas_have_guid())
		return NULL;
	values[0] = CStringGetTextDatum(reg->url);
	values[1] = CStringGetTextDatum(guid);
	save = kl_catalog_begin();
	rc = SPI_execute_with_args("SELECT " KL_SCHEMAS_COLUMNS " FROM kafka_lake.schemas"
							   " WHERE registry_url = $1 AND guid = $2::pg_catalog.uuid"
							   " ORDER BY schema_id DESC LIMIT 1",
							   2, types, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "unexpected SPI result %s reading kafka_lake.schemas", SPI_result_code_string(rc));
	if (SPI_processed > 0)
		found = kl_schemas_row(cxt);
	kl_catalog_end(save);
	return found;
}

/*
 * kl_schemas_set_guid
 *		Note the GUID of a stored schema id (1.4 catalogs; a row that has
 *		one keeps it).
 */
static void
kl_schemas_set_guid(KlRegistry *reg, int32 id, const char *guid)
{
	KlCatalogSave save;
	Oid			types[3] = {TEXTOID, INT4OID, TEXTOID};
	Datum		values[3];
	int			rc;

	if (!kl_schemas_have_guid())
		return;
	values[0] = CStringGetTextDatum(reg->url);
	values[1] = Int32GetDatum(id);
	values[2] = CStringGetTextDatum(guid);
	save = kl_catalog_begin();
	rc = SPI_execute_with_args("UPDATE kafka_lake.schemas SET guid = $3::pg_catalog.uuid"
							   " WHERE registry_url = $1 AND schema_id = $2 AND guid IS NULL",
							   3, types, values, NULL, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "unexpected SPI result %s writing kafka_lake.schemas", SPI_result_code_string(rc));
	kl_catalog_end(save);
}

/*
 * kl_schemas_store
 *		Keep a schema fetched from the registry: insert it unless its id is
 *		stored already (by another session too), fill in the subject and
 *		version of a row that had none, and return what the catalog holds.
 *		A stored text that differs is an ERROR naming both hashes.
 */
static KlRegistrySchema *
kl_schemas_store(KlRegistry *reg, KlRegistrySchema *fetched)
{
	MemoryContext cxt = CurrentMemoryContext;
	KlCatalogSave save;
	KlRegistrySchema *stored;
	Oid			types[8] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, INT4OID, TEXTOID, TEXTOID, BYTEAOID};
	Datum		values[8];
	char		nulls[8] = "        ";
	bytea	   *hash = palloc(VARHDRSZ + KL_SHA256_LEN);
	int			rc;

	SET_VARSIZE(hash, VARHDRSZ + KL_SHA256_LEN);
	memcpy(VARDATA(hash), fetched->sha256, KL_SHA256_LEN);
	values[0] = CStringGetTextDatum(reg->server->servername);
	values[1] = CStringGetTextDatum(reg->url);
	values[2] = Int32GetDatum(fetched->id);
	if (fetched->subject != NULL)
	{
		values[3] = CStringGetTextDatum(fetched->subject);
		values[4] = Int32GetDatum(fetched->version);
	}
	else
		nulls[3] = nulls[4] = 'n';
	values[5] = CStringGetTextDatum(fetched->schema_type);
	values[6] = CStringGetTextDatum(fetched->schema);
	values[7] = PointerGetDatum(hash);

	save = kl_catalog_begin();
	/* the 1.4 key is the URL and the id; a 1.3 catalog's has the server too */
	rc = SPI_execute_with_args(psprintf("INSERT INTO kafka_lake.schemas"
										" (server, registry_url, schema_id, subject, version, schema_type, schema, sha256)"
										" VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
										" ON CONFLICT (%s) DO UPDATE"
										" SET subject = EXCLUDED.subject, version = EXCLUDED.version"
										" WHERE kafka_lake.schemas.subject IS NULL AND EXCLUDED.subject IS NOT NULL"
										" AND kafka_lake.schemas.sha256 = EXCLUDED.sha256",
										kl_schemas_have_guid() ? "registry_url, schema_id" :
										"server, registry_url, schema_id"),
							   8, types, values, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "unexpected SPI result %s writing kafka_lake.schemas", SPI_result_code_string(rc));
	rc = SPI_execute_with_args("SELECT " KL_SCHEMAS_COLUMNS " FROM kafka_lake.schemas"
							   " WHERE registry_url = $2 AND schema_id = $3"
							   " ORDER BY fetched_at LIMIT 1",
							   3, types, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kafka_lake.schemas lost schema %d", fetched->id);
	stored = kl_schemas_row(cxt);
	kl_catalog_end(save);

	if (memcmp(stored->sha256, fetched->sha256, KL_SHA256_LEN) != 0)
	{
		char		was[KL_SHA256_LEN * 2 + 1];
		char		now[KL_SHA256_LEN * 2 + 1];

		kl_hex(stored->sha256, KL_SHA256_LEN, was);
		kl_hex(fetched->sha256, KL_SHA256_LEN, now);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("schema %d of the schema registry at %s changed", fetched->id, reg->url),
				 errdetail("kafka_lake.schemas holds the schema with SHA-256 %s; the registry now answers one with SHA-256 %s.",
						   was, now),
				 errhint("A schema id never changes on a registry: server %s may now point at another registry under the same URL.",
						 quote_identifier(reg->server->servername))));
	}
	stored->from_catalog = false;
	return stored;
}

/* ----------------------------------------------------------------
 *		The interface
 * ----------------------------------------------------------------
 */

/*
 * kl_registry_schema_by_id
 *		The schema of an id: from kafka_lake.schemas, else fetched from the
 *		registry before deadline (0: the default timeout) and stored.
 */
static KlRegistrySchema *kl_registry_id(KlRegistry *reg, int32 id, TimestampTz deadline);

KlRegistrySchema *
kl_registry_schema_by_id(ForeignServer *server, int32 id, TimestampTz deadline)
{
	return kl_registry_id(kl_registry_open(server), id, deadline);
}

/* kl_registry_schema_by_id of a registry already open */
static KlRegistrySchema *
kl_registry_id(KlRegistry *reg, int32 id, TimestampTz deadline)
{
	KlRegistrySchema *s;
	KlHttpAnswer a;
	char	   *path;
	char	   *what;

	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schema id must not be negative")));
	s = kl_schemas_lookup(reg, id, NULL, 0);
	if (s != NULL)
		return s;
	if (deadline == 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), KL_REGISTRY_DEFAULT_TIMEOUT_MS);
	path = psprintf("/schemas/ids/%d", id);
	what = psprintf("schema id %d", id);
	a = kl_registry_request(reg, path, NULL, deadline);
	kl_registry_check_status(reg, &a, path, what);
	s = kl_registry_parse(reg, &a, path, false);
	s->id = id;
	return kl_schemas_store(reg, s);
}

/*
 * kl_registry_guid_text
 *		A 16-byte GUID as the registry writes it (8-4-4-4-12 lower-case hex),
 *		palloc'd.
 */
char *
kl_registry_guid_text(const uint8 *guid)
{
	char		hex[33];

	kl_hex(guid, 16, hex);
	return psprintf("%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/*
 * kl_registry_schema_by_guid
 *		The schema of a GUID, with its id under subject: from
 *		kafka_lake.schemas, else GET /schemas/guids/{guid} and the id by
 *		POST /subjects/{subject} (see the file header), fetched by that id
 *		and stored with the GUID.  42704 when the registry does not know
 *		the GUID, or subject does not have its schema.
 */
KlRegistrySchema *
kl_registry_schema_by_guid(ForeignServer *server, const uint8 *guid, const char *subject,
						   TimestampTz deadline)
{
	KlRegistry *reg = kl_registry_open(server);
	char	   *text = kl_registry_guid_text(guid);
	KlRegistrySchema *s;
	KlRegistrySchema *under;
	KlHttpAnswer a;
	StringInfoData body;
	char	   *path;
	char	   *what;

	s = kl_schemas_lookup_guid(reg, text);
	if (s != NULL)
		return s;
	if (deadline == 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), KL_REGISTRY_DEFAULT_TIMEOUT_MS);
	path = psprintf("/schemas/guids/%s", text);
	what = psprintf("schema GUID %s", text);
	a = kl_registry_request(reg, path, NULL, deadline);
	kl_registry_check_status(reg, &a, path, what);
	s = kl_registry_parse(reg, &a, path, false);
	if (subject == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("schema GUID %s has no schema id kafka_lake can look up", text),
				 errdetail("A record that names its writer schema by GUID is read with the id of that schema under the subject of its contract, and the contract names no subject."),
				 errhint("Create the contract over the subject: {\"format\": \"avro\", \"server\": ..., \"subject\": ...}.")));

	/* its id: the schema looked up under the subject, as a client does */
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"schema\": ");
	kl_json_append_string(&body, s->schema, strlen(s->schema));
	if (strcmp(s->schema_type, "AVRO") != 0)
	{
		appendStringInfoString(&body, ", \"schemaType\": ");
		kl_json_append_string(&body, s->schema_type, strlen(s->schema_type));
	}
	appendStringInfoChar(&body, '}');
	path = psprintf("/subjects/%s", kl_url_escape(subject));
	what = psprintf("the schema of GUID %s under subject \"%s\"", text, subject);
	a = kl_registry_request(reg, path, body.data, deadline);
	kl_registry_check_status(reg, &a, path, what);
	under = kl_registry_parse(reg, &a, path, true);

	/* served and stored by that id, as every schema is */
	s = kl_registry_id(reg, under->id, deadline);
	kl_schemas_set_guid(reg, s->id, text);
	return s;
}

/*
 * kl_registry_subject_version
 *		The schema of a subject's version (0: its latest, always asked of
 *		the registry; an explicit version is served from the catalog when
 *		stored), fetched before deadline (0: the default timeout) and stored.
 */
KlRegistrySchema *
kl_registry_subject_version(ForeignServer *server, const char *subject, int32 version,
							TimestampTz deadline)
{
	KlRegistry *reg = kl_registry_open(server);
	KlRegistrySchema *s;
	KlHttpAnswer a;
	char	   *path;
	char	   *what;

	if (subject[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("subject must not be empty"),
				 errhint("Subjects are usually <topic>-value and <topic>-key.")));
	if (version < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version must be positive"),
				 errhint("Leave version out (or NULL) for the subject's latest version.")));
	if (version > 0 && (s = kl_schemas_lookup(reg, 0, subject, version)) != NULL)
		return s;
	if (deadline == 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), KL_REGISTRY_DEFAULT_TIMEOUT_MS);
	if (version > 0)
	{
		path = psprintf("/subjects/%s/versions/%d", kl_url_escape(subject), version);
		what = psprintf("version %d of subject \"%s\"", version, subject);
	}
	else
	{
		path = psprintf("/subjects/%s/versions/latest", kl_url_escape(subject));
		what = psprintf("subject \"%s\"", subject);
	}
	a = kl_registry_request(reg, path, NULL, deadline);
	kl_registry_check_status(reg, &a, path, what);
	s = kl_registry_parse(reg, &a, path, true);
	if (strcmp(s->subject, subject) != 0 || (version > 0 && s->version != version))
		kl_registry_malformed(reg, &a, path, "is about another subject or version");
	(void) kl_schemas_store(reg, s);
	/* the subject and version asked for, whatever the row held before */
	return s;
}

/*
 * kl_registry_result
 *		A schema as the row (schema_id, subject, version, schema_type,
 *		schema json) of the SQL functions; a Protobuf schema, not JSON,
 *		becomes a JSON string.
 */
static Datum
kl_registry_result(FunctionCallInfo fcinfo, const KlRegistrySchema *s)
{
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	values[0] = Int32GetDatum(s->id);
	if (s->subject != NULL)
	{
		values[1] = CStringGetTextDatum(s->subject);
		values[2] = Int32GetDatum(s->version);
	}
	else
		nulls[1] = nulls[2] = true;
	values[3] = CStringGetTextDatum(s->schema_type);
	if (strcmp(s->schema_type, "PROTOBUF") == 0)
	{
		StringInfoData str;

		initStringInfo(&str);
		kl_json_append_string(&str, s->schema, strlen(s->schema));
		values[4] = CStringGetTextDatum(str.data);
	}
	else
		values[4] = CStringGetTextDatum(s->schema);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/*
 * kl_registry_server_arg
 *		The server argument of a registry function: a kafka_lake server the
 *		caller has USAGE on.
 */
static ForeignServer *
kl_registry_server_arg(FunctionCallInfo fcinfo)
{
	ForeignServer *server;

	kl_check_not_null(fcinfo, 0, "server", "Name a foreign server of the kafka_lake wrapper.");
	server = kl_get_server(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	kl_check_server_usage(server);
	return server;
}

/*
 * kl_registry_deadline_arg
 *		The deadline of a call's timeout argument (NULL: the default).
 */
static TimestampTz
kl_registry_deadline_arg(FunctionCallInfo fcinfo, int argno)
{
	int			ms = KL_REGISTRY_DEFAULT_TIMEOUT_MS;

	if (!PG_ARGISNULL(argno))
		ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(argno), "timeout");
	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
}

/*
 * kafka_lake_registry_schema
 *		registry_schema(server, schema_id, timeout): a schema by id.
 */
Datum
kafka_lake_registry_schema(PG_FUNCTION_ARGS)
{
	ForeignServer *server;

	kl_check_not_null(fcinfo, 1, "schema_id", "Give the schema id, as Confluent's wire format carries it.");
	server = kl_registry_server_arg(fcinfo);
	return kl_registry_result(fcinfo,
							  kl_registry_schema_by_id(server, PG_GETARG_INT32(1),
													   kl_registry_deadline_arg(fcinfo, 2)));
}

/*
 * kafka_lake_registry_subject
 *		registry_subject(server, subject, version, timeout): a subject's
 *		version (NULL: the latest).
 */
Datum
kafka_lake_registry_subject(PG_FUNCTION_ARGS)
{
	ForeignServer *server;
	int32		version = 0;

	kl_check_not_null(fcinfo, 1, "subject", "Name a subject of the registry, for example orders-value.");
	server = kl_registry_server_arg(fcinfo);
	if (!PG_ARGISNULL(2))
	{
		version = PG_GETARG_INT32(2);
		if (version <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("version must be positive"),
					 errhint("Leave version out (or NULL) for the subject's latest version.")));
	}
	return kl_registry_result(fcinfo,
							  kl_registry_subject_version(server,
														  text_to_cstring(PG_GETARG_TEXT_PP(1)),
														  version,
														  kl_registry_deadline_arg(fcinfo, 3)));
}
