// The GPU check's bundle, proven here without a GPU: scripts/gpu-bundle.sh lays it out from
// this build, and its run step runs in a clean environment (env -i, only the bundle's
// library folder on LD_LIBRARY_PATH) from a folder outside the tree. Every binary must
// start, every library resolve, the gpu tests say why they skip, and the summary and the
// logs' archive come back.
#include <filesystem>

#include "memlens_cli.hpp"

using namespace memlens::test;
namespace fs = std::filesystem;

TEST_CASE("the GPU bundle runs in a clean environment outside the tree", "[gpu-bundle]") {
  const fs::path work = temp("gpu-bundle");
  fs::remove_all(work);
  fs::create_directories(work / "out");
  const fs::path stage = work / "bundle";
  Run prepare = run_command(quote(SOURCE_DIR "/scripts/gpu-bundle.sh") + " --from " + quote(MEMLENS_BUILD_DIR) + " --stage " +
                            quote(stage));
  INFO(prepare.out);
  REQUIRE(prepare.status == 0);

  // What travels: the binaries, stripped, and the libraries that are neither the C
  // library's nor the CUDA toolkit's.
  std::vector<std::string> bins;
  for (const auto& e : fs::directory_iterator(stage / "bin")) bins.push_back(e.path().filename());
  CHECK(bins.size() == 18);  // 3 test programs, plain_cuda, memlens, bench_gpu, 12 samples
  CHECK(fs::exists(stage / "lib" / "libmemlens_cupti.so"));
  CHECK(fs::exists(stage / "run.sh"));
  for (const char* system : {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libcudart.so.13", "libcublas.so.13", "libcupti.so.13"})
    CHECK_FALSE(fs::exists(stage / "lib" / system));
  CHECK(fs::exists(stage / "lib" / "libopenblas.so.0"));
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(stage))
    if (e.is_regular_file()) bytes += e.file_size();
  CHECK(bytes < std::uintmax_t{600} << 20);  // packed with xz, the fat binaries' copies cost one

  Run check = run_command("cd " + quote(work) + " && env -i PATH=/usr/bin:/bin HOME=" + quote(work) + " LD_LIBRARY_PATH=" +
                          quote(stage / "lib") + " OUT=" + quote(work / "out") + " bash " + quote(stage / "run.sh"));
  INFO(check.out);
  const std::string summary = slurp(work / "out" / "gpu-check.txt");
  CHECK(check.status == 0);
  CHECK_THAT(summary, Catch::Contains("PASS: every library of 18 binaries resolves"));
  CHECK_THAT(summary, Catch::Contains("PASS: 18 binaries started"));
  CHECK_THAT(summary, Catch::Contains("SKIP: gpu tests: GPU test skipped: no CUDA device: "));
  CHECK_THAT(summary, Catch::Contains(" (14 cases)"));  // every case of tests/test_gpu.cpp but the OOM one
  CHECK_THAT(summary, Catch::Contains("PASS: cupti_tests: Passed all 5 test cases"));
  CHECK_THAT(summary, Catch::Contains("SKIP: samples on cuda, the CUPTI collector, PyTorch and the benchmarks: no GPU"));
  CHECK_THAT(summary, Catch::Contains("status 0 after "));
  CHECK(summary.find("FAIL") == std::string::npos);
  CHECK(check.out.ends_with(summary));  // the summary is printed at the end
  CHECK(fs::file_size(work / "out" / "gpu-logs.tar.gz") > 0);
  std::vector<std::string> returned;
  for (const auto& e : fs::directory_iterator(work / "out")) returned.push_back(e.path().filename());
  CHECK(returned.size() == 2);  // one summary, one archive
  fs::remove_all(work);
}
