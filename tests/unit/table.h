/* An index's tables read with LMDB directly, for tests that look under the store:
 * how many entries a table has, how many of them are empty, the bytes of their
 * values, or its leaf pages. A table that cannot be read is a failure counted
 * (test.h). */
#ifndef DSQ_TEST_TABLE_H
#define DSQ_TEST_TABLE_H

#include <lmdb.h>
#include <stdio.h>

#include "test.h"

/* What table_count counts. */
enum { TABLE_ENTRIES, TABLE_EMPTY, TABLE_BYTES, TABLE_LEAF_PAGES };

/* Of table `name` of the (closed) index in dir: its entries (TABLE_ENTRIES), those
 * whose value is empty (TABLE_EMPTY), the bytes of all values (TABLE_BYTES) or its
 * leaf pages (TABLE_LEAF_PAGES); (size_t)-1, a failure counted, when it cannot be
 * read. */
static inline size_t table_count(const char *dir, const char *name, int what)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    MDB_stat ms;
    size_t n = (size_t)-1;
    if (mdb_env_create(&env))
        goto fail;
    mdb_env_set_maxdbs(env, 16);
    if (mdb_env_open(env, dir, MDB_RDONLY, 0644) == 0 && mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        if (mdb_dbi_open(txn, name, 0, &dbi) != 0) {
            /* n stays (size_t)-1 */
        } else if (what == TABLE_LEAF_PAGES) {
            if (mdb_stat(txn, dbi, &ms) == 0)
                n = ms.ms_leaf_pages;
        } else if (mdb_cursor_open(txn, dbi, &c) == 0) {
            n = 0;
            for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
                n += what == TABLE_BYTES ? v.mv_size : what == TABLE_EMPTY ? v.mv_size == 0 : 1;
            mdb_cursor_close(c);
        }
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    if (n != (size_t)-1)
        return n;
fail:
    fprintf(stderr, "table %s of %s: cannot be read\n", name, dir);
    test_failures++;
    return n;
}

/* Hands each entry of table `name` of the (closed) index in dir to fn, in key order,
 * until fn returns non-zero. The entries handed, or (size_t)-1, a failure counted. */
typedef int (*table_entry_fn)(void *ctx, const MDB_val *k, const MDB_val *v);
static inline size_t table_each(const char *dir, const char *name, table_entry_fn fn, void *ctx)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    size_t n = (size_t)-1;
    if (mdb_env_create(&env) == 0) {
        mdb_env_set_maxdbs(env, 16);
        if (mdb_env_open(env, dir, MDB_RDONLY, 0644) == 0 &&
            mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
            if (mdb_dbi_open(txn, name, 0, &dbi) == 0 && mdb_cursor_open(txn, dbi, &c) == 0) {
                n = 0;
                for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !fn(ctx, &k, &v);
                     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
                    n++;
                mdb_cursor_close(c);
            }
            mdb_txn_abort(txn);
        }
        mdb_env_close(env);
    }
    if (n == (size_t)-1) {
        fprintf(stderr, "table %s of %s: cannot be read\n", name, dir);
        test_failures++;
    }
    return n;
}

#endif
