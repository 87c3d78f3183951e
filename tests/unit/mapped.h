/* How much of a file this process has mapped is resident, for tests that check a
 * map is let go of as it is read. */
#ifndef DSQ_TEST_MAPPED_H
#define DSQ_TEST_MAPPED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The resident bytes of this process's mapping of path (smaps "Rss"), -1 if none. */
static inline long long mapped_rss_kb(const char *path)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[4608];
    long long kb = -1;
    int in_it = 0;
    size_t pl = strlen(path);
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n')
            line[--n] = 0;
        if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' ')) {
            in_it = n >= pl && strcmp(line + n - pl, path) == 0; /* a mapping's first line */
        } else if (in_it && strncmp(line, "Rss:", 4) == 0) {
            kb = (kb < 0 ? 0 : kb) + atoll(line + 4);
            in_it = 0;
        }
    }
    fclose(f);
    return kb;
}

#endif
