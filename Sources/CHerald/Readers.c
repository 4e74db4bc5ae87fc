#include "CHerald.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

__thread herald_reader *herald_current_reader HERALD_TLS_MODEL = 0;
bool herald_readers_use_fences = true;

static herald_reader *registry = 0;
static pthread_key_t exit_key;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void give_back(void *record) {
    herald_reader *reader = record;
    herald_current_reader = 0;
    // A thread that exits from inside a handler (pthread_exit) leaves its sections open: close
    // them, or they would hold back what they read for as long as the record is not reused.
    __atomic_store_n(&reader->open, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&reader->in_use, 0, __ATOMIC_RELEASE);
}

static void setup(void) {
    pthread_key_create(&exit_key, give_back);
    // For tests of the fallback: HERALD_READERS_USE_FENCES=1 makes readers and writers use full
    // fences, as on a system without membarrier.
    const char *forced = getenv("HERALD_READERS_USE_FENCES");
    if (forced && forced[0] == '1') return;
#if defined(__linux__) && defined(__NR_membarrier)
    long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        herald_readers_use_fences = false;
    }
#endif
}

herald_reader *herald_reader_register(void) {
    pthread_once(&setup_once, setup);
    herald_reader *reader = 0;
    for (herald_reader *each = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); each; each = each->next) {
        uintptr_t free_slot = 0;
        if (__atomic_load_n(&each->in_use, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&each->in_use, &free_slot, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            reader = each;
            break;
        }
    }
    if (!reader) {
        void *memory = 0;
        if (posix_memalign(&memory, 64, sizeof(herald_reader)) != 0 || !memory) abort();
        memset(memory, 0, sizeof(herald_reader));
        reader = memory;
        reader->in_use = 1;
        herald_reader *head = __atomic_load_n(&registry, __ATOMIC_RELAXED);
        do {
            reader->next = head;
        } while (!__atomic_compare_exchange_n(&registry, &head, reader, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    }
    herald_current_reader = reader;  // `open` is 0: a new record, or one `give_back` closed
    pthread_setspecific(exit_key, reader);
    return reader;
}

herald_section *herald_reader_deep_entry(herald_reader *reader, uintptr_t depth) {
    uintptr_t index = depth - HERALD_INLINE_SECTIONS;
    herald_overflow *current = reader->overflow;
    if (current && index < current->capacity) return &current->sections[index];
    uintptr_t capacity = current ? current->capacity : 12;
    while (capacity <= index) capacity *= 2;
    herald_overflow *grown = calloc(1, sizeof(herald_overflow) + capacity * sizeof(herald_section));
    if (!grown) abort();
    grown->capacity = capacity;
    grown->previous = current;  // kept: a writer may be reading it
    if (current) {
        for (uintptr_t each = 0; each < current->capacity; each++) {
            grown->sections[each].scope = __atomic_load_n(&current->sections[each].scope, __ATOMIC_RELAXED);
            grown->sections[each].id = __atomic_load_n(&current->sections[each].id, __ATOMIC_RELAXED);
        }
    }
    // Published before the depth that needs it (`herald_read_begin` stores `open` with release).
    __atomic_store_n(&reader->overflow, grown, __ATOMIC_RELEASE);
    return &grown->sections[index];
}

bool herald_reader_take_wanted(herald_reader *reader, uintptr_t depth) {
    if (depth == 0) {
        // No section is open any more: whatever was waited for on this record may be done.
        __atomic_store_n(&reader->wanted, 0, __ATOMIC_RELAXED);
        return true;
    }
    uint64_t bit = (uint64_t)1 << (depth < 63 ? depth : 63);
    uint64_t wanted = __atomic_load_n(&reader->wanted, __ATOMIC_RELAXED);
    if ((wanted & bit) == 0) return false;
    // Bit 63 stands for every depth from 63 on: keep it until the section at 63 ends.
    if (depth <= 63) __atomic_fetch_and(&reader->wanted, ~bit, __ATOMIC_RELAXED);
    return true;
}

void herald_readers_barrier(void) {
    pthread_once(&setup_once, setup);
#if defined(__linux__) && defined(__NR_membarrier)
    if (!herald_readers_use_fences) {
        // Readers rely on this barrier: it must not fail. After a successful registration it only
        // fails for want of memory, or when a signal interrupts it; both pass, so try again.
        while (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
            if (errno != ENOMEM && errno != EINTR && errno != EAGAIN) {
                fprintf(stderr, "Herald: membarrier failed after registration (errno %d)\n", errno);
                abort();
            }
            sched_yield();
        }
        return;
    }
#endif
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

herald_reader *herald_readers_first(void) {
    return __atomic_load_n(&registry, __ATOMIC_SEQ_CST);
}
