#ifndef C_HERALD_COMPARE_SUPPORT_H
#define C_HERALD_COMPARE_SUPPORT_H

#include <stdint.h>

/// The number of malloc, calloc and realloc calls made by the calling thread so far.
/// Always 0 where the counting allocator is not installed (not Linux/glibc).
uint64_t herald_thread_malloc_count(void);

/// Whether calls to malloc are counted in this process.
int herald_malloc_counting_available(void);

/// Bytes in use by the allocator (glibc mallinfo2: uordblks + hblkhd), or 0 where unavailable.
uint64_t herald_heap_bytes_in_use(void);

/// Whether herald_heap_bytes_in_use reads the allocator (glibc only).
int herald_heap_reading_available(void);

/// Whether herald_resident_bytes reads the resident set (Linux only).
int herald_resident_reading_available(void);

/// Resident set size in bytes, from /proc/self/statm, or 0 where unavailable.
uint64_t herald_resident_bytes(void);

/// Returns freed heap memory to the system where the allocator supports it (glibc malloc_trim).
void herald_heap_trim(void);

#endif
