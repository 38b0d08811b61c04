/* One option spec at a time: strict parsing by kind (every number
 * range-checked, every error naming the option and what it takes), its --help
 * line and its context-record field. */
#include "option_table.h"
#include "json.h"
#include "sizes.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int opt_parse_long(const char *name, const char *text, long lo, long hi, long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long x = strtol(text, &end, 10);
    if (errno || end == text || *end || x < lo || x > hi) {
        snprintf(err, errlen, "--%s expects a whole number from %ld to %ld, got '%s'", name, lo, hi, text);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_double(const char *name, const char *text, double lo, double hi, double *out,
                        char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(x) || x < lo || x > hi) {
        snprintf(err, errlen, "--%s expects a number from %g to %g, got '%s'", name, lo, hi, text);
        return -1;
    }
    *out = x;
    return 0;
}

/* A byte count with an optional K/M/G suffix: one term of the size grammar. */
int opt_parse_bytes(const char *name, const char *text, long *out, char *err, size_t errlen)
{
    size_list_t one = {0};
    char why[256];
    if (strpbrk(text, ":,") || sizes_parse(text, 1, &one, why, sizeof why) || one.n != 1) {
        snprintf(err, errlen, "--%s expects a byte count such as 4096, 64K or 1G, got '%s'", name, text);
        sizes_free(&one);
        return -1;
    }
    *out = one.v[0];
    sizes_free(&one);
    return 0;
}

/* "'a', 'b' or 'c'" */
static void list_choices(const char *const *choices, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; choices[i] && used < len; i++) {
        const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
        int n = snprintf(buf + used, len - used, "%s'%s'", sep, choices[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static int parse_choice(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    for (int i = 0; s->choices[i]; i++)
        if (strcmp(text, s->choices[i]) == 0) {
            *(int *)s->store = i;
            return 0;
        }
    char names[256];
    list_choices(s->choices, names, sizeof names);
    snprintf(err, errlen, "--%s expects %s, got '%s'", s->name, names, text);
    return -1;
}

int opt_set(const opt_spec_t *s, const char *text, char *err, size_t errlen)
{
    switch (s->kind) {
    case OPT_FLAG: *(int *)s->store = 1; return 0;
    case OPT_LONG: return opt_parse_long(s->name, text, (long)s->lo, (long)s->hi, s->store, err, errlen);
    case OPT_DOUBLE: return parse_double(s->name, text, s->lo, s->hi, s->store, err, errlen);
    case OPT_BYTES:
        if (!text) { *(long *)s->store = -1; return 0; }
        return opt_parse_bytes(s->name, text, s->store, err, errlen);
    case OPT_CHOICE: return parse_choice(s, text, err, errlen);
    case OPT_CUSTOM: return s->parse(s, text, err, errlen);
    }
    return -1;
}

void opt_help(const opt_spec_t *s)
{
    char left[64];
    if (!s->value) snprintf(left, sizeof left, "--%s", s->name);
    else if (s->flags & OPT_VALUE_OPTIONAL) snprintf(left, sizeof left, "--%s[=%s]", s->name, s->value);
    else snprintf(left, sizeof left, "--%s %s", s->name, s->value);
    if (strlen(left) > 22) printf("  %s\n  %-22s %s\n", left, "", s->help);
    else printf("  %-22s %s\n", left, s->help);
}

void opt_record(const opt_spec_t *s, json_t *j)
{
    if (!s->key && s->kind != OPT_CUSTOM) return;
    int null_unset = (s->flags & OPT_NULL_WHEN_UNSET) != 0;
    switch (s->kind) {
    case OPT_FLAG: json_bool(j, s->key, *(const int *)s->store); break;
    case OPT_LONG:
    case OPT_BYTES: {
        long v = *(const long *)s->store;
        if (null_unset && v == 0) json_null(j, s->key);
        else json_int(j, s->key, v);
        break;
    }
    case OPT_DOUBLE: {
        double v = *(const double *)s->store;
        if (null_unset && v == 0) json_null(j, s->key);
        else json_num(j, s->key, v);
        break;
    }
    case OPT_CHOICE: {
        int v = *(const int *)s->store;
        json_str(j, s->key, v >= 0 ? s->choices[v] : NULL);
        break;
    }
    case OPT_CUSTOM:
        if (s->record) s->record(s, j);
        break;
    }
}
