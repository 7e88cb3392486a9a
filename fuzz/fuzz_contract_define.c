/*-------------------------------------------------------------------------
 *
 * fuzz_contract_define.c
 *	  libFuzzer target: the contract definition language's compiler
 *	  (src/contract/contract_define.c), what create_contract() runs on the
 *	  definition text an owner (or a stored catalog row) gives.
 *
 * Covers: kl_contract_check (the strict mode of create_contract, every
 * refusal with its path and hint), kl_contract_compile as a stored
 * version is compiled (the lenient mode), kl_contract_normalize (how a
 * definition is stored), kl_contract_judgeable and
 * kl_contract_check_sql_types on what compiled.
 *
 * Properties: normalising is idempotent; a definition and its normal form
 * compile alike (both or neither); a definition create_contract accepts
 * also compiles as a stored version; every refusal is an ERROR, never a
 * crash; a compiled contract judges a small fixed set of values (an empty
 * object, its own definition) without failing.
 *
 * Cannot cover: "pattern" (the regex engine: every pattern is refused by
 * the shim, so patterns are left out of the corpus); "sql_type" beyond the
 * handful of built-in types the shim knows; time zones other than UTC and
 * fixed offsets; the catalog side of create_contract (contract_catalog.c).
 *
 * IDENTIFICATION
 *	  fuzz/fuzz_contract_define.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "contract/contract.h"
#include "contract/contract_define.h"
#include "pg_shim.h"

static KlPool *out_pool;
static KlPool *scratch_pool;

/*
 * compiles
 *		Does the definition compile (strictly, as create_contract checks it,
 *		or as a stored version)?  The contract in *c.
 */
static bool
compiles(const char *def, size_t len, bool strict, KlContract **c)
{
	volatile bool ok = false;

	*c = NULL;
	PG_TRY();
	{
		if (strict)
			kl_contract_check("fuzzed", def, CurrentMemoryContext);
		*c = kl_contract_compile("fuzzed", 1, def, len, false, CurrentMemoryContext);
		ok = true;
	}
	PG_CATCH();
	{
	}
	PG_END_TRY();
	return ok;
}

static void
judge(const KlContract *c, const char *value, size_t len)
{
	KlJudgeInput in = {value, len, 1782734400000, NULL, 0};
	KlEvent		ev;

	kl_pool_reset(out_pool);
	(void) kl_contract_judge(c, &in, out_pool, scratch_pool, &ev);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kl_shim_init();
	out_pool = kl_pool_create(TopMemoryContext, 65536);
	scratch_pool = kl_pool_create(TopMemoryContext, 65536);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *def;

	/* a definition is text: no NUL byte */
	if (memchr(data, '\0', size) != NULL)
		return 0;
	def = malloc(size + 1);
	memcpy(def, data, size);
	def[size] = '\0';
	KL_FUZZ_RUN({
		KlContract *c;
		KlContract *c2;
		bool		strict_ok = compiles(def, size, true, &c);
		bool		stored_ok = compiles(def, size, false, &c2);
		char	   *norm = kl_contract_normalize(def, size);
		char	   *norm2 = kl_contract_normalize(norm, strlen(norm));
		KlContract *c3;

		if (strcmp(norm, norm2) != 0)
			kl_fuzz_fail("normalising a definition twice changes it");
		if (strict_ok && !stored_ok)
			kl_fuzz_fail("a definition create_contract accepts does not compile as stored");
		if (compiles(norm, strlen(norm), true, &c3) != strict_ok)
			kl_fuzz_fail("a definition and its normal form compile differently: %s",
						 kl_shim_last_error());
		if (stored_ok)
		{
			PG_TRY();
			{
				kl_contract_judgeable(c2);
				kl_contract_check_sql_types(c2);
			}
			PG_CATCH();
			{
			}
			PG_END_TRY();
			judge(c2, "{}", 2);
			judge(c2, def, size);
		}
	});
	free(def);
	return 0;
}
