/* Options declared as data: a table of specs (name, kind, storage, range or
 * choices, help line, context key) that options.c turns into getopt's long
 * options, parsing, --help and the context record's "options" object. The core
 * has one table; each family that reads options of its own declares its table
 * in its kernel file and its registry rows point at it. */
#ifndef MPISCOPE_OPTION_TABLE_H
#define MPISCOPE_OPTION_TABLE_H

#include <stddef.h>

struct json;

typedef enum {
    OPT_FLAG,    /* no value; int store set to 1 */
    OPT_LONG,    /* a whole number in [lo, hi]; long store */
    OPT_DOUBLE,  /* a finite number in [lo, hi]; double store */
    OPT_BYTES,   /* a byte count such as 64K; long store */
    OPT_CHOICE,  /* one of choices; int store gets its index (-1 until given) */
    OPT_CUSTOM,  /* parse and record are the spec's own */
} opt_kind_t;

enum {
    OPT_VALUE_OPTIONAL = 1 << 0,  /* --name or --name=VALUE; BYTES without a value store -1 */
    OPT_NULL_WHEN_UNSET = 1 << 1, /* the context records null for 0 (LONG, DOUBLE) or -1 (CHOICE) */
};

typedef struct opt_spec {
    const char *name;             /* without the leading -- */
    opt_kind_t kind;
    void *store;
    double lo, hi;                /* LONG, DOUBLE */
    const char *const *choices;   /* CHOICE: NULL-terminated */
    const char *value;            /* --help's placeholder for the value; NULL for flags */
    const char *help;
    const char *key;              /* the context record's key; NULL: not recorded */
    unsigned flags;
    /* CUSTOM: text is NULL for an optional value left out. 0, or -1 with a message. */
    int (*parse)(const struct opt_spec *s, const char *text, char *err, size_t errlen);
    void (*record)(const struct opt_spec *s, struct json *j);
} opt_spec_t;

typedef struct option_table {
    const char *title;            /* --help's heading; NULL for the core */
    const opt_spec_t *specs;      /* ends with a spec whose name is NULL */
    /* Checks the parsed values against the ranks of the whole job (NULL: nothing
     * to check): 0, or -1 with a message in err. */
    int (*validate)(int nranks, char *err, size_t errlen);
} option_table_t;

/* Stores text (NULL: no value given) by the spec's kind; 0, or -1 with the
 * one-line message naming the option and what it expects. */
int opt_set(const opt_spec_t *s, const char *text, char *err, size_t errlen);
void opt_help(const opt_spec_t *s);
void opt_record(const opt_spec_t *s, struct json *j);

/* Shared by specs that parse by hand. */
int opt_parse_long(const char *name, const char *text, long lo, long hi, long *out, char *err, size_t errlen);
int opt_parse_bytes(const char *name, const char *text, long *out, char *err, size_t errlen);

#endif
