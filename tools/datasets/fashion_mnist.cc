#include "tools/datasets/fashion_mnist.h"

#include <zlib.h>

#include <filesystem>

#include "rill/error.h"
#include "runtime/base/huge_pages.h"

namespace rill {
namespace {

// Reads a whole file through zlib, which passes uncompressed files through unchanged.
std::string ReadMaybeGzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  RILL_CHECK(file != nullptr, kIo, "cannot open ", path);
  std::string data;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(file, chunk, sizeof(chunk))) > 0) data.append(chunk, static_cast<size_t>(n));
  const bool failed = n < 0;
  gzclose(file);
  RILL_CHECK(!failed, kIo, "cannot decompress ", path);
  return data;
}

uint32_t BigEndian32(const std::string& data, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string FindFile(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    std::string path = dir + "/" + stem + suffix;
    if (std::filesystem::exists(path)) return path;
  }
  Fail(ErrorCode::kIo, "Fashion-MNIST file ", dir, "/", stem,
       "[.gz] not found; install Debian's dataset-fashion-mnist package (bash tools/setup.sh) "
       "or pass the directory holding the IDX files");
}

}  // namespace

std::string ReadIdxFile(const std::string& path, std::vector<int64_t>* dims) {
  std::string data = ReadMaybeGzip(path);
  RILL_CHECK(data.size() >= 4, kParse, path, ": too short for an IDX header");
  const uint32_t magic = BigEndian32(data, 0);
  RILL_CHECK((magic >> 8) == 0x08, kParse, path, ": not an IDX file of unsigned bytes (magic 0x",
             std::hex, magic, ")");
  const size_t rank = magic & 0xff;
  RILL_CHECK(rank >= 1 && rank <= 4 && data.size() >= 4 + 4 * rank, kParse, path, ": bad IDX rank ",
             rank);
  dims->clear();
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    dims->push_back(BigEndian32(data, 4 + 4 * i));
    count *= static_cast<size_t>(dims->back());
  }
  const size_t header = 4 + 4 * rank;
  RILL_CHECK(data.size() == header + count, kParse, path, ": holds ", data.size() - header,
             " bytes of data, the header promises ", count);
  return data.substr(header);
}

RawImageSet LoadFashionMnistRaw(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  std::vector<int64_t> image_dims, label_dims;
  const std::string image_path = FindFile(dir, prefix + "-images-idx3-ubyte");
  const std::string label_path = FindFile(dir, prefix + "-labels-idx1-ubyte");
  RawImageSet raw;
  raw.pixels = ReadIdxFile(image_path, &image_dims);
  raw.labels = ReadIdxFile(label_path, &label_dims);
  RILL_CHECK(image_dims.size() == 3 && label_dims.size() == 1 && image_dims[0] == label_dims[0],
             kParse, image_path, " and ", label_path, " disagree on the number of examples");
  raw.size = image_dims[0];
  raw.rows = image_dims[1];
  raw.cols = image_dims[2];
  return raw;
}

namespace {

// One image's pixels scaled to [0, 1], also built for AVX-512 and AVX2 and
// picked at run time (a division is exact in every vector width: the same
// bits; the baseline build is SSE2). Not under ThreadSanitizer: the clones'
// resolver runs while the loader relocates, before TSan's runtime is set up, and
// its instrumented entry crashed every program linked with this file.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void ScalePixels(const unsigned char* src, int64_t n, float* dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<float>(src[k]) / 255.0f;
}

// Rows ahead whose pixels are asked for before they are read: shuffled rows
// lie anywhere in the set, and a 784-byte row is too short for the hardware
// prefetcher to find (a batch decoded a third faster, cold caches).
constexpr int64_t kRowsAhead = 4;

}  // namespace

void DecodeImages(const RawImageSet& raw, const int64_t* indices, int64_t n, float* images,
                  int64_t* labels) {
  const int64_t width = raw.rows * raw.cols;
  const auto* pixels = reinterpret_cast<const unsigned char*>(raw.pixels.data());
  for (int64_t i = 0; i < n; ++i) {
    if (indices != nullptr && i + kRowsAhead < n) {
      const unsigned char* ahead = pixels + indices[i + kRowsAhead] * width;
      for (int64_t at = 0; at < width; at += 64) __builtin_prefetch(ahead + at);
    }
    const int64_t row = indices == nullptr ? i : indices[i];
    ScalePixels(pixels + row * width, width, images + i * width);
    labels[i] = static_cast<unsigned char>(raw.labels[static_cast<size_t>(row)]);
  }
}

ImageDataset LoadFashionMnist(const std::string& dir, bool train) {
  const RawImageSet raw = LoadFashionMnistRaw(dir, train);
  ImageDataset set;
  set.rows = raw.rows;
  set.cols = raw.cols;
  float* images = set.images.Allocate<float>({raw.size, raw.rows * raw.cols});
  // 188 MB for the training set: with 4 KB pages each first touch of a page
  // costs microseconds on a VM (huge_pages.h), paid again by the first reads.
  AdviseHugePages(images, set.images.bytes());
  int64_t* labels = set.labels.Allocate<int64_t>({raw.size, 1});
  DecodeImages(raw, nullptr, raw.size, images, labels);
  return set;
}

namespace {

class FashionMnistBatches : public BatchSource {
 public:
  FashionMnistBatches(RawImageSet raw, std::string image, std::string label)
      : raw_(std::move(raw)), image_(std::move(image)), label_(std::move(label)) {}
  int64_t size() const override { return raw_.size; }
  std::vector<std::string> fields() const override { return {image_, label_}; }
  std::vector<Tensor> Decode(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    Tensor images(DataType::kFloat32, {n, raw_.rows * raw_.cols});
    Tensor labels(DataType::kInt64, {n, 1});
    DecodeImages(raw_, indices.data(), n, images.mutable_data<float>(),
                 labels.mutable_data<int64_t>());
    return {images, labels};
  }

 private:
  RawImageSet raw_;
  std::string image_, label_;
};

}  // namespace

std::shared_ptr<BatchSource> FashionMnistSource(const std::string& dir, bool train,
                                                std::string image_field, std::string label_field) {
  return std::make_shared<FashionMnistBatches>(LoadFashionMnistRaw(dir, train),
                                               std::move(image_field), std::move(label_field));
}

}  // namespace rill
