#include "runtime/base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/buffer_pool.h"

namespace rill {
namespace {

bool HugePageAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0; }

// The kernel's transparent huge page mode ("always", "madvise" or "never"),
// empty where it has none.
std::string TransparentHugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

// "THPeligible" of the mapping holding `p` in /proc/self/smaps: 1 where its
// pages may be huge (advised, in "madvise" mode). -1 when not found.
int HugePageEligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(std::strlen("THPeligible:")));
    }
  }
  return -1;
}

TEST(HugePagesTest, BigBlocksStartOnAHugePageAndAreAdvised) {
  const size_t bytes = 3 * kHugePageBytes + 12345;  // not a whole number of pages
  auto* block = static_cast<unsigned char*>(AllocateHugePageBlock(bytes));
  ASSERT_NE(block, nullptr);
  EXPECT_TRUE(HugePageAligned(block));
  std::memset(block, 0x5a, bytes);  // every byte is ours to write
  EXPECT_EQ(block[bytes - 1], 0x5a);
  const std::string mode = TransparentHugePageMode();
  if (mode == "always" || mode == "madvise") {
    EXPECT_EQ(HugePageEligible(block), 1) << mode;
  }
  FreeHugePageBlock(block, bytes);
}

TEST(HugePagesTest, SmallBlocksComeFromTheHeap) {
  void* block = AllocateHugePageBlock(1000);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 1000);
  FreeHugePageBlock(block, 1000);
  FreeHugePageBlock(nullptr, 1000);
}

TEST(HugePagesTest, AVectorOnTheAllocatorGrowsAndKeepsItsValues) {
  std::vector<float, HugePageAllocator<float>> values;
  for (int i = 0; i < 1 << 20; ++i) values.push_back(static_cast<float>(i));  // 4 MB at the end
  EXPECT_TRUE(HugePageAligned(values.data()));
  for (int i = 0; i < 1 << 20; i += 4099) ASSERT_EQ(values[static_cast<size_t>(i)], i);
}

TEST(HugePagesTest, TheTensorPoolPutsBigBlocksOnHugePages) {
  BufferPool& pool = BufferPool::Instance();
  const size_t big = 5 * kHugePageBytes + 64;
  void* block = pool.Allocate(big);
  EXPECT_TRUE(HugePageAligned(block));
  std::memset(block, 7, big);
  void* small = pool.Allocate(1 << 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % BufferPool::kAlignment, 0u);
  std::memset(small, 7, 1 << 16);
  pool.Free(small, 1 << 16);
  pool.Free(block, big);
  pool.Trim();  // unmapped, not handed to free()
}

}  // namespace
}  // namespace rill
