/* The --points grammar: ids and inclusive ranges, from argv or from @FILE. */
#include "points.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(point_set_t *s, size_t *cap, long lo, long hi)
{
    if (s->nlisted == *cap) {
        size_t more = *cap ? 2 * *cap : 16;
        point_range_t *r = realloc(s->listed, more * sizeof *r);
        if (!r) return -1;
        s->listed = r;
        *cap = more;
    }
    s->listed[s->nlisted++] = (point_range_t){lo, hi};
    return 0;
}

static int by_start(const void *a, const void *b)
{
    long x = ((const point_range_t *)a)->lo, y = ((const point_range_t *)b)->lo;
    return (x > y) - (x < y);
}

/* The lookup copy of the listed ranges: sorted, merged where they overlap or
 * touch, so duplicates vanish. */
static int normalise(point_set_t *s)
{
    s->ranges = malloc(s->nlisted * sizeof *s->ranges);
    if (!s->ranges) return -1;
    memcpy(s->ranges, s->listed, s->nlisted * sizeof *s->ranges);
    qsort(s->ranges, s->nlisted, sizeof *s->ranges, by_start);
    size_t m = 0;
    for (size_t i = 1; i < s->nlisted; i++) {
        point_range_t *last = &s->ranges[m];
        if (s->ranges[i].lo <= last->hi + 1) {
            if (s->ranges[i].hi > last->hi) last->hi = s->ranges[i].hi;
        } else {
            s->ranges[++m] = s->ranges[i];
        }
    }
    s->n = m + 1;
    return 0;
}

static int parse_id(const char *text, size_t len, long *out)
{
    if (len == 0 || len > 18) return -1;  /* 18 digits cannot overflow a long */
    long x = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)text[i])) return -1;
        x = 10 * x + (text[i] - '0');
    }
    *out = x;
    return 0;
}

/* One item: N or A-B. */
static int parse_item(const char *item, size_t len, point_set_t *s, size_t *cap, char *err, size_t errlen)
{
    const char *dash = memchr(item, '-', len);
    long lo, hi;
    int bad = dash ? parse_id(item, (size_t)(dash - item), &lo) || parse_id(dash + 1, len - (size_t)(dash - item) - 1, &hi)
                   : parse_id(item, len, &lo);
    if (bad) {
        snprintf(err, errlen, "--points: '%.*s' is not a point id or a range A-B (ids as --plan lists them, "
                 "e.g. 0,3,5-9)", (int)(len < 64 ? len : 64), item);
        return -1;
    }
    if (!dash) hi = lo;
    if (lo > hi) {
        snprintf(err, errlen, "--points: range %ld-%ld is empty: the start is larger than the end", lo, hi);
        return -1;
    }
    if (push(s, cap, lo, hi)) {
        snprintf(err, errlen, "--points: out of memory");
        return -1;
    }
    return 0;
}

/* argv: items separated by single commas. A file: by any run of commas and white space. */
static int parse_list(const char *text, int from_file, point_set_t *s, char *err, size_t errlen)
{
    const char *seps = from_file ? ", \t\r\n" : ",";
    size_t cap = 0;
    const char *p = text;
    if (from_file) p += strspn(p, seps);
    while (*p) {
        size_t len = strcspn(p, seps);
        if (len == 0) {
            snprintf(err, errlen, "--points: an empty item in '%.64s' (separate ids and ranges with one comma)", text);
            return -1;
        }
        if (parse_item(p, len, s, &cap, err, errlen)) return -1;
        p += len;
        if (!from_file && *p && !p[1]) {
            snprintf(err, errlen, "--points: '%.64s' ends with a comma", text);
            return -1;
        }
        p += from_file ? strspn(p, seps) : (*p ? 1 : 0);
    }
    return 0;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--points: cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *more = realloc(buf, 2 * cap);
            if (!more) { free(buf); buf = NULL; break; }
            buf = more;
            cap *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        snprintf(err, errlen, "--points: cannot read '%s'", path);
        return NULL;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        snprintf(err, errlen, "--points: '%s' is not a text file of point ids", path);
        return NULL;
    }
    return buf;
}

int points_parse(const char *spec, point_set_t *out, char *err, size_t errlen)
{
    points_free(out);
    int from_file = spec[0] == '@';
    char *text = NULL;
    if (from_file) {
        if (!spec[1]) {
            snprintf(err, errlen, "--points @FILE needs a file name after the @");
            return -1;
        }
        if (!(text = read_file(spec + 1, err, errlen))) return -1;
    } else if (!*spec) {
        snprintf(err, errlen, "--points expects point ids and ranges such as 0,3,5-9 or @FILE, got ''");
        return -1;
    }
    int rc = parse_list(from_file ? text : spec, from_file, out, err, errlen);
    if (!rc && out->nlisted == 0) {
        snprintf(err, errlen, "--points: '%s' holds no point ids", spec + 1);
        rc = -1;
    }
    if (!rc && normalise(out)) {
        snprintf(err, errlen, "--points: out of memory");
        rc = -1;
    }
    free(text);
    if (rc) {
        points_free(out);
        return -1;
    }
    out->given = 1;
    return 0;
}

int points_selects(const point_set_t *s, long id)
{
    if (!s->given) return 1;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {  /* the first range that ends at or after id */
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].hi < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n && s->ranges[lo].lo <= id;
}

long points_max(const point_set_t *s) { return s->n ? s->ranges[s->n - 1].hi : -1; }

long points_order(const point_set_t *s, long nplan, long *ids)
{
    long n = 0;
    if (!s->given) {
        for (long id = 0; id < nplan; id++) ids[n++] = id;
        return n;
    }
    unsigned char *seen = calloc((size_t)nplan / 8 + 1, 1);
    if (!seen) return -1;
    for (size_t i = 0; i < s->nlisted; i++)
        for (long id = s->listed[i].lo; id <= s->listed[i].hi && id < nplan; id++) {
            unsigned char bit = (unsigned char)(1u << (id % 8));
            if (seen[id / 8] & bit) continue;
            seen[id / 8] |= bit;
            ids[n++] = id;
        }
    free(seen);
    return n;
}

void points_free(point_set_t *s)
{
    free(s->listed);
    free(s->ranges);
    *s = (point_set_t){0};
}
