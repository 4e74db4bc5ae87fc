// Herald's C support: announcements by threads that read lock-free state, and the process-wide
// memory barrier that lets the thread that replaces that state know when it may free the old one.
//
// A reader announces each read section in its own record with plain stores. The writer, which is
// rare (registering or cancelling an observer), pays instead: after it unpublishes something, it
// makes every running thread of the process execute a memory barrier (Linux `membarrier`), then
// reads the records. Where `membarrier` is not available, readers and writers use full fences.
//
// Internal to Herald: not API.

#ifndef CHERALD_H
#define CHERALD_H

#include <stdbool.h>
#include <stdint.h>

#if __has_attribute(swift_name)
#define CHERALD_SWIFT_NAME(name) __attribute__((swift_name(#name)))
#else
#define CHERALD_SWIFT_NAME(name)
#endif

/// One open read section: what it reads and which section it is.
typedef struct herald_section {
    /// What the section reads (a bucket's address).
    uintptr_t scope;
    /// Which section of its record this is: a record numbers its sections 1, 2, 3, ... whatever
    /// their depth, so a writer that sees another number at the same depth knows the section ended.
    uint64_t id;
} herald_section;

/// The sections of a record nested deeper than `HERALD_INLINE_SECTIONS`. An array that is outgrown
/// is kept (a writer may still be reading it), linked from the one that replaced it.
typedef struct herald_overflow {
    /// The array this one replaced, or NULL.
    struct herald_overflow *_Nullable previous;
    /// How many entries `sections` has.
    uintptr_t capacity;
    /// The sections at depths `HERALD_INLINE_SECTIONS` and deeper.
    herald_section sections[];
} herald_overflow;

#define HERALD_INLINE_SECTIONS 4

/// One thread's record of its read sections. Records are never freed: a thread that exits gives
/// its record back for reuse by a later thread.
typedef struct herald_reader {
    /// How many sections are open: the depth of nesting (a handler that posts). Written only by
    /// the thread, after the entry of the section it opens.
    uintptr_t open;
    /// The number of the last section opened. Only the thread touches it.
    uint64_t last_id;
    /// The open sections, outermost first; deeper ones are in `overflow`.
    herald_section sections[HERALD_INLINE_SECTIONS];
    /// The sections deeper than `sections` holds, or NULL. Written only by the thread.
    herald_overflow *_Nullable overflow;
    /// Set by writers that wait for a section of this record to end: bit `d` for the section at
    /// depth `d` (bit 63 for 63 and deeper). The thread polls when it ends such a section.
    uint64_t wanted;
    /// 1 while a thread owns the record.
    uintptr_t in_use;
    /// The next record in the registry.
    struct herald_reader *_Nullable next;
    /// To 128 bytes: records are aligned to 64, and no two share a cache line.
    char padding[16];
} herald_reader;

// Initial-exec TLS makes the record one load away. glibc keeps room for it even in a library
// loaded with dlopen; other C libraries (musl, Bionic) may refuse that, so they use the default.
#if defined(__GLIBC__)
#define HERALD_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define HERALD_TLS_MODEL
#endif

/// The calling thread's record, or NULL before its first read section.
extern __thread herald_reader *_Nullable herald_current_reader HERALD_TLS_MODEL;
/// Whether readers must use full fences (no `membarrier` on this system). Set once, before the
/// first record is handed out.
extern bool herald_readers_use_fences;

/// Gives the calling thread a record (slow path of `herald_read_begin`).
herald_reader *_Nonnull herald_reader_register(void);

/// The entry of the section at `depth`, which is `HERALD_INLINE_SECTIONS` or deeper, growing the
/// overflow array as needed (slow path of `herald_read_begin`).
herald_section *_Nonnull herald_reader_deep_entry(herald_reader *_Nonnull reader, uintptr_t depth);

/// Whether a writer waits for the section at `depth` that just ended (slow path of
/// `herald_read_end`); clears what it answers.
bool herald_reader_take_wanted(herald_reader *_Nonnull reader, uintptr_t depth);

/// Orders a section's announcement before its reads, or its reads before its end.
static inline __attribute__((always_inline)) void herald_reader_fence(void) {
    if (__builtin_expect(herald_readers_use_fences, 0)) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
}

/// Enters a read section over `scope` (an address naming what is read).
///
/// Sections nest (a handler that posts). Each open section's scope is kept, by depth, while it is
/// open; one that has ended no longer holds anything back.
static inline __attribute__((always_inline)) herald_reader *_Nonnull herald_read_begin(const void *_Nullable scope)
    CHERALD_SWIFT_NAME(heraldReadBegin(_:))
{
    herald_reader *reader = herald_current_reader;
    if (__builtin_expect(reader == 0, 0)) reader = herald_reader_register();
    uintptr_t depth = __atomic_load_n(&reader->open, __ATOMIC_RELAXED);
    herald_section *entry = __builtin_expect(depth < HERALD_INLINE_SECTIONS, 1)
                                ? &reader->sections[depth]
                                : herald_reader_deep_entry(reader, depth);
    uint64_t id = ++reader->last_id;
    // A writer that sees this number knows the section before it at this depth ended, reads and
    // all (release: on ARMv8 a plain store could be seen before the previous section's loads end);
    // and the number is stored before the scope, so a writer that sees this scope sees this number.
    __atomic_store_n(&entry->id, id, __ATOMIC_RELEASE);
    __atomic_store_n(&entry->scope, (uintptr_t)scope, __ATOMIC_RELEASE);
    __atomic_store_n(&reader->open, depth + 1, __ATOMIC_RELEASE);
    herald_reader_fence();
    return reader;
}

/// Leaves the innermost read section. Returns true when a writer waits for it to end: call
/// `Reclamation.poll()` then.
static inline __attribute__((always_inline)) bool herald_read_end(herald_reader *_Nonnull reader)
    CHERALD_SWIFT_NAME(heraldReadEnd(_:))
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uintptr_t depth = __atomic_load_n(&reader->open, __ATOMIC_RELAXED) - 1;
    // The section's reads are done before it is seen to end (release).
    __atomic_store_n(&reader->open, depth, __ATOMIC_RELEASE);
    // Ends before the writer's request is read: a writer that asks after this sees it ended.
    herald_reader_fence();
    if (__builtin_expect(__atomic_load_n(&reader->wanted, __ATOMIC_RELAXED) != 0, 0)) {
        return herald_reader_take_wanted(reader, depth);
    }
    return false;
}

/// Makes every thread of the process that is in a read section, or enters one later, either
/// visible in its record or past the point where it could see anything unpublished before this
/// call.
void herald_readers_barrier(void) CHERALD_SWIFT_NAME(heraldReadersBarrier());

/// The first record of the registry (newest first), or NULL.
herald_reader *_Nullable herald_readers_first(void) CHERALD_SWIFT_NAME(heraldReadersFirst());

/// The entry of the section at `depth` as a writer reads it, or NULL when `overflow` (loaded
/// after the depth was seen open) does not reach it.
static inline const herald_section *_Nullable herald_reader_entry(const herald_reader *_Nonnull reader,
                                                                  const herald_overflow *_Nullable overflow,
                                                                  uintptr_t depth)
{
    if (depth < HERALD_INLINE_SECTIONS) return &reader->sections[depth];
    if (!overflow || depth - HERALD_INLINE_SECTIONS >= overflow->capacity) return 0;
    return &overflow->sections[depth - HERALD_INLINE_SECTIONS];
}

/// Whether the record has an open section that may read `scope` (NULL: any scope). Returns the
/// outermost such section's depth and number: once it has ended, so have the ones inside it.
static inline bool herald_reader_holds(const herald_reader *_Nonnull reader, const void *_Nullable scope,
                                       uintptr_t *_Nonnull depth, uint64_t *_Nonnull id)
    CHERALD_SWIFT_NAME(heraldReaderHolds(_:_:_:_:))
{
    uintptr_t open = __atomic_load_n(&reader->open, __ATOMIC_ACQUIRE);
    const herald_overflow *overflow = __atomic_load_n(&reader->overflow, __ATOMIC_ACQUIRE);
    for (uintptr_t index = 0; index < open; index++) {
        const herald_section *entry = herald_reader_entry(reader, overflow, index);
        if (!entry) break;
        // A scope seen here comes with its section's number, or a later one (which only makes
        // the writer wait for a later section).
        uintptr_t seen = __atomic_load_n(&entry->scope, __ATOMIC_ACQUIRE);
        if (scope == 0 || seen == (uintptr_t)scope) {
            *depth = index;
            *id = __atomic_load_n(&entry->id, __ATOMIC_ACQUIRE);
            return true;
        }
    }
    return false;
}

/// Whether the section numbered `id` at `depth` of the record has ended.
static inline bool herald_reader_section_ended(const herald_reader *_Nonnull reader, uintptr_t depth, uint64_t id)
    CHERALD_SWIFT_NAME(heraldReaderSectionEnded(_:_:_:))
{
    uintptr_t open = __atomic_load_n(&reader->open, __ATOMIC_ACQUIRE);
    if (open <= depth) return true;
    const herald_overflow *overflow = __atomic_load_n(&reader->overflow, __ATOMIC_ACQUIRE);
    const herald_section *entry = herald_reader_entry(reader, overflow, depth);
    // Another number at that depth: a later section, opened after this one ended.
    return entry && __atomic_load_n(&entry->id, __ATOMIC_ACQUIRE) != id;
}

/// Asks the record's thread to poll when it ends its section at `depth`.
static inline void herald_reader_want(herald_reader *_Nonnull reader, uintptr_t depth)
    CHERALD_SWIFT_NAME(heraldReaderWant(_:_:))
{
    __atomic_fetch_or(&reader->wanted, (uint64_t)1 << (depth < 63 ? depth : 63), __ATOMIC_RELAXED);
}

/// The record after `reader` in the registry, or NULL.
static inline herald_reader *_Nullable herald_reader_next(const herald_reader *_Nonnull reader)
    CHERALD_SWIFT_NAME(heraldReaderNext(_:))
{
    return __atomic_load_n(&reader->next, __ATOMIC_ACQUIRE);
}

#endif
