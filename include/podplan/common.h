/*
 * podplan/common.h: errors, units and the YAML document tree.
 *
 * This is the bottom layer: every other layer reports through pp_error and
 * reads its input through pp_doc, so that any message about a bad input can
 * name the file, line, column and dotted field path of the offending value.
 */
#ifndef PODPLAN_COMMON_H
#define PODPLAN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PODPLAN_VERSION "0.1.0"

/* ------------------------------------------------------------------------
 * Status codes.  One list generates the enum and the strings (libuv's
 * UV_ERRNO_MAP).  Every fallible function returns 0 or a negative PP_E*.
 * The third column is the process exit code the CLI uses for that status:
 * 2 for "the input or the usage is wrong", 1 for "the work failed".
 * ---------------------------------------------------------------------- */
#define PP_ERRNO_MAP(XX)                                                       \
    XX(EINVAL, -1, 2, "invalid argument")                                      \
    XX(EINPUT, -2, 2, "bad input")                                             \
    XX(EUSAGE, -3, 2, "bad usage")                                             \
    XX(ENOENT, -4, 2, "not found")                                             \
    XX(EIO, -5, 1, "input/output error")                                       \
    XX(ENOMEM, -6, 1, "out of memory")                                         \
    XX(ERANGE, -7, 2, "value out of range")                                    \
    XX(EINFEASIBLE, -8, 1, "infeasible")                                       \
    XX(ENOSYS, -9, 1, "not supported in this build")                           \
    XX(EFAIL, -10, 1, "operation failed")                                      \
    XX(EINTERNAL, -11, 1, "internal error")                                    \
    XX(ETIMEOUT, -12, 1, "timed out")                                          \
    XX(EPEER, -13, 1, "a peer failed")                                         \
    XX(ENODEV, -14, 1, "device not present")

typedef enum {
    PP_OK = 0,
#define PP__XX(name, val, exitc, str) PP_##name = (val),
    PP_ERRNO_MAP(PP__XX)
#undef PP__XX
} pp_status;

/* Returns a static string describing a status code. */
const char *pp_strerror(int code);
/* Returns the process exit code for a status: 0, 1 or 2. */
int pp_exit_code(int code);

/* An error: a code and a message.  The caller allocates it (usually on the
 * stack) and initialises it with PP_ERROR_INIT or pp_error_clear(). */
#define PP_ERROR_MSG_MAX 1024
typedef struct pp_error {
    int code;                   /* public, read-only: 0 when no error */
    char msg[PP_ERROR_MSG_MAX]; /* public, read-only: "" when no error */
} pp_error;

#define PP_ERROR_INIT                                                          \
    {                                                                          \
        0, {                                                                   \
            0                                                                  \
        }                                                                      \
    }

void pp_error_clear(pp_error *e);

/* Records an error unless one is already recorded (the first error is the
 * one worth reporting).  Returns code, so a caller can write
 * `return pp_error_set(e, PP_EINPUT, "...")`.  e may be NULL. */
int pp_error_set(pp_error *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepends context to a recorded error while unwinding:
 * "while loading node 3: <old message>".  No-op when e is NULL or clear. */
void pp_error_prefix(pp_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Aborts with a message.  For allocation failure of small, fixed-size
 * objects only (redis' zmalloc): allocations sized by user input are checked
 * and reported instead. */
void pp_oom(void) __attribute__((noreturn));
void *pp_xmalloc(size_t n);
void *pp_xcalloc(size_t n, size_t size);
void *pp_xrealloc(void *p, size_t n);
char *pp_xstrdup(const char *s);

/* ------------------------------------------------------------------------
 * Growable arrays (common/vec.c).  An array is a pointer, a count and a
 * size_t capacity kept by the caller, in whatever struct holds them (often
 * several arrays share one count).  PP_VEC_RESERVE(p, cap, need, first)
 * makes room for `need` items: when need > cap the capacity becomes
 * `first` (cap 0) or doubles, as often as it takes, and p is reallocated
 * (pp_xrealloc: aborts when out of memory).  The test is inline; only the
 * growth calls out.
 * ---------------------------------------------------------------------- */
void *pp_vec_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first);
#define PP_VEC_RESERVE(p, cap, need, first)                                    \
    do {                                                                       \
        if ((size_t)(need) > (cap))                                            \
            (p) = pp_vec_grow((p), &(cap), (size_t)(need), sizeof *(p),        \
                              (first));                                        \
    } while (0)

/* ------------------------------------------------------------------------
 * An indexed binary min-heap of (key, tie) (common/heap.c): the flow
 * network's completion times and the max-min solver's fair shares.  Items
 * are small integers; pos[item] (an array the caller owns, one entry per
 * possible item) is the item's index in the heap, or -1.  Ties on the key
 * are broken by `tie`, which the caller keeps unique, so the pop order is
 * a function of the keys alone, never of the heap's history.  Plain data:
 * a caller may write keys in place and then call pp_iheap_heapify.
 * Hot operations are inline; pp_iheap_init is a zeroed struct.
 * ---------------------------------------------------------------------- */
typedef struct pp_ikey {
    double k;
    int32_t item;
    int32_t tie;
} pp_ikey;

typedef struct pp_iheap {
    pp_ikey *a;
    size_t n, cap;
} pp_iheap;

static inline bool pp_ikey_less(const pp_ikey *x, const pp_ikey *y) {
    return x->k < y->k || (x->k == y->k && x->tie < y->tie);
}

/* The inline operations are C (compound literals, void * conversions):
 * hidden from C++ translation units (nvcc), which never use the heap. */
#ifndef __cplusplus
static inline void pp_iheap_up(pp_iheap *h, int32_t *pos, size_t i) {
    pp_ikey x = h->a[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!pp_ikey_less(&x, &h->a[p])) break;
        h->a[i] = h->a[p];
        pos[h->a[i].item] = (int32_t)i;
        i = p;
    }
    h->a[i] = x;
    pos[x.item] = (int32_t)i;
}

static inline void pp_iheap_down(pp_iheap *h, int32_t *pos, size_t i) {
    pp_ikey x = h->a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && pp_ikey_less(&h->a[c + 1], &h->a[c])) c++;
        if (!pp_ikey_less(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        pos[h->a[i].item] = (int32_t)i;
        i = c;
    }
    h->a[i] = x;
    pos[x.item] = (int32_t)i;
}

static inline void pp_iheap_push(pp_iheap *h, int32_t *pos, int32_t item,
                                 int32_t tie, double k) {
    PP_VEC_RESERVE(h->a, h->cap, h->n + 1, 64);
    h->a[h->n] = (pp_ikey){k, item, tie};
    pp_iheap_up(h, pos, h->n++);
}

static inline void pp_iheap_remove(pp_iheap *h, int32_t *pos, int32_t item) {
    size_t i = (size_t)pos[item];
    pos[item] = -1;
    if (i == --h->n) return;
    h->a[i] = h->a[h->n];
    pos[h->a[i].item] = (int32_t)i;
    if (i > 0 && pp_ikey_less(&h->a[i], &h->a[(i - 1) / 2]))
        pp_iheap_up(h, pos, i);
    else
        pp_iheap_down(h, pos, i);
}

/* A new key for an item in the heap. */
static inline void pp_iheap_update(pp_iheap *h, int32_t *pos, int32_t item,
                                   double k) {
    size_t i = (size_t)pos[item];
    double old = h->a[i].k;
    h->a[i].k = k;
    if (k < old)
        pp_iheap_up(h, pos, i);
    else
        pp_iheap_down(h, pos, i);
}
#endif /* __cplusplus */

/* Restores the heap property everywhere (Floyd): O(n), for bulk edits. */
void pp_iheap_heapify(pp_iheap *h, int32_t *pos);
/* Frees the array; the heap is then empty and reusable. */
void pp_iheap_fini(pp_iheap *h);

/* ------------------------------------------------------------------------
 * Units.  Inside the code every quantity is an SI double: seconds, bytes,
 * bytes per second, FLOP, FLOP/s.  Text carries a unit and the parser never
 * guesses: "Gb" (bits) and "GB" (bytes) differ, as do "GB" and "GiB".
 * ---------------------------------------------------------------------- */
typedef enum {
    PP_Q_COUNT,     /* plain number, optional SI suffix: 300e9, 300G, 1.5k   */
    PP_Q_BYTES,     /* B kB MB GB TB PB (decimal), KiB MiB GiB TiB PiB       */
    PP_Q_BANDWIDTH, /* bps Kbps Mbps Gbps Tbps, Gb/s; B/s kB/s MB/s GB/s
                       TB/s GiB/s...  stored in bytes per second            */
    PP_Q_FLOPS,     /* FLOP kFLOP ... EFLOP ZFLOP (count)                    */
    PP_Q_FLOPRATE,  /* FLOPS, TFLOPS, PFLOP/s, TFLOP/s ...                   */
    PP_Q_TIME,      /* ns us ms s min h d                                    */
    PP_Q_RATIO,     /* "2:1" gives 2.0, "1:1" gives 1.0                      */
    PP_Q__COUNT
} pp_qkind;

/* Parses text as a quantity of the given kind into SI units.
 * default_unit, when not NULL, is the unit a bare number is taken in (a
 * field's documented default, e.g. "B" or "s"); when NULL a bare number is
 * an error for every kind but PP_Q_COUNT and PP_Q_RATIO.
 * On error returns PP_EINPUT, leaves *out untouched and, when why is not
 * NULL, writes a short reason ("expected a bandwidth such as 200Gbps or
 * 25GB/s") into why. */
int pp_unit_parse(const char *text, pp_qkind kind, const char *default_unit,
                  double *out, char *why, size_t why_len);

/* Formats an SI value with the unit a person would choose (bandwidth in
 * Gbps, bytes in GB, ...) with up to `digits` significant digits.  The text
 * parses back to the same value to that precision.  Returns buf. */
char *pp_unit_format(double value, pp_qkind kind, int digits, char *buf,
                     size_t len);

/* Returns "a byte size", "a bandwidth", ... for messages. */
const char *pp_qkind_name(pp_qkind kind);

/* ------------------------------------------------------------------------
 * The YAML document tree.  libyaml's events are turned into a small tree in
 * which every node keeps the file, line and column (counted from 1) where it
 * starts, so that errors found late (an unknown GPU name, a dangling link)
 * still point at the line.  Aliases are expanded (they share the node).
 * Duplicate keys are an error at load time.
 * ---------------------------------------------------------------------- */
typedef enum { PP_NODE_SCALAR, PP_NODE_SEQ, PP_NODE_MAP } pp_node_kind;

typedef struct pp_node pp_node;
struct pp_node {
    pp_node_kind kind; /* public, read-only */
    const char *file;  /* public, read-only: owned by the document */
    int line, col;     /* public, read-only: 1-based */
    char *scalar;      /* PP_NODE_SCALAR: the text, NUL-terminated */
    bool quoted;       /* PP_NODE_SCALAR: written in quotes */
    size_t n;          /* SEQ/MAP: number of items or pairs */
    pp_node **items;   /* SEQ: items; MAP: values */
    pp_node **keys;    /* MAP: keys (scalar nodes) */
    /* private: which keys a reader asked for, for unknown-key detection */
    unsigned char *asked; /* MAP: per key, 1 once read */
    char **wanted;        /* MAP: every key name any getter asked for */
    size_t n_wanted, cap_wanted;
};

typedef struct pp_doc pp_doc;

/* Loads a YAML file.  On success *out owns the tree; free it with
 * pp_doc_free().  On failure returns PP_EINPUT (syntax error, duplicate
 * key, empty document) or PP_ENOENT/PP_EIO, fills e with
 * "file:line:col: what", and leaves *out untouched. */
int pp_doc_load_file(const char *path, pp_doc **out, pp_error *e);

/* The same from memory; name is used in messages as the file name. */
int pp_doc_load_string(const char *name, const char *text, size_t len,
                       pp_doc **out, pp_error *e);

void pp_doc_free(pp_doc *doc); /* NULL is a no-op */

/* Applies an override "dotted.path=value" (list items as "links[3]") to
 * the tree before a loader reads it; missing keys are created.  The new
 * value's mark is file "--set", line `which` (the override's ordinal,
 * from 1), column of the value, so a bad value reads
 * "--set:1:17: node.nics.count: expected a positive integer, got "x"".
 * Returns PP_EUSAGE for a malformed assignment or a path through a
 * scalar. */
int pp_doc_set(pp_doc *doc, const char *assignment, int which, pp_error *e);
pp_node *pp_doc_root(const pp_doc *doc); /* borrowed */

/* Records a located error: "file:line:col: path: message".  n may be NULL
 * (then no location is printed), path may be NULL or "".  Returns code. */
int pp_error_at(pp_error *e, int code, const pp_node *n, const char *path,
                const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Joins a dotted path: pp_path(buf, len, "fabric.leaf", "radix") gives
 * "fabric.leaf.radix"; an index gives "links[3]" via pp_path_index. */
const char *pp_path(char *buf, size_t len, const char *prefix, const char *key);
const char *pp_path_index(char *buf, size_t len, const char *prefix, size_t i);

/* --- Reading a mapping -------------------------------------------------
 * The getters take the map node, the dotted path of the map (for
 * messages) and the key.  Each returns:
 *   0           the key was present and *out was set;
 *   1           the key is absent and PP_OPTIONAL was given (*out untouched);
 *   PP_EINPUT   the key is absent and required, or its value has the wrong
 *               type or unit (e filled, *out untouched).
 * Every key asked for is remembered, so pp_map_done() can report keys
 * nobody asked for, with "did you mean" when one edit away from a wanted
 * key. */
enum { PP_REQUIRED = 0, PP_OPTIONAL = 1 };

pp_node *pp_map_get(pp_node *map, const char *key); /* marks it asked */
int pp_map_node(pp_node *map, const char *path, const char *key, int flags,
                pp_node_kind kind, pp_node **out, pp_error *e);
int pp_map_int(pp_node *map, const char *path, const char *key, int flags,
               int64_t min, int64_t max, int64_t *out, pp_error *e);
int pp_map_number(pp_node *map, const char *path, const char *key, int flags,
                  double min, double max, double *out, pp_error *e);
/* A quantity with a unit; the value must be > 0 unless allow_zero. */
int pp_map_quantity(pp_node *map, const char *path, const char *key, int flags,
                    pp_qkind kind, const char *default_unit, bool allow_zero,
                    double *out, pp_error *e);
int pp_map_string(pp_node *map, const char *path, const char *key, int flags,
                  const char **out, pp_error *e);
int pp_map_bool(pp_node *map, const char *path, const char *key, int flags,
                bool *out, pp_error *e);
/* names is a NULL-terminated list; *out is the index of the match. */
int pp_map_enum(pp_node *map, const char *path, const char *key, int flags,
                const char *const *names, int *out, pp_error *e);

/* Fails with "file:line:col: path.key: unknown key (did you mean "x"?)" for
 * the first key of map that no getter asked for. */
int pp_map_done(pp_node *map, const char *path, pp_error *e);

/* The same typed conversions on a bare node (a list item, say). */
int pp_node_int(const pp_node *n, const char *path, int64_t min, int64_t max,
                int64_t *out, pp_error *e);
int pp_node_number(const pp_node *n, const char *path, double min, double max,
                   double *out, pp_error *e);
int pp_node_quantity(const pp_node *n, const char *path, pp_qkind kind,
                     const char *default_unit, bool allow_zero, double *out,
                     pp_error *e);
int pp_node_string(const pp_node *n, const char *path, const char **out,
                   pp_error *e);
int pp_node_expect(const pp_node *n, const char *path, pp_node_kind kind,
                   pp_error *e);

/* Levenshtein distance, capped: returns cap+1 when larger.  For "did you
 * mean" suggestions everywhere (options, names in catalogues). */
int pp_edit_distance(const char *a, const char *b, int cap);

/* ------------------------------------------------------------------------
 * Command-line specifications "key=value,key=value" (the inline model,
 * --parallel).  pp_kv_parse checks each key against `keys` (NULL-
 * terminated, at most 64; an unknown key gets a "did you mean"), rejects
 * empty items and repeated keys, and calls fn(ctx, key index, value, e)
 * for each.  Messages start with `what` ("--parallel: tp: ...").  *seen
 * (may be NULL) gets bit k set for each keys[k] given.
 * ---------------------------------------------------------------------- */
typedef int (*pp_kv_fn)(void *ctx, int key, const char *value, pp_error *e);
int pp_kv_parse(const char *spec, const char *what, const char *const *keys,
                pp_kv_fn fn, void *ctx, uint64_t *seen, pp_error *e);
/* The nearest of names within two edits, or NULL. */
const char *pp_closest(const char *word, const char *const *names);
/* The one "find a name or suggest one" of the choices a person types
 * (--format, registries, `list` kinds): the index of `word` in the
 * NULL-terminated `names`, else -1 with *near (may be NULL) the nearest
 * name for a "did you mean" (NULL when none is close). */
int pp_name_find(const char *word, const char *const *names,
                 const char **near);
/* Its message: "<what>: expected <expected>, got "<got>"" plus " (did you
 * mean "<near>"?)" when near is not NULL.  Returns code. */
int pp_name_error(pp_error *e, int code, const char *what,
                  const char *expected, const char *got, const char *near);
/* "Did you mean" for names a person types (GPUs, models, clusters): writes
 * into buf the names of `names` (n of them) that `word` most likely meant,
 * quoted and joined ("\"a\"", "\"a\" or \"b\"", "\"a\", \"b\" or \"c\""):
 * those equal to word ignoring case; else those that start with it
 * ignoring case (a100 -> every a100 entry; at most 8 listed); else the
 * nearest within 3 edits, and only when closer than either name is long
 * ("a100" is 2 edits from "b200" but means the a100 family).  Returns how
 * many names were matched (0: buf is ""). */
int pp_suggest(const char *word, const char *const *names, size_t n, char *buf,
               size_t len);
/* A whole decimal integer in [min, max], no blanks: 0, or -1. */
int pp_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out);
/* A decimal number in [min, max] (strtod's forms; not NaN), no blanks: 0,
 * or -1. */
int pp_parse_f64(const char *text, double min, double max, double *out);

/* ------------------------------------------------------------------------
 * Files.  Output is written to "<path>.tmp.<pid>" and renamed into place,
 * so an interrupted or failed run never leaves a half-written file.
 * ---------------------------------------------------------------------- */
typedef struct pp_outfile {
    FILE *fp;   /* public: write here */
    char *path; /* private */
    char *tmp;  /* private */
} pp_outfile;

/* Opens path for atomic writing; "-" or NULL means stdout. */
int pp_outfile_open(pp_outfile *of, const char *path, pp_error *e);
/* Flushes, closes and renames into place.  On error the temporary file is
 * removed and the destination is untouched. */
int pp_outfile_commit(pp_outfile *of, pp_error *e);
/* Removes the temporary file; the destination is untouched. */
void pp_outfile_abort(pp_outfile *of);

/* --plot's one way to draw: runs gnuplot (Debian's gnuplot-nox) as a
 * subprocess on the script `write` produces, which must send the SVG to
 * the temporary name it is given; that file is renamed onto svg_path only
 * when gnuplot succeeds.  PP_ENOSYS "--plot: gnuplot not found..." (hint
 * appended, may be "") when gnuplot is not on PATH, PP_EFAIL when it
 * fails, PP_EIO for the files. */
int pp_gnuplot_svg(const char *svg_path, const char *hint,
                   void (*write)(FILE *script, const char *tmp_svg, void *ctx),
                   void *ctx, pp_error *e);

/* The file name without folders and without .yaml/.yml, for default
 * names ("topologies/titan.yaml" gives "titan"); cut to len - 1. */
void pp_file_stem(const char *path, char *dst, size_t len);

/* Finds a shipped data file: if `name` is a readable path it is used as is;
 * otherwise "<dir>/<name>.yaml" is tried under each data root in turn (see
 * pp_data_roots).  subdir is e.g. "models/zoo" or "topologies".  Writes the
 * path into buf.  Returns 0, or PP_ENOENT with a "did you mean" among the
 * shipped names and the `podplan list` command that shows them. */
int pp_data_find(const char *subdir, const char *name, char *buf, size_t len,
                 pp_error *e);
/* The folders searched for shipped data, in order: $PODPLAN_DATA_DIR; the
 * installed tree relative to the running binary (<exe dir>/../share/podplan,
 * read from /proc/self/exe, so an installed tree can be moved); the source
 * tree compiled in (skipped when $PODPLAN_NO_SOURCE_DIR is set, so a test
 * can prove the install works without it); the install prefix compiled in.
 * Fills roots[0..max) with borrowed strings (static storage, valid until
 * the next call) and returns the count. */
size_t pp_data_roots(const char **roots, size_t max);
/* The names (file stems) of the .yaml files shipped in subdir, sorted,
 * from the first root that has that folder.  *out is a malloc'd array of
 * malloc'd strings (NULL when none); free with pp_data_names_free.
 * *root (may be NULL) gets the folder read, or NULL.  Returns the count. */
size_t pp_data_names(const char *subdir, char ***out, const char **root);
void pp_data_names_free(char **names, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PODPLAN_COMMON_H */
