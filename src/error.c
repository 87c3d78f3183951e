/* Error structs: filling them and naming codes. The library reports through these
 * only; nothing here prints. Messages are truncated to the fixed buffer, never
 * allocated, and never carry control bytes. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Control bytes (ANSI escapes in a hostile member name or log line) become '?' so
 * a message printed to a terminal cannot drive it. */
static void defuse(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F)
            *s = '?';
}

void dsq_error_clear(dsq_error *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->line = -1;
    err->offset = -1;
    err->length = 0;
}

int dsq_error_set(dsq_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    defuse(err->msg);
    return code;
}

void dsq_error_where(dsq_error *err, const char *file, const char *member)
{
    if (!err)
        return;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    snprintf(err->member, sizeof err->member, "%s", member ? member : "");
    defuse(err->file);
    defuse(err->member);
}

const char *dsq_strerror(int code)
{
    switch (code) {
    case DSQ_OK: return "ok";
    case DSQ_ENOMEM: return "out of memory";
    case DSQ_EIO: return "i/o error";
    case DSQ_EFORMAT: return "bad input format";
    case DSQ_EINDEX: return "index error";
    case DSQ_EQUERY: return "bad query";
    case DSQ_EUSAGE: return "bad usage";
    case DSQ_ELIMIT: return "limit exceeded";
    default: return "unknown error";
    }
}
