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

/* Opens table `name` of the (closed) index in dir for reading: 0 with *env, *txn
 * and *dbi set (table_close ends them), or -1 when it cannot be read (nothing to
 * close). */
static inline int table_open(const char *dir, const char *name, MDB_env **env, MDB_txn **txn,
                             MDB_dbi *dbi)
{
    if (mdb_env_create(env))
        return -1;
    mdb_env_set_maxdbs(*env, 16);
    if (mdb_env_open(*env, dir, MDB_RDONLY, 0644) == 0 &&
        mdb_txn_begin(*env, NULL, MDB_RDONLY, txn) == 0) {
        if (mdb_dbi_open(*txn, name, 0, dbi) == 0)
            return 0;
        mdb_txn_abort(*txn);
    }
    mdb_env_close(*env);
    return -1;
}

static inline void table_close(MDB_env *env, MDB_txn *txn)
{
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static inline size_t table_unreadable(const char *dir, const char *name)
{
    fprintf(stderr, "table %s of %s: cannot be read\n", name, dir);
    test_failures++;
    return (size_t)-1;
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
    if (table_open(dir, name, &env, &txn, &dbi))
        return table_unreadable(dir, name);
    if (mdb_cursor_open(txn, dbi, &c) == 0) {
        n = 0;
        for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !fn(ctx, &k, &v);
             rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
            n++;
        mdb_cursor_close(c);
    }
    table_close(env, txn);
    return n == (size_t)-1 ? table_unreadable(dir, name) : n;
}

typedef struct table_tally {
    int what;
    size_t n;
} table_tally;

static inline int table_tally_one(void *ctx, const MDB_val *k, const MDB_val *v)
{
    (void)k;
    table_tally *t = ctx;
    t->n += t->what == TABLE_BYTES ? v->mv_size : t->what == TABLE_EMPTY ? v->mv_size == 0 : 1;
    return 0;
}

/* Of table `name` of the (closed) index in dir: its entries (TABLE_ENTRIES), those
 * whose value is empty (TABLE_EMPTY), the bytes of all values (TABLE_BYTES) or its
 * leaf pages (TABLE_LEAF_PAGES); (size_t)-1, a failure counted, when it cannot be
 * read. */
static inline size_t table_count(const char *dir, const char *name, int what)
{
    if (what == TABLE_LEAF_PAGES) {
        MDB_env *env;
        MDB_txn *txn;
        MDB_dbi dbi;
        MDB_stat ms;
        if (table_open(dir, name, &env, &txn, &dbi))
            return table_unreadable(dir, name);
        int rc = mdb_stat(txn, dbi, &ms);
        table_close(env, txn);
        return rc ? table_unreadable(dir, name) : ms.ms_leaf_pages;
    }
    table_tally t = {what, 0};
    return table_each(dir, name, table_tally_one, &t) == (size_t)-1 ? (size_t)-1 : t.n;
}

#endif
