/*
 * sim/net/trace.c: a Chrome trace-event JSON file (chrome://tracing, Perfetto's
 * ui.perfetto.dev) of a simulation, written while it runs.
 *
 *   {"traceEvents":[
 *   {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"GPUs"}},
 *   ...
 *   {"name":"send n1.gpu0","ph":"X","pid":1,"tid":2,"ts":0.000,
 *    "dur":40.002,"args":{"bytes":1000000000,"dst":"n1.gpu0"}},
 *   ...],
 *   "displayTimeUnit":"ns"}
 *
 * Only complete events ("ph":"X", ts and dur in microseconds) and
 * metadata events ("ph":"M": process and thread names, and a sort index
 * so tracks appear in device and link order).  Process 1 "GPUs" has, per
 * device, a track for the spans the training step adds (compute, the
 * optimizer: pp__sim_trace_span), "comm" tracks for its collectives
 * (pp__sim_trace_comm) and "send" tracks for its transfers; process 2
 * "links" has a track per link that carried bytes.
 *
 * One track must not hold overlapping slices that do not nest: the
 * viewers mis-draw or drop them.  So a device's transfers go on lanes (a
 * transfer takes the lowest lane free when it starts), and a link's track
 * shows busy periods instead of single transfers: from the moment the
 * first transfer on it starts until the moment the last one ends, with
 * the bytes and transfers of the period and its utilisation (bytes over
 * capacity x duration; the latency part of each transfer counts as busy).
 *
 * Deterministic: events are written as they complete, in the simulation's
 * (deterministic) order, thread ids are handed out in order of first use,
 * and every time is printed with %.3f (nanoseconds).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

enum { PID_GPUS = 1, PID_LINKS = 2 };

typedef struct lane {
    int32_t tid; /* 0 until first used */
    bool busy;
} lane;

/* A communication track and the end of its last span: a span goes on the
 * first track whose last span ended by the time it starts. */
typedef struct clane {
    int32_t tid;
    double end;
} clane;

typedef struct devtrack {
    int32_t span_tid; /* pp__sim_trace_span's track; 0 until used */
    int32_t n_lanes;
    lane *lanes;
    int32_t n_comm; /* pp__sim_trace_comm's tracks */
    clane *comm;
} devtrack;

typedef struct linktrack {
    int32_t tid;    /* 0 until used */
    int32_t active; /* transfers holding it now */
    double t0;      /* start of the busy period */
    double bytes;   /* carried in the busy period so far */
    int64_t transfers;
} linktrack;

struct pp__trace {
    const pp_device *devs; /* the cluster's, borrowed */
    const pp_link *links;
    size_t n_devs, n_links;
    FILE *fp;
    devtrack *dev;   /* n_devs */
    linktrack *link; /* n_links */
    int32_t next_tid[3];
};

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void put_str(FILE *fp, const char *s) {
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(fp, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(fp, "\\u%04x", *p);
        else
            fputc(*p, fp);
    }
    fputc('"', fp);
}

/* Every event after the opening metadata starts with ",\n". */
static void meta(pp__trace *t, int pid, int32_t tid, const char *what,
                 const char *name, int64_t sort) {
    fprintf(t->fp,
            ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{",
            what, pid, (int)tid);
    if (name) {
        fputs("\"name\":", t->fp);
        put_str(t->fp, name);
    } else {
        fprintf(t->fp, "\"sort_index\":%lld", (long long)sort);
    }
    fputs("}}", t->fp);
}

/* A new track: its name and its place among its process's tracks. */
static int32_t new_thread(pp__trace *t, int pid, const char *name,
                          int64_t sort) {
    int32_t tid = ++t->next_tid[pid];
    meta(t, pid, tid, "thread_name", name, 0);
    meta(t, pid, tid, "thread_sort_index", NULL, sort);
    return tid;
}

static void event(pp__trace *t, int pid, int32_t tid, const char *name,
                  double t0, double t1) {
    /* Round both ends to the printed nanosecond and take the difference,
     * so back-to-back spans on a track neither overlap nor leave a gap
     * (rounding ts and dur separately made 1 ns overlaps). */
    double ts = round(t0 * 1e9) / 1e3;
    double dur = round(t1 * 1e9) / 1e3 - ts;
    fputs(",\n{\"name\":", t->fp);
    put_str(t->fp, name);
    /* %.3f of -0.0 would print "-0.000": keep it out of the file. */
    fprintf(t->fp,
            ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
            "\"dur\":%.3f",
            pid, (int)tid, ts == 0 ? 0.0 : ts, dur > 0 ? dur : 0.0);
}

pp__trace *pp__trace_new(const pp_cluster *c, FILE *fp) {
    pp__trace *t = pp_xcalloc(1, sizeof *t);
    t->devs = pp_cluster_devices(c, &t->n_devs);
    t->links = pp_cluster_links(c, &t->n_links);
    t->fp = fp;
    t->dev = pp_xcalloc(t->n_devs ? t->n_devs : 1, sizeof *t->dev);
    t->link = pp_xcalloc(t->n_links ? t->n_links : 1, sizeof *t->link);
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
          "\"pid\":1,\"tid\":0,\"args\":{\"name\":\"GPUs\"}}",
          fp);
    fputs(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"tid\":0,"
          "\"args\":{\"name\":\"links\"}}",
          fp);
    fputs(",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":1,"
          "\"tid\":0,\"args\":{\"sort_index\":1}}",
          fp);
    fputs(",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":2,"
          "\"tid\":0,\"args\":{\"sort_index\":2}}",
          fp);
    return t;
}

void pp__trace_free(pp__trace *t) {
    if (!t) return;
    fputs("\n],\n\"displayTimeUnit\":\"ns\"}\n", t->fp);
    for (size_t d = 0; d < t->n_devs; d++) {
        free(t->dev[d].lanes);
        free(t->dev[d].comm);
    }
    free(t->dev);
    free(t->link);
    free(t);
}

/* Tracks of device d sort as d * 1024 + slot: its spans (slot 0), its
 * communication (1..COMM_SLOTS-1), its sends. */
#define COMM_SLOTS 64

static int64_t dev_sort(int32_t d, int32_t slot) {
    return (int64_t)d * 1024 + (slot < 1023 ? slot : 1023);
}

/* A new track of device dev for its k-th lane of `what` ("send", "comm"):
 * "n0.gpu0 send", "n0.gpu0 send 2", ... */
static int32_t lane_thread(pp__trace *t, int32_t dev, const char *what,
                           int32_t k, int32_t slot) {
    char name[160];
    if (k == 0)
        snprintf(name, sizeof name, "%s %s", t->devs[dev].name, what);
    else
        snprintf(name, sizeof name, "%s %s %d", t->devs[dev].name, what,
                 (int)k + 1);
    return new_thread(t, PID_GPUS, name, dev_sort(dev, slot));
}

int32_t pp__trace_send_begin(pp__trace *t, int32_t src, double now) {
    (void)now;
    devtrack *d = &t->dev[src];
    int32_t k = 0;
    while (k < d->n_lanes && d->lanes[k].busy) k++;
    if (k == d->n_lanes) {
        d->lanes = pp_xrealloc(d->lanes, (size_t)(k + 1) * sizeof *d->lanes);
        d->lanes[k] = (lane){0, false};
        d->n_lanes++;
    }
    d->lanes[k].busy = true;
    return k;
}

void pp__trace_send_end(pp__trace *t, int32_t src, int32_t k, int32_t dst,
                        double bytes, double t0, double t1) {
    devtrack *d = &t->dev[src];
    if (k < 0 || k >= d->n_lanes) return;
    lane *ln = &d->lanes[k];
    ln->busy = false;
    if (!ln->tid) ln->tid = lane_thread(t, src, "send", k, COMM_SLOTS + k);
    char name[160];
    snprintf(name, sizeof name, "send %s", t->devs[dst].name);
    event(t, PID_GPUS, ln->tid, name, t0, t1);
    fprintf(t->fp, ",\"args\":{\"bytes\":%.17g,\"dst\":", bytes);
    put_str(t->fp, t->devs[dst].name);
    fputs("}}", t->fp);
}

void pp__trace_links_begin(pp__trace *t, const int32_t *path, size_t n,
                           double now) {
    for (size_t h = 0; h < n; h++) {
        linktrack *l = &t->link[path[h]];
        if (l->active++ == 0) {
            l->t0 = now;
            l->bytes = 0;
            l->transfers = 0;
        }
    }
}

void pp__trace_links_end(pp__trace *t, const int32_t *path, size_t n,
                         double bytes, double now) {
    for (size_t h = 0; h < n; h++) {
        int32_t id = path[h];
        linktrack *l = &t->link[id];
        if (l->active <= 0) continue;
        l->bytes += bytes;
        l->transfers++;
        if (--l->active > 0) continue;
        const pp_link *lk = &t->links[id];
        if (!l->tid) {
            char name[160];
            snprintf(name, sizeof name, "%s -> %s", t->devs[lk->src].name,
                     t->devs[lk->dst].name);
            l->tid = new_thread(t, PID_LINKS, name, id);
        }
        double dur = now - l->t0;
        event(t, PID_LINKS, l->tid, "busy", l->t0, now);
        fprintf(t->fp,
                ",\"args\":{\"bytes\":%.17g,\"transfers\":%lld,"
                "\"utilisation\":%.6f}}",
                l->bytes, (long long)l->transfers,
                dur > 0 && lk->bw_Bps > 0 ? l->bytes / (lk->bw_Bps * dur)
                                          : 0.0);
    }
}

void pp__trace_span(pp__trace *t, int32_t dev, const char *name, double t0,
                    double t1) {
    devtrack *d = &t->dev[dev];
    if (!d->span_tid)
        d->span_tid =
            new_thread(t, PID_GPUS, t->devs[dev].name, dev_sort(dev, 0));
    event(t, PID_GPUS, d->span_tid, name ? name : "", t0, t1);
    fputs("}", t->fp);
}

void pp__trace_comm(pp__trace *t, int32_t dev, const char *name, double t0,
                    double t1) {
    devtrack *d = &t->dev[dev];
    int32_t k = 0;
    while (k < d->n_comm && d->comm[k].end > t0) k++;
    if (k == d->n_comm) {
        d->comm = pp_xrealloc(d->comm, (size_t)(k + 1) * sizeof *d->comm);
        int32_t slot = 1 + (k < COMM_SLOTS - 2 ? k : COMM_SLOTS - 2);
        d->comm[k].tid = lane_thread(t, dev, "comm", k, slot);
        d->n_comm++;
    }
    d->comm[k].end = t1; /* t1 >= t0 >= the lane's end: it only grows */
    event(t, PID_GPUS, d->comm[k].tid, name ? name : "", t0, t1);
    fputs("}", t->fp);
}
