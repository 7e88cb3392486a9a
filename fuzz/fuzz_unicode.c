/*-------------------------------------------------------------------------
 *
 * fuzz_unicode.c
 *	  libFuzzer target: the contract's string normalisations, "trim" and
 *	  "lower" as Python 3.11's str.strip() and str.lower() do them
 *	  (src/contract/contract.c: kl_py_strip, kl_py_lower and ICU's case map).
 *
 * contract.c is included (compiled unchanged, its object left out) to reach
 * them, which are static.  normalise() below is the composition judging
 * applies to a string value (contract.c, kl_judge_string: strip when
 * "trim", then ASCII lowered in place and, from the first byte outside
 * ASCII on, the whole value through kl_py_lower when "lower"), written
 * again here because judging does it inline.
 *
 * The input is taken as UTF-8 text: an input that is not valid UTF-8 is
 * skipped (a record value's strings are validated before they are
 * normalised).
 *
 * Properties, for trim, lower and trim then lower:
 *	- the output is valid UTF-8;
 *	- normalising the output again gives the same bytes (idempotent);
 *	- trim never grows the string, and its output is a substring of the
 *	  input (a prefix and a suffix removed, whole characters);
 *	- lower of ASCII text is ASCII's lower case, byte for byte.
 *
 * Cannot cover: how Python itself would do it (test/contract's fixtures
 * compare with Python's own str.strip() and str.lower()).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_unicode.c
 *
 *-------------------------------------------------------------------------
 */
#include "../src/contract/contract.c"

#include "pg_shim.h"

static KlPool *pool;

/*
 * normalise
 *		A value's bytes s[0..len) as judging normalises them; the result in
 *		the pool, its length in *outlen.
 */
static char *
normalise(const char *s, size_t len, bool trim, bool lower, size_t *outlen)
{
	char	   *buf = kl_pool_alloc(pool, len + 1);
	char	   *st;
	char	   *e;

	if (buf == NULL)
		kl_fuzz_fail("out of memory");
	memcpy(buf, s, len);
	st = buf;
	e = buf + len;
	if (trim)
		kl_py_strip(&st, &e);
	*e = '\0';
	if (lower)
	{
		char	   *c;

		for (c = st; c < e; c++)
		{
			if ((unsigned char) *c >= 0x80)
				break;
			if (*c >= 'A' && *c <= 'Z')
				*c += 'a' - 'A';
		}
		if (c < e)
		{
			KlBuf		low;

			if (!kl_buf_init(&low, pool, (e - st) * 2 + 1) ||
				!kl_py_lower(&low, st, e - st) || !kl_buf_append(&low, "", 1))
				kl_fuzz_fail("kl_py_lower failed (out of memory or ICU)");
			st = low.data;
			e = low.data + low.len - 1;
		}
	}
	*outlen = e - st;
	return st;
}

static void
check(const char *s, size_t len, bool trim, bool lower)
{
	size_t		n1;
	size_t		n2;
	char	   *o1 = normalise(s, len, trim, lower, &n1);
	char	   *o2;
	const char *what = trim ? (lower ? "trim, lower" : "trim") : "lower";

	if (!kl_utf8_valid(o1, n1))
		kl_fuzz_fail("%s: the output is not valid UTF-8", what);
	o2 = normalise(o1, n1, trim, lower, &n2);
	if (n1 != n2 || memcmp(o1, o2, n1) != 0)
	{
		fprintf(stderr, "once:  %.*s\ntwice: %.*s\n", (int) n1, o1, (int) n2, o2);
		kl_fuzz_fail("%s: normalising twice is not normalising once", what);
	}
	if (trim && !lower)
	{
		if (n1 > len)
			kl_fuzz_fail("trim grows the string from %zu to %zu bytes", len, n1);
		if (n1 > 0 && memmem(s, len, o1, n1) == NULL)
			kl_fuzz_fail("trim's output is not a substring of its input");
	}
	if (lower && !trim)
	{
		bool		ascii = true;

		for (size_t i = 0; i < len; i++)
			ascii &= (unsigned char) s[i] < 0x80;
		if (ascii)
		{
			if (n1 != len)
				kl_fuzz_fail("lower of ASCII changes the length");
			for (size_t i = 0; i < len; i++)
				if (o1[i] != ((s[i] >= 'A' && s[i] <= 'Z') ? s[i] + 'a' - 'A' : s[i]))
					kl_fuzz_fail("lower of ASCII is not ASCII's lower case at byte %zu", i);
		}
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	kl_contract_prepare();
	pool = kl_pool_create(TopMemoryContext, 65536);
	kl_shim_reset();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *) data;

	if (!kl_utf8_valid(s, size))
		return 0;
	KL_FUZZ_RUN({
		kl_pool_reset(pool);
		check(s, size, true, false);
		check(s, size, false, true);
		check(s, size, true, true);
	});
	return 0;
}
