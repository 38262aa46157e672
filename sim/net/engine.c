/*
 * engine.c: the discrete-event engine.
 *
 * Events live in a 4-ary min-heap keyed by (time, sequence number).  The
 * sequence number is taken when an event is scheduled, so events at equal
 * times run in the order they were scheduled and a run is deterministic
 * whatever the heap's internal shuffling (ROSS and SimGrid break ties the
 * same way).  A 4-ary heap does half the levels of a binary one and its
 * four children share a cache line or two, which is what matters once the
 * heap outgrows L1 (LaMarca & Ladner, "The influence of caches on the
 * performance of heaps").
 *
 * Cancellation is lazy: every event owns a slot in a slot table, and a
 * heap entry carries its slot and the slot's generation when scheduled.  A
 * pp_timer is (generation << 32 | slot); the slot's generation is bumped
 * whenever the slot is released (the event ran or was cancelled), so a
 * stale handle is recognised and refused, and a cancelled event's heap
 * entry, whose generation no longer matches, is dropped when it reaches
 * the top.  The heap's moves then touch nothing but the heap (no position
 * to keep in the slot), which is most of an event's cost; the order of
 * the events that run is the same, (time, sequence) being a total order.
 * pp_engine_pending() counts the dead entries out, and the heap is
 * compacted when they are over half of it.
 *
 * Why not common's pp_iheap, which the flow network uses: that heap is
 * binary and indexed (it writes pos[item] on every move, so an item can be
 * re-keyed or removed in place).  The engine needs neither, and the
 * 4-ary layout and position-free moves above are what make an event cheap;
 * the order is the same either way ((time, sequence) is a total order),
 * but sharing the heap would cost speed for nothing.
 *
 * Time is a double in seconds (net.h says why).  Scheduling in the past is
 * clamped to now; a debug build asserts that "the past" is no more than
 * rounding (a relative 1e-9), since a computed time a few ulps before now is
 * normal floating arithmetic but a real step backwards is a caller's bug.
 */
#include "podplan/net.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#define ARITY 4

typedef struct hent {
    double t;
    uint64_t seq;
    uint32_t slot;
    uint32_t gen; /* the slot's generation when scheduled */
} hent;

typedef struct eslot {
    pp_event_fn fn;
    void *ctx;
    uint64_t arg;
    uint32_t gen; /* generation: part of the handle, bumped on release */
} eslot;

struct pp_engine {
    double now;
    uint64_t seq;    /* next sequence number */
    uint64_t events; /* events run so far */
    bool running;    /* inside pp_engine_run (no nesting) */

    hent *heap;
    size_t n, cap;
    size_t n_dead; /* entries of cancelled events still in the heap */

    eslot *slots;
    uint32_t n_slots, cap_slots;
    uint32_t *free_slots; /* stack of released slot indices */
    uint32_t n_free;
};

pp_engine *pp_engine_new(void) {
    pp_engine *eng = pp_xcalloc(1, sizeof *eng);
    return eng;
}

void pp_engine_free(pp_engine *eng) {
    if (!eng) return;
    free(eng->heap);
    free(eng->slots);
    free(eng->free_slots);
    free(eng);
}

double pp_engine_now(const pp_engine *eng) {
    return eng->now;
}
uint64_t pp_engine_events(const pp_engine *eng) {
    return eng->events;
}
size_t pp_engine_pending(const pp_engine *eng) {
    return eng->n - eng->n_dead;
}

/* ---- the heap ---------------------------------------------------------- */

static inline bool before(const hent *a, const hent *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void sift_up(pp_engine *eng, size_t i) {
    hent h = eng->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / ARITY;
        if (!before(&h, &eng->heap[p])) break;
        eng->heap[i] = eng->heap[p];
        i = p;
    }
    eng->heap[i] = h;
}

static void sift_down(pp_engine *eng, size_t i) {
    hent h = eng->heap[i];
    size_t n = eng->n;
    for (;;) {
        size_t c = i * ARITY + 1;
        if (c >= n) break;
        size_t end = c + ARITY < n ? c + ARITY : n;
        size_t best = c;
        for (size_t k = c + 1; k < end; k++)
            if (before(&eng->heap[k], &eng->heap[best])) best = k;
        if (!before(&eng->heap[best], &h)) break;
        eng->heap[i] = eng->heap[best];
        i = best;
    }
    eng->heap[i] = h;
}

/* Removes the top entry (the slot is not released here). */
static void heap_pop(pp_engine *eng) {
    size_t last = --eng->n;
    if (last == 0) return;
    eng->heap[0] = eng->heap[last];
    sift_down(eng, 0);
}

static inline bool live(const pp_engine *eng, const hent *h) {
    return eng->slots[h->slot].gen == h->gen;
}

/* Drops every dead entry and rebuilds the heap (O(n)). */
static void compact(pp_engine *eng) {
    size_t k = 0;
    for (size_t i = 0; i < eng->n; i++)
        if (live(eng, &eng->heap[i])) eng->heap[k++] = eng->heap[i];
    eng->n = k;
    eng->n_dead = 0;
    for (size_t i = k / ARITY + 1; i-- > 0;)
        if (i < k) sift_down(eng, i);
}

/* ---- slots ------------------------------------------------------------- */

static uint32_t slot_take(pp_engine *eng) {
    if (eng->n_free > 0) return eng->free_slots[--eng->n_free];
    if (eng->n_slots == eng->cap_slots) {
        if (eng->cap_slots >= UINT32_MAX / 2)
            pp_oom(); /* 2^31 pending events: not a plausible simulation */
        uint32_t cap = eng->cap_slots ? eng->cap_slots * 2 : 64;
        eng->slots = pp_xrealloc(eng->slots, (size_t)cap * sizeof *eng->slots);
        eng->free_slots =
            pp_xrealloc(eng->free_slots, (size_t)cap * sizeof *eng->free_slots);
        eng->cap_slots = cap;
    }
    uint32_t s = eng->n_slots++;
    eng->slots[s].gen = 1;
    return s;
}

static void slot_release(pp_engine *eng, uint32_t s) {
    eslot *sl = &eng->slots[s];
    sl->gen = sl->gen == UINT32_MAX ? 1 : sl->gen + 1; /* never 0 */
    eng->free_slots[eng->n_free++] = s;
}

/* ---- public ------------------------------------------------------------ */

pp_timer pp_engine_at(pp_engine *eng, double t, pp_event_fn fn, void *ctx,
                      uint64_t arg) {
    assert(fn != NULL);
    assert(!isnan(t));
    assert(!(t < eng->now - 1e-9 * fabs(eng->now)) &&
           "event scheduled in the past");
    if (!(t >= eng->now)) /* also catches NaN in a release build */
        t = eng->now;

    uint32_t s = slot_take(eng);
    eslot *sl = &eng->slots[s];
    sl->fn = fn;
    sl->ctx = ctx;
    sl->arg = arg;

    if (eng->n == eng->cap) {
        size_t cap = eng->cap ? eng->cap * 2 : 64;
        eng->heap = pp_xrealloc(eng->heap, cap * sizeof *eng->heap);
        eng->cap = cap;
    }
    size_t i = eng->n++;
    eng->heap[i] = (hent){t, eng->seq++, s, sl->gen};
    sift_up(eng, i);
    return ((uint64_t)sl->gen << 32) | s;
}

pp_timer pp_engine_after(pp_engine *eng, double delay, pp_event_fn fn,
                         void *ctx, uint64_t arg) {
    return pp_engine_at(eng, eng->now + delay, fn, ctx, arg);
}

bool pp_engine_cancel(pp_engine *eng, pp_timer t) {
    uint32_t s = (uint32_t)(t & 0xffffffffu);
    uint32_t gen = (uint32_t)(t >> 32);
    if (gen == 0 || s >= eng->n_slots) return false;
    /* A free slot's generation was bumped when it was released, so it
     * matches no handle: equal means pending. */
    if (eng->slots[s].gen != gen) return false;
    slot_release(eng, s);
    if (++eng->n_dead > 64 && 2 * eng->n_dead > eng->n) compact(eng);
    return true;
}

/* Handlers may schedule and cancel events (their own handle is already
 * stale when they run), but may not call pp_engine_run again.  When
 * `until` is finite and later than the last event run, the clock is moved
 * on to `until`, so that "run until t, then start something" starts it at
 * t, as a caller stepping the simulation expects. */
uint64_t pp_engine_run(pp_engine *eng, double until) {
    assert(!eng->running && "pp_engine_run is not reentrant");
    eng->running = true;
    uint64_t ran = 0;
    while (eng->n > 0) {
        hent top = eng->heap[0];
        eslot *sl = &eng->slots[top.slot];
        if (sl->gen != top.gen) { /* cancelled */
            heap_pop(eng);
            eng->n_dead--;
            continue;
        }
        if (!(top.t <= until)) break;
        pp_event_fn fn = sl->fn;
        void *ctx = sl->ctx;
        uint64_t arg = sl->arg;
        heap_pop(eng);
        slot_release(eng, top.slot);
        eng->now = top.t;
        eng->events++;
        ran++;
        fn(eng, ctx, arg);
    }
    if (isfinite(until) && until > eng->now) eng->now = until;
    eng->running = false;
    return ran;
}
