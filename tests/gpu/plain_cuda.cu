// A plain CUDA program with known allocations, for the CUPTI collector on a GPU
// (scripts/gpu/run.sh): 3 cudaMalloc of 1, 2 and 4 MiB, a 1 MiB copy each way, a
// memset, then frees in reverse. It knows nothing of memlens.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

int main() {
  std::vector<void*> blocks;
  for (size_t mib : {1, 2, 4}) {
    void* p = nullptr;
    if (cudaMalloc(&p, mib << 20) != cudaSuccess) return std::printf("cudaMalloc failed\n"), 1;
    blocks.push_back(p);
  }
  std::vector<char> host(1 << 20, 1);
  cudaMemcpy(blocks[0], host.data(), host.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(host.data(), blocks[0], host.size(), cudaMemcpyDeviceToHost);
  cudaMemset(blocks[1], 0, 2 << 20);
  cudaDeviceSynchronize();
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) cudaFree(*it);
  std::printf("plain_cuda: 7 MiB allocated and freed\n");
  return 0;
}
