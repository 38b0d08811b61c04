/* JSON writer: strings escaped per RFC 8259, numbers with enough digits. */
#include "json.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void put(json_t *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 1024;
        while (j->len + n + 1 > cap) cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b) abort();
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void putf(json_t *j, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(j, tmp, (size_t)n);
}

static void put_string(json_t *j, const char *s)
{
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': put(j, "\\\"", 2); break;
        case '\\': put(j, "\\\\", 2); break;
        case '\n': put(j, "\\n", 2); break;
        case '\t': put(j, "\\t", 2); break;
        case '\r': put(j, "\\r", 2); break;
        default:
            if (*p < 0x20) putf(j, "\\u%04x", *p);
            else put(j, (const char *)p, 1);
        }
    }
    put(j, "\"", 1);
}

void json_key(json_t *j, const char *key)
{
    if (j->need_comma) put(j, ", ", 2);
    j->need_comma = 1;
    if (key) {
        put_string(j, key);
        put(j, ": ", 2);
    }
}

void json_begin(json_t *j) { j->len = 0; j->need_comma = 0; put(j, "{", 1); }
void json_end(json_t *j) { put(j, "}", 1); }
void json_obj(json_t *j, const char *key) { json_key(j, key); put(j, "{", 1); j->need_comma = 0; }
void json_arr(json_t *j, const char *key) { json_key(j, key); put(j, "[", 1); j->need_comma = 0; }
void json_close_obj(json_t *j) { put(j, "}", 1); j->need_comma = 1; }
void json_close_arr(json_t *j) { put(j, "]", 1); j->need_comma = 1; }

void json_str(json_t *j, const char *key, const char *value)
{
    json_key(j, key);
    if (value) put_string(j, value);
    else put(j, "null", 4);
}

void json_num(json_t *j, const char *key, double value)
{
    json_key(j, key);
    if (isfinite(value)) putf(j, "%.9g", value);
    else put(j, "null", 4);
}

void json_int(json_t *j, const char *key, long long value) { json_key(j, key); putf(j, "%lld", value); }
void json_bool(json_t *j, const char *key, int value) { json_key(j, key); put(j, value ? "true" : "false", value ? 4 : 5); }
void json_null(json_t *j, const char *key) { json_key(j, key); put(j, "null", 4); }

int json_emit(json_t *j, FILE *out)
{
    put(j, "\n", 1);
    size_t w = fwrite(j->buf, 1, j->len, out);
    return (w == j->len && fflush(out) == 0) ? 0 : -1;
}

void json_free(json_t *j) { free(j->buf); memset(j, 0, sizeof *j); }
