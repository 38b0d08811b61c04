/* A tiny JSON writer into a growing buffer: one record is built, then written
 * as one line and flushed. */
#ifndef MPISCOPE_JSON_H
#define MPISCOPE_JSON_H

#include <stddef.h>
#include <stdio.h>

typedef struct json {
    char *buf;
    size_t len, cap;
    int need_comma;
} json_t;

void json_begin(json_t *j);                 /* starts "{" */
void json_end(json_t *j);                   /* closes the object */
void json_key(json_t *j, const char *key);
void json_obj(json_t *j, const char *key);  /* "key": { */
void json_arr(json_t *j, const char *key);  /* "key": [  (key NULL inside an array) */
void json_close_obj(json_t *j);
void json_close_arr(json_t *j);
void json_str(json_t *j, const char *key, const char *value);  /* NULL value -> null */
void json_num(json_t *j, const char *key, double value);       /* non-finite -> null */
void json_int(json_t *j, const char *key, long long value);
void json_bool(json_t *j, const char *key, int value);
void json_null(json_t *j, const char *key);
/* Writes the buffer and a newline with one fwrite, then flushes. */
int json_emit(json_t *j, FILE *out);
void json_free(json_t *j);

#endif
