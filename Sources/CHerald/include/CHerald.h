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

/// One thread's record of its read sections. Records are never freed: a thread that exits gives
/// its record back for reuse by a later thread.
typedef struct herald_reader {
    /// Odd while the thread is in a read section, even otherwise. Written only by the thread.
    uint64_t sequence;
    /// How many entries of `scopes` are in use: the depth of nested sections, or
    /// `HERALD_SCOPES_ANY` while they are nested deeper than `scopes` holds. Written only by the
    /// thread.
    uintptr_t scope_count;
    /// What each open section reads (a bucket's address), outermost first.
    uintptr_t scopes[3];
    /// Set by a writer that waits for this section to end; the thread polls when it ends one.
    uintptr_t wanted;
    /// Sections entered and not yet left. Only the thread touches it.
    uintptr_t depth;
    /// 1 while a thread owns the record.
    uintptr_t in_use;
    /// The next record in the registry.
    struct herald_reader *_Nullable next;
    char padding[56];
} herald_reader;

#define HERALD_SCOPES_ANY ((uintptr_t)255)

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

/// Enters a read section over `scope` (an address naming what is read).
///
/// Sections nest (a handler that posts). Each open section's scope is kept, by depth, while it is
/// open; one that has ended no longer holds anything back.
static inline __attribute__((always_inline)) herald_reader *_Nonnull herald_read_begin(const void *_Nullable scope)
    CHERALD_SWIFT_NAME(heraldReadBegin(_:))
{
    herald_reader *reader = herald_current_reader;
    if (__builtin_expect(reader == 0, 0)) reader = herald_reader_register();
    uintptr_t depth = reader->depth++;
    if (depth == 0) {
        // Written while the sequence is even: a writer that sees them with an odd sequence reads
        // the sequence again to be sure they belong to that section.
        __atomic_store_n(&reader->scopes[0], (uintptr_t)scope, __ATOMIC_RELEASE);
        __atomic_store_n(&reader->scope_count, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&reader->sequence, reader->sequence + 1, __ATOMIC_RELEASE);
    } else if (depth < 3) {
        __atomic_store_n(&reader->scopes[depth], (uintptr_t)scope, __ATOMIC_RELEASE);
        __atomic_store_n(&reader->scope_count, depth + 1, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&reader->scope_count, HERALD_SCOPES_ANY, __ATOMIC_RELEASE);
    }
    if (__builtin_expect(herald_readers_use_fences, 0)) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    return reader;
}

/// Leaves a read section. Returns true when a writer waits for this thread: call
/// `Reclamation.poll()` then.
static inline __attribute__((always_inline)) bool herald_read_end(herald_reader *_Nonnull reader)
    CHERALD_SWIFT_NAME(heraldReadEnd(_:))
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uintptr_t depth = --reader->depth;
    if (depth != 0) {
        // The nested section's reads are done before its scope is dropped (release).
        __atomic_store_n(&reader->scope_count, depth <= 3 ? depth : HERALD_SCOPES_ANY, __ATOMIC_RELEASE);
        return false;
    }
    __atomic_store_n(&reader->sequence, reader->sequence + 1, __ATOMIC_RELEASE);
    if (__builtin_expect(herald_readers_use_fences, 0)) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    if (__builtin_expect(__atomic_load_n(&reader->wanted, __ATOMIC_RELAXED) != 0, 0)) {
        __atomic_store_n(&reader->wanted, 0, __ATOMIC_RELAXED);
        return true;
    }
    return false;
}

/// Makes every thread of the process that is in a read section, or enters one later, either
/// visible in its record or past the point where it could see anything unpublished before this
/// call.
void herald_readers_barrier(void) CHERALD_SWIFT_NAME(heraldReadersBarrier());

/// The first record of the registry (newest first), or NULL.
herald_reader *_Nullable herald_readers_first(void) CHERALD_SWIFT_NAME(heraldReadersFirst());

/// The record's sequence, read with acquire ordering.
static inline uint64_t herald_reader_sequence(const herald_reader *_Nonnull reader)
    CHERALD_SWIFT_NAME(heraldReaderSequence(_:))
{
    return __atomic_load_n(&reader->sequence, __ATOMIC_ACQUIRE);
}

/// Whether the record is in a section that may read `scope` (NULL: any scope). Returns the
/// section's sequence in `sequence` when it is.
static inline bool herald_reader_holds(const herald_reader *_Nonnull reader, const void *_Nullable scope,
                                       uint64_t *_Nonnull sequence)
    CHERALD_SWIFT_NAME(heraldReaderHolds(_:_:_:))
{
    uint64_t before = __atomic_load_n(&reader->sequence, __ATOMIC_ACQUIRE);
    if ((before & 1) == 0) return false;
    uintptr_t count = __atomic_load_n(&reader->scope_count, __ATOMIC_ACQUIRE);
    bool holds = scope == 0 || count > 3;
    for (uintptr_t index = 0; index < count && index < 3 && !holds; index++) {
        holds = __atomic_load_n(&reader->scopes[index], __ATOMIC_ACQUIRE) == (uintptr_t)scope;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t after = __atomic_load_n(&reader->sequence, __ATOMIC_RELAXED);
    if (after != before) return false;  // that section ended
    *sequence = before;
    return holds;
}

/// Asks the record's thread to poll when it ends its current section.
static inline void herald_reader_want(herald_reader *_Nonnull reader) CHERALD_SWIFT_NAME(heraldReaderWant(_:))
{
    __atomic_store_n(&reader->wanted, 1, __ATOMIC_RELAXED);
}

/// The record after `reader` in the registry, or NULL.
static inline herald_reader *_Nullable herald_reader_next(const herald_reader *_Nonnull reader)
    CHERALD_SWIFT_NAME(heraldReaderNext(_:))
{
    return __atomic_load_n(&reader->next, __ATOMIC_ACQUIRE);
}

#endif
