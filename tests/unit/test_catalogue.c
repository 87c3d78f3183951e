/* The explanation catalogue: every event kind has an entry in every language, every
 * entry names its source, the languages have the same ids and ui words, lookups pick
 * the most specific entry, malformed text is rejected, and the facts issue 7 lists
 * are stated (checked against the sources named in the entries). */
#include <stdlib.h>

#include "catalogue.h"
#include "dsq/dsq.h"
#include "event.h"
#include "test.h"

static dsq_catalogue *open_lang(const char *lang)
{
    dsq_catalogue *c = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    int rc = dsq_catalogue_open(lang, &c, &err);
    if (rc != 0)
        fprintf(stderr, "catalogue %s: %s\n", lang, err.msg);
    CHECK_INT(rc, 0);
    return c;
}

static void test_every_kind_has_an_entry_with_a_source(void)
{
    for (int l = 0; dsq_catalogue_langs[l]; l++) {
        dsq_catalogue *c = open_lang(dsq_catalogue_langs[l]);
        if (!c)
            continue;
        for (int k = 0; k < DSQ_EV_KIND_COUNT; k++) {
            char id[64];
            snprintf(id, sizeof id, "kind:%s", dsq_ev_kind_name(k));
            const dsq_cat_entry *e = dsq_catalogue_get(c, id);
            if (!e)
                fprintf(stderr, "%s: no entry [%s]\n", dsq_catalogue_langs[l], id);
            CHECK(e != NULL);
        }
        for (size_t i = 0; i < dsq_catalogue_count(c); i++) {
            const dsq_cat_entry *e = dsq_catalogue_at(c, i);
            if (!*e->source || !*e->title || !*e->means)
                fprintf(stderr, "%s: [%s] lacks a title, meaning or source\n",
                        dsq_catalogue_langs[l], e->id);
            CHECK(*e->source && *e->title && *e->means);
        }
        dsq_catalogue_free(c);
    }
}

static void test_languages_have_the_same_entries_and_ui_words(void)
{
    static const char *const ui_keys[] = {"host", "rank", "normal", "check", "source", "see_line",
                                          "from_line", "member", "unexplained", "progress",
                                          "fold_one", "fold_many", "summary", "summary_problems"};
    dsq_catalogue *en = open_lang("en"), *zh = open_lang("zh");
    if (!en || !zh)
        goto done;
    CHECK_INT(dsq_catalogue_count(en), dsq_catalogue_count(zh));
    for (size_t i = 0; i < dsq_catalogue_count(en); i++) {
        const char *id = dsq_catalogue_at(en, i)->id;
        if (!dsq_catalogue_get(zh, id))
            fprintf(stderr, "zh lacks [%s]\n", id);
        CHECK(dsq_catalogue_get(zh, id) != NULL);
    }
    for (size_t i = 0; i < sizeof ui_keys / sizeof ui_keys[0]; i++) {
        CHECK(dsq_catalogue_ui(en, ui_keys[i]) != ui_keys[i]);
        CHECK(dsq_catalogue_ui(zh, ui_keys[i]) != ui_keys[i]);
    }
    CHECK(strcmp(dsq_catalogue_ui(en, "normal"), dsq_catalogue_ui(zh, "normal")) != 0);
done:
    dsq_catalogue_free(en);
    dsq_catalogue_free(zh);
}

static void test_lookup_picks_the_most_specific_entry(void)
{
    dsq_catalogue *c = open_lang("en");
    if (!c)
        return;
    CHECK_STR(dsq_catalogue_for_event(c, "failure", "cuda_oom", "")->id, "failure:cuda_oom");
    CHECK_STR(dsq_catalogue_for_event(c, "failure", "no_such_class", "")->id, "kind:failure");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "nccl_net", "Socket")->id, "attr:nccl_net=Socket");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "nccl_net", "Foo")->id, "attr:nccl_net");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "nccl_env.NCCL_IB_DISABLE", "0")->id,
              "attr:nccl_env.NCCL_IB_DISABLE");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "nccl_env.NCCL_P2P_LEVEL", "NVL")->id,
              "attr:nccl_env.*");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "pg_nccl.NCCL_DEBUG", "INFO")->id, "attr:pg_nccl.*");
    CHECK_STR(dsq_catalogue_for_event(c, "attr", "optimizer.params.lr", "1e-5")->id, "kind:attr");
    CHECK_STR(dsq_catalogue_for_event(c, "memory", NULL, NULL)->id, "kind:memory");
    static const char msg[] = "Using tuning table 0 with LL128 disabled";
    CHECK_STR(dsq_catalogue_for_prefix(c, "nccl_msg", msg, sizeof msg - 1)->id,
              "nccl_msg:Using tuning table");
    CHECK(dsq_catalogue_for_prefix(c, "nccl_msg", "Using", 5) == NULL);
    static const char line[] = "gpu9: [INFO] finished initializing model - num_params = 291";
    CHECK_STR(dsq_catalogue_for_text(c, line, sizeof line - 1)->id, "text:finished initializing model");
    CHECK(dsq_catalogue_for_text(c, line, 20) == NULL); /* only the first n bytes count */
    CHECK(dsq_catalogue_get(c, "kind:no_such_kind") == NULL);
    CHECK_STR(dsq_catalogue_ui(c, "no_such_word"), "no_such_word");
    dsq_catalogue_free(c);
}

static void expect_parse_error(const char *text, long long line)
{
    dsq_catalogue *c = (dsq_catalogue *)1;
    dsq_error err;
    dsq_error_clear(&err);
    CHECK_INT(dsq_catalogue_parse(text, strlen(text), &c, &err), DSQ_EFORMAT);
    CHECK(c == NULL);
    if (line > 0)
        CHECK_INT(err.line, line);
}

static void test_malformed_text_is_rejected(void)
{
    expect_parse_error("[kind:x]\ntitle: a\nmeaning: b\n", 3);   /* unknown key */
    expect_parse_error("[kind:x]\ntitle: a\ntitle: b\n", 3);     /* key twice */
    expect_parse_error("title: a\n", 1);                         /* outside an entry */
    expect_parse_error("[kind:x]\nno colon here\n", 2);
    expect_parse_error("[kind:x\n", 1);
    expect_parse_error("[kind:x]\ntitle: a\n[kind:x]\ntitle: b\n", 0); /* id twice */
    dsq_catalogue *c = NULL;
    dsq_error err;
    dsq_error_clear(&err);
    static const char ok[] = "# c\n\n[ui]\nnormal: N\n[b]\ntitle: B\r\n[a]\ntitle: A: with colon\n";
    CHECK_INT(dsq_catalogue_parse(ok, sizeof ok - 1, &c, &err), 0);
    if (c) {
        CHECK_INT(dsq_catalogue_count(c), 2);
        CHECK_STR(dsq_catalogue_at(c, 0)->id, "a");
        CHECK_STR(dsq_catalogue_get(c, "a")->title, "A: with colon");
        CHECK_STR(dsq_catalogue_get(c, "b")->title, "B");
        CHECK_STR(dsq_catalogue_ui(c, "normal"), "N");
    }
    dsq_catalogue_free(c);
    CHECK_INT(dsq_catalogue_open("fr", &c, &err), DSQ_EUSAGE);
}

/* The English text of id contains needle. */
static void expect_says(dsq_catalogue *c, const char *id, const char *needle)
{
    const dsq_cat_entry *e = dsq_catalogue_get(c, id);
    CHECK(e != NULL);
    if (!e)
        return;
    int found = strstr(e->means, needle) || strstr(e->normal, needle) || strstr(e->check, needle) ||
                strstr(e->title, needle);
    if (!found)
        fprintf(stderr, "[%s] does not say \"%s\"\n", id, needle);
    CHECK(found);
}

static void test_issue_facts_are_stated(void)
{
    dsq_catalogue *c = open_lang("en");
    if (!c)
        return;
    expect_says(c, "kind:memory", "Max_MA = peak of MA since the previous report");
    expect_says(c, "kind:memory", "Max_CA to a whole GB");
    expect_says(c, "kind:memory", "CA = memory reserved by PyTorch's caching allocator");
    expect_says(c, "nccl_msg:Using tuning table", "LL128 is one of NCCL's three protocols");
    expect_says(c, "field:Num Epochs", "sys.maxsize");
    expect_says(c, "field:Num Epochs", "max_steps");
    expect_says(c, "kind:hf_train_setup", "bounded by max_steps");
    expect_says(c, "signal:9", "SIGKILL");
    expect_says(c, "signal:9", "out-of-memory killer");
    expect_says(c, "attr:nccl_net=Socket", "found no usable IB/RoCE transport");
    expect_says(c, "attr:nccl_env.NCCL_IB_DISABLE", "0 (NCCL's default) leaves the IB verbs transport enabled");
    expect_says(c, "nccl:net_ib", "relaxed ordering");
    expect_says(c, "text:finished initializing model", "num_params is the number of parameter tensors");
    dsq_catalogue_free(c);
}

TEST_MAIN({"every_kind_has_an_entry_with_a_source", test_every_kind_has_an_entry_with_a_source},
          {"languages_have_the_same_entries_and_ui_words", test_languages_have_the_same_entries_and_ui_words},
          {"lookup_picks_the_most_specific_entry", test_lookup_picks_the_most_specific_entry},
          {"malformed_text_is_rejected", test_malformed_text_is_rejected},
          {"issue_facts_are_stated", test_issue_facts_are_stated})
