/* The recorder's C ABI: a trace written by memlens' own TraceWriter from a program that
 * is not linked with memlens' runtime (a PyTorch script, through ctypes). Plain C types
 * only, so any Python loads it without being compiled against its headers. One recording
 * per process; every call is serialised by one lock. Calls made while no trace is open do
 * nothing. Errors: a function that can fail returns non-zero and memlens_abi_error() says
 * why in one line. Enums (kind of view, copy reason, category, dtype) are the trace's own
 * numbers (memlens/common/event_kinds.hpp, scalar_type.hpp). */
#ifndef MEMLENS_RECORD_ABI_H
#define MEMLENS_RECORD_ABI_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this ABI; a caller refuses a library whose version it does not know. */
int memlens_abi_version(void);
const char* memlens_abi_error(void);

/* Creates `path` and writes the header. `devices`: names separated by commas, the
 * events' device numbers are their indices ("cpu,cuda:0"). `program`: what ran. */
int memlens_abi_open(const char* path, const char* program, const char* devices, const char* notes);
/* Writes the footer and closes; returns non-zero if any write failed since the open. */
int memlens_abi_close(void);
/* Closes, then merges the CUDA caching allocator's own trace into the trace: a snapshot
 * file (torch.cuda.memory._dump_snapshot, with the history on) taken as the recording
 * ends. Its segments and blocks stand for the storages' own on the devices it covers
 * (memlens/snapshot/allocator_trace_merge.hpp). Returns what memlens_abi_close does, or 1
 * when the merge failed and the trace stands as recorded; memlens_abi_error() says why. */
int memlens_abi_close_with_allocator_trace(const char* snapshot_path);

uint32_t memlens_abi_string(const char* s);
/* A Python frame: file, line, function. */
uint32_t memlens_abi_site(const char* file, uint32_t line, const char* function);
/* A stack of sites, innermost first. */
uint32_t memlens_abi_stack(const uint32_t* sites, int depth);

/* A storage with its own memory (no caching allocator in between: each storage is its
 * own segment and block) born or freed. */
void memlens_abi_storage_alloc(uint8_t device, uint64_t address, uint64_t bytes, uint64_t storage, uint8_t category,
                               uint32_t site, uint32_t stack);
void memlens_abi_storage_free(uint8_t device, uint64_t address, uint64_t bytes, uint64_t storage);
void memlens_abi_category(uint8_t device, uint64_t storage, uint8_t category);
/* `tensors`: the output, then each input: for each, its rank, dtype and device number, its
 * storage's id and its offset into it (in elements), then its sizes, then its strides (in
 * elements). The op is on its output's device. */
void memlens_abi_op(uint32_t name, uint32_t site, uint64_t start_ns, uint64_t output_bytes, int broadcast, int n_inputs,
                    const int64_t* tensors);
/* `dims`: the view's rank, then its sizes, then its strides. */
void memlens_abi_view(uint8_t device, uint64_t tensor, uint64_t storage, int64_t offset, uint8_t view_kind, uint8_t dtype,
                      uint32_t site, const int64_t* dims);
void memlens_abi_copy(uint8_t dst_device, uint64_t dst_address, uint8_t src_device, uint64_t src_address, uint64_t bytes,
                      uint8_t reason, uint32_t site);
/* A request for `requested` bytes (0 when unknown) failed for want of memory, at `site`. */
void memlens_abi_oom(uint8_t device, uint64_t requested, uint32_t site, uint32_t stack);
void memlens_abi_step(uint64_t number);
void memlens_abi_scope(const char* name, int begin);
/* The recorder's clock (steady_clock nanoseconds), for op start times. */
uint64_t memlens_abi_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
