/*-------------------------------------------------------------------------
 *
 * source_lock.c
 *	  The lock every function that writes a source's files holds, and what
 *	  it checks before it writes: that a drop left nothing half done, and
 *	  that the source's directory is this database's.
 *
 * A source is not dropped under a writer: land(), replay(), recover(),
 * compact(), expire(), readmit() and the bridge lock the source's row FOR
 * KEY SHARE before they touch its files, and drop_source (source.c) takes
 * FOR UPDATE before it deletes anything.
 *
 * IDENTIFICATION
 *	  src/landing/source_lock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "kl_catalog/catalog.h"
#include "landing/fileundo.h"
#include "landing/landing_files.h"
#include "landing/source_lock.h"

/*
 * kl_source_lock
 *		Keep a source from being dropped until the end of the transaction,
 *		and finish what an interrupted drop left of its directory.  Every
 *		function that writes a source's files (land, replay, recover, the
 *		bridge) calls it before it touches them.
 *
 *		Then the directory must be this database's (kl_check_landing_owned:
 *		a database restored next to the original must not write in the
 *		original's landing).
 *
 *		The lock is FOR KEY SHARE on the source's row, the lock the foreign
 *		keys of batches take anyway (kl_catalog_lock_source); drop_source
 *		takes FOR UPDATE first and so waits for every such transaction, and
 *		one that starts while a drop is open waits for the drop and then
 *		finds the source gone.
 */
void
kl_source_lock(KlSource *src)
{
	char	   *root = pstrdup(src->dir);

	kl_catalog_lock_source(src);
	get_parent_directory(root);
	kl_settle_displaced(root, src->source);
	kl_check_landing_owned(src);
}
