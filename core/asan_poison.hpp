#pragma once

// PE_POISON / PE_UNPOISON: marks a block that a cache keeps for reuse as not to be touched,
// so that AddressSanitizer still reports a use after free of a pooled block; nothing in other
// builds. For the host block caches (host_block_cache.cpp, small_block_cache.cpp).

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define PE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define PE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define PE_POISON(p, n) ((void)(p), (void)(n))
#define PE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
