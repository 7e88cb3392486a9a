/*-------------------------------------------------------------------------
 *
 * pg_shim.c
 *	  The smallest stand-in for the PostgreSQL backend that kafka_lake's
 *	  parsers need to run in a libFuzzer process, outside a server.
 *
 * Nothing here is PostgreSQL's code: each function is written from the API's
 * documented contract (its header and comments), as small as the fuzz
 * targets need.  What the targets link of PostgreSQL itself is Debian's
 * libpgport.a (pg_snprintf, pg_qsort, strlcpy, CRC-32C) and libpgcommon.a
 * (the UTF-8 verifier and wide-character conversion of wchar.c, base64).
 *
 * Memory: palloc and friends allocate from malloc with a small header that
 * links every chunk into its context.  Two contexts exist: TopMemoryContext
 * (what a target builds once: compiled contracts, ICU's case map) and the
 * per-input context, CurrentMemoryContext while an input runs, which
 * kl_shim_reset() frees whole after each input (running its reset
 * callbacks, as MemoryContextReset does: kl_pool_create's arenas are freed
 * that way), so LeakSanitizer sees exactly what the product leaks outside
 * PostgreSQL's memory contexts.
 *
 * Errors: errstart returns true for every level, errmsg and the others
 * format into one message, and errfinish of an ERROR or worse longjmps to
 * the innermost PG_TRY through PG_exception_stack, as the backend does: an
 * ERROR is a clean rejection of the input.  An ERROR with no PG_TRY around
 * it aborts (the backend would have nowhere to go either).  Lower levels
 * are dropped.  check_stack_depth raises the backend's ERROR past its
 * default max_stack_depth (2 MB).
 *
 * Time zones: pg_tzset knows only UTC (UTC, Etc/UTC, GMT, Etc/GMT) and the
 * fixed-offset zones Etc/GMT+h and Etc/GMT-h; pg_next_dst_boundary gives
 * their fixed offset.  Other zones do not exist here, so a contract naming
 * one fails to compile.  GetCurrentTimestamp is fixed (2026-06-29 12:00 UTC)
 * so that every run is the same.
 *
 * Regular expressions: the backend's regex engine is not available outside
 * a server, so pg_regcomp always fails ("pattern" is not fuzzed: a contract
 * with a pattern fails to compile) and pg_regexec is unreachable.
 *
 * Types: builtin_types.c (compiled unchanged) asks the catalog about types;
 * parseTypeString, format_type_with_typemod and the syscache lookups below
 * know a handful of built-in types of pg_catalog (no domains, no user
 * types), enough for "sql_type" in definitions.
 *
 * Files: csv.c opens the landed CSV through kl_open_landed (landing_files.c,
 * which needs the whole landing directory machinery): here it is open(2).
 *
 * Anything else a compiled file refers to but no target reaches is a stub
 * that aborts with its name, so an incomplete shim shows up as a crash that
 * says so, never as a silent wrong answer.
 *
 * IDENTIFICATION
 *	  fuzz/pg_shim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/memnodes.h"
#include "pgtime.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "pg_shim.h"

/* ----------------------------------------------------------------
 *		Memory contexts on malloc
 * ----------------------------------------------------------------
 */

typedef struct ShimChunk
{
	struct ShimChunk *prev;
	struct ShimChunk *next;
	struct ShimContext *cxt;
	size_t		size;
} ShimChunk;

typedef struct ShimContext
{
	MemoryContextData base;		/* what callers see */
	ShimChunk	head;			/* circular list of its chunks */
	MemoryContextCallback *callbacks;
} ShimContext;

static ShimContext shim_top;
static ShimContext shim_input;

MemoryContext TopMemoryContext = NULL;
MemoryContext CurrentMemoryContext = NULL;
MemoryContext ErrorContext = NULL;

static void
shim_context_init(ShimContext *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->base.type = T_AllocSetContext;
	c->base.name = name;
	c->head.prev = c->head.next = &c->head;
}

/*
 * kl_shim_init
 *		Set up the two contexts, once, before anything else.
 */
void
kl_shim_init(void)
{
	if (TopMemoryContext != NULL)
		return;
	shim_context_init(&shim_top, "TopMemoryContext");
	shim_context_init(&shim_input, "FuzzInput");
	TopMemoryContext = &shim_top.base;
	ErrorContext = &shim_top.base;
	CurrentMemoryContext = &shim_input.base;
}

static void *
shim_alloc(MemoryContext context, Size size, bool zero)
{
	ShimContext *c = (ShimContext *) context;
	ShimChunk  *h;

	if (!AllocSizeIsValid(size) && size > MaxAllocHugeSize)
		elog(ERROR, "invalid memory alloc request size %zu", size);
	h = malloc(sizeof(ShimChunk) + size);
	if (h == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (zero)
		memset(h + 1, 0, size);
	h->cxt = c;
	h->size = size;
	h->next = c->head.next;
	h->prev = &c->head;
	c->head.next->prev = h;
	c->head.next = h;
	return h + 1;
}

static void
shim_context_free_all(ShimContext *c)
{
	MemoryContextCallback *cb = c->callbacks;

	/* callbacks first, most recently registered first, as MemoryContextReset */
	c->callbacks = NULL;
	while (cb != NULL)
	{
		MemoryContextCallback *next = cb->next;

		cb->func(cb->arg);
		cb = next;
	}
	while (c->head.next != &c->head)
	{
		ShimChunk  *h = c->head.next;

		c->head.next = h->next;
		free(h);
	}
	c->head.prev = &c->head;
}

/*
 * kl_shim_reset
 *		Free everything the last input allocated, and forget its error.
 */
void
kl_shim_reset(void)
{
	CurrentMemoryContext = &shim_input.base;
	shim_context_free_all(&shim_input);
	PG_exception_stack = NULL;
	error_context_stack = NULL;
}

void *
palloc(Size size)
{
	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_alloc(CurrentMemoryContext, size, false);
}

void *
palloc0(Size size)
{
	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_alloc(CurrentMemoryContext, size, true);
}

void *
palloc_extended(Size size, int flags)
{
	return shim_alloc(CurrentMemoryContext, size, (flags & MCXT_ALLOC_ZERO) != 0);
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_alloc(context, size, false);
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_alloc(context, size, true);
}

void *
MemoryContextAllocHuge(MemoryContext context, Size size)
{
	if (!AllocHugeSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_alloc(context, size, false);
}

static void
shim_unlink(ShimChunk *h)
{
	h->prev->next = h->next;
	h->next->prev = h->prev;
}

void
pfree(void *pointer)
{
	ShimChunk  *h = ((ShimChunk *) pointer) - 1;

	shim_unlink(h);
	free(h);
}

static void *
shim_realloc(void *pointer, Size size)
{
	ShimChunk  *h = ((ShimChunk *) pointer) - 1;
	ShimContext *c = h->cxt;
	void	   *p = shim_alloc(&c->base, size, false);

	memcpy(p, pointer, Min(size, h->size));
	pfree(pointer);
	return p;
}

void *
repalloc(void *pointer, Size size)
{
	if (!AllocSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_realloc(pointer, size);
}

void *
repalloc_huge(void *pointer, Size size)
{
	if (!AllocHugeSizeIsValid(size))
		elog(ERROR, "invalid memory alloc request size %zu", size);
	return shim_realloc(pointer, size);
}

void
MemoryContextRegisterResetCallback(MemoryContext context, MemoryContextCallback *cb)
{
	ShimContext *c = (ShimContext *) context;

	cb->next = c->callbacks;
	c->callbacks = cb;
}

char *
pstrdup(const char *in)
{
	size_t		len = strlen(in);
	char	   *p = palloc(len + 1);

	memcpy(p, in, len + 1);
	return p;
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *p;

	len = strnlen(in, len);
	p = palloc(len + 1);
	memcpy(p, in, len);
	p[len] = '\0';
	return p;
}

char *
psprintf(const char *fmt,...)
{
	va_list		ap;
	int			n;
	char	   *p;

	va_start(ap, fmt);
	n = pg_vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		elog(ERROR, "psprintf: invalid format");
	p = palloc(n + 1);
	va_start(ap, fmt);
	pg_vsnprintf(p, n + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* ----------------------------------------------------------------
 *		StringInfo
 * ----------------------------------------------------------------
 */

void
initStringInfo(StringInfo str)
{
	str->maxlen = 1024;
	str->data = palloc(str->maxlen);
	resetStringInfo(str);
}

StringInfo
makeStringInfo(void)
{
	StringInfo	s = palloc(sizeof(StringInfoData));

	initStringInfo(s);
	return s;
}

void
resetStringInfo(StringInfo str)
{
	str->data[0] = '\0';
	str->len = 0;
	str->cursor = 0;
}

void
enlargeStringInfo(StringInfo str, int needed)
{
	int			newlen;

	if (needed < 0)
		elog(ERROR, "invalid string enlargement request size: %d", needed);
	if (((Size) needed) >= (MaxAllocSize - (Size) str->len))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of memory"),
				 errdetail("Cannot enlarge string buffer containing %d bytes by %d more bytes.",
						   str->len, needed)));
	needed += str->len + 1;
	if (needed <= str->maxlen)
		return;
	newlen = 2 * str->maxlen;
	while (needed > newlen)
		newlen = 2 * newlen;
	if (newlen > (int) MaxAllocSize)
		newlen = (int) MaxAllocSize;
	str->data = repalloc(str->data, newlen);
	str->maxlen = newlen;
}

int
appendStringInfoVA(StringInfo str, const char *fmt, va_list args)
{
	int			avail = str->maxlen - str->len;
	int			n;

	n = pg_vsnprintf(str->data + str->len, avail, fmt, args);
	if (n < 0)
		elog(ERROR, "vsnprintf failed with format string \"%s\"", fmt);
	if (n < avail)
	{
		str->len += n;
		return 0;
	}
	str->data[str->len] = '\0';
	return n + 1;
}

void
appendStringInfo(StringInfo str, const char *fmt,...)
{
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(str, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(str, needed);
	}
}

void
appendBinaryStringInfo(StringInfo str, const char *data, int datalen)
{
	enlargeStringInfo(str, datalen);
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
	str->data[str->len] = '\0';
}

void
appendBinaryStringInfoNT(StringInfo str, const char *data, int datalen)
{
	enlargeStringInfo(str, datalen);
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
}

void
appendStringInfoString(StringInfo str, const char *s)
{
	appendBinaryStringInfo(str, s, strlen(s));
}

void
appendStringInfoChar(StringInfo str, char ch)
{
	if (str->len + 1 >= str->maxlen)
		enlargeStringInfo(str, 1);
	str->data[str->len] = ch;
	str->len++;
	str->data[str->len] = '\0';
}

void
appendStringInfoSpaces(StringInfo str, int count)
{
	if (count > 0)
	{
		enlargeStringInfo(str, count);
		memset(str->data + str->len, ' ', count);
		str->len += count;
		str->data[str->len] = '\0';
	}
}

/* ----------------------------------------------------------------
 *		ereport and elog
 * ----------------------------------------------------------------
 */

sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
volatile sig_atomic_t InterruptPending = false;

static int	shim_elevel;
static char shim_message[1024];

const char *
kl_shim_last_error(void)
{
	return shim_message;
}

bool
errstart(int elevel, const char *domain)
{
	shim_elevel = elevel;
	shim_message[0] = '\0';
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	if (shim_elevel < ERROR)
		return;
	if (PG_exception_stack == NULL)
	{
		fprintf(stderr, "pg_shim: ERROR outside PG_TRY at %s:%d: %s\n",
				filename, lineno, shim_message);
		abort();
	}
	siglongjmp(*PG_exception_stack, 1);
}

void
pg_re_throw(void)
{
	if (PG_exception_stack == NULL)
	{
		fprintf(stderr, "pg_shim: PG_RE_THROW outside PG_TRY: %s\n", shim_message);
		abort();
	}
	siglongjmp(*PG_exception_stack, 1);
}

void
FlushErrorState(void)
{
	shim_message[0] = '\0';
}

#define SHIM_FORMAT(fmt) \
	do { \
		va_list ap; \
		va_start(ap, fmt); \
		pg_vsnprintf(shim_message, sizeof(shim_message), fmt, ap); \
		va_end(ap); \
	} while (0)

int
errmsg(const char *fmt,...)
{
	SHIM_FORMAT(fmt);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	SHIM_FORMAT(fmt);
	return 0;
}

/* details, hints and contexts are formatted (so their arguments are
 * checked by the sanitizers) and dropped */
#define SHIM_FORMAT_DROP(fmt) \
	do { \
		char drop[1024]; \
		va_list ap; \
		va_start(ap, fmt); \
		pg_vsnprintf(drop, sizeof(drop), fmt, ap); \
		va_end(ap); \
	} while (0)

int
errdetail(const char *fmt,...)
{
	SHIM_FORMAT_DROP(fmt);
	return 0;
}

int
errdetail_internal(const char *fmt,...)
{
	SHIM_FORMAT_DROP(fmt);
	return 0;
}

int
errhint(const char *fmt,...)
{
	SHIM_FORMAT_DROP(fmt);
	return 0;
}

int
errcontext_msg(const char *fmt,...)
{
	SHIM_FORMAT_DROP(fmt);
	return 0;
}

bool
errcontext_start(int elevel, const char *domain)
{
	return true;
}

int
errcode(int sqlerrcode)
{
	return 0;
}

int
errcode_for_file_access(void)
{
	return 0;
}

int
errposition(int cursorpos)
{
	return 0;
}

void
ProcessInterrupts(void)
{
	InterruptPending = false;
}

/* the backend's default max_stack_depth */
#define SHIM_MAX_STACK_DEPTH	(2048L * 1024L)
static char *shim_stack_base = NULL;

void
kl_shim_set_stack_base(void)
{
	char		here;

	shim_stack_base = &here;
}

bool
stack_is_too_deep(void)
{
	char		here;
	long		depth;

	if (shim_stack_base == NULL)
		return false;
	depth = (long) (shim_stack_base - &here);
	if (depth < 0)
		depth = -depth;
	return depth > SHIM_MAX_STACK_DEPTH;
}

void
check_stack_depth(void)
{
	if (stack_is_too_deep())
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("stack depth limit exceeded")));
}

/* ----------------------------------------------------------------
 *		Numbers, text, dates
 * ----------------------------------------------------------------
 */

int
pg_ltoa(int32 value, char *a)
{
	return sprintf(a, "%d", value);
}

int
pg_lltoa(int64 value, char *a)
{
	return sprintf(a, "%lld", (long long) value);
}

int
pg_mb2wchar_with_len(const char *from, pg_wchar *to, int len)
{
	return pg_wchar_table[PG_UTF8].mb2wchar_with_len((const unsigned char *) from, to, len);
}

/*
 * quote_literal_cstr
 *		The SQL literal of a string: quotes doubled, and E'' with backslashes
 *		doubled when it has any.
 */
char *
quote_literal_cstr(const char *rawstr)
{
	size_t		len = strlen(rawstr);
	char	   *result = palloc(len * 2 + 4);
	char	   *p = result;

	if (strchr(rawstr, '\\') != NULL)
		*p++ = 'E';
	*p++ = '\'';
	for (const char *s = rawstr; *s; s++)
	{
		if (*s == '\'' || *s == '\\')
			*p++ = *s;
		*p++ = *s;
	}
	*p++ = '\'';
	*p = '\0';
	return result;
}

#define SHIM_MAX_LEVENSHTEIN_STRLEN 255

/*
 * varstr_levenshtein
 *		Edit distance, with the backend's refusal of arguments longer than
 *		255 characters when they are not trusted.
 */
int
varstr_levenshtein(const char *source, int slen, const char *target, int tlen,
				   int ins_c, int del_c, int sub_c, bool trusted)
{
	int		   *prev;
	int		   *curr;
	int			m = pg_mbstrlen_with_len(source, slen);
	int			n = pg_mbstrlen_with_len(target, tlen);
	int			result;

	if (m == 0)
		return n * ins_c;
	if (n == 0)
		return m * del_c;
	if (!trusted && (m > SHIM_MAX_LEVENSHTEIN_STRLEN || n > SHIM_MAX_LEVENSHTEIN_STRLEN))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("levenshtein argument exceeds maximum length of %d characters",
						SHIM_MAX_LEVENSHTEIN_STRLEN)));
	/* bytes, not characters: close enough for a hint */
	prev = palloc((tlen + 1) * sizeof(int));
	curr = palloc((tlen + 1) * sizeof(int));
	for (int j = 0; j <= tlen; j++)
		prev[j] = j * ins_c;
	for (int i = 1; i <= slen; i++)
	{
		int		   *t;

		curr[0] = i * del_c;
		for (int j = 1; j <= tlen; j++)
		{
			int			ins = curr[j - 1] + ins_c;
			int			del = prev[j] + del_c;
			int			sub = prev[j - 1] + (source[i - 1] == target[j - 1] ? 0 : sub_c);

			curr[j] = Min(ins, Min(del, sub));
		}
		t = prev;
		prev = curr;
		curr = t;
	}
	result = prev[tlen];
	pfree(prev);
	pfree(curr);
	return result;
}

int
pg_mbstrlen_with_len(const char *mbstr, int limit)
{
	int			len = 0;

	while (limit > 0 && *mbstr)
	{
		int			l = pg_utf_mblen((const unsigned char *) mbstr);

		limit -= l;
		mbstr += l;
		len++;
	}
	return len;
}

/* the days of each month, leap years second (datetime.h) */
const int	day_tab[2][13] = {
	{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 0},
	{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 0}
};

/*
 * date2j, j2date, j2day
 *		The Julian day number of a proleptic Gregorian date and back, from
 *		the standard formulas (Fliegel and Van Flandern, 1968), in integer
 *		arithmetic valid for the years PostgreSQL's dates cover.
 */
int
date2j(int year, int month, int day)
{
	int64		a = (14 - month) / 12;
	int64		y = (int64) year + 4800 - a;
	int64		m = month + 12 * a - 3;

	return (int) (day + (153 * m + 2) / 5 + 365 * y + y / 4 - y / 100 + y / 400 - 32045);
}

void
j2date(int jd, int *year, int *month, int *day)
{
	int64		a = (int64) jd + 32044;
	int64		b = (4 * a + 3) / 146097;
	int64		c = a - 146097 * b / 4;
	int64		d = (4 * c + 3) / 1461;
	int64		e = c - 1461 * d / 4;
	int64		m = (5 * e + 2) / 153;

	*day = (int) (e - (153 * m + 2) / 5 + 1);
	*month = (int) (m + 3 - 12 * (m / 10));
	*year = (int) (100 * b + d - 4800 + m / 10);
}

int
j2day(int date)
{
	date += 1;
	date %= 7;
	if (date < 0)
		date += 7;
	return date;
}

/* 2026-06-29 12:00:00 UTC, as microseconds since 2000-01-01 */
#define SHIM_NOW	((TimestampTz) ((int64) 9676 * USECS_PER_DAY + (int64) 12 * USECS_PER_HOUR))

TimestampTz
GetCurrentTimestamp(void)
{
	return SHIM_NOW;
}

/* A fixed-offset zone (seconds east of UTC) */
typedef struct ShimZone
{
	char		name[16];
	long		gmtoff;
} ShimZone;

static ShimZone shim_zones[32];

pg_tz *
pg_tzset(const char *name)
{
	long		off;
	char	   *end;

	if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0 ||
		strcmp(name, "GMT") == 0 || strcmp(name, "Etc/GMT") == 0)
		off = 0;
	else if (strncmp(name, "Etc/GMT", 7) == 0 && (name[7] == '+' || name[7] == '-'))
	{
		long		h = strtol(name + 8, &end, 10);

		if (*end != '\0' || end == name + 8 || h > 14)
			return NULL;
		off = (name[7] == '+' ? -h : h) * 3600;	/* POSIX signs */
	}
	else
		return NULL;
	/* one slot per offset: -14h .. +14h */
	{
		ShimZone   *z = &shim_zones[off / 3600 + 14];

		snprintf(z->name, sizeof(z->name), "%s", name);
		z->gmtoff = off;
		return (pg_tz *) z;
	}
}

int
pg_next_dst_boundary(const pg_time_t *timep, long int *before_gmtoff, int *before_isdst,
					 pg_time_t *boundary, long int *after_gmtoff, int *after_isdst,
					 const pg_tz *tz)
{
	const ShimZone *z = (const ShimZone *) tz;

	*before_gmtoff = z->gmtoff;
	*before_isdst = 0;
	return 0;					/* no DST boundary: a fixed offset */
}

/* ----------------------------------------------------------------
 *		Types: a handful of pg_catalog's, for builtin_types.c
 * ----------------------------------------------------------------
 */

typedef struct ShimType
{
	const char *name;			/* as format_type prints it */
	const char *alias;			/* another spelling, or NULL */
	Oid			oid;
	bool		has_typmod;		/* takes (n) or (p,s) */
} ShimType;

static const ShimType shim_types[] = {
	{"text", NULL, TEXTOID, false},
	{"integer", "int4", INT4OID, false},
	{"bigint", "int8", INT8OID, false},
	{"smallint", "int2", INT2OID, false},
	{"boolean", "bool", BOOLOID, false},
	{"numeric", "decimal", NUMERICOID, true},
	{"character varying", "varchar", VARCHAROID, true},
	{"double precision", "float8", FLOAT8OID, false},
	{"real", "float4", FLOAT4OID, false},
	{"date", NULL, DATEOID, false},
	{"timestamp with time zone", "timestamptz", TIMESTAMPTZOID, false},
	{"timestamp without time zone", "timestamp", TIMESTAMPOID, false},
	{"jsonb", NULL, JSONBOID, false},
	{"json", NULL, JSONOID, false},
	{"uuid", NULL, UUIDOID, false},
	{NULL, NULL, InvalidOid, false}
};

static const ShimType *
shim_type_by_oid(Oid typid)
{
	for (int i = 0; shim_types[i].name; i++)
		if (shim_types[i].oid == typid)
			return &shim_types[i];
	return NULL;
}

/*
 * parseTypeString
 *		name, or name(n), or name(p,s) for the types above; InvalidOid when
 *		missing_ok and the name is not one of them.  Typmods as the backend
 *		encodes them: VARHDRSZ + n, and ((p << 16) | s) + VARHDRSZ.
 */
void
parseTypeString(const char *str, Oid *typeid_p, int32 *typmod_p, bool missing_ok)
{
	const char *paren = strchr(str, '(');
	size_t		namelen = paren ? (size_t) (paren - str) : strlen(str);

	*typeid_p = InvalidOid;
	*typmod_p = -1;
	while (namelen > 0 && str[namelen - 1] == ' ')
		namelen--;
	for (int i = 0; shim_types[i].name; i++)
	{
		const ShimType *t = &shim_types[i];

		if ((strlen(t->name) == namelen && strncmp(t->name, str, namelen) == 0) ||
			(t->alias && strlen(t->alias) == namelen && strncmp(t->alias, str, namelen) == 0))
		{
			if (paren)
			{
				long		a,
							b = 0;
				char	   *end;

				if (!t->has_typmod)
					ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
									errmsg("type modifier is not allowed for type \"%s\"", t->name)));
				a = strtol(paren + 1, &end, 10);
				if (*end == ',' && t->oid == NUMERICOID)
					b = strtol(end + 1, &end, 10);
				if (*end != ')' || end[1] != '\0' || a < 1 || a > 1000 || b < 0 || b > a)
					ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
									errmsg("syntax error at or near \"%s\"", paren)));
				*typmod_p = t->oid == NUMERICOID ? (int32) (((a << 16) | b) + VARHDRSZ) :
					(int32) (a + VARHDRSZ);
			}
			*typeid_p = t->oid;
			return;
		}
	}
	if (!missing_ok)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("type \"%s\" does not exist", str)));
}

char *
format_type_with_typemod(Oid type_oid, int32 typemod)
{
	const ShimType *t = shim_type_by_oid(type_oid);

	if (t == NULL)
		return psprintf("???%u", type_oid);
	if (typemod < 0 || !t->has_typmod)
		return pstrdup(t->name);
	if (type_oid == NUMERICOID)
		return psprintf("%s(%d,%d)", t->name, ((typemod - VARHDRSZ) >> 16) & 0xffff,
						(typemod - VARHDRSZ) & 0xffff);
	return psprintf("%s(%d)", t->name, typemod - VARHDRSZ);
}

/* a pg_type row for SearchSysCache1(TYPEOID): the fields builtin_types.c reads */
typedef struct ShimTypeTuple
{
	HeapTupleData tuple;
	union
	{
		char		bytes[MAXALIGN(SizeofHeapTupleHeader)];
		double		align;
	}			header;			/* a HeapTupleHeaderData, without t_bits */
	FormData_pg_type form;
} ShimTypeTuple;

HeapTuple
SearchSysCache1(int cacheId, Datum key1)
{
	Oid			typid = DatumGetObjectId(key1);
	ShimTypeTuple *t;

	if (cacheId != TYPEOID || shim_type_by_oid(typid) == NULL)
		return NULL;
	t = palloc0(sizeof(ShimTypeTuple));
	t->tuple.t_data = (HeapTupleHeader) &t->header;
	t->tuple.t_data->t_hoff = offsetof(ShimTypeTuple, form) - offsetof(ShimTypeTuple, header);
	t->form.oid = typid;
	t->form.typnamespace = PG_CATALOG_NAMESPACE;
	t->form.typisdefined = true;
	t->form.typtype = TYPTYPE_BASE;
	return &t->tuple;
}

void
ReleaseSysCache(HeapTuple tuple)
{
}

Oid
get_element_type(Oid typid)
{
	return InvalidOid;
}

char
get_typtype(Oid typid)
{
	return shim_type_by_oid(typid) ? TYPTYPE_BASE : '\0';
}

Oid
getBaseTypeAndTypmod(Oid typid, int32 *typmod)
{
	return typid;
}

int
NewGUCNestLevel(void)
{
	return 1;
}

int
set_config_option(const char *name, const char *value, GucContext context, GucSource source,
				  GucAction action, bool changeVal, int elevel, bool is_reload)
{
	return 1;
}

void
AtEOXact_GUC(bool isCommit, int nestLevel)
{
}

/* ----------------------------------------------------------------
 *		Regular expressions: not available outside a server
 * ----------------------------------------------------------------
 */

int
pg_regcomp(regex_t *re, const pg_wchar *string, size_t len, int flags, Oid collation)
{
	return REG_ESPACE;
}

size_t
pg_regerror(int errcode, const regex_t *preg, char *errbuf, size_t errbuf_size)
{
	return strlcpy(errbuf, "regular expressions are not available in the fuzz targets",
				   errbuf_size) + 1;
}

/* ----------------------------------------------------------------
 *		Files, transactions, threads (csv.c, thread_job.c)
 * ----------------------------------------------------------------
 */

int
kl_open_landed(const char *path, const char **not_regular)
{
	*not_regular = NULL;
	return open(path, O_RDONLY | PG_BINARY);
}

int
CloseTransientFile(int fd)
{
	return close(fd);
}

SubTransactionId
GetCurrentSubTransactionId(void)
{
	return 1;
}

void
RegisterXactCallback(XactCallback callback, void *arg)
{
}

void
RegisterSubXactCallback(SubXactCallback callback, void *arg)
{
}

/* ----------------------------------------------------------------
 *		Lists (avro.c's named types and records)
 * ----------------------------------------------------------------
 */

/*
 * lappend
 *		Append a pointer to a list, as pg_list.h's contract says: NIL is the
 *		empty list, a new list is made in the current context and grows in
 *		its own.  The cells are a separate array (never the List's
 *		initial_elements), so growing is a repalloc.
 */
List *
lappend(List *list, void *datum)
{
	if (list == NIL)
	{
		list = palloc(sizeof(List));
		list->type = T_List;
		list->length = 0;
		list->max_length = 8;
		list->elements = palloc(8 * sizeof(ListCell));
	}
	else if (list->length == list->max_length)
	{
		list->max_length *= 2;
		list->elements = repalloc(list->elements, list->max_length * sizeof(ListCell));
	}
	list->elements[list->length++].ptr_value = datum;
	return list;
}

/*
 * timestamp2tm: in UTC (the shim's only zone), by the C library; enough for
 * the manifest writer's created_at (kl_iso_now, of the fixed clock).
 */
int
timestamp2tm(Timestamp dt, int *tzp, struct pg_tm *tm, fsec_t *fsec, const char **tzn,
			 pg_tz *attimezone)
{
	time_t		secs = (time_t) (dt / USECS_PER_SEC +
								 ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY));
	struct tm	utc;

	if (gmtime_r(&secs, &utc) == NULL)
		return -1;
	memset(tm, 0, sizeof(*tm));
	tm->tm_year = utc.tm_year + 1900;
	tm->tm_mon = utc.tm_mon + 1;
	tm->tm_mday = utc.tm_mday;
	tm->tm_hour = utc.tm_hour;
	tm->tm_min = utc.tm_min;
	tm->tm_sec = utc.tm_sec;
	*fsec = (fsec_t) (dt % USECS_PER_SEC);
	if (tzp)
		*tzp = 0;
	if (tzn)
		*tzn = "UTC";
	return 0;
}

/* ----------------------------------------------------------------
 *		Unreachable from the fuzz targets
 * ----------------------------------------------------------------
 */

#define SHIM_UNREACHABLE(name) \
	do { fprintf(stderr, "pg_shim: %s is not shimmed\n", name); abort(); } while (0)

int
pg_regexec(regex_t *re, const pg_wchar *string, size_t len, size_t search_start,
		   rm_detail_t *details, size_t nmatch, regmatch_t pmatch[], int flags)
{
	SHIM_UNREACHABLE("pg_regexec");
}


void
InitMaterializedSRF(FunctionCallInfo fcinfo, bits32 flags)
{
	SHIM_UNREACHABLE("InitMaterializedSRF");
}

void
tuplestore_putvalues(Tuplestorestate *state, TupleDesc tdesc, Datum *values, bool *isnull)
{
	SHIM_UNREACHABLE("tuplestore_putvalues");
}

text *
cstring_to_text(const char *s)
{
	SHIM_UNREACHABLE("cstring_to_text");
}

/* avro.c's SQL functions (avro_decode, avro_frame), never called here */

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name, Size minContextSize,
							  Size initBlockSize, Size maxBlockSize)
{
	SHIM_UNREACHABLE("AllocSetContextCreateInternal");
}

void
MemoryContextReset(MemoryContext context)
{
	SHIM_UNREACHABLE("MemoryContextReset");
}

TupleDesc
BlessTupleDesc(TupleDesc tupdesc)
{
	SHIM_UNREACHABLE("BlessTupleDesc");
}

Datum
HeapTupleHeaderGetDatum(HeapTupleHeader tuple)
{
	SHIM_UNREACHABLE("HeapTupleHeaderGetDatum");
}

HeapTuple
heap_form_tuple(TupleDesc tupleDescriptor, Datum *values, bool *isnull)
{
	SHIM_UNREACHABLE("heap_form_tuple");
}

TypeFuncClass
get_call_result_type(FunctionCallInfo fcinfo, Oid *resultTypeId, TupleDesc *resultTupleDesc)
{
	SHIM_UNREACHABLE("get_call_result_type");
}

text *
cstring_to_text_with_len(const char *s, int len)
{
	SHIM_UNREACHABLE("cstring_to_text_with_len");
}

struct varlena *
pg_detoast_datum_copy(struct varlena *datum)
{
	SHIM_UNREACHABLE("pg_detoast_datum_copy");
}

struct varlena *
pg_detoast_datum_packed(struct varlena *datum)
{
	SHIM_UNREACHABLE("pg_detoast_datum_packed");
}
