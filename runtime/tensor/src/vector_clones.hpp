#pragma once
// MEMLENS_VECTOR_CLONES: a host loop compiled for AVX2 as well as x86-64's baseline, the
// version chosen at load time by an ifunc where the CPU has AVX2, as PyTorch dispatches
// its CPU kernels by capability. Not under the sanitizers (an ifunc resolver runs before
// their runtime is up, and crashes) nor Clang.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define MEMLENS_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MEMLENS_VECTOR_CLONES
#endif
