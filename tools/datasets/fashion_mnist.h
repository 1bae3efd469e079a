// Fashion-MNIST (and MNIST) from IDX files, as installed by Debian's
// dataset-fashion-mnist package under /usr/share/datasets/fashion-mnist.
// Files may be gzip-compressed (*.gz) or plain.
#pragma once

#include <string>

#include "rill/input_pipeline.h"
#include "rill/tensor.h"

namespace rill {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// An in-memory labelled image set.
struct ImageDataset {
  Tensor images;  // float32 [N, rows * cols], pixel values scaled to [0, 1]
  Tensor labels;  // int64 [N, 1]
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t size() const { return labels.initialized() ? labels.dim(0) : 0; }
};

// The same files undecoded: one byte per pixel and per label.
struct RawImageSet {
  std::string pixels;  // size * rows * cols bytes
  std::string labels;  // size bytes
  int64_t size = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};
RawImageSet LoadFashionMnistRaw(const std::string& dir, bool train);
// Decodes examples indices[0..n) (or 0..n when indices is null) into images
// ([n, rows * cols], pixel / 255) and labels ([n]).
void DecodeImages(const RawImageSet& raw, const int64_t* indices, int64_t n, float* images,
                  int64_t* labels);

// Reads "<dir>/train-*" (train = true) or "<dir>/t10k-*". Throws kIo naming
// the path (and the package that provides it) when a file is missing, and
// kParse when a file is not a valid IDX file or images and labels disagree.
ImageDataset LoadFashionMnist(const std::string& dir, bool train);

// Reads one IDX file of unsigned bytes; `dims` receives its dimensions.
std::string ReadIdxFile(const std::string& path, std::vector<int64_t>* dims);

// FashionMnist (or any ImageDataset) as a BatchSource: fields image (float32
// [n, rows * cols], scaled to [0, 1] while decoding) and label (int64 [n, 1]).
// The raw bytes stay in memory; decoding happens per batch.
std::shared_ptr<BatchSource> FashionMnistSource(const std::string& dir, bool train,
                                                std::string image_field = "image",
                                                std::string label_field = "label");

}  // namespace rill
