/* The family registry: which recognizers run, in which order, under what name.
 * Order matters only for speed and for shapes two families could both claim; a
 * recognizer must reject anything that is not its own shape. Prefix layers
 * (pdsh host, rank tags, ...) are not families: scan.c peels them first. */
#include "grammar.h"

#include <stdlib.h>
#include <string.h>

#include "fam_deepspeed.h"
#include "fam_hf.h"
#include "fam_nccl.h"
#include "fam_torch.h"
#include "fam_traceback.h"
#include "num.h"

const dsq_family_def dsq_families[] = {
    {.family = DSQ_FAM_DEEPSPEED, .name = "deepspeed", .recognize = dsq_gram_deepspeed,
     .state_size = sizeof(dsq_ds_state), .handle = dsq_ds_handle, .finish = dsq_ds_finish,
     .quiet = dsq_ds_quiet},
    {.family = DSQ_FAM_NCCL, .name = "nccl", .recognize = dsq_gram_nccl,
     .state_size = sizeof(dsq_nccl_state), .handle = dsq_nccl_handle, .finish = dsq_nccl_finish,
     .reset = dsq_nccl_reset},
    {.family = DSQ_FAM_HF, .name = "hf", .recognize = dsq_gram_hf,
     .state_size = sizeof(dsq_hf_state), .handle = dsq_hf_handle, .finish = dsq_hf_finish,
     .quiet = dsq_hf_quiet},
    {.family = DSQ_FAM_MEGATRON, .name = "megatron", .recognize = dsq_gram_megatron},
    {.family = DSQ_FAM_MMENGINE, .name = "mmengine", .recognize = dsq_gram_mmengine},
    {.family = DSQ_FAM_GLOG, .name = "glog", .recognize = dsq_gram_glog,
     .state_size = sizeof(dsq_glog_state), .handle = dsq_glog_handle,
     .finish = dsq_glog_finish},
    {.family = DSQ_FAM_TORCHRUN, .name = "torchrun", .recognize = dsq_gram_torchrun,
     .state_size = sizeof(dsq_torchrun_state), .handle = dsq_torchrun_handle,
     .watch = 1u << DSQ_FAM_TRACEBACK},
    {.family = DSQ_FAM_MISC, .name = "misc", .recognize = dsq_gram_misc},
    /* DeepSpeed's bare prints: after every family with a logger header */
    {.family = DSQ_FAM_DEEPSPEED, .name = "deepspeed", .recognize = dsq_gram_deepspeed_bare},
    /* tracebacks and warnings: shapes no logger header has, after all of them */
    {.family = DSQ_FAM_TRACEBACK, .name = "traceback", .recognize = dsq_gram_traceback,
     .state_size = sizeof(dsq_tb_state), .handle = dsq_tb_handle, .finish = dsq_tb_finish},
    {.family = DSQ_FAM_PYWARN, .name = "pywarn", .recognize = dsq_gram_pywarn,
     .state_size = sizeof(dsq_pywarn_state), .handle = dsq_pywarn_handle},
    /* progress bars: what no family took and ends with tqdm's status bracket */
    {.family = DSQ_FAM_TQDM, .name = "tqdm", .recognize = dsq_gram_tqdm},
};
const size_t dsq_nfamilies = sizeof dsq_families / sizeof dsq_families[0];

const char *dsq_family_name(int family)
{
    if (family == DSQ_FAM_OTHER)
        return "other";
    for (size_t i = 0; i < dsq_nfamilies; i++)
        if (dsq_families[i].family == family)
            return dsq_families[i].name;
    return "?";
}

const char *dsq_level_name(int level)
{
    static const char *const names[DSQ_LV_COUNT] = {"none",    "debug", "info",
                                                    "warning", "error", "critical"};
    return level >= 0 && level < DSQ_LV_COUNT ? names[level] : "?";
}

void dsq_match_value(dsq_match *m, const char *name, size_t name_n, double v, int unit)
{
    if (m->nf >= DSQ_MATCH_MAXF)
        return;
    dsq_match_src(m, DSQ_SRC_FIELD, m->nf, NULL, NULL);
    dsq_mfield *f = &m->f[m->nf++];
    f->name.p = name;
    f->name.n = name_n;
    f->v = v;
    f->unit = (uint8_t)unit;
}

void dsq_match_value_at(dsq_match *m, const char *name, size_t name_n, double v, int unit,
                        const char *p, const char *stop)
{
    if (m->nf >= DSQ_MATCH_MAXF)
        return;
    dsq_match_value(m, name, name_n, v, unit);
    if (m->nsrc <= DSQ_MATCH_MAXSRC)
        m->src[m->nsrc - 1].p = p, m->src[m->nsrc - 1].n = (uint16_t)(stop - p);
}

const char *dsq_match_field(dsq_match *m, const char *name, size_t name_n, const char *num,
                            const char *end)
{
    double v;
    const char *stop = NULL;
    if (dsq_num_parse(num, end, &v, &stop) != 0)
        return num;
    const char *u = stop;
    while (u < end && (*u == ' ' || *u == '\t'))
        u++;
    const char *ue = u;
    while (ue < end && ((*ue >= 'A' && *ue <= 'Z') || (*ue >= 'a' && *ue <= 'z') || *ue == '%'))
        ue++;
    int unit = ue > u ? (int)dsq_unit_parse(u, (size_t)(ue - u)) : DSQ_U_NONE;
    dsq_match_value_at(m, name, name_n, v, unit, num, stop);
    return unit != DSQ_U_NONE ? ue : stop;
}
