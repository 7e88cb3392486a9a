/*-------------------------------------------------------------------------
 *
 * contract.c
 *	  The contract engine: one record value judged against a compiled
 *	  contract (accepted, with its normalised event, or refused, with one
 *	  reason), the arena it writes into, and the ISO-8601 date and
 *	  timestamp parsers that the contract, the bridge and the foreign table
 *	  share.  What a definition may say, and how it becomes a KlContract,
 *	  is contract_define.c's.
 *
 * ONE ENGINE FOR EVERY CONTRACT
 *
 * A contract is data (kafka_lake.contracts), compiled once per backend
 * into a read-only KlContract: properties in check order with their types,
 * normalisations, bounds, formats, enums, nested objects and array items;
 * a hash of the member names; the event's member order; the rules.  The
 * built-in machine_event_v1 is one such definition, judged by the same
 * code as any contract an owner writes, so a user-written equivalent lands
 * at the same speed and to the same bytes.  No jsonb is touched per record:
 * the value is read by json.c's strict reader as spans of its bytes.
 *
 * THE ORDER OF THE CHECKS
 *
 * Every violation yields one short, stable reason, the first one found in
 * a fixed order, which is what quarantine.jsonl and the manifest record as
 * validation_error.  The order is what keeps machine_event_v1's reasons
 * those it always gave:
 *	1. a null value, an empty value, a value over the size limit (refused
 *	   before it is parsed);
 *	2. not JSON (a NUL byte, invalid UTF-8, the reader's error) or not an
 *	   object;
 *	3. members in document order: the first unknown member (when
 *	   additionalProperties is false) or duplicate member, reported only
 *	   once the whole value parsed, so that invalid JSON later in it wins;
 *	   then fields taken from Kafka headers, then fields derived from a
 *	   path inside the value (a value member of a derived field's own name
 *	   is refused: the two would compete for one column);
 *	4. missing required fields, in the order of "required";
 *	5. per field, in the order of "properties": its type (an integer beyond
 *	   int64 is out of range), a NUL character, the normalisation, the
 *	   length, the pattern, the format, enum and const; an object field's
 *	   own members completely (its steps 3 to 6) at its turn;
 *	6. per field, in the order of "properties": its numeric bounds, then
 *	   the rules whose left side it is;
 *	7. the members additionalProperties lets in, made canonical (a
 *	   duplicate or a NUL character among them is refused).
 *
 * An event_id of several fields is their values as the event writes them,
 * in a JSON array ("[\"o-1\", 2]", as json.dumps writes a list): the
 * escaping keeps every combination apart, whatever the values hold.
 *
 * THE NORMALISED EVENT
 *
 * Members sorted by name (the UTF-8 bytes, which is code point order, as
 * Python's sort_keys), recursively; strings decoded, normalised and escaped
 * as json.dumps escapes them (json.c); integers in canonical decimal; other
 * numbers as they were written (12.30 stays 12.30); members of no schema
 * made canonical the same way.
 *
 * THE SEED'S RULES, EXACTLY (normalize: trim, lower; format: date-time)
 *
 * The reference implementation is a Python 3.11 pipeline, and kafka_lake
 * must accept, refuse and normalise what it does, or the two disagree on
 * the accepted set and on every source_hash built from it.  Its rules are
 * Python's standard library, so each is reproduced here as Python has it:
 *
 *	- member names are JSON strings: they compare after unescaping
 *	  ("event\u005fid" is event_id), for duplicates too;
 *	- "trim" trims as str.strip() trims: of every character for which
 *	  str.isspace() is true, which Python defines as Unicode bidi class WS,
 *	  B or S, or general category Zs (NBSP, U+001C..U+001F, U+0085, U+2028,
 *	  the ideographic space, ...);
 *	- "lower" lower-cases as str.lower() does: the full Unicode lower-case
 *	  mapping ("İ" becomes "i" and a combining dot), and a capital sigma
 *	  becomes final "ς" exactly where Python's Final_Sigma test says
 *	  (preceded by a cased character and not followed by one,
 *	  case-ignorable characters skipped both ways);
 *	- "date-time" reads as datetime.fromisoformat after every "Z" is
 *	  replaced by "+00:00", and requires a zone (below).
 * Case mapping and character properties come from ICU, which PostgreSQL
 * itself links on Debian: not from a table written here, and not from the
 * database's locale, so the result does not depend on lc_ctype.  ICU 72
 * implements Unicode 15.0 while Python 3.11 has Unicode 14.0; a character
 * first assigned after 14.0 is, for Python, unassigned: not whitespace, not
 * cased, not case-ignorable, its own lower case.  It is treated so here
 * (u_charAge), which keeps the two equal on every code point.  Values that
 * are ASCII, nearly all of them, never reach ICU.
 *
 * kafka_lake is stricter than the seed where the seed loses or cannot use
 * data (docs/contracts.md, "The contract and the seed's pipeline"): a duplicate member
 * name, integers beyond int64, values over the size limit, NUL characters
 * and unpaired surrogates in strings, a date not written YYYY-MM-DD, and a
 * timestamp whose offset is 16 hours or more (PostgreSQL's timestamptz
 * reads offsets up to 15:59:59; Python's go to 23:59:59.999999).  Booleans
 * and numbers with a fraction or an exponent are not integers.
 *
 * OFF THE BACKEND'S ALLOCATOR (WHY THE ARENA)
 *
 * Judging a record (kl_contract_judge and everything below it) calls no
 * PostgreSQL function that allocates, reports, or looks anything up: no
 * palloc, ereport, elog, syscache or fmgr, so that the work can move to a
 * thread of its own while every PostgreSQL call stays on the backend's.
 * It writes into two KlArenas the caller provides (plain malloc()'d chunks:
 * "scratch", reset per record, and "out", which keeps the events and
 * reasons of a window); an allocation that fails makes it return
 * kl_judge_out_of_memory, which the caller reports.  What it does call is
 * pure: json.c's reader and escaper, ICU, libc (snprintf is PostgreSQL's
 * port of it, which keeps no state), PostgreSQL's UTF-8 verifier, date2j,
 * and the time zone rules of a pg_tz looked up when the contract was
 * compiled (pg_next_dst_boundary reads them, nothing more).  The compiled
 * contract is built on the backend and only read afterwards; the ICU case
 * map is opened by kl_contract_prepare before any record is judged.
 *
 * The one exception is "pattern": PostgreSQL's regular expressions keep
 * global state (the collation of the last regcomp/regexec) and allocate
 * the wide-character copy of the string with palloc.  Every pattern check
 * goes through kl_pattern_match, and nothing else in this file calls
 * PostgreSQL, so that a threaded caller can route exactly those checks to
 * the backend's thread.
 *
 * THE TIMESTAMP PARSER
 *
 * ISO-8601 dates and timestamps, as Python 3.11 reads them, are
 * iso8601.c's.
 *
 * IDENTIFICATION
 *	  src/contract/contract.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include <unicode/uchar.h>
#include <unicode/ucasemap.h>
#include <unicode/utf8.h>

#include "catalog/pg_collation.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "regex/regex.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

#include "base/json.h"
#include "contract/contract.h"
#include "contract/iso8601.h"

const char	kl_judge_out_of_memory[] = "out of memory while judging the record";

/* ----------------------------------------------------------------
 *		The arena
 * ----------------------------------------------------------------
 */

struct KlPoolChunk
{
	KlPoolChunk *next;
	size_t		size;			/* bytes in data */
	char		data[FLEXIBLE_ARRAY_MEMBER];
};

#define KL_POOL_ALIGN(n)	(((n) + 7) & ~((size_t) 7))

/*
 * kl_pool_free
 *		Release every chunk (a memory context reset callback).
 */
static void
kl_pool_free(void *arg)
{
	KlPool    *a = (KlPool *) arg;
	KlPoolChunk *c = a->first;

	while (c != NULL)
	{
		KlPoolChunk *next = c->next;

		free(c);
		c = next;
	}
	a->first = a->current = NULL;
	a->top = a->end = NULL;
}

/*
 * kl_pool_create
 *		An empty arena whose chunks are released when owner is reset or
 *		deleted (an ERROR included).  Backend only.
 */
KlPool *
kl_pool_create(MemoryContext owner, size_t chunk_size)
{
	KlPool    *a = MemoryContextAllocZero(owner, sizeof(KlPool));
	MemoryContextCallback *cb = MemoryContextAllocZero(owner, sizeof(MemoryContextCallback));

	a->chunk_size = Max(chunk_size, 4096);
	cb->func = kl_pool_free;
	cb->arg = a;
	MemoryContextRegisterResetCallback(owner, cb);
	return a;
}

/*
 * kl_pool_reset
 *		Forget everything handed out; keep the chunks for what comes next.
 */
void
kl_pool_reset(KlPool *a)
{
	a->current = a->first;
	a->top = a->first ? a->first->data : NULL;
	a->end = a->first ? a->first->data + a->first->size : NULL;
	a->failed = false;
}

/*
 * kl_pool_alloc
 *		n bytes, 8-aligned; NULL (and failed set) when malloc() fails.
 */
void *
kl_pool_alloc(KlPool *a, size_t n)
{
	char	   *p;

	n = KL_POOL_ALIGN(Max(n, 1));
	if (a->top == NULL || (size_t) (a->end - a->top) < n)
	{
		KlPoolChunk *next = a->current ? a->current->next : a->first;

		/* the next kept chunk, if it is big enough; else a new one here */
		if (next == NULL || next->size < n)
		{
			size_t		size = Max(a->chunk_size, n);
			KlPoolChunk *c = malloc(offsetof(KlPoolChunk, data) + size);

			if (c == NULL)
			{
				a->failed = true;
				return NULL;
			}
			c->size = size;
			c->next = next;
			if (a->current)
				a->current->next = c;
			else
				a->first = c;
			next = c;
		}
		a->current = next;
		a->top = next->data;
		a->end = next->data + next->size;
	}
	p = a->top;
	a->top += n;
	return p;
}

/*
 * kl_pool_strdup
 *		A NUL-terminated copy of s[0..len).
 */
char *
kl_pool_strdup(KlPool *a, const char *s, size_t len)
{
	char	   *p = kl_pool_alloc(a, len + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/*
 * A growing buffer in an arena: what a judgement renders into.  It moves to
 * a bigger place when it fills; the old place is left to the arena's reset.
 */
typedef struct KlBuf
{
	KlPool    *arena;
	char	   *data;
	size_t		len;
	size_t		cap;
} KlBuf;

/*
 * kl_buf_init, kl_buf_reserve
 *		Start a buffer; make room for n more bytes (false: out of memory).
 */
static bool
kl_buf_init(KlBuf *b, KlPool *a, size_t cap)
{
	b->arena = a;
	b->len = 0;
	b->cap = Max(cap, 64);
	b->data = kl_pool_alloc(a, b->cap);
	return b->data != NULL;
}

static bool
kl_buf_reserve(KlBuf *b, size_t n)
{
	char	   *data;
	size_t		cap;

	if (b->len + n <= b->cap)
		return true;
	cap = Max(b->cap * 2, b->len + n);
	data = kl_pool_alloc(b->arena, cap);
	if (data == NULL)
		return false;
	memcpy(data, b->data, b->len);
	b->data = data;
	b->cap = cap;
	return true;
}

static inline bool
kl_buf_append(KlBuf *b, const char *s, size_t n)
{
	if (!kl_buf_reserve(b, n))
		return false;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return true;
}


/* ----------------------------------------------------------------
 *		str.strip() and str.lower(), as Python 3.11 has them
 * ----------------------------------------------------------------
 */

/* the Unicode version of Python 3.11's character database */
#define KL_PY_UNICODE_MAJOR		14
#define KL_PY_UNICODE_MINOR		0

/* str.isspace() of the ASCII characters: \t \n \v \f \r, U+001C..U+001F, space */
static const bool kl_ascii_space[128] = {
	[0x09] = true,[0x0A] = true,[0x0B] = true,[0x0C] = true,[0x0D] = true,
	[0x1C] = true,[0x1D] = true,[0x1E] = true,[0x1F] = true,[0x20] = true
};

/*
 * kl_py_unassigned
 *		Was c assigned after Python 3.11's Unicode version (so that Python
 *		knows nothing about it)?
 */
static bool
kl_py_unassigned(UChar32 c)
{
	UVersionInfo age;

	u_charAge(c, age);
	return age[0] > KL_PY_UNICODE_MAJOR ||
		(age[0] == KL_PY_UNICODE_MAJOR && age[1] > KL_PY_UNICODE_MINOR);
}

/*
 * kl_py_isspace
 *		str.isspace() of one character: bidi class WS, B or S, or general
 *		category Zs.
 */
static bool
kl_py_isspace(UChar32 c)
{
	UCharDirection dir;

	if (c < 0x80)
		return kl_ascii_space[c];
	if (kl_py_unassigned(c))
		return false;
	dir = u_charDirection(c);
	return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR ||
		dir == U_SEGMENT_SEPARATOR || u_charType(c) == U_SPACE_SEPARATOR;
}

/*
 * kl_py_strip
 *		Narrow [*start, *end) of valid UTF-8 as str.strip() does.
 */
static void
kl_py_strip(char **start, char **end)
{
	char	   *s = *start;
	char	   *e = *end;

	while (s < e)
	{
		unsigned char c = *s;

		if (c < 0x80)
		{
			if (!kl_ascii_space[c])
				break;
			s++;
		}
		else
		{
			int32_t		i = 0;
			UChar32		cp;

			U8_NEXT(s, i, e - s, cp);
			if (!kl_py_isspace(cp))
				break;
			s += i;
		}
	}
	while (e > s)
	{
		unsigned char c = e[-1];

		if (c < 0x80)
		{
			if (!kl_ascii_space[c])
				break;
			e--;
		}
		else
		{
			int32_t		i = e - s;
			UChar32		cp;

			U8_PREV(s, 0, i, cp);
			if (!kl_py_isspace(cp))
				break;
			e = s + i;
		}
	}
	*start = s;
	*end = e;
}

/*
 * kl_py_case_class
 *		What Python's Final_Sigma test sees in a character: 'i' for
 *		case-ignorable (skipped), 'c' for cased, 'o' for anything else.
 */
static char
kl_py_case_class(UChar32 c)
{
	if (kl_py_unassigned(c))
		return 'o';
	if (u_hasBinaryProperty(c, UCHAR_CASE_IGNORABLE))
		return 'i';
	return u_hasBinaryProperty(c, UCHAR_CASED) ? 'c' : 'o';
}

/*
 * kl_py_final_sigma
 *		Is the capital sigma at s[at..after) final, as str.lower() decides:
 *		preceded by a cased character and not followed by one, skipping
 *		case-ignorable characters both ways?
 */
static bool
kl_py_final_sigma(const char *s, int32_t len, int32_t at, int32_t after)
{
	int32_t		i = at;
	UChar32		c;
	char		cls = 'o';

	while (i > 0)
	{
		U8_PREV(s, 0, i, c);
		if ((cls = kl_py_case_class(c)) != 'i')
			break;
	}
	if (cls != 'c')
		return false;
	i = after;
	while (i < len)
	{
		U8_NEXT(s, i, len, c);
		if ((cls = kl_py_case_class(c)) != 'i')
			return cls != 'c';
	}
	return true;
}
/* the ICU case map (root locale), opened by kl_contract_prepare */
static UCaseMap *kl_casemap = NULL;

/*
 * kl_contract_prepare
 *		What judging needs from the backend before the first record: ICU's
 *		case map.  Called when a contract is compiled or looked up.
 */
void
kl_contract_prepare(void)
{
	UErrorCode	status = U_ZERO_ERROR;

	if (kl_casemap != NULL)
		return;
	kl_casemap = ucasemap_open("", 0, &status);
	if (U_FAILURE(status))
	{
		kl_casemap = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not open an ICU case map: %s", u_errorName(status)),
				 errhint("The contract's \"lower\" normalisation needs ICU's case mapping data (the libicu package PostgreSQL itself uses).")));
	}
}

/*
 * kl_icu_lower
 *		Append ICU's full lower-case mapping (root locale) of s[0..len) to
 *		b; false when out of memory (or ICU failed).
 */
static bool
kl_icu_lower(KlBuf *b, const char *s, int32_t len)
{
	UErrorCode	status = U_ZERO_ERROR;
	int32_t		n;

	if (kl_casemap == NULL)
		return false;
	/* a lower case is at most 3 bytes for 2 (İ); leave room for more */
	if (!kl_buf_reserve(b, (size_t) len * 2 + 1))
		return false;
	n = ucasemap_utf8ToLower(kl_casemap, b->data + b->len, b->cap - b->len - 1,
							 s, len, &status);
	if (status == U_BUFFER_OVERFLOW_ERROR)
	{
		status = U_ZERO_ERROR;
		if (!kl_buf_reserve(b, (size_t) n + 1))
			return false;
		n = ucasemap_utf8ToLower(kl_casemap, b->data + b->len, b->cap - b->len - 1,
								 s, len, &status);
	}
	if (U_FAILURE(status))
		return false;
	b->len += n;
	return true;
}

/*
 * kl_py_lower
 *		str.lower() of valid UTF-8 s[0..len) into b.  Runs without a capital
 *		sigma or a character Python does not know go to ICU whole (the root
 *		locale's full mapping is context-free there); a sigma is decided by
 *		Python's Final_Sigma rule, and an unknown character is copied.
 */
static bool
kl_py_lower(KlBuf *b, const char *s, int32_t len)
{
	int32_t		i = 0;
	int32_t		run = 0;

	while (i < len)
	{
		int32_t		at = i;
		UChar32		c;

		if ((unsigned char) s[i] < 0x80)
		{
			i++;
			continue;
		}
		U8_NEXT(s, i, len, c);
		if (c != 0x03A3 && !kl_py_unassigned(c))
			continue;
		if (at > run && !kl_icu_lower(b, s + run, at - run))
			return false;
		if (c == 0x03A3)
		{
			/* U+03C2 final small sigma, U+03C3 small sigma */
			if (!kl_buf_append(b, kl_py_final_sigma(s, len, at, i) ? "\xcf\x82" : "\xcf\x83", 2))
				return false;
		}
		else if (!kl_buf_append(b, s + at, i - at))
			return false;
		run = i;
	}
	if (len > run)
		return kl_icu_lower(b, s + run, len - run);
	return true;
}


/*
 * kl_utf8_clip
 *		The length of the longest prefix of s (valid UTF-8) of at most max
 *		bytes that ends on a character boundary.
 */
static int
kl_utf8_clip(const char *s, int len, int max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* ----------------------------------------------------------------
 *		Numbers, exactly
 * ----------------------------------------------------------------
 */

/* A JSON number as 0.<digits> x 10^exp10, its digits in two runs */
typedef struct KlNumParts
{
	bool		neg;
	bool		zero;
	const char *run1;			/* integer digits */
	int			len1;
	const char *run2;			/* fraction digits */
	int			len2;
	int			skip;			/* leading zeros of run1 ++ run2 */
	int64		exp10;
} KlNumParts;

/*
 * kl_num_parts
 *		Take a valid JSON number apart.
 */
static void
kl_num_parts(const char *s, size_t len, KlNumParts *n)
{
	const char *p = s;
	const char *end = s + len;
	int64		e = 0;
	bool		eneg = false;
	int			total;

	memset(n, 0, sizeof(*n));
	if (p < end && *p == '-')
	{
		n->neg = true;
		p++;
	}
	n->run1 = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	n->len1 = p - n->run1;
	n->run2 = p;
	if (p < end && *p == '.')
	{
		p++;
		n->run2 = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		n->len2 = p - n->run2;
	}
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = (*p++ == '-');
		for (; p < end && *p >= '0' && *p <= '9'; p++)
			e = Min(e * 10 + (*p - '0'), (int64) 1000000000000000);
	}
	total = n->len1 + n->len2;
	while (n->skip < total &&
		   (n->skip < n->len1 ? n->run1[n->skip] : n->run2[n->skip - n->len1]) == '0')
		n->skip++;
	n->zero = (n->skip == total);
	n->exp10 = n->len1 - n->skip + (eneg ? -e : e);
}

/*
 * kl_num_digit
 *		The k-th significant digit ('0' past the end).
 */
static inline char
kl_num_digit(const KlNumParts *n, int k)
{
	int			i = n->skip + k;

	if (i < n->len1)
		return n->run1[i];
	i -= n->len1;
	return i < n->len2 ? n->run2[i] : '0';
}

/*
 * kl_number_cmp
 *		Compare two valid JSON numbers by value, exactly (no rounding to
 *		double): <0, 0, >0.
 */
int
kl_number_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	KlNumParts x,
				y;
	int			sign;
	int			nd;

	kl_num_parts(a, alen, &x);
	kl_num_parts(b, blen, &y);
	if (x.zero && y.zero)
		return 0;
	if (x.zero)
		return y.neg ? 1 : -1;
	if (y.zero)
		return x.neg ? -1 : 1;
	if (x.neg != y.neg)
		return x.neg ? -1 : 1;
	sign = x.neg ? -1 : 1;
	if (x.exp10 != y.exp10)
		return x.exp10 > y.exp10 ? sign : -sign;
	nd = Max(x.len1 + x.len2 - x.skip, y.len1 + y.len2 - y.skip);
	for (int k = 0; k < nd; k++)
	{
		char		dx = kl_num_digit(&x, k);
		char		dy = kl_num_digit(&y, k);

		if (dx != dy)
			return dx > dy ? sign : -sign;
	}
	return 0;
}

/* ----------------------------------------------------------------
 *		The pattern: the one place that calls PostgreSQL
 * ----------------------------------------------------------------
 */

/*
 * kl_regex_failed
 *		A regular expression call returned rc, neither a match nor none: a
 *		cancel or timeout the engine noticed (REG_CANCEL) is the interrupt
 *		it is (57014, or the session's end), never a bad pattern; anything
 *		else is the engine's own message in *msg.
 */
static void
kl_regex_failed(int rc, regex_t *re, char *msg, size_t msglen)
{
	if (rc == REG_CANCEL)
		CHECK_FOR_INTERRUPTS();
	pg_regerror(rc, re, msg, msglen);
}

/*
 * kl_pattern_compile
 *		Compile a "pattern" with PostgreSQL's regular expressions (advanced
 *		flavour, C collation: classes such as [[:alpha:]] are ASCII), into
 *		s->pattern.  false with *error set when it does not compile.
 *		s->pattern_unbounded is set for a pattern with back references or
 *		lookahead/lookbehind constraints: the engine matches those by
 *		backtracking or by rescanning the string at each position, in time
 *		exponential or quadratic in the value's length (a 401-character value
 *		against ^(.*)(.*)(.*)(.*)\1\2\3\4$ takes hours), while any other
 *		pattern is matched by a DFA in time linear in it (about 16 ns a byte
 *		here).  A definition may not have one (contract_define.c).  Backend
 *		only.
 */
bool
kl_pattern_compile(KlSchema *s, const char *pattern, int len, char **error)
{
	regex_t    *re = palloc0(sizeof(regex_t));
	pg_wchar   *wide = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(pattern, wide, len);
	int			rc = pg_regcomp(re, wide, wlen, REG_ADVANCED, C_COLLATION_OID);

	pfree(wide);
	if (rc != REG_OKAY)
	{
		char		msg[256];

		kl_regex_failed(rc, re, msg, sizeof(msg));
		*error = pstrdup(msg);
		return false;
	}
	s->pattern = re;
	s->pattern_unbounded = (re->re_info & (REG_UBACKREF | REG_ULOOKAROUND)) != 0;
	return true;
}

/*
 * kl_pattern_match
 *		Does the string match the field's pattern (anywhere, as JSON
 *		Schema's pattern and PostgreSQL's ~ do)?  This is the one check
 *		that calls PostgreSQL from a judgement (palloc for the wide
 *		characters, the regex engine's global collation state): a caller
 *		that judges off the backend's thread routes it there.  A cancel or
 *		a timeout while the engine runs is raised as such.
 */
static bool
kl_pattern_match(const KlSchema *s, const char *str, int len)
{
	pg_wchar   *wide = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(str, wide, len);
	int			rc = pg_regexec((regex_t *) s->pattern, wide, wlen, 0, NULL, 0, NULL, 0);

	pfree(wide);
	if (rc != REG_OKAY && rc != REG_NOMATCH)
	{
		char		msg[256];

		kl_regex_failed(rc, (regex_t *) s->pattern, msg, sizeof(msg));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("pattern of field \"%s\" failed: %s", s->path, msg)));
	}
	return rc == REG_OKAY;
}

/* ----------------------------------------------------------------
 *		Judging one record
 * ----------------------------------------------------------------
 */

/* What a judgement keeps per property */
typedef struct KlSlot
{
	bool		seen;
	KlJsonValue v;				/* the member's value (a header's, made JSON) */
	const char *out;			/* the value as the event writes it */
	size_t		out_len;
	const char *str;			/* strings: the normalised value; integers: text */
	int			str_len;
	bool		has_int;		/* an integer within int64 */
	int64		ival;
	bool		has_time;		/* format date: the DateADT; date-time: the instant */
	int64		time;
} KlSlot;

/* A member additionalProperties lets in, or one of a value of no schema */
typedef struct KlMember
{
	const char *name;			/* decoded */
	int			name_len;
	KlJsonValue v;
	const char *out;
	size_t		out_len;
} KlMember;

/* One judgement */
typedef struct KlJudge
{
	KlPool    *out;			/* what outlives the record: reasons, the event */
	KlPool    *scratch;		/* everything else, reset per record */
	bool		has_nul_escape; /* the value holds a \u0000 somewhere */
} KlJudge;

#define KL_OOM	kl_judge_out_of_memory

static const char *kl_judge_value(KlJudge *j, const KlSchema *s, const char *path, KlSlot *slot);
static const char *kl_canonical(KlJudge *j, const KlJsonValue *v, const char *path,
								const char **out, size_t *out_len);

/*
 * kl_msg
 *		A reason, formatted into the output arena.
 */
static const char *
kl_msg(KlJudge *j, const char *fmt,...) pg_attribute_printf(2, 3);

static const char *
kl_msg(KlJudge *j, const char *fmt,...)
{
	va_list		ap;
	char		small[256];
	int			n;
	char	   *m;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || (m = kl_pool_alloc(j->out, n + 1)) == NULL)
		return KL_OOM;
	if (n < (int) sizeof(small))
		memcpy(m, small, n + 1);
	else
	{
		va_start(ap, fmt);
		vsnprintf(m, n + 1, fmt, ap);
		va_end(ap);
	}
	return m;
}

/*
 * kl_json_type_word
 *		How a violation names the JSON type that was found.
 */
static const char *
kl_json_type_word(const KlJsonValue *v)
{
	switch (v->type)
	{
		case KL_JSON_NULL:
			return "null";
		case KL_JSON_TRUE:
		case KL_JSON_FALSE:
			return "a boolean";
		case KL_JSON_NUMBER:
			return v->is_integer ? "an integer" : "a number with a fraction or exponent";
		case KL_JSON_STRING:
			return "a string";
		case KL_JSON_ARRAY:
			return "an array";
		case KL_JSON_OBJECT:
			return "an object";
	}
	return "a value";
}

/*
 * kl_type_bits
 *		The KL_TYPE_* a value is (an integer is a number too).
 */
static inline int
kl_type_bits(const KlJsonValue *v)
{
	switch (v->type)
	{
		case KL_JSON_NULL:
			return KL_TYPE_NULL;
		case KL_JSON_TRUE:
		case KL_JSON_FALSE:
			return KL_TYPE_BOOLEAN;
		case KL_JSON_NUMBER:
			return v->is_integer ? (KL_TYPE_INTEGER | KL_TYPE_NUMBER) : KL_TYPE_NUMBER;
		case KL_JSON_STRING:
			return KL_TYPE_STRING;
		case KL_JSON_OBJECT:
			return KL_TYPE_OBJECT;
		case KL_JSON_ARRAY:
			return KL_TYPE_ARRAY;
	}
	return 0;
}

/*
 * kl_invalid_json
 *		The reason for a value the JSON reader refused: a NUL byte or invalid
 *		UTF-8 said as such, anything else with the reader's message.
 */
static const char *
kl_invalid_json(KlJudge *j, const char *value, size_t len, const char *error, const char *at)
{
	if (memchr(value, '\0', len) != NULL)
		return "value contains a NUL byte";
	if (!kl_utf8_valid(value, len))
		return "value is not valid UTF-8";
	return kl_msg(j, "invalid JSON: %s at byte %d", error, (int) (at - value));
}

/*
 * kl_child_path
 *		"parent.name" (or name at the top), in scratch; NULL when out of
 *		memory.
 */
static const char *
kl_child_path(KlJudge *j, const char *parent, const char *name, int name_len)
{
	size_t		plen = parent ? strlen(parent) : 0;
	char	   *p = kl_pool_alloc(j->scratch, plen + name_len + 2);

	if (p == NULL)
		return NULL;
	if (parent)
	{
		memcpy(p, parent, plen);
		p[plen++] = '.';
	}
	memcpy(p + plen, name, name_len);
	p[plen + name_len] = '\0';
	return p;
}

/*
 * kl_key_name
 *		A member's name, decoded (in scratch when it has escapes).
 */
static bool
kl_key_name(KlJudge *j, const KlJsonValue *key, const char **name, int *len)
{
	char	   *buf;

	if (!key->has_escapes)
	{
		*name = key->start + 1;
		*len = key->len - 2;
		return true;
	}
	buf = kl_pool_alloc(j->scratch, key->len);
	if (buf == NULL)
		return false;
	*len = kl_json_decode_to(key, buf);
	buf[*len] = '\0';
	*name = buf;
	return true;
}

/*
 * kl_name_hash
 *		FNV-1a of a member name (contract_define.c builds the table with it).
 */
static inline uint32
kl_name_hash(const char *s, int len)
{
	uint32		h = 2166136261u;

	for (int i = 0; i < len; i++)
		h = (h ^ (unsigned char) s[i]) * 16777619u;
	return h;
}

uint32
kl_contract_name_hash(const char *s, int len)
{
	return kl_name_hash(s, len);
}

/*
 * kl_lookup_prop
 *		The property of an object schema that a decoded name names, or -1.
 */
static inline int
kl_lookup_prop(const KlObjectSchema *o, const char *name, int len)
{
	uint32		mask = o->hash_size - 1;
	uint32		h = kl_name_hash(name, len) & mask;

	for (;;)
	{
		int			idx = o->hash[h];

		if (idx < 0)
			return -1;
		if (o->props[idx].name_len == len && memcmp(o->props[idx].name, name, len) == 0)
			return idx;
		h = (h + 1) & mask;
	}
}

/*
 * kl_member_cmp
 *		qsort order of members: their names' bytes (code point order).
 */
static int
kl_member_cmp(const void *a, const void *b)
{
	const KlMember *x = a;
	const KlMember *y = b;
	int			c = memcmp(x->name, y->name, Min(x->name_len, y->name_len));

	return c != 0 ? c : x->name_len - y->name_len;
}

/*
 * kl_render_members
 *		The object text {"a": ..., "b": ...} of the members the event keeps:
 *		the schema's properties that were present (in name order) merged
 *		with the others (sorted), into scratch.
 */
static const char *
kl_render_members(KlJudge *j, const KlObjectSchema *o, const KlSlot *slots,
				  const KlMember *extra, int nextra, const char **out, size_t *out_len)
{
	size_t		need = 2;
	int			si = 0;
	int			ei = 0;
	bool		first = true;
	char	   *buf;
	char	   *p;

	if (o != NULL)
	{
		for (int i = 0; i < o->nprops; i++)
		{
			if (slots[i].seen)
				need += o->props[i].name_json_len + 4 + slots[i].out_len;
		}
	}
	for (int i = 0; i < nextra; i++)
		need += KL_JSON_ESCAPED_MAX(extra[i].name_len) + 4 + extra[i].out_len;
	buf = kl_pool_alloc(j->scratch, need);
	if (buf == NULL)
		return KL_OOM;
	p = buf;
	*p++ = '{';
	for (;;)
	{
		const KlSchema *s = NULL;
		const KlSlot *slot = NULL;
		const KlMember *m = NULL;

		/* the next property present, by name */
		while (o != NULL && si < o->nprops && !slots[o->sorted[si]].seen)
			si++;
		if (o != NULL && si < o->nprops)
		{
			s = &o->props[o->sorted[si]];
			slot = &slots[o->sorted[si]];
		}
		if (ei < nextra)
			m = &extra[ei];
		if (s == NULL && m == NULL)
			break;
		if (s != NULL && m != NULL)
		{
			int			c = memcmp(s->name, m->name, Min(s->name_len, m->name_len));

			if ((c != 0 ? c : s->name_len - m->name_len) < 0)
				m = NULL;
			else
				s = NULL;
		}
		if (!first)
		{
			*p++ = ',';
			*p++ = ' ';
		}
		first = false;
		if (s != NULL)
		{
			memcpy(p, s->name_json, s->name_json_len);
			p += s->name_json_len;
			*p++ = ':';
			*p++ = ' ';
			memcpy(p, slot->out, slot->out_len);
			p += slot->out_len;
			si++;
		}
		else
		{
			p += kl_json_escape_to(p, m->name, m->name_len);
			*p++ = ':';
			*p++ = ' ';
			memcpy(p, m->out, m->out_len);
			p += m->out_len;
			ei++;
		}
	}
	*p++ = '}';
	*out = buf;
	*out_len = p - buf;
	return NULL;
}

/*
 * kl_canonical_string
 *		A string of no schema, decoded and escaped again; NUL refused.
 */
static const char *
kl_canonical_string(KlJudge *j, const KlJsonValue *v, const char *path,
					const char **out, size_t *out_len)
{
	char	   *dec;
	size_t		n;
	char	   *esc;

	if (!v->has_escapes)
	{
		/* as written: the reader let in only what json.dumps writes as is */
		bool		plain = true;

		for (size_t i = 1; i + 1 < v->len && plain; i++)
			plain = ((unsigned char) v->start[i] < 0x7F);
		if (plain)
		{
			*out = v->start;
			*out_len = v->len;
			return NULL;
		}
	}
	if (j->has_nul_escape && memmem(v->start, v->len, "\\u0000", 6) != NULL)
		return kl_msg(j, "field \"%s\" contains a NUL character", path);
	dec = kl_pool_alloc(j->scratch, v->len);
	if (dec == NULL)
		return KL_OOM;
	n = kl_json_decode_to(v, dec);
	esc = kl_pool_alloc(j->scratch, KL_JSON_ESCAPED_MAX(n));
	if (esc == NULL)
		return KL_OOM;
	*out = esc;
	*out_len = kl_json_escape_to(esc, dec, n);
	return NULL;
}

/*
 * kl_collect_members
 *		The members of an object value of no schema, names decoded and
 *		sorted, values made canonical; a name given twice, or holding a NUL,
 *		is refused.
 */
static const char *
kl_collect_members(KlJudge *j, const KlJsonValue *v, const char *path,
				   KlMember **members, int *n)
{
	KlJsonReader it;
	KlJsonValue key;
	KlJsonValue val;
	int			cap = 8;
	KlMember   *m = kl_pool_alloc(j->scratch, sizeof(KlMember) * cap);

	*n = 0;
	if (m == NULL)
		return KL_OOM;
	kl_json_object_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &key, &val))
	{
		if (*n == cap)
		{
			KlMember   *bigger = kl_pool_alloc(j->scratch, sizeof(KlMember) * cap * 2);

			if (bigger == NULL)
				return KL_OOM;
			memcpy(bigger, m, sizeof(KlMember) * cap);
			m = bigger;
			cap *= 2;
		}
		if (!kl_key_name(j, &key, &m[*n].name, &m[*n].name_len))
			return KL_OOM;
		if (memchr(m[*n].name, '\0', m[*n].name_len) != NULL)
			return kl_msg(j, "a field name in \"%s\" contains a NUL character", path ? path : "the value");
		m[*n].v = val;
		(*n)++;
	}
	qsort(m, *n, sizeof(KlMember), kl_member_cmp);
	for (int i = 0; i < *n; i++)
	{
		const char *child = kl_child_path(j, path, m[i].name, m[i].name_len);
		const char *err;

		if (child == NULL)
			return KL_OOM;
		if (i > 0 && kl_member_cmp(&m[i - 1], &m[i]) == 0)
			return kl_msg(j, "duplicate field \"%s\"", child);
		err = kl_canonical(j, &m[i].v, child, &m[i].out, &m[i].out_len);
		if (err)
			return err;
	}
	*members = m;
	return NULL;
}

/*
 * kl_canonical
 *		A value of no schema, made canonical: objects sorted, strings
 *		escaped as json.dumps does, integers in canonical decimal, other
 *		numbers as written.
 */
static const char *
kl_canonical(KlJudge *j, const KlJsonValue *v, const char *path, const char **out,
			 size_t *out_len)
{
	switch (v->type)
	{
		case KL_JSON_STRING:
			return kl_canonical_string(j, v, path, out, out_len);
		case KL_JSON_NUMBER:
			/* -0 is the only integer json.dumps writes otherwise */
			if (v->is_integer && v->len == 2 && v->start[0] == '-' && v->start[1] == '0')
			{
				*out = "0";
				*out_len = 1;
				return NULL;
			}
			*out = v->start;
			*out_len = v->len;
			return NULL;
		case KL_JSON_OBJECT:
			{
				KlMember   *m = NULL;
				int			n = 0;
				const char *err = kl_collect_members(j, v, path, &m, &n);

				if (err)
					return err;
				return kl_render_members(j, NULL, NULL, m, n, out, out_len);
			}
		case KL_JSON_ARRAY:
			{
				KlJsonReader it;
				KlJsonValue e;
				KlBuf		b;
				int			i = 0;
				const char *parent = path ? path : "";

				if (!kl_buf_init(&b, j->scratch, v->len + 16) || !kl_buf_append(&b, "[", 1))
					return KL_OOM;
				kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
				while (kl_json_array_next(&it, &e))
				{
					const char *eo;
					size_t		elen;
					const char *err;
					size_t		plen = strlen(parent);
					char	   *epath = kl_pool_alloc(j->scratch, plen + 16);

					if (epath == NULL)
						return KL_OOM;
					snprintf(epath, plen + 16, "%s[%d]", parent, i);
					err = kl_canonical(j, &e, epath, &eo, &elen);
					if (err)
						return err;
					if ((i > 0 && !kl_buf_append(&b, ", ", 2)) || !kl_buf_append(&b, eo, elen))
						return KL_OOM;
					i++;
				}
				if (!kl_buf_append(&b, "]", 1))
					return KL_OOM;
				*out = b.data;
				*out_len = b.len;
				return NULL;
			}
		default:
			*out = v->start;
			*out_len = v->len;
			return NULL;
	}
}

/*
 * kl_enum_has
 *		Is the value (its slot filled by the type's checks) one of the
 *		field's enum values?
 */
static bool
kl_enum_has(const KlSchema *s, const KlSlot *slot)
{
	const KlJsonValue *v = &slot->v;

	for (int i = 0; i < s->nenum; i++)
	{
		const KlEnumValue *e = &s->enums[i];

		switch (v->type)
		{
			case KL_JSON_STRING:
				if (e->type == KL_TYPE_STRING && e->str_len == slot->str_len &&
					memcmp(e->str, slot->str, slot->str_len) == 0)
					return true;
				break;
			case KL_JSON_NUMBER:
				if (e->type == KL_TYPE_NUMBER || e->type == KL_TYPE_INTEGER)
				{
					if (slot->has_int && e->num.is_int64)
					{
						if (slot->ival == e->num.ival)
							return true;
					}
					else if (kl_number_cmp(slot->out, slot->out_len, e->num.text, e->num.len) == 0)
						return true;
				}
				break;
			case KL_JSON_TRUE:
			case KL_JSON_FALSE:
				if (e->type == KL_TYPE_BOOLEAN && e->bval == (v->type == KL_JSON_TRUE))
					return true;
				break;
			case KL_JSON_NULL:
				if (e->type == KL_TYPE_NULL)
					return true;
				break;
			default:
				break;
		}
	}
	return false;
}

/*
 * kl_enum_violation
 *		The reason for a value that is none of the enum's.
 */
static const char *
kl_enum_violation(KlJudge *j, const KlSchema *s, const char *path, const KlSlot *slot)
{
	const KlJsonValue *v = &slot->v;

	if (s->is_schema_version)
		return kl_msg(j, "unsupported %s %.*s", path,
					  kl_utf8_clip(v->start, (int) v->len, 20), v->start);
	if (v->type == KL_JSON_STRING)
		return kl_msg(j, "field \"%s\" has unknown value \"%.*s\"", path,
					  kl_utf8_clip(slot->str, slot->str_len, 64), slot->str);
	return kl_msg(j, "field \"%s\" has unknown value %.*s", path,
				  kl_utf8_clip(slot->out, (int) slot->out_len, 64), slot->out);
}

/*
 * kl_char_count
 *		Characters of valid UTF-8.
 */
static int
kl_char_count(const char *s, int len)
{
	int			n = 0;

	for (int i = 0; i < len; i++)
		n += (((unsigned char) s[i] & 0xC0) != 0x80);
	return n;
}

/*
 * kl_judge_string
 *		A string field: NUL, normalisation, length, pattern, format, enum.
 */
static const char *
kl_judge_string(KlJudge *j, const KlSchema *s, const char *path, KlSlot *slot)
{
	const KlJsonValue *v = &slot->v;
	char	   *buf;
	char	   *st;
	char	   *e;
	size_t		n;
	char	   *esc;

	if (j->has_nul_escape && memmem(v->start, v->len, "\\u0000", 6) != NULL)
		return kl_msg(j, "field \"%s\" contains a NUL character", path);
	buf = kl_pool_alloc(j->scratch, v->len);
	if (buf == NULL)
		return KL_OOM;
	n = kl_json_decode_to(v, buf);
	st = buf;
	e = buf + n;
	if (s->trim)
		kl_py_strip(&st, &e);
	*e = '\0';
	if (s->lower)
	{
		char	   *c;

		for (c = st; c < e; c++)
		{
			if ((unsigned char) *c >= 0x80)
				break;
			if (*c >= 'A' && *c <= 'Z')
				*c += 'a' - 'A';
		}
		/* not ASCII: the whole value through Python's rules (ASCII is done) */
		if (c < e)
		{
			KlBuf		low;

			if (!kl_buf_init(&low, j->scratch, (e - st) * 2 + 1) ||
				!kl_py_lower(&low, st, e - st) || !kl_buf_append(&low, "", 1))
				return KL_OOM;
			st = low.data;
			e = low.data + low.len - 1;
		}
	}
	slot->str = st;
	slot->str_len = e - st;

	if (s->min_length > 0 || s->max_length >= 0)
	{
		int			chars = kl_char_count(st, e - st);

		if (chars < s->min_length)
			return s->min_length == 1 ?
				kl_msg(j, "field \"%s\" must not be empty", path) :
				kl_msg(j, "field \"%s\" must be at least %d characters long", path, s->min_length);
		if (s->max_length >= 0 && chars > s->max_length)
			return kl_msg(j, "field \"%s\" must be at most %d characters long", path, s->max_length);
	}
	if (s->pattern != NULL && !kl_pattern_match(s, st, e - st))
		return kl_msg(j, "field \"%s\" does not match pattern \"%s\"", path, s->pattern_text);
	switch (s->format)
	{
		case KL_FORMAT_NONE:
			break;
		case KL_FORMAT_DATE:
			{
				DateADT		d;

				if (!kl_parse_iso_date(st, e - st, &d))
					return kl_msg(j, "field \"%s\" must be a real calendar date written YYYY-MM-DD", path);
				slot->has_time = true;
				slot->time = d;
				break;
			}
		case KL_FORMAT_DATE_TIME:
			{
				TimestampTz instant = 0;
				KlIsoVerdict verdict = KL_ISO_INVALID;

				if (e - st >= 7)
				{
					char	   *b = kl_pool_alloc(j->scratch, kl_iso_buffer_size(st, e - st));

					if (b == NULL)
						return KL_OOM;
					verdict = kl_parse_iso_timestamp_buf(st, e - st, false, &instant, NULL, b);
				}
				switch (verdict)
				{
					case KL_ISO_VALID:
						break;
					case KL_ISO_OFFSET_RANGE:
						return kl_msg(j, "field \"%s\" has a UTC offset of 16 hours or more, beyond what timestamptz reads", path);
					case KL_ISO_INVALID:
					case KL_ISO_NO_ZONE:
						return kl_msg(j, "field \"%s\" must be an ISO-8601 timestamp with a time zone", path);
				}
				slot->has_time = true;
				slot->time = instant;
				break;
			}
	}
	if (s->nenum > 0 && !kl_enum_has(s, slot))
		return kl_enum_violation(j, s, path, slot);

	/* as the event writes it */
	esc = kl_pool_alloc(j->scratch, KL_JSON_ESCAPED_MAX(e - st));
	if (esc == NULL)
		return KL_OOM;
	slot->out = esc;
	slot->out_len = kl_json_escape_to(esc, st, e - st);
	return NULL;
}

/*
 * kl_judge_number
 *		A number field: int64 range for integers, canonical text, enum.
 */
static const char *
kl_judge_number(KlJudge *j, const KlSchema *s, const char *path, KlSlot *slot)
{
	const KlJsonValue *v = &slot->v;

	slot->has_int = v->is_integer && kl_json_parse_int64(v->start, v->len, &slot->ival);
	if (v->is_integer && !slot->has_int && !(s->types & KL_TYPE_NUMBER))
	{
		if (s->is_schema_version && s->nenum > 0)
			return kl_enum_violation(j, s, path, slot);
		return kl_msg(j, "field \"%s\" is out of range", path);
	}
	if (slot->has_int)
	{
		char	   *t = kl_pool_alloc(j->scratch, 24);

		if (t == NULL)
			return KL_OOM;
		slot->out = t;
		slot->out_len = kl_json_format_int64(t, slot->ival);
	}
	else
	{
		slot->out = v->start;
		slot->out_len = v->len;
	}
	slot->str = slot->out;
	slot->str_len = (int) slot->out_len;
	if (s->nenum > 0 && !kl_enum_has(s, slot))
		return kl_enum_violation(j, s, path, slot);
	return NULL;
}

/*
 * kl_judge_object_members
 *		An object value against an object schema: unknown and duplicate
 *		members (document order), missing required fields, each property,
 *		then its bounds (there are no rules below the top), then the
 *		members additionalProperties lets in.  Renders the object into
 *		slot->out.  static_paths: messages name the properties by their
 *		compiled paths (no array on the way); else below path.
 */
static const char *
kl_judge_object_members(KlJudge *j, const KlObjectSchema *o, const char *path,
						bool static_paths, KlSlot *slot);

/*
 * kl_check_bounds
 *		The numeric bounds of a field (its value is a number).
 */
static const char *
kl_check_bounds(KlJudge *j, const KlSchema *s, const char *path, const KlSlot *slot)
{
	int			c;

#define KL_CMP(bound) \
	((slot->has_int && (bound).is_int64) ? \
	 (slot->ival < (bound).ival ? -1 : slot->ival > (bound).ival) : \
	 kl_number_cmp(slot->out, slot->out_len, (bound).text, (bound).len))

	if (s->has_minimum && (c = KL_CMP(s->minimum)) < 0)
		return (s->minimum.is_int64 && s->minimum.ival == 0) ?
			kl_msg(j, "field \"%s\" must not be negative", path) :
			kl_msg(j, "field \"%s\" must be at least %s", path, s->minimum.text);
	if (s->has_xminimum && (c = KL_CMP(s->xminimum)) <= 0)
		return (s->xminimum.is_int64 && s->xminimum.ival == 0) ?
			kl_msg(j, "field \"%s\" must be positive", path) :
			kl_msg(j, "field \"%s\" must be greater than %s", path, s->xminimum.text);
	if (s->has_maximum && (c = KL_CMP(s->maximum)) > 0)
		return kl_msg(j, "field \"%s\" must be at most %s", path, s->maximum.text);
	if (s->has_xmaximum && (c = KL_CMP(s->xmaximum)) >= 0)
		return kl_msg(j, "field \"%s\" must be less than %s", path, s->xmaximum.text);
#undef KL_CMP
	return NULL;
}

/*
 * kl_judge_value
 *		One field's value (step 5): its type, then what its type checks.
 */
static const char *
kl_judge_value(KlJudge *j, const KlSchema *s, const char *path, KlSlot *slot)
{
	const KlJsonValue *v = &slot->v;

	if (!(s->types & kl_type_bits(v)))
	{
		if (s->types == KL_TYPE_INTEGER && s->nenum == 1 && s->enums[0].type == KL_TYPE_INTEGER)
			return kl_msg(j, "field \"%s\" must be the integer %s, not %s", path,
						  s->enums[0].num.text, kl_json_type_word(v));
		return kl_msg(j, "field \"%s\" must be %s, not %s", path, s->type_words,
					  kl_json_type_word(v));
	}
	switch (v->type)
	{
		case KL_JSON_STRING:
			return kl_judge_string(j, s, path, slot);
		case KL_JSON_NUMBER:
			return kl_judge_number(j, s, path, slot);
		case KL_JSON_TRUE:
		case KL_JSON_FALSE:
		case KL_JSON_NULL:
			slot->out = v->start;
			slot->out_len = v->len;
			if (s->nenum > 0 && !kl_enum_has(s, slot))
				return kl_enum_violation(j, s, path, slot);
			return NULL;
		case KL_JSON_OBJECT:
			if (s->object != NULL)
				return kl_judge_object_members(j, s->object, path, path == s->path, slot);
			return kl_canonical(j, v, path, &slot->out, &slot->out_len);
		case KL_JSON_ARRAY:
			{
				KlJsonReader it;
				KlBuf		b;
				int			i = 0;
				KlSlot		es;

				if (s->items == NULL)
					return kl_canonical(j, v, path, &slot->out, &slot->out_len);
				if (!kl_buf_init(&b, j->scratch, v->len + 16) || !kl_buf_append(&b, "[", 1))
					return KL_OOM;
				kl_json_array_open(&it, v->start, v->start + v->len, KL_JSON_MAX_DEPTH);
				memset(&es, 0, sizeof(es));
				while (kl_json_array_next(&it, &es.v))
				{
					size_t		plen = strlen(path);
					char	   *epath = kl_pool_alloc(j->scratch, plen + 16);
					const char *err;

					if (epath == NULL)
						return KL_OOM;
					snprintf(epath, plen + 16, "%s[%d]", path, i);
					err = kl_judge_value(j, s->items, epath, &es);
					if (err == NULL && (es.v.type == KL_JSON_NUMBER) &&
						(s->items->has_minimum || s->items->has_maximum ||
						 s->items->has_xminimum || s->items->has_xmaximum))
						err = kl_check_bounds(j, s->items, epath, &es);
					if (err)
						return err;
					if ((i > 0 && !kl_buf_append(&b, ", ", 2)) ||
						!kl_buf_append(&b, es.out, es.out_len))
						return KL_OOM;
					memset(&es, 0, sizeof(es));
					i++;
				}
				if (!kl_buf_append(&b, "]", 1))
					return KL_OOM;
				slot->out = b.data;
				slot->out_len = b.len;
				return NULL;
			}
	}
	return NULL;
}

static const char *
kl_judge_object_members(KlJudge *j, const KlObjectSchema *o, const char *path,
						bool static_paths, KlSlot *slot)
{
	KlJsonReader it;
	KlJsonValue key;
	KlJsonValue val;
	KlSlot	   *slots = kl_pool_alloc(j->scratch, sizeof(KlSlot) * Max(o->nprops, 1));
	KlMember   *extra = NULL;
	int			nextra = 0;
	int			cap = 0;
	const char *err;

	if (slots == NULL)
		return KL_OOM;
	memset(slots, 0, sizeof(KlSlot) * o->nprops);

#define PROP_PATH(i) \
	(static_paths ? o->props[i].path : \
	 kl_child_path(j, path, o->props[i].name, o->props[i].name_len))

	kl_json_object_open(&it, slot->v.start, slot->v.start + slot->v.len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &key, &val))
	{
		const char *name;
		int			len;
		int			p;

		if (!kl_key_name(j, &key, &name, &len))
			return KL_OOM;
		p = kl_lookup_prop(o, name, len);
		if (p >= 0)
		{
			const char *pp;

			if (slots[p].seen)
				return (pp = PROP_PATH(p)) ? kl_msg(j, "duplicate field \"%s\"", pp) : KL_OOM;
			slots[p].seen = true;
			slots[p].v = val;
			continue;
		}
		if (!o->additional)
		{
			const char *cp = kl_child_path(j, path, name, len);

			return cp ? kl_msg(j, "unknown field \"%s\"", cp) : KL_OOM;
		}
		if (nextra == cap)
		{
			KlMember   *bigger;

			cap = Max(cap * 2, 8);
			bigger = kl_pool_alloc(j->scratch, sizeof(KlMember) * cap);
			if (bigger == NULL)
				return KL_OOM;
			if (nextra > 0)
				memcpy(bigger, extra, sizeof(KlMember) * nextra);
			extra = bigger;
		}
		extra[nextra].name = name;
		extra[nextra].name_len = len;
		extra[nextra].v = val;
		nextra++;
	}
	for (int r = 0; r < o->nrequired; r++)
	{
		int			p = o->required[r];
		const char *pp;

		if (!slots[p].seen)
			return (pp = PROP_PATH(p)) ? kl_msg(j, "missing required field \"%s\"", pp) : KL_OOM;
	}
	for (int p = 0; p < o->nprops; p++)
	{
		const char *pp;

		if (!slots[p].seen)
			continue;
		if ((pp = PROP_PATH(p)) == NULL)
			return KL_OOM;
		if ((err = kl_judge_value(j, &o->props[p], pp, &slots[p])) != NULL)
			return err;
	}
	for (int p = 0; p < o->nprops; p++)
	{
		const char *pp;

		if (!slots[p].seen || slots[p].v.type != KL_JSON_NUMBER)
			continue;
		if ((pp = PROP_PATH(p)) == NULL)
			return KL_OOM;
		if ((err = kl_check_bounds(j, &o->props[p], pp, &slots[p])) != NULL)
			return err;
	}
#undef PROP_PATH
	if (nextra > 0)
	{
		qsort(extra, nextra, sizeof(KlMember), kl_member_cmp);
		for (int i = 0; i < nextra; i++)
		{
			const char *cp = kl_child_path(j, path, extra[i].name, extra[i].name_len);

			if (cp == NULL)
				return KL_OOM;
			if (i > 0 && kl_member_cmp(&extra[i - 1], &extra[i]) == 0)
				return kl_msg(j, "duplicate field \"%s\"", cp);
			if (memchr(extra[i].name, '\0', extra[i].name_len) != NULL)
				return kl_msg(j, "a field name in \"%s\" contains a NUL character", path);
			if ((err = kl_canonical(j, &extra[i].v, cp, &extra[i].out, &extra[i].out_len)) != NULL)
				return err;
		}
	}
	return kl_render_members(j, o, slots, extra, nextra, &slot->out, &slot->out_len);
}

/*
 * kl_rule_holds
 *		Does a rule hold for the judged slots?  A side that is absent or
 *		null makes it hold (there is nothing to compare).
 */
static bool
kl_rule_holds(const KlRule *r, const KlSlot *slots)
{
	const KlSlot *l = &slots[r->left];
	int			c;

	if (!l->seen || l->v.type == KL_JSON_NULL)
		return true;
	if (r->right >= 0)
	{
		const KlSlot *rs = &slots[r->right];

		if (!rs->seen || rs->v.type == KL_JSON_NULL)
			return true;
		if (l->has_time && rs->has_time)
			c = l->time < rs->time ? -1 : l->time > rs->time;
		else if (l->has_int && rs->has_int)
			c = l->ival < rs->ival ? -1 : l->ival > rs->ival;
		else
			c = kl_number_cmp(l->out, l->out_len, rs->out, rs->out_len);
	}
	else if (l->has_int && r->right_num.is_int64)
		c = l->ival < r->right_num.ival ? -1 : l->ival > r->right_num.ival;
	else
		c = kl_number_cmp(l->out, l->out_len, r->right_num.text, r->right_num.len);
	switch (r->op)
	{
		case KL_OP_LT:
			return c < 0;
		case KL_OP_LE:
			return c <= 0;
		case KL_OP_EQ:
			return c == 0;
		case KL_OP_NE:
			return c != 0;
		case KL_OP_GE:
			return c >= 0;
		case KL_OP_GT:
			return c > 0;
	}
	return true;
}

/*
 * kl_header_value
 *		A field taken from a Kafka header (the last one of that name), as a
 *		JSON string in scratch.  NULL reason and *found false when there is
 *		none (or it is null).
 */
static const char *
kl_header_value(KlJudge *j, const KlSchema *s, const KlJudgeInput *in, KlSlot *slot)
{
	const KlHeader *h = NULL;
	char	   *esc;

	for (int i = 0; i < in->nheaders; i++)
	{
		if (strlen(in->headers[i].name) == (size_t) s->header_len &&
			memcmp(in->headers[i].name, s->header, s->header_len) == 0)
			h = &in->headers[i];
	}
	if (h == NULL || h->value == NULL)
		return NULL;
	if (!kl_utf8_text_valid(h->value, h->value_len))
		return kl_msg(j, "field \"%s\" from header \"%s\" is not valid UTF-8 text", s->path, s->header);
	esc = kl_pool_alloc(j->scratch, KL_JSON_ESCAPED_MAX(h->value_len));
	if (esc == NULL)
		return KL_OOM;
	slot->v.type = KL_JSON_STRING;
	slot->v.start = esc;
	slot->v.len = kl_json_escape_to(esc, h->value, h->value_len);
	slot->v.has_escapes = (slot->v.len != h->value_len + 2);
	slot->v.is_integer = false;
	slot->seen = true;
	return NULL;
}

/*
 * kl_member_named
 *		The value of an object's first member of a decoded name: 1 and *out,
 *		0 when it has none, -1 when the scratch arena ran out.
 */
static int
kl_member_named(KlJudge *j, const KlJsonValue *obj, const char *name, int name_len,
				KlJsonValue *out)
{
	KlJsonReader it;
	KlJsonValue key;
	KlJsonValue m;

	kl_json_object_open(&it, obj->start, obj->start + obj->len, KL_JSON_MAX_DEPTH);
	while (kl_json_object_next(&it, &key, &m))
	{
		const char *n;
		int			len;

		if (!kl_key_name(j, &key, &n, &len))
			return -1;
		if (len == name_len && memcmp(n, name, len) == 0)
		{
			*out = m;
			return 1;
		}
	}
	return 0;
}

/*
 * kl_derive
 *		A field derived from a path inside the value: the value the first
 *		of its paths that leads to one reaches (a member of an object at a
 *		name step, an element of an array at an index step), judged then as
 *		the field's own.  No path leading anywhere leaves it absent.  The
 *		value was read whole before, so its parts read again without error.
 */
static bool
kl_derive(KlJudge *j, const KlObjectSchema *o, const KlSchema *s, const KlSlot *slots,
		  const KlMember *extra, int nextra, KlSlot *slot)
{
	for (int a = 0; a < s->npaths; a++)
	{
		const KlPath *path = &s->paths[a];
		const KlPathStep *first = &path->steps[0];
		KlJsonValue v;
		bool		found = false;
		int			p0 = kl_lookup_prop(o, first->name, first->name_len);

		if (p0 >= 0 && slots[p0].seen)
		{
			v = slots[p0].v;
			found = true;
		}
		for (int e = 0; e < nextra && !found; e++)
		{
			if (extra[e].name_len == first->name_len &&
				memcmp(extra[e].name, first->name, first->name_len) == 0)
			{
				v = extra[e].v;
				found = true;
			}
		}
		for (int i = 1; i < path->nsteps && found; i++)
		{
			const KlPathStep *step = &path->steps[i];
			KlJsonReader it;
			KlJsonValue m;

			found = false;
			if (step->name != NULL && v.type == KL_JSON_OBJECT)
			{
				int			r = kl_member_named(j, &v, step->name, step->name_len, &m);

				if (r < 0)
					return false;
				found = (r > 0);
			}
			else if (step->name == NULL && v.type == KL_JSON_ARRAY)
			{
				kl_json_array_open(&it, v.start, v.start + v.len, KL_JSON_MAX_DEPTH);
				for (int k = 0; k <= step->index && kl_json_array_next(&it, &m); k++)
					found = (k == step->index);
			}
			if (found)
				v = m;
		}
		if (found)
		{
			slot->seen = true;
			slot->v = v;
			return true;
		}
	}
	return true;
}

/*
 * kl_judge_business_date
 *		The event's business date, as the contract finds it.
 */
static const char *
kl_judge_business_date(KlJudge *j, const KlContract *c, const KlJudgeInput *in,
					   const KlSlot *slots, KlEvent *ev)
{
	TimestampTz t;

	switch (c->bd_kind)
	{
		case KL_BD_NONE:
			return NULL;
		case KL_BD_DATE_FIELD:
			if (!slots[c->bd_prop].has_time)
				return NULL;
			ev->has_business_date = true;
			ev->business_date = (DateADT) slots[c->bd_prop].time;
			return NULL;
		case KL_BD_TIMESTAMP_FIELD:
			if (!slots[c->bd_prop].has_time)
				return NULL;
			t = slots[c->bd_prop].time;
			break;
		case KL_BD_KAFKA_TIMESTAMP:
			if (in->timestamp_ms < 0)
				return "the record has no Kafka timestamp to take its business_date from";
			t = (in->timestamp_ms - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000) * 1000;
			break;
		default:
			return NULL;
	}
	if (!kl_date_in_zone(t, c->bd_tz, &ev->business_date))
		return kl_msg(j, "the business_date of the record cannot be read in time zone \"%s\"", c->bd_zone);
	ev->has_business_date = true;
	return NULL;
}

/*
 * kl_judge_tombstone
 *		A Kafka tombstone of an entity stream that reads tombstones as
 *		deletions: accepted as the event of its key's fields, read from its
 *		Kafka key (a JSON object naming them, at its top or under "payload";
 *		or, for a key of one field, the key itself, a JSON string or number
 *		or else its text) and judged by their schemas, with the deleted
 *		field's value; its business date is its Kafka timestamp's day in the
 *		contract's zone (UTC for a date field); it has no event_id (the
 *		coordinate is its identity).
 */
static const char *
kl_judge_tombstone(KlJudge *j, const KlContract *c, const KlJudgeInput *in, KlEvent *ev)
{
	const KlObjectSchema *o = &c->top;
	KlSlot	   *slots;
	KlJsonReader r;
	KlJsonValue whole;
	bool		object;
	const char *err;
	KlSlot		top;
	TimestampTz t;

	if (in->key == NULL || in->key_len == 0)
		return "null value (tombstone) without a Kafka key: it deletes no entity";
	if (!kl_utf8_text_valid(in->key, in->key_len))
		return "null value (tombstone) whose Kafka key is not UTF-8 text";
	slots = kl_pool_alloc(j->scratch, sizeof(KlSlot) * Max(o->nprops, 1));
	if (slots == NULL)
		return KL_OOM;
	memset(slots, 0, sizeof(KlSlot) * o->nprops);
	kl_json_init(&r, in->key, in->key_len, KL_JSON_MAX_DEPTH);
	object = kl_json_parse_document(&r, &whole);
	j->has_nul_escape = true;	/* look for \u0000 in every string */
	for (int k = 0; k < c->nnatural_key; k++)
	{
		int			p = c->natural_key[k];
		KlSlot	   *slot = &slots[p];

		if (object && whole.type == KL_JSON_OBJECT)
		{
			/* at the key's top, or under "payload" (Debezium's envelope with schemas) */
			const KlSchema *s = &o->props[p];
			KlJsonValue payload;
			int			r = kl_member_named(j, &whole, s->name, s->name_len, &slot->v);

			if (r == 0 && (r = kl_member_named(j, &whole, "payload", 7, &payload)) > 0)
				r = payload.type == KL_JSON_OBJECT ?
					kl_member_named(j, &payload, s->name, s->name_len, &slot->v) : 0;
			if (r < 0)
				return KL_OOM;
			if (r == 0)
				return kl_msg(j, "null value (tombstone) whose Kafka key has no field \"%s\"", s->path);
		}
		else if (c->nnatural_key > 1)
			return "null value (tombstone) whose Kafka key is not a JSON object naming the entity's key fields";
		else if (object && (whole.type == KL_JSON_STRING || whole.type == KL_JSON_NUMBER))
			slot->v = whole;
		else
		{
			/* the key's text, as a string */
			char	   *esc = kl_pool_alloc(j->scratch, KL_JSON_ESCAPED_MAX(in->key_len));

			if (esc == NULL)
				return KL_OOM;
			memset(&slot->v, 0, sizeof(slot->v));
			slot->v.type = KL_JSON_STRING;
			slot->v.start = esc;
			slot->v.len = kl_json_escape_to(esc, in->key, in->key_len);
			slot->v.has_escapes = (slot->v.len != in->key_len + 2);
		}
		slot->seen = true;
		if ((err = kl_judge_value(j, &o->props[p], o->props[p].path, slot)) != NULL)
			return err;
	}
	{
		KlSlot	   *slot = &slots[c->deleted_prop];

		kl_json_init(&r, c->deleted_json, strlen(c->deleted_json), KL_JSON_MAX_DEPTH);
		if (!kl_json_parse_document(&r, &slot->v))
			return "the contract's deletion value is not JSON";
		slot->seen = true;
		if ((err = kl_judge_value(j, &o->props[c->deleted_prop], o->props[c->deleted_prop].path, slot)) != NULL)
			return err;
	}
	if (in->timestamp_ms < 0)
		return "the record has no Kafka timestamp to take its business_date from";
	t = (in->timestamp_ms - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000) * 1000;
	if (!kl_date_in_zone(t, c->tombstone_tz, &ev->business_date))
		return "the business_date of the tombstone cannot be read from its Kafka timestamp";
	ev->has_business_date = true;
	memset(&top, 0, sizeof(top));
	if ((err = kl_render_members(j, o, slots, NULL, 0, &top.out, &top.out_len)) != NULL)
		return err;
	ev->json = kl_pool_strdup(j->out, top.out, top.out_len);
	if (ev->json == NULL)
		return KL_OOM;
	ev->json_len = top.out_len;
	return NULL;
}

/*
 * kl_contract_judge
 *		Judge one record value against a contract (the order of the checks
 *		is in the file header).  Returns NULL and fills *ev (in out) when it
 *		is accepted; otherwise the reason (in out, or static text), which is
 *		kl_judge_out_of_memory when an arena could not grow.  Calls nothing
 *		of PostgreSQL but what the file header lists.
 */
const char *
kl_contract_judge(const KlContract *c, const KlJudgeInput *in, KlPool *out,
				  KlPool *scratch, KlEvent *ev)
{
	const KlObjectSchema *o = &c->top;
	const char *value = in->value;
	size_t		len = in->value_len;
	KlJudge		j;
	KlJsonReader it;
	KlJsonValue key;
	KlJsonValue val;
	KlSlot	   *slots;
	KlMember   *extra = NULL;
	int			nextra = 0;
	int			cap = 0;
	const char *deferred = NULL;
	const char *err;
	KlSlot		top;

	memset(ev, 0, sizeof(*ev));
	kl_pool_reset(scratch);
	j.out = out;
	j.scratch = scratch;
	j.has_nul_escape = false;

	if (value == NULL)
	{
		if (c->tombstones)
			return kl_judge_tombstone(&j, c, in, ev);
		if (!c->accept_tombstones)
			return "null value (tombstone)";
		return kl_judge_business_date(&j, c, in, NULL, ev);
	}
	if (c->raw)
	{
		if (len > (size_t) c->max_value_bytes)
			return kl_msg(&j, "value of %zu bytes exceeds the contract limit of %d bytes",
						  len, c->max_value_bytes);
		return kl_judge_business_date(&j, c, in, NULL, ev);
	}
	if (c->confluent_framing)
	{
		bool		in_header = false;

		/*
		 * Confluent's wire format: magic byte 0 and a 4-byte schema id, or
		 * magic byte 1 and a 16-byte GUID, then the JSON; or the JSON alone,
		 * its schema named by a __value_schema_id header.
		 */
		for (int h = 0; h < in->nheaders && !in_header; h++)
			in_header = in->headers[h].value != NULL &&
				strcmp(in->headers[h].name, "__value_schema_id") == 0;
		if (!in_header)
		{
			if (len >= 5 && (unsigned char) value[0] == 0)
			{
				value += 5;
				len -= 5;
			}
			else if (len >= 17 && (unsigned char) value[0] == 1)
			{
				value += 17;
				len -= 17;
			}
			else
				return "not a value in Confluent's wire format: it must start with magic byte 0 and a 4-byte schema id, or magic byte 1 and a 16-byte schema GUID";
		}
	}
	if (len == 0)
		return "empty value";
	if (len > (size_t) c->max_value_bytes)
		return kl_msg(&j, "value of %zu bytes exceeds the contract limit of %d bytes",
					  len, c->max_value_bytes);

	/*
	 * NUL bytes and invalid UTF-8 are invalid JSON too (the reader checks
	 * every byte); they are looked for only once parsing failed, to say so.
	 */
	kl_json_object_open(&it, value, value + len, KL_JSON_MAX_DEPTH);
	if (it.error)
	{
		KlJsonReader doc;
		KlJsonValue whole;

		/* say what it is, if it is JSON at all */
		kl_json_init(&doc, value, len, KL_JSON_MAX_DEPTH);
		if (!kl_json_parse_document(&doc, &whole))
			return kl_invalid_json(&j, value, len, doc.error, doc.p);
		return kl_msg(&j, "value is %s, not a JSON object", kl_json_type_word(&whole));
	}

	slots = kl_pool_alloc(scratch, sizeof(KlSlot) * Max(o->nprops, 1));
	if (slots == NULL)
		return KL_OOM;
	memset(slots, 0, sizeof(KlSlot) * o->nprops);

	/* 3: members, in document order; their reasons wait for the end */
	while (kl_json_object_next(&it, &key, &val))
	{
		const char *name;
		int			nlen;
		int			p;

		if (!kl_key_name(&j, &key, &name, &nlen))
			return KL_OOM;
		p = kl_lookup_prop(o, name, nlen);
		if (p >= 0)
		{
			if (slots[p].seen && deferred == NULL)
				deferred = kl_msg(&j, "duplicate field \"%s\"", o->props[p].path);
			slots[p].seen = true;
			slots[p].v = val;
			continue;
		}
		if (!o->additional)
		{
			/* keep going to report invalid JSON before an unknown field */
			if (deferred == NULL)
			{
				char	   *copy = kl_pool_strdup(scratch, name, nlen);

				if (copy == NULL)
					return KL_OOM;
				deferred = kl_msg(&j, "unknown field \"%s\"",
								  kl_utf8_valid(copy, nlen) ? copy : "?");
			}
			continue;
		}
		if (nextra == cap)
		{
			KlMember   *bigger;

			cap = Max(cap * 2, 8);
			bigger = kl_pool_alloc(scratch, sizeof(KlMember) * cap);
			if (bigger == NULL)
				return KL_OOM;
			if (nextra > 0)
				memcpy(bigger, extra, sizeof(KlMember) * nextra);
			extra = bigger;
		}
		extra[nextra].name = name;
		extra[nextra].name_len = nlen;
		extra[nextra].v = val;
		nextra++;
	}
	if (!kl_json_object_finish(&it))
		return kl_invalid_json(&j, value, len, it.error, it.p);
	if (deferred)
		return deferred;
	j.has_nul_escape = it.has_nul_escape;

	/* fields a Kafka header fills */
	if (o->nheaders > 0)
	{
		for (int p = 0; p < o->nprops; p++)
		{
			if (o->props[p].header != NULL && !slots[p].seen &&
				(err = kl_header_value(&j, &o->props[p], in, &slots[p])) != NULL)
				return err;
		}
	}

	/* fields derived from a path inside the value */
	if (o->nderived > 0)
	{
		for (int p = 0; p < o->nprops; p++)
		{
			const KlSchema *s = &o->props[p];

			if (s->npaths == 0)
				continue;
			if (slots[p].seen)
				return kl_msg(&j, "field \"%s\" is derived from %s: the value must not have a member of that name",
							  s->path, s->paths_text);
			if (!kl_derive(&j, o, s, slots, extra, nextra, &slots[p]))
				return KL_OOM;
		}
	}

	/* 4: missing required fields */
	for (int r = 0; r < o->nrequired; r++)
	{
		int			p = o->required[r];

		if (!slots[p].seen)
			return kl_msg(&j, "missing required field \"%s\"", o->props[p].path);
	}

	/* 5: each field, in the order of properties */
	for (int p = 0; p < o->nprops; p++)
	{
		if (slots[p].seen &&
			(err = kl_judge_value(&j, &o->props[p], o->props[p].path, &slots[p])) != NULL)
			return err;
	}

	/* 6: bounds, and the rules of each left side */
	for (int p = 0; p < o->nprops; p++)
	{
		const KlSchema *s = &o->props[p];

		if (!slots[p].seen)
			continue;
		if (slots[p].v.type == KL_JSON_NUMBER &&
			(err = kl_check_bounds(&j, s, s->path, &slots[p])) != NULL)
			return err;
		for (int r = s->first_rule; r < s->first_rule + s->nrules; r++)
		{
			if (!kl_rule_holds(&c->rules[r], slots))
				return c->rules[r].message;
		}
	}

	/* 7: the members additionalProperties lets in */
	if (nextra > 0)
	{
		qsort(extra, nextra, sizeof(KlMember), kl_member_cmp);
		for (int i = 0; i < nextra; i++)
		{
			if (i > 0 && kl_member_cmp(&extra[i - 1], &extra[i]) == 0)
			{
				char	   *copy = kl_pool_strdup(scratch, extra[i].name, extra[i].name_len);

				return copy ? kl_msg(&j, "duplicate field \"%s\"", copy) : KL_OOM;
			}
			if (memchr(extra[i].name, '\0', extra[i].name_len) != NULL)
				return "a field name contains a NUL character";
			{
				char	   *copy = kl_pool_strdup(scratch, extra[i].name, extra[i].name_len);

				if (copy == NULL)
					return KL_OOM;
				if ((err = kl_canonical(&j, &extra[i].v, copy, &extra[i].out,
										&extra[i].out_len)) != NULL)
					return err;
			}
		}
	}

	/* accepted: its event_id, business date and normalised event */
	if ((err = kl_judge_business_date(&j, c, in, slots, ev)) != NULL)
		return err;
	if (c->nevent_id == 1)
	{
		const KlSlot *s = &slots[c->event_id_prop];

		ev->event_id = kl_pool_strdup(out, s->str, s->str_len);
		if (ev->event_id == NULL)
			return KL_OOM;
		ev->event_id_len = s->str_len;
	}
	else if (c->nevent_id > 1)
	{
		/* several fields: their values as a JSON array, as json.dumps writes one */
		KlBuf		b;

		if (!kl_buf_init(&b, scratch, 64) || !kl_buf_append(&b, "[", 1))
			return KL_OOM;
		for (int i = 0; i < c->nevent_id; i++)
		{
			const KlSlot *s = &slots[c->event_id_props[i]];

			if ((i > 0 && !kl_buf_append(&b, ", ", 2)) || !kl_buf_append(&b, s->out, s->out_len))
				return KL_OOM;
		}
		if (!kl_buf_append(&b, "]", 1))
			return KL_OOM;
		ev->event_id = kl_pool_strdup(out, b.data, b.len);
		if (ev->event_id == NULL)
			return KL_OOM;
		ev->event_id_len = b.len;
	}
	memset(&top, 0, sizeof(top));
	if ((err = kl_render_members(&j, o, slots, extra, nextra, &top.out, &top.out_len)) != NULL)
		return err;
	ev->json = kl_pool_strdup(out, top.out, top.out_len);
	if (ev->json == NULL)
		return KL_OOM;
	ev->json_len = top.out_len;
	return NULL;
}
