/* Explanation catalogue (see catalogue.h).
 *
 * Format (catalogue/README.md): "[id]" opens an entry, "key: value" lines fill it,
 * one line per value; blank lines and lines starting with '#' are skipped. Parsing
 * works in place on the catalogue's copy of the text (line ends become NULs), so
 * entries are views into it. Entries are sorted by id for binary search. Unknown
 * keys and repeated ids are errors, so a typo in the data fails the unit test
 * instead of silently losing a field.
 */
#include "catalogue.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

extern const unsigned char dsq_catalogue_en[];
extern const size_t dsq_catalogue_en_len;
extern const unsigned char dsq_catalogue_zh[];
extern const size_t dsq_catalogue_zh_len;

const char *const dsq_catalogue_langs[] = {"en", "zh", NULL};

#define UI_MAX 64

struct dsq_catalogue {
    char *text;
    dsq_cat_entry *e;
    size_t n, cap;
    const char *ui_key[UI_MAX], *ui_val[UI_MAX];
    size_t nui;
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const dsq_cat_entry *)a)->id, ((const dsq_cat_entry *)b)->id);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

static dsq_cat_entry *add_entry(dsq_catalogue *c, const char *id)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        dsq_cat_entry *e = realloc(c->e, cap * sizeof *e);
        if (!e)
            return NULL;
        c->e = e;
        c->cap = cap;
    }
    dsq_cat_entry *e = &c->e[c->n++];
    *e = (dsq_cat_entry){.id = id, .title = "", .means = "", .normal = "", .check = "",
                         .source = ""};
    return e;
}

/* Sets one field of entry e (or of the ui table when e is NULL). */
static int set_field(dsq_catalogue *c, dsq_cat_entry *e, const char *key, const char *val)
{
    if (!e) {
        if (c->nui == UI_MAX)
            return -1;
        c->ui_key[c->nui] = key;
        c->ui_val[c->nui++] = val;
        return 0;
    }
    const char **f = strcmp(key, "title") == 0    ? &e->title
                     : strcmp(key, "means") == 0  ? &e->means
                     : strcmp(key, "normal") == 0 ? &e->normal
                     : strcmp(key, "check") == 0  ? &e->check
                     : strcmp(key, "source") == 0 ? &e->source
                                                  : NULL;
    if (!f || **f)
        return -1;
    *f = val;
    return 0;
}

/* Parses c->text in place. */
static int parse_lines(dsq_catalogue *c, dsq_error *err)
{
    dsq_cat_entry *cur = NULL;
    int in_entry = 0;
    long long lineno = 0;
    for (char *p = c->text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        char *line = trim(p);
        p = nl ? nl + 1 : p + strlen(p);
        lineno++;
        if (!*line || *line == '#')
            continue;
        if (*line == '[') {
            char *close = strchr(line, ']');
            if (!close || close[1] || close == line + 1)
                goto bad;
            *close = 0;
            in_entry = 1;
            if (strcmp(line + 1, "ui") == 0) {
                cur = NULL;
                continue;
            }
            if (!(cur = add_entry(c, line + 1)))
                return dsq_error_set(err, DSQ_ENOMEM, "out of memory");
            continue;
        }
        char *colon = strchr(line, ':');
        if (!in_entry || !colon)
            goto bad;
        *colon = 0;
        if (set_field(c, cur, trim(line), trim(colon + 1)) != 0)
            goto bad;
    }
    return 0;
bad:
    err->line = lineno;
    return dsq_error_set(err, DSQ_EFORMAT, "catalogue line %lld: not \"[id]\" or a known "
                         "\"key: value\" (or a key given twice)", lineno);
}

int dsq_catalogue_parse(const char *text, size_t n, dsq_catalogue **out, dsq_error *err)
{
    dsq_catalogue *c = calloc(1, sizeof *c);
    int rc = 0;
    *out = NULL;
    if (!c || !(c->text = malloc(n + 1))) {
        rc = dsq_error_set(err, DSQ_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(c->text, text, n);
    c->text[n] = 0;
    if ((rc = parse_lines(c, err)) != 0)
        goto fail;
    qsort(c->e, c->n, sizeof *c->e, cmp_entry);
    for (size_t i = 0; i < c->n; i++) {
        c->e[i].index = i;
        if (i && strcmp(c->e[i - 1].id, c->e[i].id) == 0) {
            rc = dsq_error_set(err, DSQ_EFORMAT, "catalogue: entry [%s] given twice", c->e[i].id);
            goto fail;
        }
    }
    *out = c;
    return 0;
fail:
    dsq_catalogue_free(c);
    return rc;
}

int dsq_catalogue_open(const char *lang, dsq_catalogue **out, dsq_error *err)
{
    if (strcmp(lang, "en") == 0)
        return dsq_catalogue_parse((const char *)dsq_catalogue_en, dsq_catalogue_en_len, out, err);
    if (strcmp(lang, "zh") == 0)
        return dsq_catalogue_parse((const char *)dsq_catalogue_zh, dsq_catalogue_zh_len, out, err);
    *out = NULL;
    return dsq_error_set(err, DSQ_EUSAGE, "no catalogue for language '%s' (en, zh)", lang);
}

void dsq_catalogue_free(dsq_catalogue *c)
{
    if (!c)
        return;
    free(c->e);
    free(c->text);
    free(c);
}

size_t dsq_catalogue_count(const dsq_catalogue *c) { return c->n; }

const dsq_cat_entry *dsq_catalogue_at(const dsq_catalogue *c, size_t i)
{
    return i < c->n ? &c->e[i] : NULL;
}

const dsq_cat_entry *dsq_catalogue_get(const dsq_catalogue *c, const char *id)
{
    dsq_cat_entry key = {.id = id};
    return bsearch(&key, c->e, c->n, sizeof *c->e, cmp_entry);
}

/* Looks up "<a><b><c>" built in buf; NULL when it does not fit or is absent. */
static const dsq_cat_entry *get3(const dsq_catalogue *c, const char *a, const char *b,
                                 size_t bn, const char *cc)
{
    char buf[256];
    size_t an = strlen(a), cn = strlen(cc);
    if (an + bn + cn >= sizeof buf)
        return NULL;
    memcpy(buf, a, an);
    memcpy(buf + an, b, bn);
    memcpy(buf + an + bn, cc, cn + 1);
    return dsq_catalogue_get(c, buf);
}

const dsq_cat_entry *dsq_catalogue_for_event(const dsq_catalogue *c, const char *kind,
                                             const char *label, const char *value)
{
    const dsq_cat_entry *e = NULL;
    size_t ln = label ? strlen(label) : 0;
    if (ln && strcmp(kind, "failure") == 0)
        e = get3(c, "failure:", label, ln, "");
    if (ln && strcmp(kind, "attr") == 0) {
        if (value && *value) {
            char lv[200];
            size_t vn = strlen(value);
            if (ln + 1 + vn < sizeof lv) {
                memcpy(lv, label, ln);
                lv[ln] = '=';
                memcpy(lv + ln + 1, value, vn + 1);
                e = get3(c, "attr:", lv, ln + 1 + vn, "");
            }
        }
        if (!e)
            e = get3(c, "attr:", label, ln, "");
        for (size_t i = ln; !e && i > 0; i--) /* "a.b.c" -> "a.b.*" -> "a.*" */
            if (label[i - 1] == '.')
                e = get3(c, "attr:", label, i, "*");
    }
    return e ? e : get3(c, "kind:", kind, strlen(kind), "");
}

const dsq_cat_entry *dsq_catalogue_for_prefix(const dsq_catalogue *c, const char *group,
                                              const char *msg, size_t n)
{
    size_t gn = strlen(group);
    for (size_t i = 0; i < c->n; i++) {
        const char *id = c->e[i].id;
        if (strncmp(id, group, gn) != 0 || id[gn] != ':')
            continue;
        size_t pn = strlen(id + gn + 1);
        if (pn && pn <= n && memcmp(id + gn + 1, msg, pn) == 0)
            return &c->e[i];
    }
    return NULL;
}

const dsq_cat_entry *dsq_catalogue_for_text(const dsq_catalogue *c, const char *s, size_t n)
{
    /* ids sort, so the "text:" entries are one run: find its start, walk it */
    dsq_cat_entry key = {.id = "text:"};
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_entry(&c->e[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < c->n && strncmp(c->e[i].id, "text:", 5) == 0; i++) {
        const char *needle = c->e[i].id + 5;
        size_t nn = strlen(needle);
        if (nn && memmem(s, n, needle, nn))
            return &c->e[i];
    }
    return NULL;
}

const char *dsq_catalogue_ui(const dsq_catalogue *c, const char *key)
{
    for (size_t i = 0; i < c->nui; i++)
        if (strcmp(c->ui_key[i], key) == 0)
            return c->ui_val[i];
    return key;
}
