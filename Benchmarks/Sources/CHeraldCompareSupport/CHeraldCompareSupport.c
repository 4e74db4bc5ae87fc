// Allocation counting and memory readings for herald-compare.
//
// On Linux with glibc this file defines malloc, calloc and realloc for the whole process: each
// call is counted in a thread-local counter and forwarded to glibc's own implementation
// (__libc_malloc and friends), so every allocation still comes from glibc and free needs no
// change. The counter is thread-local, so counting costs one increment and no atomic operation.
#include "CHeraldCompareSupport.h"

#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static __thread uint64_t herald_malloc_calls = 0;

void *malloc(size_t size) {
    herald_malloc_calls += 1;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    herald_malloc_calls += 1;
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    herald_malloc_calls += 1;
    return __libc_realloc(pointer, size);
}

uint64_t herald_thread_malloc_count(void) { return herald_malloc_calls; }

int herald_malloc_counting_available(void) { return 1; }

uint64_t herald_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}

int herald_heap_reading_available(void) { return 1; }

void herald_heap_trim(void) { malloc_trim(0); }

#else

uint64_t herald_thread_malloc_count(void) { return 0; }
int herald_malloc_counting_available(void) { return 0; }
uint64_t herald_heap_bytes_in_use(void) { return 0; }
int herald_heap_reading_available(void) { return 0; }
void herald_heap_trim(void) {}

#endif

int herald_resident_reading_available(void) {
#if defined(__linux__)
    return 1;
#else
    return 0;
#endif
}

uint64_t herald_resident_bytes(void) {
#if defined(__linux__)
    FILE *file = fopen("/proc/self/statm", "r");
    if (file == NULL) return 0;
    unsigned long size = 0, resident = 0;
    int fields = fscanf(file, "%lu %lu", &size, &resident);
    fclose(file);
    if (fields != 2) return 0;
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
#else
    return 0;
#endif
}
