/* Parser of size expressions; the grammar is documented in docs/engine.md. */
#include "sizes.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SIZES = 100000 };

typedef struct { long *v; size_t n, cap; } vec_t;

static int push(vec_t *s, long x)
{
    if (s->n == MAX_SIZES) return -1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        long *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

/* A number with an optional binary suffix K, M or G; the whole text must be
 * used. Each multiplication is checked against the limit by division first,
 * so no product can overflow. */
static int parse_number(const char *text, long unit, long *out, char *err, size_t errlen)
{
    const char *p = text;
    if (!isdigit((unsigned char)*p)) {
        snprintf(err, errlen, "'%s' is not a size: expected a number such as 64, 4K or 1M", text);
        return -1;
    }
    errno = 0;
    char *end;
    long long x = strtoll(p, &end, 10);
    long long mult = 1;
    if (*end == 'K' || *end == 'k') mult = 1LL << 10, end++;
    else if (*end == 'M' || *end == 'm') mult = 1LL << 20, end++;
    else if (*end == 'G' || *end == 'g') mult = 1LL << 30, end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') {
        snprintf(err, errlen, "'%s' is not a size: unknown suffix '%s' (use K, M or G)", text, end);
        return -1;
    }
    if (errno || x > SIZE_MAX_BYTES / mult || x * mult > SIZE_MAX_BYTES / unit) {
        snprintf(err, errlen, "size '%s' is larger than 2^31-1 bytes, the largest MPI count", text);
        return -1;
    }
    *out = (long)(x * mult * unit);
    return 0;
}

/* The factor of a geometric step: decimal DIGITS[.DIGITS][e[+-]DIGITS] only
 * (strtod alone would take 0x2, inf or nan), 1 < F <= 1e6. */
static int parse_factor(const char *text, double *out)
{
    const char *p = text;
    size_t digits = strspn(p, "0123456789");
    if (digits == 0) return -1;
    p += digits;
    if (*p == '.') {
        digits = strspn(++p, "0123456789");
        if (digits == 0) return -1;
        p += digits;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        digits = strspn(p, "0123456789");
        if (digits == 0) return -1;
        p += digits;
    }
    if (*p) return -1;
    double f = strtod(text, NULL);
    if (!(f > 1.0) || !(f <= 1e6)) return -1;
    *out = f;
    return 0;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int expand_term(char *term, long unit, vec_t *out, char *err, size_t errlen)
{
    char *parts[4] = {0};
    int nparts = 0;
    for (char *tok = term; tok && nparts < 4; nparts++) {
        parts[nparts] = tok;
        tok = strchr(tok, ':');
        if (tok) *tok++ = '\0';
    }
    if (nparts > 3 || (nparts == 3 && strchr(parts[2], ':'))) {
        snprintf(err, errlen, "'%s': a range has at most three parts, A:B:STEP", term);
        return -1;
    }
    long a, b;
    if (parse_number(parts[0], unit, &a, err, errlen)) return -1;
    if (nparts == 1) return push(out, a);
    if (parse_number(parts[1], unit, &b, err, errlen)) return -1;
    if (a > b) {
        snprintf(err, errlen, "range %s:%s is empty: the start is larger than the end", parts[0], parts[1]);
        return -1;
    }
    const char *step = nparts == 3 ? parts[2] : "*2";
    /* sizes are counted in units from here on; x <= b / unit keeps x * unit <= b without overflow */
    long last = b / unit;
    int rc = 0;
    if (strcmp(step, "2^k-1") == 0) {
        /* counted in units, so "2^k-1 words" means (2^k - 1) x 8 bytes */
        if (a == 0) rc |= push(out, 0);
        for (long p = 1; p <= last && !rc; p *= 2) {
            if ((p - 1) * unit >= a && p > 1) rc |= push(out, (p - 1) * unit);
            if (p * unit >= a) rc |= push(out, p * unit);
            if (p > last / 2) break;
        }
    } else if (step[0] == '+' && isdigit((unsigned char)step[1])) {
        char *end;
        errno = 0;
        long s = strtol(step + 1, &end, 10);
        if (*end || errno || s < 1) {
            snprintf(err, errlen, "step '%s': use +N with N >= 1", step);
            return -1;
        }
        /* a step beyond the limit only ever yields the start */
        long step_bytes = s <= SIZE_MAX_BYTES / unit ? s * unit : SIZE_MAX_BYTES + 1L;
        for (long x = a; !rc; x += step_bytes) {
            rc |= push(out, x);
            if (b - x < step_bytes) break;
        }
    } else if (step[0] == '*') {
        double f = 2.0;  /* A:B alone: powers of two */
        if (nparts == 3 && parse_factor(step + 1, &f)) {
            snprintf(err, errlen, "step '%s': use *F with F > 1 (*2, *4, *1.2)", step);
            return -1;
        }
        /* in units, each size max(round(F x), x + 1): the ring case study's
         * n = max(nint(1.2 n), n + 1) is *1.2 in words */
        long x = a / unit;
        if (nparts == 2) { long p = 1; while (p < x) p *= 2; x = x == 0 ? 0 : p; }
        while (x <= last && !rc) {
            rc |= push(out, x * unit);
            double next = (double)x * f + 0.5;
            if (next > (double)SIZE_MAX_BYTES) break;  /* beyond every size: (long) would overflow */
            x = (long)next > x + 1 ? (long)next : x + 1;
        }
    } else {
        snprintf(err, errlen, "unknown step '%s': use +N (linear), *F (geometric) or 2^k-1", step);
        return -1;
    }
    if (rc) snprintf(err, errlen, "too many sizes (more than %d)", MAX_SIZES);
    return rc;
}

int sizes_parse(const char *expr, long unit, size_list_t *out, char *err, size_t errlen)
{
    vec_t v = {0};
    char *copy = strdup(expr);
    if (!copy) return -1;
    int rc = 0;
    if (*expr == '\0') {
        snprintf(err, errlen, "empty size expression");
        rc = -1;
    }
    char *save = NULL;
    for (char *term = strtok_r(copy, ",", &save); term && !rc; term = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*term)) term++;
        rc = expand_term(term, unit, &v, err, errlen);
    }
    free(copy);
    if (!rc && v.n == 0) {
        snprintf(err, errlen, "'%s' gives no sizes", expr);
        rc = -1;
    }
    if (rc) { free(v.v); return -1; }
    qsort(v.v, v.n, sizeof *v.v, cmp_long);
    size_t m = 0;
    for (size_t i = 0; i < v.n; i++)
        if (m == 0 || v.v[i] != v.v[m - 1]) v.v[m++] = v.v[i];
    out->v = v.v;
    out->n = m;
    return 0;
}

void sizes_free(size_list_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}
